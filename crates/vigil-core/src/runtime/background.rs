//! The runtime's background side: starting the wake loop and the scheduler loop, and what
//! the heartbeat and the scheduler reach of the runtime ([`Host`]): runs, through
//! [`crate::run`], and whether a conversation is busy.
//!
//! Owns: [`Unattended`], the work nobody asked for just now (wake, heartbeat, scheduler,
//! watch, budget, continuations' limits). Must never: keep the runtime alive through the
//! [`Host`] it hands out (a weak handle: after shutdown a run is refused, not started).

use std::sync::{Arc, Weak};

use vigil_protocol::{Event, HeartbeatSettings, HeartbeatView, Scope, Source, StopReason, WakeReason};

use super::{Base, Inner, Life, Runtime};
use crate::clock::Clock;
use crate::events::Emitter;
use crate::heartbeat::{self, HeartbeatConfig, HeartbeatHost};
use crate::routines::{IntervalTimer, JobHost};
use crate::run::{RunRequest, RunResult, Runner};
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

impl Unattended {
    /// Starts the wake loop (restoring wakes saved before a restart) with the heartbeat as
    /// its handler; `None` when another start won the race. Inside a tokio runtime.
    pub(super) fn start_wake(&self, config: WakeConfig, base: &Base, life: &Life) -> Option<Wake> {
        let wake = Wake::start(config, base.clock.clone(), life.shutdown.clone(), &life.background);
        let registration = wake.set_handler(Arc::new(self.heartbeat.clone()));
        let started = Started {
            wake: wake.clone(),
            _registration: registration,
        };
        self.wake.set(started).ok().map(|()| wake)
    }

    /// Starts the one loop that owns all timing: the heartbeat interval and the routines.
    pub(super) fn start_schedule(&self, wake: Wake, life: &Life) {
        let scheduler = self.routines.clone();
        scheduler.set_wake(wake.clone());
        let timer = IntervalTimer::new(self.heartbeat.clone(), wake);
        life.background.spawn(scheduler.run(timer, life.shutdown.clone()));
    }

    /// Runs one heartbeat now, outside the wake loop (see [`Runtime::heartbeat_once`]).
    pub(super) async fn heartbeat_once(&self, clock: &dyn Clock, reason: WakeReason) -> WakeOutcome {
        let wake = PendingWake::new(reason, heartbeat::AGENT, clock.now_ms());
        self.heartbeat.run_once(wake).await
    }

    /// Asks for a heartbeat run (coalesced with others); dropped before the wake loop runs.
    pub(super) fn request_wake(&self, reason: WakeReason) {
        match self.wake.get() {
            Some(started) => started.wake.request_wake(reason, heartbeat::AGENT),
            None => tracing::warn!("a {} wake before the heartbeat started was dropped", reason.as_str()),
        }
    }

    /// Applies heartbeat settings at once (no restart); returns the problems found.
    pub(super) fn set_heartbeat_settings(&self, settings: &HeartbeatSettings) -> Vec<String> {
        let config = HeartbeatConfig::resolve(settings);
        let warnings = config.warnings.clone();
        let turned_off = !config.enabled && self.heartbeat.config().enabled;
        self.heartbeat.set_config(config);
        if turned_off {
            self.routines.heartbeat_turned_off();
        }
        warnings
    }

    /// Pauses or resumes background activity (see [`Runtime::set_paused`]); emits
    /// `background_paused` when it changes.
    pub(super) fn set_paused(&self, emitter: &Emitter, paused: bool) {
        if self.heartbeat.set_paused(paused) {
            tracing::info!(paused, "background activity paused or resumed");
            emitter.emit(Source::System, Event::BackgroundPaused { paused });
            if !paused {
                // What fell due meanwhile runs now, not at the scheduler's next wake-up.
                self.routines.poke();
            }
        }
    }

    /// The status view: last run, next run, settings problems, counters.
    pub(super) fn heartbeat_view(&self) -> HeartbeatView {
        let stats = self.wake.get().map(|s| s.wake.stats()).unwrap_or_default();
        self.heartbeat.view(stats)
    }

    /// Waits for requested wakes to run; true if there were any.
    pub(super) async fn settle_wakes(&self) -> bool {
        match self.wake.get() {
            Some(started) => started.wake.settled().await,
            None => false,
        }
    }
}

/// Whether a turn runs in any conversation (the user's or a continuation; jobs and the
/// heartbeat's own turns are not conversations).
fn conversation_busy(lanes: &crate::run::Lanes) -> bool {
    lanes.busy().iter().any(|(_, scope, _)| *scope == Scope::Primary)
}

/// The heartbeat's view of the runtime. Weak, so the heartbeat held inside the runtime does
/// not keep it alive.
pub(super) struct Host(pub(super) Weak<Inner>);

impl Host {
    fn runtime(&self) -> Option<Runtime> {
        self.0.upgrade().map(|inner| Runtime { inner })
    }

    fn inner(&self) -> Option<Arc<Inner>> {
        self.0.upgrade()
    }
}

impl HeartbeatHost for Host {
    fn conversation_busy(&self) -> bool {
        self.inner().is_some_and(|i| conversation_busy(&i.conversations.lanes))
    }

    fn has_provider(&self) -> bool {
        self.inner().is_some_and(|i| i.agent.client().is_some())
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
        self.inner()
            .is_none_or(|i| i.unattended.heartbeat.config().notifications)
    }

    fn paused(&self) -> bool {
        self.inner().is_some_and(|i| i.unattended.heartbeat.is_paused())
    }

    fn heartbeat_scheduled(&self) -> bool {
        self.inner()
            .is_some_and(|i| i.unattended.heartbeat.interval().is_some())
    }

    fn heartbeat_enabled(&self) -> bool {
        self.inner().is_none_or(|i| i.unattended.heartbeat.config().enabled)
    }

    fn heartbeat_active(&self, now_ms: i64) -> bool {
        self.inner()
            .is_none_or(|i| i.unattended.heartbeat.config().is_active_at(now_ms))
    }

    async fn check(&self, routine: &crate::routines::Routine) -> crate::routines::CheckGate {
        match self.inner() {
            Some(i) => i.unattended.watch.gate(routine).await,
            None => crate::routines::CheckGate::Refused("Vigil is shutting down".into()),
        }
    }
}
