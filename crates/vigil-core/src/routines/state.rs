//! The routine state machine (seed 003 §11): pending → running → done / failed, recurring
//! routines back to pending with their next time, retries with back-off, and when a claim
//! left `running` is stale. Pure functions on one routine; the scheduler calls them under
//! the task block's lock.
//!
//! Must never: touch a file or read a clock (`now` is passed in).

use std::time::Duration;

use vigil_protocol::{RoutineRun, RoutineState, RunOutcome};

use super::model::Routine;
use super::schedule::Spec;
use super::scheduler::short_id;

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
}

pub(super) fn apply_success(r: &mut Routine, spec: &Spec, now: i64) {
    release(r);
    r.last_run_at = Some(now);
    r.retry = 0;
    r.error_message = None;
    r.due_at = None;
    match spec.next_after(now, r.created_at.unwrap_or(now)) {
        Some(next) if r.recurring() => r.next_run_at = Some(next),
        _ => {
            r.state = RoutineState::Done;
            r.next_run_at = None;
        }
    }
}

pub(super) fn apply_failure(r: &mut Routine, spec: &Spec, now: i64, error: String, backoff: Duration) {
    release(r);
    r.last_run_at = Some(now);
    r.retry += 1;
    if r.retry <= r.max_retry {
        r.next_run_at = Some(now + backoff.as_millis() as i64);
        r.error_message = Some(format!("attempt {} failed: {error}", r.retry));
        return;
    }
    let attempts = r.retry;
    r.retry = 0;
    r.due_at = None;
    r.error_message = Some(format!("failed after {attempts} attempts: {error}"));
    match spec.next_after(now, r.created_at.unwrap_or(now)) {
        Some(next) if r.recurring() => r.next_run_at = Some(next),
        _ => {
            r.state = RoutineState::Failed;
            r.next_run_at = None;
        }
    }
}

pub(super) fn run_entry(r: &Routine, outcome: RunOutcome, now: i64, error: Option<String>) -> RoutineRun {
    RoutineRun {
        run_id: short_id(),
        routine_id: r.id.clone(),
        mode: r.execution_mode,
        due_at: r.due_at.or(r.next_run_at),
        started_at: r.run_started_at.unwrap_or(now),
        finished_at: now,
        outcome,
        session_id: None,
        summary: None,
        error,
        deterministic: r.kind.is_some(),
    }
}
