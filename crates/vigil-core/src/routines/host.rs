//! What the scheduler is given and what runs its jobs: [`Deps`] (the store, clock, events,
//! sessions), the [`JobHost`] contract the runtime fulfils (a job turn, whether it may notify,
//! whether background work is paused), and what a run reports back ([`Ran`]).
//!
//! Must never: depend on the scheduler (everything in `routines` may depend on this).

use std::sync::Arc;

use super::runlog::RunLog;
use super::store::RoutineStore;
use crate::clock::Clock;
use crate::events::Emitter;
use crate::session::MetaStore;

/// What routines work with, all owned elsewhere.
#[derive(Clone)]
pub struct Deps {
    pub store: RoutineStore,
    pub runlog: RunLog,
    /// The primary session's mailbox (deliveries) and job sessions (archive, retention).
    pub meta: MetaStore,
    pub emitter: Emitter,
    pub clock: Arc<dyn Clock>,
}

/// What the runtime does for an isolated job: the parts that need its lanes and clients.
/// What the check in front of a scheduled routine decided ([`super::JobHost::check`]).
#[derive(Debug, Clone, PartialEq)]
pub enum CheckGate {
    /// Run it, with this evidence (none when it has no check).
    Act(Option<String>),
    /// The condition is false: nothing runs, nothing is billed.
    Quiet,
    /// It may not run (its check changed since it was approved, or the check is broken): why.
    Refused(String),
}

/// What the runtime does for the scheduler: runs its jobs (through [`crate::run::Runner`]),
/// and tells what the heartbeat and the user's settings say.
#[async_trait::async_trait]
pub trait JobHost: crate::run::Runner {
    /// Whether results raise a native notification.
    fn notifications(&self) -> bool {
        true
    }
    /// Whether the user paused background activity (the tray): nothing is claimed or run
    /// meanwhile; what fell due runs once on resume, by the catch-up rule.
    fn paused(&self) -> bool {
        false
    }
    /// Whether an interval heartbeat is scheduled: inline routines that wait for the next
    /// heartbeat (`wake_mode: next_heartbeat`) wake it themselves when none will come.
    fn heartbeat_scheduled(&self) -> bool {
        false
    }
    /// Whether the heartbeat is on. While it is off, inline routines run as jobs of their
    /// own instead of waiting, claimed, for a heartbeat turn that never comes.
    fn heartbeat_enabled(&self) -> bool {
        true
    }
    /// Whether `now_ms` is inside the heartbeat's active hours. Outside them an inline
    /// routine that needs the model runs as a job at its time: active hours govern the
    /// interval poll, never when a routine runs.
    fn heartbeat_active(&self, _now_ms: i64) -> bool {
        true
    }
    /// A scheduled routine with a check (issue 33): approval and the check in the read-only
    /// sandbox, before anything else runs.
    async fn check(&self, _routine: &super::Routine) -> CheckGate {
        CheckGate::Refused("this host runs no checks".into())
    }
}

/// How a run ran, for its run-log record ([`Scheduler::finish`]).
#[derive(Debug, Clone, Default)]
pub struct Ran {
    /// The job session, or the heartbeat session for an inline run.
    pub session_id: Option<String>,
    /// The model was not called (a deterministic kind).
    pub deterministic: bool,
    /// The tokens of the model turn it ran in (for an inline run, the heartbeat run's).
    pub usage: Option<vigil_protocol::Usage>,
}
