//! Missed runs, by policy (`catch_up`): when a routine's time came while Vigil could not run
//! it — it was not running, the computer slept, background work was paused — which of the
//! due times that passed runs now, and how the others are recorded. And the one
//! notification that sums up what a wake-up found.
//!
//! A due time is *late* when it came after the scheduler last looked (or before this start)
//! and more than [`super::SchedulerConfig::late_grace`] ago. Then, by the routine's policy:
//! - `once`: one run, for the latest due time, if the routine is at most
//!   [`super::SchedulerConfig::catch_up_limit`] late; the earlier due times are `missed`.
//!   Later than that, all of them are `missed`.
//! - `skip`: the latest due time runs only if it is within the grace; every other is
//!   `missed`.
//! - `all`: one run, for the latest due time, told how many earlier ones it stands for.
//!
//! Due times that passed while Vigil was running but busy (a job waiting for a free slot, a
//! tick late) are not late: the latest runs (`all`: told of the others) and the earlier ones
//! are `skipped`.
//!
//! Must never: touch a file or read a clock.

use vigil_protocol::{CatchUp, RunOutcome};

use super::model::{iso_string, Routine};
use super::schedule::Spec;
use super::state::{slots_between, Slots};

/// What the scheduler knew before this tick.
#[derive(Debug, Clone, Copy)]
pub(super) struct Watch {
    /// When it last looked at the routines (a tick that was not paused); `None` before the
    /// first tick of this start.
    pub watched: Option<i64>,
    pub grace: i64,
    pub limit: i64,
}

/// Which due times of a routine run now, and what the others become.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Decision {
    /// The due time to run for; `None`: none runs, the routine moves to its next time.
    pub run: Option<i64>,
    /// With `catch_up: all`: the earlier due times the run stands for.
    pub told: Option<Slots>,
    /// Due times that do not run, and as what (`missed`, `skipped`), with why.
    pub not_run: Option<(Slots, RunOutcome, String)>,
    /// The routine fell due while Vigil could not run it (for the summary).
    pub late: bool,
}

impl Decision {
    fn run(at: i64) -> Self {
        Self {
            run: Some(at),
            told: None,
            not_run: None,
            late: false,
        }
    }
}

/// Decides for a pending routine whose `next_run_at` is at or before `now`.
pub(super) fn decide(r: &Routine, spec: &Spec, now: i64, w: Watch) -> Decision {
    let t = r.next_run_at.unwrap_or(now);
    let anchor = r.created_at.unwrap_or(now);
    // The due time in hand (a retry's, or one kept for a free job slot), else the next one.
    let head = r.due_at.unwrap_or(t);
    let rest = if r.recurring() {
        slots_between(spec, anchor, head, now)
    } else {
        None
    };
    let late = w.watched.is_none_or(|seen| t > seen) && now - t > w.grace;
    if !late && (rest.is_none() || r.due_at.is_some()) {
        // On time; or a retry, whose passing due times are recorded when it ends.
        return Decision::run(head);
    }
    let due = Slots::after(head, rest);
    let earlier = due.without_last();
    // The record's own fields carry the due times and their count (the history shows them);
    // its text says why.
    let (outcome, why) = if late {
        (RunOutcome::Missed, "Vigil could not run it then")
    } else {
        (RunOutcome::Skipped, "Vigil was busy then")
    };
    let not_run = |s: Slots, how: &str| Some((s, outcome, format!("{why}; {how}")));
    let none_runs = |how: &str| Decision {
        run: None,
        told: None,
        not_run: not_run(due, how),
        late,
    };
    match r.catch_up {
        CatchUp::All => Decision {
            run: Some(due.last),
            told: earlier,
            not_run: None,
            late,
        },
        // Busy is not missed: only delayed, so the latest due time always runs.
        CatchUp::Once if late && now - t > w.limit => none_runs(&format!(
            "more than {} late, so not run (catch-up: once)",
            hours(w.limit)
        )),
        CatchUp::Skip if late && now - due.last > w.grace => none_runs("not run (catch-up: skip)"),
        CatchUp::Once | CatchUp::Skip => Decision {
            run: Some(due.last),
            told: None,
            not_run: earlier.and_then(|e| not_run(e, &format!("it ran once, for {}", iso_string(due.last)))),
            late,
        },
    }
}

/// "24 hours".
fn hours(ms: i64) -> String {
    let h = ms / 3_600_000;
    if h == 1 {
        "an hour".into()
    } else {
        format!("{h} hours")
    }
}

/// Why routines were late, for the notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Away {
    /// The first look of this start: Vigil was not running.
    Stopped,
    /// Background work was paused (the tray).
    Paused,
    /// The scheduler did not get to look: the computer slept (or its clock jumped).
    Asleep,
}

/// "3 routines missed while the computer slept; 1 ran now". `late` routines fell due while
/// Vigil could not run them; `ran` of them run now.
pub(super) fn summary(late: usize, ran: usize, away: Away) -> String {
    let while_ = match away {
        Away::Stopped => "while Vigil was not running",
        Away::Paused => "while background work was paused",
        Away::Asleep => "while the computer slept",
    };
    let routines = if late == 1 { "routine" } else { "routines" };
    let ran = match ran {
        0 => "none ran now (their catch-up setting)".to_string(),
        n => format!("{n} ran now"),
    };
    format!("{late} {routines} missed {while_}; {ran}")
}

/// The words a catch-up run (`all`) is given about the due times it stands for.
pub(super) fn told_words(r: &Routine) -> Option<String> {
    let from = r.missed_from.filter(|_| r.missed_count > 0)?;
    let times = if r.missed_count == 1 { "time" } else { "times" };
    Some(format!(
        "Catch-up: this routine also missed {} earlier due {times} (from {}) while Vigil could not run it. \
         Cover them all in this run.",
        r.missed_count,
        iso_string(from)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000;
    const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

    fn hourly(policy: CatchUp, next: i64) -> (Routine, Spec) {
        let mut r = Routine::new("r".into(), "R".into(), T0);
        r.schedule = Some("1h".into());
        r.catch_up = policy;
        r.next_run_at = Some(next);
        (r, Spec::parse(Some("1h"), "UTC").unwrap())
    }

    fn watch(watched: Option<i64>) -> Watch {
        Watch {
            watched,
            grace: 2 * 60_000,
            limit: 24 * H,
        }
    }

    #[test]
    fn on_time_runs_its_due_time() {
        for p in [CatchUp::Once, CatchUp::Skip, CatchUp::All] {
            let (r, spec) = hourly(p, T0 + H);
            assert_eq!(
                decide(&r, &spec, T0 + H + 1000, watch(Some(T0 + H - 1))),
                Decision::run(T0 + H)
            );
        }
    }

    #[test]
    fn each_policy_after_ten_hours_asleep() {
        let now = T0 + 10 * H + 30 * 60_000;
        let seen = Some(T0 + H / 2);
        let (r, spec) = hourly(CatchUp::Once, T0 + H);
        let d = decide(&r, &spec, now, watch(seen));
        assert_eq!((d.run, d.late), (Some(T0 + 10 * H), true));
        let (missed, outcome, _) = d.not_run.unwrap();
        assert_eq!(
            (missed.first, missed.last, missed.count, outcome),
            (T0 + H, T0 + 9 * H, 9, RunOutcome::Missed)
        );

        let (r, spec) = hourly(CatchUp::Skip, T0 + H);
        let d = decide(&r, &spec, now, watch(seen));
        assert_eq!(d.run, None);
        let (missed, ..) = d.not_run.unwrap();
        assert_eq!((missed.first, missed.last, missed.count), (T0 + H, T0 + 10 * H, 10));

        let (r, spec) = hourly(CatchUp::All, T0 + H);
        let d = decide(&r, &spec, now, watch(seen));
        assert_eq!((d.run, d.not_run.is_none()), (Some(T0 + 10 * H), true));
        let told = d.told.unwrap();
        assert_eq!((told.first, told.last, told.count), (T0 + H, T0 + 9 * H, 9));
    }

    #[test]
    fn once_gives_up_after_a_day_and_skip_still_runs_a_due_time_within_the_grace() {
        let (r, spec) = hourly(CatchUp::Once, T0 + H);
        let d = decide(&r, &spec, T0 + 30 * H, watch(None));
        assert_eq!((d.run, d.not_run.unwrap().0.count), (None, 30));
        let (r, spec) = hourly(CatchUp::Skip, T0 + H);
        let d = decide(&r, &spec, T0 + 5 * H + 60_000, watch(None));
        assert_eq!(d.run, Some(T0 + 5 * H));
        assert_eq!(d.not_run.unwrap().0.count, 4);
    }

    #[test]
    fn due_times_passed_while_busy_are_skipped_not_missed() {
        // Looked at 01:00 (a job waited for a free slot), looks again at 03:10.
        let (r, spec) = hourly(CatchUp::Skip, T0 + H);
        let d = decide(&r, &spec, T0 + 3 * H + 10 * 60_000, watch(Some(T0 + H)));
        assert_eq!((d.run, d.late), (Some(T0 + 3 * H), false));
        let (s, outcome, _) = d.not_run.unwrap();
        assert_eq!((s.count, outcome), (2, RunOutcome::Skipped));
    }

    #[test]
    fn the_summary_reads_as_the_issue_says() {
        assert_eq!(
            summary(3, 1, Away::Asleep),
            "3 routines missed while the computer slept; 1 ran now"
        );
        assert_eq!(
            summary(1, 0, Away::Stopped),
            "1 routine missed while Vigil was not running; none ran now (their catch-up setting)"
        );
    }
}
