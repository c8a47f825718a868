//! # routines
//!
//! Owns routines (seed 003 §4.6, §8, §11; seed 004 §5): scheduled work the user or the
//! agent registers, kept in the JSON task block of `HEARTBEAT.md`, run by one scheduler.
//!
//! - [`model`] — the routine (schema v2 + `kind`), v1 defaults, `infer_execution_mode`.
//! - [`schedule`] — cron / interval / one-shot in an IANA zone, DST rules, descriptions.
//! - `block` — the task block's text: find, parse (`ok | corrupted | empty`), render.
//! - [`store`] — `HEARTBEAT.md` on disk: cached reads, atomic locked writes,
//!   `.heartbeat_snapshot.json`.
//! - [`scheduler`] — the scheduler's handle and shared state, what a claim and a result are.
//! - `tick` — the tick (claim before run) and the single timing loop, over everything below.
//! - `host` — what the scheduler is given ([`Deps`]) and the [`JobHost`] that runs its jobs.
//! - `validate` — whether a schedule, zone and one-shot time can be used; the first run.
//! - `claim` — the tick's locked write that claims due runs, and `finish`, which ends them.
//! - `handoff` — claimed runs on to a job each, or to the next heartbeat turn.
//! - `state` — the state machine: done / next time / retry with back-off, `unknown`,
//!   stale claims, the due times a routine passes over.
//! - `catch_up` — missed runs by policy (`once`, `skip`, `all`) and the wake-up summary.
//! - `fired` — runs a trigger or check started (`crate::watch`), the check gate in front
//!   of a scheduled routine, notices without the model.
//! - `inline` — a fired routine's inline run: a turn in the conversation that made it.
//! - `jobs` — isolated job sessions, deterministic tasks, delivery to the mailbox, the
//!   side-effect evidence that makes a cut-off run `unknown`.
//! - [`edit`] — create / update / delete / run-now / pause, with the tools' validation.
//! - [`view`] — the editor's view and previews.
//! - [`runlog`] — each routine's bounded run history.
//! - [`tools`] — `routine_add`, `routine_list`, `routine_update`, `routine_remove`,
//!   `routine_restore`.
//! - `interval` — [`IntervalTimer`], the heartbeat interval, timed by the scheduler's loop.
//!
//! They depend one way: `model`, `schedule`, `state` and `host` at the bottom; the
//! scheduler's state above them; claiming, handing off, jobs, the view and editing above
//! that; `tick` (and this module's [`DueTasks`] seam) on top. `make check-circles` holds it.
//!
//! Must never: run a routine it has not claimed; write `HEARTBEAT.md` outside [`store`];
//! read the system clock.

mod alarm;
pub(crate) mod block;
mod catch_up;
pub mod checklist;
mod claim;
mod describe;
pub mod edit;
mod fired;
mod handoff;
mod host;
mod inline;
mod interval;
mod jobs;
pub mod model;
pub mod runlog;
pub mod schedule;
pub mod scheduler;
mod state;
pub mod store;
mod tick;
pub mod tools;
mod validate;
pub mod view;

use vigil_protocol::RunOutcome;

pub use fired::{bounded_evidence, with_evidence, MAX_RUN_EVIDENCE};
pub use host::{CheckGate, Deps, JobHost, Ran};
pub use interval::IntervalTimer;
pub(crate) use model::safe_name;
pub use model::{infer_execution_mode, Routine};
pub use runlog::RunLog;
pub use schedule::Spec;
pub use scheduler::{Claimed, RunResult, Scheduler, SchedulerConfig, TickReport};
pub use store::{Parsed, Refusal, RoutineStore, StoreError};

use crate::heartbeat::{DueOutcome, DueTask, DueTasks, AGENT};

/// The heartbeat's instructions for routines (seed 003 §8.3): due tasks, and reflection in
/// its own daily run ([`crate::heartbeat::reflection`]). Byte-stable, so the prompt cache holds.
pub const HEARTBEAT_ROUTINES_SECTION: &str = "## Routines\n\
Due tasks: when the message lists `## Due Tasks`, do each one now and report the result briefly.\n\
Reflection: about once a day a message starting with \"Reflection:\" asks you to look for routines the user asked \
for and does not have yet; only in that run look for such routines. In every other heartbeat, do not add routines \
nobody asked for there.\n\
Rules: routine changes need no confirmation; dangerous operations do. A new routine starts at its next scheduled \
time, not in this heartbeat. Manage routines with the routine tools, never by editing HEARTBEAT.md.";

impl DueTasks for Scheduler {
    fn due(&self, _now_ms: i64) -> Vec<DueTask> {
        let mut q = self.shared.inline.lock().unwrap_or_else(|e| e.into_inner());
        let taken = std::mem::take(&mut q.waiting);
        let tasks = taken.iter().map(handoff::due_task).collect();
        q.serving.extend(taken);
        tasks
    }

    fn finished(&self, tasks: &[DueTask], outcome: DueOutcome, usage: Option<vigil_protocol::Usage>) {
        let runs: Vec<Claimed> = {
            let mut q = self.shared.inline.lock().unwrap_or_else(|e| e.into_inner());
            let (mine, rest) = std::mem::take(&mut q.serving)
                .into_iter()
                .partition(|c| tasks.iter().any(|t| t.id == c.routine.id));
            q.serving = rest;
            mine
        };
        let result = match outcome {
            DueOutcome::Delivered(summary) => RunResult::Ok { summary: Some(summary) },
            DueOutcome::Acknowledged => RunResult::Acknowledged,
            DueOutcome::Done(summary) => RunResult::Ok { summary: Some(summary) },
            DueOutcome::Failed(error) => RunResult::Failed {
                outcome: RunOutcome::Failed,
                error,
            },
            DueOutcome::TimedOut(error) => RunResult::Failed {
                outcome: RunOutcome::TimedOut,
                error,
            },
            DueOutcome::Skipped(why) => RunResult::Skipped(why),
        };
        let session = crate::heartbeat::session_id(AGENT);
        for c in runs {
            let this = self.clone();
            let result = result.clone();
            let session = session.clone();
            let ran = Ran {
                session_id: Some(session),
                deterministic: false,
                usage,
            };
            self.shared
                .jobs
                .spawn(async move { this.finish(&c, result, ran).await });
        }
    }

    fn give_back(&self, tasks: &[DueTask]) {
        let mut q = self.shared.inline.lock().unwrap_or_else(|e| e.into_inner());
        let (mine, rest): (Vec<Claimed>, Vec<Claimed>) = std::mem::take(&mut q.serving)
            .into_iter()
            .partition(|c| tasks.iter().any(|t| t.id == c.routine.id));
        q.serving = rest;
        q.waiting.splice(0..0, mine);
    }

    fn hand_off(&self) {
        self.run_waiting_as_jobs();
    }

    fn context(&self) -> Option<String> {
        let state = self.deps().store.read().ok()?;
        let mut notes = Vec::new();
        if let Parsed::Corrupted(e) = &state.parsed {
            let note = if state.kept.is_some() {
                format!(
                    "The JSON task block in HEARTBEAT.md is corrupted ({e}). The last good routines keep running. Tell \
                     the user; the routine tools (routine_add, routine_update, routine_remove) work and each write \
                     repairs the block from the last good routines plus the change, and routine_restore repairs it \
                     without a change. Either way the broken file is kept as HEARTBEAT.md.corrupt."
                )
            } else {
                format!(
                    "The JSON task block in HEARTBEAT.md is corrupted ({e}) and there is no good copy of it, so no \
                     routine runs and none can be changed. Tell the user, and ask them to fix the JSON where the error \
                     points."
                )
            };
            notes.push(note);
        }
        for e in state.routines().entries() {
            let problem = match &e.routine {
                Err(p) => Some(p.clone()),
                Ok(r) => Spec::parse(
                    r.schedule_text(),
                    r.timezone.as_deref().unwrap_or(&self.config().default_zone),
                )
                .err(),
            };
            if let Some(p) = problem {
                notes.push(format!("Routine \"{}\" cannot run: {p}", e.id().unwrap_or("?")));
            }
        }
        (!notes.is_empty()).then(|| format!("## Routine Problems\n{}", notes.join("\n")))
    }

    fn system_section(&self) -> Option<String> {
        Some(HEARTBEAT_ROUTINES_SECTION.to_string())
    }
}

#[cfg(test)]
#[path = "corruption_tests.rs"]
mod corruption_tests;
#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod scheduler_tests;
#[cfg(test)]
#[path = "simulation_tests.rs"]
mod simulation_tests;
