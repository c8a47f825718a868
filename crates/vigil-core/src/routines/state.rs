//! The routine state machine (seed 003 §11): pending → running → done / failed, recurring
//! routines back to pending with their next time, retries with back-off, runs whose outcome
//! is unknown, and when a claim left `running` is stale. Pure functions on one routine; the
//! scheduler calls them under the task block's lock.
//!
//! Every due time ends up in the run log: a run for it, or a `missed` / `skipped` record.
//! When a routine moves on to its next time, the due times it passes over — those that came
//! while its run was going or being retried — are returned as one `skipped` record, so none
//! goes silently.
//!
//! Must never: touch a file or read a clock (`now` is passed in).

use std::time::Duration;

use vigil_protocol::{RoutineRun, RoutineState, RunOutcome};

use super::model::{iso_string, short_id, Routine, UnknownRun};
use super::schedule::Spec;

/// Why a claim not running here is stale, or `None` while it may still be alive.
pub(super) fn stale_claim(r: &Routine, instance: &str, now: i64, grace: i64) -> Option<String> {
    let claim = r.claimed_by.as_deref().unwrap_or("");
    let pid = claim.split(':').next().and_then(|p| p.parse::<u32>().ok());
    let me = std::process::id();
    let dead = match pid {
        _ if claim == instance => false,
        None => true,
        // Our pid, another instance: a scheduler of this process that is gone (a restart).
        Some(p) if p == me => true,
        Some(p) => !crate::session::lock::pid_alive(p),
    };
    if dead {
        return Some("interrupted: Vigil stopped while it ran".into());
    }
    let started = r.run_started_at.unwrap_or(0);
    if now - started > r.timeout_seconds as i64 * 1000 + grace {
        return Some(format!(
            "stuck: running since {} (timeout {} s)",
            super::model::iso_string(started),
            r.timeout_seconds
        ));
    }
    None
}

pub(super) fn release(r: &mut Routine) {
    r.state = RoutineState::Pending;
    r.claimed_by = None;
    r.run_started_at = None;
    r.run_id = None;
    r.side_effect = None;
}

/// Due times of a schedule in a row: the first, the last and how many (and the one before
/// the last, so the last can be split off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slots {
    pub first: i64,
    pub last: i64,
    pub count: u32,
    /// The due time before `last`, when `count > 1`.
    pub before_last: Option<i64>,
}

impl Slots {
    pub fn one(at: i64) -> Self {
        Self {
            first: at,
            last: at,
            count: 1,
            before_last: None,
        }
    }

    /// `at`, then these.
    pub fn after(at: i64, rest: Option<Slots>) -> Self {
        match rest {
            None => Self::one(at),
            Some(r) => Self {
                first: at,
                last: r.last,
                count: r.count.saturating_add(1),
                before_last: Some(r.before_last.unwrap_or(at)),
            },
        }
    }

    /// All but the last, if there are more than one.
    pub fn without_last(&self) -> Option<Slots> {
        let before = self.before_last?;
        Some(Self {
            first: self.first,
            last: before,
            count: self.count - 1,
            // Not known (not needed) of what is split off.
            before_last: None,
        })
    }
}

/// Due times counted one by one at most: a minute schedule left for months is counted to
/// here, and its last due time found near the end.
const MAX_COUNTED: u32 = 100_000;

/// The due times of `spec` after `after` (exclusive) up to `until` (inclusive).
pub(super) fn slots_between(spec: &Spec, anchor: i64, after: i64, until: i64) -> Option<Slots> {
    let first = spec.next_after(after, anchor).filter(|&t| t <= until)?;
    if let super::schedule::Schedule::Every(d) = &spec.schedule {
        // Evenly spaced: counted, not walked.
        let p = (d.as_millis() as i64).max(1);
        let count = ((until - first) / p + 1).min(u32::MAX as i64) as u32;
        let last = first + (count as i64 - 1) * p;
        return Some(Slots {
            first,
            last,
            count,
            before_last: (count > 1).then_some(last - p),
        });
    }
    let mut s = Slots::one(first);
    while let Some(t) = spec.next_after(s.last, anchor).filter(|&t| t <= until) {
        if s.count == MAX_COUNTED {
            // Only the last ones are still needed; at this rate they are within a day of
            // `until`. The count stays at the limit.
            let mut t = spec.next_after((until - 24 * 3600 * 1000).max(t), anchor);
            while let Some(x) = t.filter(|&x| x <= until) {
                s.before_last = Some(s.last);
                s.last = x;
                t = spec.next_after(x, anchor);
            }
            return Some(s);
        }
        s.before_last = Some(s.last);
        s.last = t;
        s.count += 1;
    }
    Some(s)
}

/// Moves a routine on to its first due time after `now`, or finishes a one-shot as
/// `finished`. Returns the due times passed over since the slot just handled (`r.due_at`):
/// they came while its run was going or being retried.
fn move_on(r: &mut Routine, spec: &Spec, now: i64, finished: RoutineState) -> Option<Slots> {
    let anchor = r.created_at.unwrap_or(now);
    let handled = r.due_at.take().unwrap_or(now);
    r.retry = 0;
    r.missed_count = 0;
    r.missed_from = None;
    let passed = slots_between(spec, anchor, handled, now);
    match spec.next_after(now, anchor) {
        Some(next) if r.recurring() => r.next_run_at = Some(next),
        _ => {
            r.state = finished;
            r.next_run_at = None;
        }
    }
    passed.filter(|_| r.recurring())
}

/// The record of due times a routine passed over while a run of it was going.
pub(super) fn passed_over(r: &Routine, slots: Slots, handled: Option<i64>, now: i64) -> RoutineRun {
    let during = handled.map_or("an earlier run".into(), |t| format!("its run for {}", iso_string(t)));
    gap_entry(
        r,
        RunOutcome::Skipped,
        slots,
        now,
        format!("{during} was still going then (a routine never runs twice at once)"),
    )
}

/// A success. Returns the due times passed over meanwhile, as a record.
pub(super) fn apply_success(r: &mut Routine, spec: &Spec, now: i64) -> Option<RoutineRun> {
    let handled = r.due_at;
    release(r);
    r.last_run_at = Some(now);
    r.error_message = None;
    let passed = move_on(r, spec, now, RoutineState::Done)?;
    Some(passed_over(r, passed, handled, now))
}

/// A failed attempt: a retry after `backoff`, or — retries used up — the next due time.
/// Returns the due times passed over meanwhile, as a record.
pub(super) fn apply_failure(
    r: &mut Routine,
    spec: &Spec,
    now: i64,
    error: String,
    backoff: Duration,
) -> Option<RoutineRun> {
    release(r);
    r.last_run_at = Some(now);
    r.retry += 1;
    if r.retry <= r.max_retry {
        r.next_run_at = Some(now + backoff.as_millis() as i64);
        r.error_message = Some(format!("attempt {} failed: {error}", r.retry));
        return None;
    }
    let attempts = r.retry;
    r.error_message = Some(format!("failed after {attempts} attempts: {error}"));
    let handled = r.due_at;
    let passed = move_on(r, spec, now, RoutineState::Failed)?;
    Some(passed_over(r, passed, handled, now))
}

/// An attempt cut off after it changed something: not retried. It waits, as `unknown_run`,
/// for the user's Retry or Dismiss; a recurring routine goes on to its next time meanwhile.
/// Returns the due times passed over meanwhile, as a record.
pub(super) fn apply_unknown(r: &mut Routine, spec: &Spec, now: i64, run_id: &str, error: &str) -> Option<RoutineRun> {
    release(r);
    r.last_run_at = Some(now);
    r.unknown_run = Some(UnknownRun {
        run_id: run_id.to_string(),
        due_at: r.due_at,
    });
    r.error_message = Some(format!("outcome unknown, not retried: {error}"));
    let handled = r.due_at;
    let passed = move_on(r, spec, now, RoutineState::Failed)?;
    Some(passed_over(r, passed, handled, now))
}

/// An inline run the heartbeat could not take (`why`): on to the next due time; a one-shot
/// waits a while for the heartbeat to be able to take it. Returns the due times passed over
/// meanwhile, as a record.
pub(super) fn apply_skipped(r: &mut Routine, spec: &Spec, now: i64, why: &str) -> Option<RoutineRun> {
    release(r);
    r.error_message = Some(format!("skipped: {why}"));
    if !r.recurring() {
        r.due_at = None;
        r.next_run_at = Some(now + 15 * 60_000);
        return None;
    }
    let handled = r.due_at;
    let passed = move_on(r, spec, now, RoutineState::Pending)?;
    Some(passed_over(r, passed, handled, now))
}

/// None of the due times in hand runs (the catch-up policy said so, `why`): on to the next
/// one; a one-shot fails with that reason.
pub(super) fn apply_missed(r: &mut Routine, spec: &Spec, now: i64, why: &str) {
    // The due times are recorded by the caller, `missed` all of them: none is passed over.
    r.due_at = Some(now);
    move_on(r, spec, now, RoutineState::Failed);
    if r.state == RoutineState::Failed {
        r.error_message = Some(format!("missed: {why}"));
    }
}

/// The due times an attempt of `r` stands for: its slot, and with `catch_up: all` the
/// earlier ones it was told about.
pub(super) fn covered(r: &Routine, slot: Option<i64>) -> (Option<i64>, u32, Option<i64>) {
    match (r.missed_count, r.missed_from) {
        (n, Some(from)) if n > 0 => (Some(from), n + 1, slot),
        _ => (slot, 1, None),
    }
}

/// The record of an attempt that ended without [`super::Scheduler::finish`] (recovered).
pub(super) fn run_entry(r: &Routine, outcome: RunOutcome, now: i64, error: Option<String>) -> RoutineRun {
    let (due_at, due_count, last_due_at) = covered(r, r.due_at.or(r.next_run_at));
    RoutineRun {
        run_id: r.run_id.clone().unwrap_or_else(short_id),
        routine_id: r.id.clone(),
        mode: r.execution_mode,
        due_at,
        started_at: r.run_started_at.unwrap_or(now),
        finished_at: now,
        outcome,
        session_id: None,
        summary: None,
        error,
        deterministic: r.kind.is_some(),
        due_count,
        last_due_at,
        side_effect: r.side_effect.clone(),
        // Recovered after a crash: what the cut-off turn used was not kept.
        usage: None,
        evidence: None,
    }
}

/// A record for due times that did not run (`missed`, `skipped`).
pub(super) fn gap_entry(r: &Routine, outcome: RunOutcome, slots: Slots, now: i64, why: String) -> RoutineRun {
    RoutineRun {
        run_id: short_id(),
        routine_id: r.id.clone(),
        mode: r.execution_mode,
        due_at: Some(slots.first),
        started_at: now,
        finished_at: now,
        outcome,
        session_id: None,
        summary: None,
        error: Some(why),
        deterministic: r.kind.is_some(),
        due_count: slots.count,
        last_due_at: (slots.count > 1).then_some(slots.last),
        side_effect: None,
        usage: None,
        evidence: None,
    }
}
