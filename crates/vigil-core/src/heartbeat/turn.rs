//! One turn in the heartbeat session: where the session stood before it ([`Mark`]), the turn
//! itself with the heartbeat's system section, short history and cache lifetime, ended at the
//! run's [`Deadline`] ([`Turned`] says how it ended), and taking an uneventful run's lines
//! back off the transcript.
//!
//! Must never: drop a turn half way (a turn that ignores its cancellation is let go on its own
//! task, or its lane would stay taken), or wait for one past its deadline and grace.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use vigil_protocol::StopReason;

use super::{session_id, DueTask, Heartbeat, HeartbeatConfig, AGENT};
use crate::agent::TurnExtras;
use crate::approval::spoken_duration;
use crate::run::{Attendance, RunKind, RunRequest, RunResult};

/// Messages of the heartbeat session a run sees (seed 003 §4.3: "极短").
pub(super) const HISTORY_LIMIT: usize = 6;
/// How long a turn cancelled at its deadline gets to stop (a command's kill, a last write)
/// before the run is recorded without it.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// How long a run may take: the heartbeat's `runTimeoutMinutes`, or the shortest
/// `timeout_seconds` of the inline routines it carries, whichever is shorter (a turn cannot
/// end for one routine and go on for another).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Deadline {
    pub(super) limit: Duration,
    /// Which limit it is, for the record: "the timeout_seconds of routine \"Tidy up\"".
    why: String,
}

impl Deadline {
    pub(super) fn of(config: &HeartbeatConfig, due: &[DueTask]) -> Self {
        let mut deadline = Deadline {
            limit: config.run_timeout,
            why: "the heartbeat's run limit, runTimeoutMinutes".into(),
        };
        for task in due {
            if task.timeout < deadline.limit {
                deadline = Deadline {
                    limit: task.timeout,
                    why: format!("the timeout_seconds of routine \"{}\"", task.title),
                };
            }
        }
        deadline
    }

    /// The record's words for a run it ended.
    pub(super) fn passed(&self) -> String {
        format!(
            "timed out after {} ({}): its open questions expired and the commands it started were stopped",
            spoken_duration(self.limit),
            self.why
        )
    }
}

/// A heartbeat turn as its deadline left it.
pub(super) struct Turned {
    /// What the turn reported (for one let go, a cancelled turn's).
    pub(super) result: RunResult,
    /// The deadline ended it.
    pub(super) timed_out: bool,
    /// It did not stop within [`STOP_GRACE`] of its cancellation and runs on by itself: it may
    /// still write to the transcript, so its lines are not taken back.
    pub(super) let_go: bool,
}

impl Turned {
    fn ended(joined: Result<RunResult, tokio::task::JoinError>) -> Self {
        let result = joined.unwrap_or_else(|e| RunResult {
            error: Some(format!("the heartbeat turn failed: {e}")),
            ..RunResult::ended(StopReason::Error)
        });
        Self {
            result,
            timed_out: false,
            let_go: false,
        }
    }
}

/// Where the heartbeat session stood before a run: what [`Heartbeat::take_back`] returns to.
pub(super) struct Mark {
    size: u64,
    pub(super) updated_at: Option<i64>,
}

impl Heartbeat {
    /// Where the heartbeat session stands before a run.
    pub(super) fn mark(&self, session: &str) -> Result<Mark, crate::session::SessionError> {
        let deps = &self.shared.deps;
        Ok(Mark {
            size: deps.store.size(session)?,
            updated_at: deps.meta.load(session).ok().map(|l| l.meta.updated_at),
        })
    }

    /// One turn in the heartbeat session, with its system section, short history and cache
    /// lifetime added to `extras`, ended at `deadline`. A turn that ran is counted (the run
    /// charges its tokens to the budget).
    pub(super) async fn heartbeat_turn(
        &self,
        config: &super::HeartbeatConfig,
        kind: RunKind,
        text: String,
        extras: TurnExtras,
        may_ask: bool,
        deadline: &Deadline,
    ) -> Turned {
        let extras = TurnExtras {
            system_section: Some(self.system_section(config)),
            history_limit: Some(HISTORY_LIMIT),
            cache_hour: self.back_within_the_hour(),
            ..extras
        };
        let started = tokio::time::Instant::now();
        let cancel = CancellationToken::new();
        let req = RunRequest {
            extras,
            model: config.model.clone(),
            deadline: Some(cancel.clone()),
            ..RunRequest::new(
                session_id(AGENT),
                kind,
                text,
                // A wake (a finished command, a reminder, Check now) may ask and wait; an
                // interval poll denies at once, so a checklist cannot leave a question every
                // 30 minutes.
                if may_ask { Attendance::Away } else { Attendance::Nobody },
            )
        };
        // On a task of its own: a turn that does not stop when cancelled is let go, never
        // dropped half way (that would leave the heartbeat session's lane taken for good).
        let host = self.shared.host.clone();
        let mut task = tokio::spawn(async move { host.run(req).await });
        let turned = tokio::select! {
            joined = &mut task => Turned::ended(joined),
            () = tokio::time::sleep(deadline.limit) => {
                cancel.cancel();
                match tokio::time::timeout(STOP_GRACE, &mut task).await {
                    Ok(joined) => Turned { timed_out: true, ..Turned::ended(joined) },
                    Err(_) => {
                        tracing::warn!(
                            "a heartbeat turn did not stop within {} of its deadline; it is let go",
                            spoken_duration(STOP_GRACE)
                        );
                        Turned {
                            result: RunResult::ended(StopReason::Cancelled),
                            timed_out: true,
                            let_go: true,
                        }
                    }
                }
            }
        };
        if !turned.result.locked {
            let mut state = self.state();
            state.stats.runs += 1;
            state.durations.add(started.elapsed().as_millis() as u64);
        }
        turned
    }

    /// Cuts the run's lines off the heartbeat transcript and puts `updated_at` back, so an
    /// uneventful run leaves no trace (seed 002 §7.1).
    pub(super) async fn take_back(&self, session: &str, mark: &Mark) {
        let deps = &self.shared.deps;
        if let Err(e) = deps.store.truncate_async(session, mark.size).await {
            tracing::warn!("could not prune the heartbeat transcript: {e}");
        }
        let Some(updated_at) = mark.updated_at else { return };
        let now = deps.meta.load(session).map(|l| l.meta.updated_at);
        if now.is_ok_and(|t| t != updated_at) {
            if let Err(e) = deps.meta.update_keeping_time(session, updated_at, |_| ()).await {
                tracing::warn!("could not restore the heartbeat session's time: {e}");
            }
        }
    }
}
