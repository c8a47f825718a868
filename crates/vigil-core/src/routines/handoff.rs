//! Handing claimed runs on: deterministic kinds and isolated routines start a job each,
//! inline ones wait for one heartbeat turn (`## Due Tasks`), woken through the wake loop;
//! routines with a check pass it first.
//!
//! Must never: let an inline run wait for a heartbeat that is off or will not come.

use std::time::Duration;

use vigil_protocol::{Action, ExecutionMode};

use super::fired::with_evidence;
use super::host::CheckGate;
use super::scheduler::{Claimed, RunResult, Scheduler};
use super::Ran;
use crate::heartbeat::DueTask;

impl Scheduler {
    /// Starts what a tick claimed.
    pub(super) fn dispatch(&self, claimed: Vec<Claimed>) {
        let mut inline = Vec::new();
        let now = self.now();
        // Off, or outside its active hours: a routine runs at its time all the same, as a job.
        let heartbeat_on = self
            .host()
            .is_none_or(|h| h.heartbeat_enabled() && h.heartbeat_active(now));
        for c in claimed {
            if c.routine.check.is_some() || c.routine.action == Some(vigil_protocol::Action::Notify) {
                let this = self.clone();
                self.shared.jobs.spawn(async move { this.run_checked(c).await });
            } else if c.routine.kind.is_some() {
                let this = self.clone();
                self.shared.jobs.spawn(async move { this.run_deterministic(c).await });
            } else if c.routine.execution_mode == ExecutionMode::Inline && heartbeat_on {
                inline.push(c);
            } else {
                let this = self.clone();
                self.shared.jobs.spawn(async move { this.run_isolated(c).await });
            }
        }
        if !inline.is_empty() {
            self.queue_inline(inline);
        }
    }

    /// The heartbeat was switched off: inline runs waiting for its turn run as jobs of
    /// their own instead (those a heartbeat turn already took finish there).
    pub fn heartbeat_turned_off(&self) {
        self.run_waiting_as_jobs();
    }

    /// Inline runs waiting for a heartbeat turn run as jobs of their own.
    pub(super) fn run_waiting_as_jobs(&self) {
        let waiting = std::mem::take(&mut self.shared.inline.lock().unwrap_or_else(|e| e.into_inner()).waiting);
        for c in waiting {
            let this = self.clone();
            self.shared.jobs.spawn(async move { this.run_isolated(c).await });
        }
    }

    /// Inline runs waiting for a heartbeat (for the heartbeat seam and tests).
    pub fn inline_waiting(&self) -> Vec<DueTask> {
        let q = self.shared.inline.lock().unwrap_or_else(|e| e.into_inner());
        q.waiting.iter().map(due_task).collect()
    }

    /// A claimed scheduled routine with a check or a `notify` action: the check first (by
    /// the host), then the action; a quiet check ends the run acknowledged, with no model.
    pub(super) async fn run_checked(&self, mut c: Claimed) {
        let gate = match (&c.routine.check, self.host()) {
            (Some(_), Some(host)) => host.check(&c.routine).await,
            (Some(_), None) => CheckGate::Refused("checks cannot run yet (the runtime has not started)".into()),
            (None, _) => CheckGate::Act(None),
        };
        match gate {
            CheckGate::Quiet => self.finish(&c, RunResult::Acknowledged, Ran::default()).await,
            CheckGate::Refused(why) => {
                let result = RunResult::Skipped(why);
                self.finish(&c, result, Ran::default()).await
            }
            CheckGate::Act(evidence) => {
                if let Some(e) = &evidence {
                    c.routine.description = with_evidence(&c.routine.description, e);
                    self.keep_evidence(&c.run_id, e);
                }
                if c.routine.action == Some(Action::Notify) {
                    self.act(c, evidence).await;
                } else {
                    c.routine.check = None;
                    self.dispatch(vec![c]);
                }
            }
        }
    }
}

pub(super) fn due_task(c: &Claimed) -> DueTask {
    let description = match super::catch_up::told_words(&c.routine) {
        Some(told) if c.routine.description.trim().is_empty() => told,
        Some(told) => format!("{}\n{told}", c.routine.description),
        None => c.routine.description.clone(),
    };
    DueTask {
        id: c.routine.id.clone(),
        title: c.routine.title.clone(),
        description,
        timeout: Duration::from_secs(u64::from(c.routine.timeout_seconds.max(1))),
    }
}
