//! The two writes that start and end a run: [`Scheduler::claim`], the locked part of a tick
//! (normalise, recover, skip, claim — one write), and [`Scheduler::finish`] (done, pending
//! with the next time, a retry, or `unknown`). See [`super::scheduler`] for the rules.
//!
//! Must never: start a run it has not claimed, or overrule a claim someone else recovered.

use std::collections::HashMap;

use vigil_protocol::{RoutineRun, RoutineSource, RoutineState, RunOutcome};

use super::catch_up::{decide, Watch};
use super::model::short_id;
use super::model::Routine;
use super::schedule::Spec;
use super::scheduler::{is_job, Claimed, RunResult, Scheduler, TickReport};
use super::state::{
    apply_failure, apply_missed, apply_skipped, apply_success, apply_unknown, covered, gap_entry, release, run_entry,
    stale_claim,
};
use super::store::StoreError;

/// What the locked part of a tick did, for what follows it.
#[derive(Default)]
pub(super) struct Claims {
    pub(super) claimed: Vec<Claimed>,
    /// Routines the agent added on its own, to announce.
    pub(super) announce: Vec<Routine>,
    /// One per routine that fell due while Vigil could not run it: whether it runs now.
    pub(super) late: Vec<bool>,
    /// Runs recovered as `unknown` (they had changed something), to tell the user.
    pub(super) unknown: Vec<(Routine, RoutineRun)>,
}
impl Scheduler {
    /// The locked part of a tick: normalise, recover, skip, claim — one write.
    pub(super) async fn claim(
        &self,
        now: i64,
        problems: &HashMap<String, String>,
        report: &mut TickReport,
    ) -> Result<Claims, StoreError> {
        let zone = self.shared.config.default_zone.clone();
        let instance = self.shared.instance.clone();
        let watch = Watch {
            watched: *self.shared.watched.lock().unwrap_or_else(|e| e.into_inner()),
            grace: self.shared.config.late_grace.as_millis() as i64,
            limit: self.shared.config.catch_up_limit.as_millis() as i64,
        };
        let grace = self.shared.config.stuck_grace.as_millis() as i64;
        let mut runs = Vec::new();
        let result = self
            .shared
            .deps
            .store
            .update(|entries| {
                // Read and extended under the file lock, so a concurrent tick of this
                // instance sees this one's claims as in flight, never as stale.
                let mut in_flight = self.shared.in_flight.lock().unwrap_or_else(|e| e.into_inner());
                let mut jobs_running = entries
                    .iter()
                    .filter_map(|e| e.routine.as_ref().ok())
                    .filter(|r| r.state == RoutineState::Running && in_flight.contains(&r.id) && is_job(r))
                    .count();
                let mut out = Claims::default();
                for e in entries.iter_mut() {
                    let Ok(r) = &mut e.routine else { continue };
                    if r.timezone.is_none() {
                        r.timezone = Some(zone.clone());
                    }
                    if r.created_at.is_none() {
                        r.created_at = Some(now);
                    }
                    if let Some(p) = problems.get(&r.id) {
                        r.error_message = Some(p.clone());
                        continue;
                    }
                    let Ok(spec) = Spec::parse(r.schedule_text(), r.timezone.as_deref().unwrap_or(&zone)) else {
                        continue;
                    };
                    if r.source == RoutineSource::HeartbeatReflect && !r.announced {
                        r.announced = true;
                        out.announce.push(r.clone());
                    }
                    if r.state == RoutineState::Running && !in_flight.contains(&r.id) {
                        let why = stale_claim(r, &instance, now, grace);
                        if let Some(why) = why {
                            report.recovered.push(r.id.clone());
                            if r.side_effect.is_some() {
                                // It had changed something: running it again could do it twice.
                                let run = run_entry(r, RunOutcome::Unknown, now, Some(why.clone()));
                                let passed = apply_unknown(r, &spec, now, &run.run_id, &why);
                                out.unknown.push((r.clone(), run.clone()));
                                runs.push(run);
                                runs.extend(passed);
                            } else {
                                runs.push(run_entry(r, RunOutcome::Interrupted, now, Some(why.clone())));
                                runs.extend(apply_failure(r, &spec, now, why, self.backoff(r.retry + 1)));
                            }
                        }
                    }
                    // A triggered routine has no due time: `crate::watch` fires it.
                    if !r.live() || r.state != RoutineState::Pending || r.triggered() {
                        continue;
                    }
                    let anchor = r.created_at.unwrap_or(now);
                    let Some(due) = r.next_run_at else {
                        match spec.next_after(now, anchor) {
                            Some(next) => r.next_run_at = Some(next),
                            None => {
                                r.state = RoutineState::Failed;
                                r.error_message = Some("a one-shot routine needs next_run_at".into());
                            }
                        }
                        continue;
                    };
                    if due > now {
                        continue;
                    }
                    let decision = decide(r, &spec, now, watch);
                    if let Some((slots, outcome, why)) = &decision.not_run {
                        if *outcome == RunOutcome::Missed {
                            report.missed.push(r.id.clone());
                        }
                        runs.push(gap_entry(r, *outcome, *slots, now, why.clone()));
                    }
                    if decision.late {
                        out.late.push(decision.run.is_some());
                    }
                    let Some(slot) = decision.run else {
                        let why = decision.not_run.map(|(.., why)| why).unwrap_or_default();
                        apply_missed(r, &spec, now, &why);
                        continue;
                    };
                    if r.due_at != Some(slot) {
                        // A due time of its own (not a retry's): kept while it waits for a
                        // job slot, so the decision is made once.
                        r.due_at = Some(slot);
                        r.retry = 0;
                        r.missed_count = decision.told.map_or(0, |t| t.count);
                        r.missed_from = decision.told.map(|t| t.first);
                    }
                    if is_job(r) {
                        if jobs_running >= self.shared.config.max_concurrent_jobs {
                            report.waiting.push(r.id.clone());
                            continue;
                        }
                        jobs_running += 1;
                    }
                    let run_id = short_id();
                    r.state = RoutineState::Running;
                    r.claimed_by = Some(instance.clone());
                    r.run_started_at = Some(now);
                    r.run_id = Some(run_id.clone());
                    r.side_effect = None;
                    report.claimed.push(r.id.clone());
                    in_flight.insert(r.id.clone());
                    out.claimed.push(Claimed {
                        routine: r.clone(),
                        run_id,
                        due_at: slot,
                        started_at: now,
                        by_trigger: false,
                    });
                }
                Ok(out)
            })
            .await;
        for run in &runs {
            self.shared.deps.runlog.record(run);
        }
        result
    }

    /// Moves a claimed run to its next state (seed 003 §11: done / pending with the next
    /// time / retry; `unknown`: waits for the user), records it in the run log with the due
    /// times passed over meanwhile, and releases it.
    pub async fn finish(&self, claimed: &Claimed, result: RunResult, ran: super::Ran) {
        let now = self.now();
        let zone = self.shared.config.default_zone.clone();
        let instance = self.shared.instance.clone();
        let id = claimed.routine.id.clone();
        let backoff = self.backoff(claimed.routine.retry + 1);
        let mut passed = None;
        let mut effect = None;
        let outcome = self
            .shared
            .deps
            .store
            .update(|entries| {
                let Some(r) = entries
                    .iter_mut()
                    .filter_map(|e| e.routine.as_mut().ok())
                    .find(|r| r.id == id)
                else {
                    return Ok(false);
                };
                if r.claimed_by.as_deref() != Some(instance.as_str()) || r.state != RoutineState::Running {
                    // Someone recovered it meanwhile (stuck limit); their decision stands.
                    return Ok(false);
                }
                let spec = Spec::parse(r.schedule_text(), r.timezone.as_deref().unwrap_or(&zone));
                effect = r.side_effect.clone();
                passed = match (&result, spec) {
                    (RunResult::Ok { .. } | RunResult::Acknowledged, Ok(spec)) => apply_success(r, &spec, now),
                    (
                        RunResult::Failed {
                            outcome: RunOutcome::Unknown,
                            error,
                        },
                        Ok(spec),
                    ) => apply_unknown(r, &spec, now, &claimed.run_id, error),
                    (RunResult::Failed { error, .. }, Ok(spec)) => apply_failure(r, &spec, now, error.clone(), backoff),
                    (RunResult::Skipped(why), Ok(spec)) => apply_skipped(r, &spec, now, why),
                    (_, Err(p)) => {
                        release(r);
                        r.error_message = Some(p);
                        None
                    }
                };
                Ok(true)
            })
            .await;
        self.shared
            .in_flight
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Err(e) = &outcome {
            self.report_once(
                "finish",
                format!("The result of routine \"{id}\" could not be saved: {e}"),
            );
        }
        let (outcome, summary, error) = match result {
            RunResult::Ok { summary } => (RunOutcome::Ok, summary, None),
            RunResult::Acknowledged => (RunOutcome::Acknowledged, None, None),
            RunResult::Failed { outcome, error } => (outcome, None, Some(error)),
            RunResult::Skipped(why) => (RunOutcome::Skipped, None, Some(why)),
        };
        let (due_at, due_count, last_due_at) = covered(&claimed.routine, Some(claimed.due_at));
        let evidence = self
            .shared
            .evidence
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&claimed.run_id);
        self.shared.deps.runlog.record(&RoutineRun {
            run_id: claimed.run_id.clone(),
            routine_id: id,
            mode: claimed.routine.execution_mode,
            due_at,
            started_at: claimed.started_at,
            finished_at: now,
            outcome,
            session_id: ran.session_id,
            summary,
            error,
            deterministic: ran.deterministic,
            due_count,
            last_due_at,
            side_effect: effect.filter(|_| outcome == RunOutcome::Unknown),
            usage: ran.usage,
            evidence,
        });
        if let Some(p) = passed {
            self.shared.deps.runlog.record(&p);
        }
        self.changed();
        self.poke();
    }
}
