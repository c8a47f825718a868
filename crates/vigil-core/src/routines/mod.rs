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
//! - [`scheduler`] — the tick (claim before run), the single timing loop.
//! - `claim` — the tick's locked write that claims due runs, and `finish`, which ends them.
//! - `handoff` — claimed runs on to a job each, or to the next heartbeat turn.
//! - `state` — the state machine: done / next time / retry with back-off, `unknown`,
//!   stale claims, the due times a routine passes over.
//! - `catch_up` — missed runs by policy (`once`, `skip`, `all`) and the wake-up summary.
//! - `fired` — runs a trigger or check started (`crate::watch`), the check gate in front
//!   of a scheduled routine, notices without the model.
//! - `jobs` — isolated job sessions, deterministic tasks, delivery to the mailbox, the
//!   side-effect evidence that makes a cut-off run `unknown`.
//! - [`edit`] — create / update / delete / run-now / pause, with the tools' validation.
//! - [`view`] — the editor's view and previews.
//! - [`runlog`] — each routine's bounded run history.
//! - [`tools`] — `routine_add`, `routine_list`, `routine_update`, `routine_remove`,
//!   `routine_restore`.
//! - [`IntervalTimer`] (here) — the heartbeat interval, timed by the scheduler's loop.
//!
//! Must never: run a routine it has not claimed; write `HEARTBEAT.md` outside [`store`];
//! read the system clock.

mod alarm;
mod block;
mod catch_up;
mod claim;
mod describe;
pub mod edit;
mod fired;
mod handoff;
mod jobs;
pub mod model;
pub mod runlog;
pub mod schedule;
pub mod scheduler;
mod state;
pub mod store;
pub mod tools;
pub mod view;

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use vigil_protocol::{RunOutcome, WakeReason};

pub use fired::{with_evidence, CheckGate};
pub use model::{infer_execution_mode, Routine};
pub use runlog::RunLog;
pub use schedule::Spec;
pub use scheduler::{Claimed, RunResult, Scheduler, SchedulerConfig, TickReport};
pub use store::{Parsed, Refusal, RoutineStore, StoreError};

use crate::clock::Clock;
use crate::events::Emitter;
use crate::heartbeat::{DueOutcome, DueTask, DueTasks, Heartbeat, AGENT};
use crate::session::MetaStore;
use crate::wake::Wake;

/// `id` as a file or session name part: ASCII letters, digits, `-` and `_` kept, anything
/// else `_`, at most `max` characters.
pub(crate) fn safe_name(id: &str, max: usize) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(max)
        .collect()
}

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
    async fn check(&self, _routine: &Routine) -> CheckGate {
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

/// The heartbeat's interval, timed by [`Scheduler::run`]: the one loop that owns timing.
/// Counted from when the interval was set, so retries and event-driven runs never move it;
/// after a long sleep (a suspended laptop) it fires once, not a burst. The idle gate
/// ([`Heartbeat::interval_factor`]) stretches the period from the last interval run: quiet
/// runs with the user away double it, a user message brings the next run within one interval.
pub struct IntervalTimer {
    heartbeat: Heartbeat,
    wake: Wake,
    current: Option<Duration>,
    due: Option<Instant>,
    /// The idle gate's factor `due` was computed with, and when the last interval run fired.
    factor: u32,
    last_fired: Option<Instant>,
}

impl IntervalTimer {
    pub fn new(heartbeat: Heartbeat, wake: Wake) -> Self {
        Self {
            heartbeat,
            wake,
            current: None,
            due: None,
            factor: 1,
            last_fired: None,
        }
    }

    fn refresh(&mut self) {
        let interval = self.heartbeat.interval();
        if interval != self.current {
            self.current = interval;
            self.due = interval.map(|i| Instant::now() + i);
            self.factor = 1;
            self.last_fired = None;
            self.heartbeat.set_next_due(self.due);
        }
        let factor = self.heartbeat.interval_factor().max(1);
        if factor != self.factor {
            if let (Some(i), Some(last), Some(due)) = (self.current, self.last_fired, self.due) {
                // Stretched from the last run; back to normal (a user message): within one
                // interval from now, never later than it was going to be.
                self.due = Some(if factor < self.factor {
                    due.min(Instant::now() + i)
                } else {
                    last + i * factor
                });
                self.heartbeat.set_next_due(self.due);
            }
            self.factor = factor;
        }
    }

    /// Asks for an `interval` run if one is due.
    pub fn fire_if_due(&mut self) {
        self.refresh();
        let (Some(i), Some(d)) = (self.current, self.due) else {
            return;
        };
        let now = Instant::now();
        if now < d {
            return;
        }
        self.wake.request_wake(WakeReason::Interval, AGENT);
        // Counted from the time it was due, unless that is more than an interval ago (a sleep).
        let base = if d + i > now { d } else { now };
        self.last_fired = Some(base);
        let next = base + i * self.factor;
        self.due = Some(next);
        self.heartbeat.set_next_due(self.due);
    }

    /// The earlier of the next interval run and `other`.
    pub fn deadline(&mut self, other: Instant) -> Instant {
        self.refresh();
        self.due.map_or(other, |d| d.min(other))
    }

    pub async fn config_changed(&self) {
        self.heartbeat.config_changed().await
    }
}

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
