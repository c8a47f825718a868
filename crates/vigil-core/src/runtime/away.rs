//! The user's presence and the "While you were away" card: the presence watch
//! ([`crate::presence`]) starts with the background work; when the user comes back after an
//! absence of at least `away_after_minutes`, the card for it ([`crate::away::summarize`])
//! goes out as a `while_away` event, if anything happened.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use vigil_protocol::{AwaySummary, Event, Source};

use super::Runtime;
use crate::away::{summarize, RoutineRuns};
use crate::presence::{Presence, PresenceSource, PresenceWatch};

/// The user's presence, and what reaches them while away: the journal behind the "While you
/// were away" card, the phone channels, and keeping the computer awake.
pub(super) struct Away {
    /// The `keep_awake` setting, and the inhibitor once background work started.
    pub(super) keep_awake: std::sync::atomic::AtomicBool,
    pub(super) inhibitor: std::sync::OnceLock<crate::inhibit::SleepInhibitor>,
    /// Another bus to find logind on (tests); `None`: the system bus.
    pub(super) logind_bus: std::sync::Mutex<Option<String>>,
    /// Whether the user is at the computer, once background work started.
    pub(super) presence: std::sync::OnceLock<crate::presence::PresenceWatch>,
    /// An absence this long (ms) or longer gets a "While you were away" card.
    pub(super) away_after_ms: std::sync::atomic::AtomicI64,
    /// What only the events tell of the time the user is away (fed by the sink's tap).
    pub(super) journal: crate::away::Journal,
    /// The phone channels (ntfy, Telegram); they read events through the sink's tap and
    /// start with the background work.
    pub(super) channels: crate::channels::Channels,
}

impl Runtime {
    /// Starts watching the user's presence (on the bus of [`Runtime::set_logind_bus`]).
    pub(super) fn start_presence(&self) {
        let bus = self
            .inner
            .away
            .logind_bus
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let watch = PresenceWatch::start(self.inner.base.clock.clone(), bus);
        let mut changes = watch.subscribe();
        if self.inner.away.presence.set(watch).is_err() {
            return;
        }
        // Weak: this loop must not keep the runtime alive; it ends with shutdown.
        let runtime = Arc::downgrade(&self.inner);
        let shutdown = self.inner.life.shutdown.clone();
        self.inner.life.background.spawn(async move {
            let mut was = *changes.borrow_and_update();
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                let now = *changes.borrow_and_update();
                let Some(inner) = runtime.upgrade() else { return };
                if let (Presence::Away { since_ms }, Presence::Here) = (was, now) {
                    Runtime { inner }.came_back(since_ms);
                }
                was = now;
            }
        });
    }

    /// The user is back from an absence that began at `since_ms`.
    fn came_back(&self, since_ms: i64) {
        let back = self.inner.base.clock.now_ms();
        let away_for = back.saturating_sub(since_ms);
        let threshold = self.inner.away.away_after_ms.load(Ordering::Relaxed);
        tracing::info!(away_for_ms = away_for, "the user is back");
        if away_for < threshold {
            return;
        }
        if let Some(summary) = self.away_summary(since_ms, back) {
            self.inner
                .base
                .emitter
                .emit(Source::System, Event::WhileAway { summary });
        }
    }

    /// What happened from `since_ms` to `back_ms`: the card's content, or `None` when
    /// nothing did and nothing waits.
    pub fn away_summary(&self, since_ms: i64, back_ms: i64) -> Option<AwaySummary> {
        let routines: Vec<RoutineRuns> = self
            .routines()
            .routines
            .into_iter()
            .filter(|r| r.removed_at.is_none())
            .map(|r| RoutineRuns {
                runs: self.routine_history(&r.id),
                id: r.id,
                title: r.title,
            })
            .collect();
        let titles: HashMap<String, String> = match self.sessions() {
            Ok(sessions) => sessions.into_iter().map(|s| (s.id, s.title)).collect(),
            Err(e) => {
                tracing::warn!("the conversations' titles could not be read: {e}");
                HashMap::new()
            }
        };
        summarize(since_ms, back_ms, &self.inner.away.journal, &routines, &titles)
    }

    /// How long an absence must last for its card (the `away_after_minutes` setting).
    pub fn set_away_after(&self, minutes: u32) {
        let ms = i64::from(minutes.max(1)) * 60_000;
        self.inner.away.away_after_ms.store(ms, Ordering::Relaxed);
    }

    /// The window saw the user's input; counts where the desktop session cannot say.
    pub fn window_input(&self) {
        if let Some(watch) = self.inner.away.presence.get() {
            watch.input_seen();
        }
    }

    /// Whether the user is at the computer (here until background work started).
    pub fn presence(&self) -> Presence {
        self.inner
            .away
            .presence
            .get()
            .map_or(Presence::Here, PresenceWatch::now)
    }

    /// Where the presence comes from: logind's session, or the window.
    pub fn presence_source(&self) -> PresenceSource {
        self.inner
            .away
            .presence
            .get()
            .map_or(PresenceSource::Starting, PresenceWatch::source)
    }
}
