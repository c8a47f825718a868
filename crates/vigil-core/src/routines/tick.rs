//! The tick and the loop: [`Scheduler::tick`] decides everything that is due (claims it in
//! one locked write, then hands the runs on), and [`Scheduler::run`] is the single loop that
//! owns all timing — the heartbeat interval and the routines. The decisions they follow are
//! in [`super::scheduler`]'s head.
//!
//! Must never: read the system clock (only the injected clock); let one routine's failure
//! stop the loop or the others; start a run it has not claimed.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use vigil_protocol::{Event, RoutineSource, RoutineState, Source};

use super::catch_up::Away;
use super::claim::Claims;
use super::schedule::Spec;
use super::scheduler::{Scheduler, TickReport};
use super::store::Parsed;

impl Scheduler {
    /// Why each routine of this file version cannot be scheduled (bad cron or zone).
    /// Computed once per file version, so a tick on an unchanged file parses nothing.
    fn problems(&self, parsed: &Parsed, key: usize) -> HashMap<String, String> {
        let mut cache = self.shared.problems.lock().unwrap_or_else(|e| e.into_inner());
        if cache.0 != key {
            let zone = &self.shared.config.default_zone;
            let mut problems = HashMap::new();
            for e in parsed.entries() {
                match &e.routine {
                    Ok(r) => {
                        if let Err(p) = Spec::parse(r.schedule_text(), r.timezone.as_deref().unwrap_or(zone)) {
                            problems.insert(r.id.clone(), p);
                        }
                    }
                    Err(p) => {
                        problems.insert(e.id().unwrap_or("?").to_string(), p.clone());
                    }
                }
            }
            *cache = (key, problems);
        }
        cache.1.clone()
    }

    /// One scheduling decision at the clock's now. Never fails: problems are reported as
    /// events and in the routines' `error_message`, and the other routines go on.
    pub async fn tick(&self) -> TickReport {
        let now = self.now();
        let mut report = TickReport {
            looked_at: now,
            ..TickReport::default()
        };
        let state = match self.shared.deps.store.read() {
            Ok(s) => s,
            Err(e) => {
                self.report_once("file", format!("Routines could not be read: {e}"));
                return report;
            }
        };
        if let Parsed::Corrupted(e) = &state.parsed {
            report.corrupted = true;
            self.tell_corrupted(e, state.kept.is_some());
            if state.kept.is_none() {
                return report;
            }
        } else {
            let mut reported = self.shared.reported.lock().unwrap_or_else(|e| e.into_inner());
            reported.remove("file");
            reported.remove(CORRUPTED_NOTICE);
        }
        // A file held for the user's Trust (store::trust): said once, with the list anew.
        let told = self
            .shared
            .reported
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(HELD_NOTICE);
        if state.held && !told {
            self.report_once(HELD_NOTICE, super::store::trust::HELD_MESSAGE.into());
            self.changed();
        } else if !state.held && told {
            self.shared
                .reported
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(HELD_NOTICE);
        }
        let host = self.shared.host.read().unwrap_or_else(|e| e.into_inner()).clone();
        if host.is_some_and(|h| h.paused()) {
            self.shared.paused_seen.store(true, Ordering::Relaxed);
            report.paused = true;
            report.next_due = self.next_due();
            return report;
        }
        let away = self.away();
        // While the block is corrupted, the last good routines.
        let routines = state.routines();
        let problems = self.problems(routines, Arc::as_ptr(&state) as usize);
        let in_flight = self.shared.in_flight.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut work = false;
        for e in routines.entries() {
            let Ok(r) = &e.routine else { continue };
            if let Some(p) = problems.get(&r.id) {
                work |= r.error_message.as_deref() != Some(p.as_str());
                continue;
            }
            work |= r.timezone.is_none()
                || r.created_at.is_none()
                || (r.source == RoutineSource::HeartbeatReflect && !r.announced)
                || (r.state == RoutineState::Running && !in_flight.contains(&r.id))
                || (r.live()
                    && !r.triggered()
                    && r.state == RoutineState::Pending
                    && r.next_run_at.is_none_or(|t| t <= now));
        }
        for (id, p) in &problems {
            self.report_once(id, format!("Routine \"{id}\" cannot run: {p}"));
        }
        if work {
            match self.claim(now, &problems, &mut report).await {
                Ok(Claims {
                    claimed,
                    announce,
                    late,
                    unknown,
                }) => {
                    self.dispatch(claimed);
                    for r in announce {
                        self.announce(&r).await;
                    }
                    self.tell_late(&late, away);
                    for (r, run) in unknown {
                        self.tell_unknown(&r, &run).await;
                    }
                    self.changed();
                }
                Err(e) => self.report_once("claim", format!("Routines could not be updated: {e}")),
            }
        }
        *self.shared.watched.lock().unwrap_or_else(|e| e.into_inner()) = Some(now);
        report.next_due = self.next_due_except(&report.waiting);
        report
    }

    /// The earliest `next_run_at` of a pending, enabled routine (from the cached file).
    pub fn next_due(&self) -> Option<i64> {
        self.next_due_except(&[])
    }

    /// [`Self::next_due`] without the routines in `skip` (jobs waiting for a free slot: the
    /// end of a running job wakes the loop for them, and counting them would spin it).
    fn next_due_except(&self, skip: &[String]) -> Option<i64> {
        let state = self.shared.deps.store.read().ok()?;
        state
            .routines()
            .entries()
            .iter()
            .filter_map(|e| e.routine.as_ref().ok())
            .filter(|r| r.live() && r.state == RoutineState::Pending && !skip.contains(&r.id))
            .filter_map(|r| r.next_run_at)
            .min()
    }

    /// Why routines found late by this tick were: Vigil had not looked since it started,
    /// the tray paused background work, or the computer slept.
    fn away(&self) -> Away {
        let paused = self.shared.paused_seen.swap(false, Ordering::Relaxed);
        if self.shared.watched.lock().unwrap_or_else(|e| e.into_inner()).is_none() {
            Away::Stopped
        } else if paused {
            Away::Paused
        } else {
            Away::Asleep
        }
    }

    /// Says that the task block is corrupted: an error line each time what is wrong changes,
    /// and one notification until it is good again. `kept`: the last good routines run on.
    fn tell_corrupted(&self, problem: &str, kept: bool) {
        let (line, body) = if kept {
            (
                format!(
                    "The task block in HEARTBEAT.md is corrupted ({problem}). The last good routines keep running; a change \
                     through the Routines pane or Vigil's routine tools repairs the block from them (the broken file is \
                     kept as HEARTBEAT.md.corrupt), or fix the JSON by hand."
                ),
                "A hand edit broke the routines in HEARTBEAT.md. The last good routines keep running; open Routines to \
                 restore the block, or ask Vigil to repair it."
                    .to_string(),
            )
        } else {
            (
                format!(
                    "The task block in HEARTBEAT.md is corrupted ({problem}) and there is no good copy of it; no routine \
                     runs until the JSON is fixed."
                ),
                "A hand edit broke the routines in HEARTBEAT.md, and there is no good copy to run from: no routine runs \
                 until the JSON is fixed."
                    .to_string(),
            )
        };
        self.report_once("file", line);
        let first = self
            .shared
            .reported
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(CORRUPTED_NOTICE.into(), String::new())
            .is_none();
        if first && self.host().is_none_or(|h| h.notifications()) {
            self.shared.deps.emitter.emit(
                Source::Scheduler,
                Event::notice(
                    vigil_protocol::NotificationKind::Routine,
                    "Vigil: the routines in HEARTBEAT.md are broken",
                    body,
                ),
            );
        }
    }

    /// The single loop that owns all timing: the heartbeat's interval (through `interval`)
    /// and the routines. Sleeps until the earlier of the two, and ticks. A hand edit of the
    /// task file, a wall-clock jump and a due time passed while the machine slept end the
    /// sleep through [`super::alarm::Alarm`]; where it cannot, the loop looks every
    /// `max_nap`.
    pub async fn run(self, mut interval: super::IntervalTimer, shutdown: tokio_util::sync::CancellationToken) {
        let mut alarm = super::alarm::Alarm::new(&self.shared.deps.store.path(), self.shared.deps.clock.is_system());
        loop {
            let report = self.tick().await;
            interval.fire_if_due();
            let now = self.now();
            let config = &self.shared.config;
            let nap = if alarm.exact() {
                config.watched_nap
            } else {
                config.max_nap
            };
            // Due when the tick looked and still pending, the tick could not claim it (paused,
            // a schedule it cannot use, a file it cannot write): looked at again after the
            // nap, not at once. Resuming pokes the loop.
            let stuck_retry = now + config.max_nap.as_millis() as i64;
            let next_due = report
                .next_due
                .map(|t| if t <= report.looked_at { stuck_retry } else { t });
            let routine_wait = next_due
                .map(|t| Duration::from_millis((t - now).max(0) as u64))
                .unwrap_or(nap)
                .min(nap);
            let deadline = interval.deadline(tokio::time::Instant::now() + routine_wait);
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = self.shared.poke.notified() => {}
                _ = interval.config_changed() => {}
                _ = tokio::time::sleep_until(deadline) => {}
                () = alarm.ring(next_due) => {}
            }
        }
    }
}

/// The `reported` key of the one notification about a corrupted task block.
const CORRUPTED_NOTICE: &str = "file-notice";
/// The key of the notice that `HEARTBEAT.md` is held (said once per hold).
const HELD_NOTICE: &str = "held-notice";
