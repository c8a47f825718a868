//! What the scheduler is given and what runs its jobs: [`Deps`] (the store, clock, events,
//! sessions), the [`JobHost`] contract the runtime fulfils (a job turn, whether it may notify,
//! whether background work is paused), and what a run reports back ([`Ran`]).
//!
//! Must never: depend on the scheduler (everything in `routines` may depend on this).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use vigil_protocol::StopReason;

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
#[async_trait::async_trait]
pub trait JobHost: Send + Sync + 'static {
    /// Runs the job's turn (multi-round, with tools, never waiting for approval).
    async fn run_job(&self, job: JobTurn) -> JobOutcome;
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
}

/// One job turn, for [`JobHost::run_job`].
#[derive(Debug, Clone)]
pub struct JobTurn {
    /// `job_<routine>_<run>`.
    pub session_id: String,
    pub run_id: String,
    /// The user message: the routine's task.
    pub text: String,
    /// Appended to the system prompt: the job instructions.
    pub system_section: String,
    /// Cancelled when the job's timeout passes; the turn must end promptly.
    pub cancel: CancellationToken,
    /// Goes into the turn's [`crate::agent::TurnExtras::effects`]: the job's first tool
    /// call that changes something is written into its claim once approved, before it runs.
    pub effects: crate::agent::Effects,
    /// The routine comes back within the hour: cache the prefix for an hour.
    pub cache_hour: bool,
    /// The routine's id: the user's network grant for it applies to the job.
    pub routine_id: String,
}

/// How a job turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct JobOutcome {
    pub stop_reason: StopReason,
    /// The last assistant text of the turn.
    pub reply: String,
    pub error: Option<String>,
    /// The tokens the turn's model calls used, if it reported them.
    pub usage: Option<vigil_protocol::Usage>,
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
