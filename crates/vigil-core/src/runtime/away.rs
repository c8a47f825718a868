//! The user's presence and the "While you were away" card: the presence watch
//! ([`crate::presence`]) starts with the background work; when the user comes back after an
//! absence of at least `away_after_minutes`, the card for it ([`crate::away::summarize`])
//! goes out as a `while_away` event, if anything happened.
//!
//! Owns: [`Away`], what reaches the user when they are not at the screen (presence,
//! keep-awake, the journal, the phone channels). Must never: keep the runtime alive from
//! the presence loop (its callback holds the runtime weakly), or show a card for an absence
//! shorter than the setting.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use vigil_protocol::{AwaySummary, Event, Source};

use super::lanes::Conversations;
use super::{Base, Life};
use crate::away::{summarize, RoutineRuns};
use crate::presence::{Presence, PresenceSource, PresenceWatch};
use crate::routines::Scheduler;

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

impl Away {
    /// Starts watching the user's presence (on the bus of [`Away::set_logind_bus`]);
    /// `back(since_ms)` runs each time the user returns from an absence that began then.
    pub(super) fn start_presence(&self, base: &Base, life: &Life, back: impl Fn(i64) + Send + 'static) {
        let bus = self.logind_bus();
        let watch = PresenceWatch::start(base.clock.clone(), bus);
        let mut changes = watch.subscribe();
        if self.presence.set(watch).is_err() {
            return;
        }
        // `back` holds the runtime weakly: this loop must not keep it alive; it ends with shutdown.
        let shutdown = life.shutdown.clone();
        life.background.spawn(async move {
            let mut was = *changes.borrow_and_update();
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                let now = *changes.borrow_and_update();
                if let (Presence::Away { since_ms }, Presence::Here) = (was, now) {
                    back(since_ms);
                }
                was = now;
            }
        });
    }

    /// How long an absence must last for its card (the `away_after_minutes` setting).
    pub(super) fn set_away_after(&self, minutes: u32) {
        let ms = i64::from(minutes.max(1)) * 60_000;
        self.away_after_ms.store(ms, Ordering::Relaxed);
    }

    /// The window saw the user's input; counts where the desktop session cannot say.
    pub(super) fn window_input(&self) {
        if let Some(watch) = self.presence.get() {
            watch.input_seen();
        }
    }

    /// Whether the user is at the computer (here until background work started).
    pub(super) fn presence(&self) -> Presence {
        self.presence.get().map_or(Presence::Here, PresenceWatch::now)
    }

    /// Where the presence comes from: logind's session, or the window.
    pub(super) fn presence_source(&self) -> PresenceSource {
        self.presence
            .get()
            .map_or(PresenceSource::Starting, PresenceWatch::source)
    }
}

/// The user is back from an absence that began at `since_ms`: the card goes out if the
/// absence was long enough and anything happened.
pub(super) fn came_back(away: &Away, base: &Base, scheduler: &Scheduler, conversations: &Conversations, since_ms: i64) {
    let back = base.clock.now_ms();
    let away_for = back.saturating_sub(since_ms);
    let threshold = away.away_after_ms.load(Ordering::Relaxed);
    tracing::info!(away_for_ms = away_for, "the user is back");
    if away_for < threshold {
        return;
    }
    if let Some(summary) = summary(away, scheduler, conversations, since_ms, back) {
        base.emitter.emit(Source::System, Event::WhileAway { summary });
    }
}

/// What happened from `since_ms` to `back_ms`: the card's content, or `None` when
/// nothing did and nothing waits.
pub(super) fn summary(
    away: &Away,
    scheduler: &Scheduler,
    conversations: &Conversations,
    since_ms: i64,
    back_ms: i64,
) -> Option<AwaySummary> {
    let routines: Vec<RoutineRuns> = scheduler
        .view()
        .routines
        .into_iter()
        .filter(|r| r.removed_at.is_none())
        .map(|r| RoutineRuns {
            runs: scheduler.history(&r.id),
            id: r.id,
            title: r.title,
        })
        .collect();
    let titles: HashMap<String, String> = match conversations.sessions() {
        Ok(sessions) => sessions.into_iter().map(|s| (s.id, s.title)).collect(),
        Err(e) => {
            tracing::warn!("the conversations' titles could not be read: {e}");
            HashMap::new()
        }
    };
    summarize(since_ms, back_ms, &away.journal, &routines, &titles)
}
