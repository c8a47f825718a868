//! The runtime's background side: starting the wake loop and the scheduler loop, and what
//! the heartbeat and the scheduler reach of the runtime ([`Host`]): runs, through
//! [`crate::run`], and whether a conversation is busy.

use std::sync::{Arc, Weak};

use vigil_protocol::{Event, HeartbeatSettings, HeartbeatStats, HeartbeatView, Scope, Source, StopReason, WakeReason};

use super::{Inner, Runtime};
use crate::heartbeat::{self, HeartbeatConfig, HeartbeatHost};
use crate::routines::{IntervalTimer, JobHost};
use crate::run::{RunRequest, RunResult, Runner};
use crate::system_events::{self, SystemEventKind};
use crate::wake::{HandlerRegistration, PendingWake, Wake, WakeConfig, WakeOutcome};

/// Work nobody asked for just now: the wake loop, the heartbeat, routines and their
/// triggers, continuations, and the daily budget they all spend.
pub(super) struct Unattended {
    /// The daily account of background work (the heartbeat, continuations, jobs).
    pub(super) budget: crate::run::Budget,
    /// Settings and status of the heartbeat; runs only once background work started.
    pub(super) heartbeat: crate::heartbeat::Heartbeat,
    /// Routines and the one timing loop; ticks only once background work started.
    pub(super) routines: crate::routines::Scheduler,
    /// Routine triggers and checks (issue 33); watches only once background work started.
    pub(super) watch: crate::watch::Watch,
    /// The wake loop, once [`Runtime::start_background`] ran.
    pub(super) wake: std::sync::OnceLock<Started>,
    /// Continuations and unattended approvals: their limits, and merges in progress.
    pub(super) autonomy: super::continuation::Autonomy,
}

/// The running wake loop and the heartbeat's registration with it.
pub(super) struct Started {
    pub(super) wake: Wake,
    /// Dropping it would unregister the heartbeat; kept for the runtime's lifetime.
    _registration: HandlerRegistration,
}

impl Runtime {
    /// Starts the wake loop (restoring wakes saved before a restart) and the heartbeat's
    /// interval schedule. Call once, from inside a tokio runtime (in the desktop shell:
    /// through `tauri::async_runtime`); later calls do nothing. Returns false, with an
    /// error in the log, when there is no tokio runtime to run on.
    pub fn start_background(&self) -> bool {
        self.start_background_with(WakeConfig {
            persist_path: Some(self.inner.base.data_dir.join("wake").join("pending.json")),
            ..WakeConfig::default()
        })
    }

    /// [`Self::start_background`] with explicit wake timings (tests).
    pub fn start_background_with(&self, config: WakeConfig) -> bool {
        if self.inner.unattended.wake.get().is_some() {
            return true;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::error!("the heartbeat cannot start outside a tokio runtime");
            return false;
        }
        let wake = Wake::start(
            config,
            self.inner.base.clock.clone(),
            self.inner.life.shutdown.clone(),
            &self.inner.life.background,
        );
        let registration = wake.set_handler(Arc::new(self.inner.unattended.heartbeat.clone()));
        let started = Started {
            wake: wake.clone(),
            _registration: registration,
        };
        if self.inner.unattended.wake.set(started).is_err() {
            return true;
        }
        self.start_processes();
        // Each MCP server on a task of its own: none delays the rest of the start.
        self.inner.mcp.start();
        self.start_inhibitor();
        self.start_presence();
        let host = Arc::new(self.clone());
        self.inner
            .away
            .channels
            .start(host, self.inner.life.shutdown.child_token());
        // One loop owns all timing: the heartbeat interval and the routines.
        let scheduler = self.inner.unattended.routines.clone();
        scheduler.set_wake(wake.clone());
        let timer = IntervalTimer::new(self.inner.unattended.heartbeat.clone(), wake);
        self.inner
            .life
            .background
            .spawn(scheduler.run(timer, self.inner.life.shutdown.clone()));
        self.start_watch();
        true
    }

    /// Runs one heartbeat now, outside the wake loop (no coalescing, no retry), and says what
    /// the wake loop would do next (`Busy`: a conversation or the lock was taken; `Failed`: a
    /// provider error it would try again): for tests and diagnostics. It still emits the
    /// `heartbeat` event and counts.
    pub async fn heartbeat_once(&self, reason: WakeReason) -> WakeOutcome {
        let wake = PendingWake::new(reason, heartbeat::AGENT, self.inner.base.clock.now_ms());
        self.inner.unattended.heartbeat.run_once(wake).await
    }

    /// Asks for a heartbeat run (coalesced with others). Before
    /// [`Self::start_background`] there is nothing to run it, and the request is dropped.
    pub fn request_wake(&self, reason: WakeReason) {
        match self.inner.unattended.wake.get() {
            Some(started) => started.wake.request_wake(reason, heartbeat::AGENT),
            None => tracing::warn!("a {} wake before the heartbeat started was dropped", reason.as_str()),
        }
    }

    /// Queues a line for `session_id`'s next turn (and the heartbeat's, for the primary
    /// session). Pair it with [`Self::request_wake`] to have it relayed promptly.
    pub fn enqueue_system_event(&self, session_id: &str, text: &str, kind: SystemEventKind) -> bool {
        self.inner
            .conversations
            .system_events
            .enqueue(session_id, text, kind, self.inner.base.clock.now_ms())
    }

    /// The queues, for producers that hold on to them (the process registry).
    pub fn system_events(&self) -> &system_events::SystemEvents {
        &self.inner.conversations.system_events
    }

    /// Applies heartbeat settings at once (no restart); returns the problems found, which
    /// also show in [`Self::heartbeat_view`].
    pub fn set_heartbeat_settings(&self, settings: &HeartbeatSettings) -> Vec<String> {
        let config = HeartbeatConfig::resolve(settings);
        let warnings = config.warnings.clone();
        let turned_off = !config.enabled && self.inner.unattended.heartbeat.config().enabled;
        self.inner.unattended.heartbeat.set_config(config);
        if turned_off {
            self.inner.unattended.routines.heartbeat_turned_off();
        }
        warnings
    }

    /// Pauses or resumes background activity: while paused every heartbeat run (interval,
    /// exec exits, manual wakes) is skipped with the reason `paused`, and what it would have
    /// read (queued system events, the mailbox) stays for later. Running processes and
    /// conversation turns are not touched. Emits `background_paused` when it changes.
    /// Routines check it too: nothing is claimed while paused (see `JobHost::paused`).
    pub fn set_paused(&self, paused: bool) {
        if self.inner.unattended.heartbeat.set_paused(paused) {
            tracing::info!(paused, "background activity paused or resumed");
            self.inner
                .base
                .emitter
                .emit(Source::System, Event::BackgroundPaused { paused });
            if !paused {
                // What fell due meanwhile runs now, not at the scheduler's next wake-up.
                self.inner.unattended.routines.poke();
            }
        }
    }

    /// Whether background activity is paused (see [`Self::set_paused`]).
    pub fn is_paused(&self) -> bool {
        self.inner.unattended.heartbeat.is_paused()
    }

    /// The status view: last run, next run, settings problems, counters.
    pub fn heartbeat_view(&self) -> HeartbeatView {
        let stats = self
            .inner
            .unattended
            .wake
            .get()
            .map(|s| s.wake.stats())
            .unwrap_or_default();
        self.inner.unattended.heartbeat.view(stats)
    }

    /// Counters since start (runs, sent, suppressed, skipped by reason, wakes coalesced).
    pub fn heartbeat_stats(&self) -> HeartbeatStats {
        self.heartbeat_view().stats
    }

    /// Waits for requested wakes to run; true if there were any.
    pub(super) async fn settle_wakes(&self) -> bool {
        match self.inner.unattended.wake.get() {
            Some(started) => started.wake.settled().await,
            None => false,
        }
    }

    /// Whether a turn runs in any conversation (the user's or a continuation; jobs and the
    /// heartbeat's own turns are not conversations).
    fn conversation_busy(&self) -> bool {
        self.inner
            .conversations
            .lanes
            .busy()
            .iter()
            .any(|(_, scope, _)| *scope == Scope::Primary)
    }
}

/// The heartbeat's view of the runtime. Weak, so the heartbeat held inside the runtime does
/// not keep it alive.
pub(super) struct Host(pub(super) Weak<Inner>);

impl Host {
    fn runtime(&self) -> Option<Runtime> {
        self.0.upgrade().map(|inner| Runtime { inner })
    }
}

impl HeartbeatHost for Host {
    fn conversation_busy(&self) -> bool {
        self.runtime().is_some_and(|rt| rt.conversation_busy())
    }

    fn has_provider(&self) -> bool {
        self.runtime().is_some_and(|rt| {
            rt.inner
                .agent
                .client
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .is_some()
        })
    }
}

#[async_trait::async_trait]
impl Runner for Host {
    async fn run(&self, req: RunRequest) -> RunResult {
        match self.runtime() {
            Some(rt) => rt.run(req).await,
            None => RunResult {
                error: Some("Vigil is shutting down".into()),
                ..RunResult::ended(StopReason::Cancelled)
            },
        }
    }
}

#[async_trait::async_trait]
impl JobHost for Host {
    fn notifications(&self) -> bool {
        self.runtime()
            .is_none_or(|rt| rt.inner.unattended.heartbeat.config().notifications)
    }

    fn paused(&self) -> bool {
        self.runtime().is_some_and(|rt| rt.is_paused())
    }

    fn heartbeat_scheduled(&self) -> bool {
        self.runtime()
            .is_some_and(|rt| rt.inner.unattended.heartbeat.interval().is_some())
    }

    fn heartbeat_enabled(&self) -> bool {
        self.runtime()
            .is_none_or(|rt| rt.inner.unattended.heartbeat.config().enabled)
    }

    fn heartbeat_active(&self, now_ms: i64) -> bool {
        self.runtime()
            .is_none_or(|rt| rt.inner.unattended.heartbeat.config().is_active_at(now_ms))
    }

    async fn check(&self, routine: &crate::routines::Routine) -> crate::routines::CheckGate {
        match self.runtime() {
            Some(rt) => rt.inner.unattended.watch.gate(routine).await,
            None => crate::routines::CheckGate::Refused("Vigil is shutting down".into()),
        }
    }
}
