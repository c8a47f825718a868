//! One fire, from its trigger to its action: a paused routine records it; a routine whose
//! run is going merges it into the next; a check or URL not approved as written asks again
//! and runs nothing; the check decides; too many fires in an hour pause the routine (said
//! once); then the one call into the routines, [`crate::routines::Scheduler::run_fired`].
//!
//! Must never: hold the state lock across an await; lose a fire without a trace.

use vigil_protocol::{RoutineRun, RunOutcome};

use super::check::Verdict;
use super::{approval, Watch};
use crate::routines::{CheckGate, Routine};

const HOUR_MS: i64 = 3_600_000;

/// Local midnight's day number of `ms` (fires today).
fn day(ms: i64) -> i64 {
    use chrono::{Local, TimeZone};
    Local
        .timestamp_millis_opt(ms)
        .single()
        .map_or(ms / 86_400_000, |t| t.date_naive().to_epoch_days() as i64)
}

impl Watch {
    /// A trigger fired for routine `id` with `evidence`.
    pub async fn fire(&self, id: &str, evidence: String) {
        let mut evidence = evidence;
        loop {
            let Some(r) = self.routine(id) else { return };
            if !self.admit(&r, &evidence).await {
                return;
            }
            // A fire merged while the check ran is checked again, even when this check was
            // quiet: the change it carries may be the one that makes the condition true.
            if let Some(evidence_now) = self.checked(&r, evidence).await {
                if self.count(&r, &evidence_now).await {
                    self.scheduler().run_fired(r.clone(), evidence_now).await;
                }
            }
            match self.end_run(id) {
                Some(merged) => evidence = merged,
                None => return,
            }
        }
    }

    /// Paused, running (merged), or not approved: `false`, with its trace. Otherwise the
    /// run is marked going.
    async fn admit(&self, r: &Routine, evidence: &str) -> bool {
        let granted = self.network_granted(&r.id);
        let approved = self.shared.approvals.approved(r, granted);
        let fingerprint = approval::fingerprint(r, granted);
        enum Why {
            Paused(String),
            Ask,
        }
        let why = {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            let w = state.entry(r.id.clone()).or_default();
            if let Some(p) = &w.paused {
                Some(Why::Paused(p.clone()))
            } else if w.running {
                // Merged into the next run.
                let merged = w.merged.get_or_insert_with(String::new);
                if !merged.is_empty() {
                    merged.push_str("\n\n");
                }
                merged.push_str(evidence);
                return false;
            } else if !approved {
                let first = w.asked.as_deref() != Some(fingerprint.as_str());
                w.asked = Some(fingerprint);
                first.then_some(Why::Ask)
            } else {
                w.running = true;
                None
            }
        };
        match why {
            None if approved => true,
            None => {
                // Asked already about this text: recorded, not asked again.
                self.record(
                    r,
                    RunOutcome::Skipped,
                    "not approved as written: approve it in Routines",
                    evidence,
                );
                false
            }
            Some(Why::Paused(p)) => {
                self.record(r, RunOutcome::Skipped, &format!("fired while paused: {p}"), evidence);
                false
            }
            Some(Why::Ask) => {
                let text = format!(
                    "Routine \"{}\" did not run: what it runs (its check or URL) is not approved as written now. Open Routines to see what it would run, how often and with what access, and approve it.",
                    r.title
                );
                self.record(
                    r,
                    RunOutcome::Skipped,
                    "not approved as written: approve it in Routines",
                    evidence,
                );
                self.scheduler()
                    .tell(r, "Vigil: a routine needs your approval", &text)
                    .await;
                self.publish(r);
                false
            }
        }
    }

    /// The check, if any: the evidence to act on, or `None` (quiet or broken).
    async fn checked(&self, r: &Routine, evidence: String) -> Option<String> {
        let Some(c) = &r.check else { return Some(evidence) };
        let verdict = match self.check_sandbox().run(&r.id, &c.command).await {
            Ok(run) => self.shared.memory.decide(&r.id, &c.when, &run),
            Err(e) => Verdict::Broken(e),
        };
        match verdict {
            Verdict::Quiet => None,
            Verdict::Fire(out) => Some(
                format!("{evidence}\n\nCheck `{}` ({}):\n{out}", c.command, c.when)
                    .trim_start()
                    .to_string(),
            ),
            Verdict::Broken(why) => {
                self.record(r, RunOutcome::Failed, &format!("the check failed: {why}"), &evidence);
                None
            }
        }
    }

    /// Counts a fire; over the hourly limit the routine pauses (said once) and `false`.
    async fn count(&self, r: &Routine, evidence: &str) -> bool {
        let now = self.scheduler().deps().clock.now_ms();
        let max = self.shared.max_per_hour.load(std::sync::atomic::Ordering::Relaxed);
        let paused = {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            let w = state.entry(r.id.clone()).or_default();
            while w.fires.front().is_some_and(|t| *t <= now - HOUR_MS) {
                w.fires.pop_front();
            }
            w.fires.push_back(now);
            if w.fires.len() > max {
                let why = format!("it fired more than {max} times in an hour; approve it again in Routines to resume");
                w.paused = Some(why.clone());
                Some(why)
            } else {
                if w.day != day(now) {
                    w.day = day(now);
                    w.fired_today = 0;
                }
                w.fired_today += 1;
                w.last_fired_at = Some(now);
                w.last_evidence = evidence
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| l.chars().take(160).collect());
                None
            }
        };
        self.save_counters();
        self.publish(r);
        match paused {
            None => true,
            Some(why) => {
                self.record(r, RunOutcome::Skipped, &format!("paused: {why}"), evidence);
                let text = format!("Routine \"{}\" paused itself: {why}.", r.title);
                self.scheduler().tell(r, "Vigil: a routine paused itself", &text).await;
                self.scheduler().changed();
                false
            }
        }
    }

    /// The run ended: the evidence merged meanwhile, if any, for the next. The routine is
    /// not running until that next run is admitted again (were it left running, the next
    /// run's own admission would take it for a fire during a run and merge it away for
    /// good, and every later fire with it).
    fn end_run(&self, id: &str) -> Option<String> {
        let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
        let w = state.entry(id.to_string()).or_default();
        w.running = false;
        w.merged.take()
    }

    /// A fire that did not run, in the routine's history.
    pub(super) fn record(&self, r: &Routine, outcome: RunOutcome, why: &str, evidence: &str) {
        let now = self.scheduler().deps().clock.now_ms();
        self.scheduler().deps().runlog.record(&RoutineRun {
            run_id: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            routine_id: r.id.clone(),
            mode: r.execution_mode,
            due_at: Some(now),
            started_at: now,
            finished_at: now,
            outcome,
            session_id: None,
            summary: evidence
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.chars().take(160).collect()),
            error: Some(why.to_string()),
            deterministic: true,
            due_count: 1,
            last_due_at: None,
            side_effect: None,
            usage: None,
            evidence: Some(evidence)
                .filter(|e| !e.trim().is_empty())
                .map(crate::routines::bounded_evidence),
        });
    }

    /// The gate in front of a scheduled routine with a check (for the runtime's
    /// [`crate::routines::JobHost::check`]).
    pub async fn gate(&self, r: &Routine) -> CheckGate {
        if !self.approved(r) {
            self.ask_once(r).await;
            return CheckGate::Refused("not approved as written: approve it in Routines".into());
        }
        match self.checked(r, String::new()).await {
            Some(e) if self.count(r, &e).await => CheckGate::Act(Some(e)),
            Some(_) => CheckGate::Refused("paused: it fired too often in an hour".into()),
            None => CheckGate::Quiet,
        }
    }

    /// Tells the user, once per text, that `r` waits for their approval.
    pub(super) async fn ask_once(&self, r: &Routine) {
        let fingerprint = approval::fingerprint(r, self.network_granted(&r.id));
        let first = {
            let mut state = self.shared.state.lock().unwrap_or_else(|e| e.into_inner());
            let w = state.entry(r.id.clone()).or_default();
            let first = w.asked.as_deref() != Some(fingerprint.as_str());
            w.asked = Some(fingerprint);
            first
        };
        if first {
            let text = format!(
                "Routine \"{}\" did not run: what it runs (its check or URL) is not approved as written now. Open Routines to see what it would run, how often and with what access, and approve it.",
                r.title
            );
            self.scheduler()
                .tell(r, "Vigil: a routine needs your approval", &text)
                .await;
            self.publish(r);
        }
    }
}
