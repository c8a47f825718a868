//! 10 000 simulated hours with a restart about every 100 hours — some with a few hours of
//! downtime, some crashing in the middle of a job — checked against an independent model
//! of when each routine is due: every due run happened exactly once.

use std::collections::BTreeMap;
use std::time::Duration;

use vigil_protocol::{ExecutionMode, RoutineDraft, RoutineRun, RoutineSource};

use super::scheduler_tests::{scheduler, FakeHost, NullSink, HOUR, MIN, T0};
use super::*;
use crate::clock::ManualClock;
use crate::session::PRIMARY_SESSION;

const END: i64 = T0 + 10_000 * HOUR;

/// Restart times (~every 100 h, jittered), and which restarts have downtime or crash mid-job.
fn restarts() -> Vec<(i64, i64, bool)> {
    let mut out = Vec::new();
    let mut t = T0;
    let mut k = 0i64;
    loop {
        t += (97 + (k * 7) % 7) * HOUR + (k * 13 % 60) * MIN;
        if t >= END {
            return out;
        }
        let downtime = if k % 5 == 4 { 3 * HOUR + 20 * MIN } else { 0 };
        let crash = k % 10 == 7;
        out.push((t, downtime, crash));
        k += 1;
    }
}

/// Every slot of a routine in `(T0, END)`, worked out without the scheduler's schedule code:
/// each UTC minute is turned into the routine's local time with chrono-tz and tested against
/// the schedule's fields written out by hand. Across the 10 000 hours both zones change to
/// and from summer time (none of these slots falls in a skipped or repeated local hour).
fn slots(title: &str) -> Vec<i64> {
    use chrono::{Datelike, TimeZone, Timelike, Weekday};
    let matches: Box<dyn Fn(i64) -> bool> = match title {
        "Every 7 hours" => return (1..).map(|k| T0 + k * 7 * HOUR).take_while(|&t| t < END).collect(),
        "Once" => return vec![T0 + 5000 * HOUR + 17 * MIN],
        // 0 9 * * 1-5, Europe/Berlin
        "Weekday report" => Box::new(|t| {
            let l = chrono_tz::Europe::Berlin.timestamp_millis_opt(t).unwrap();
            l.minute() == 0 && l.hour() == 9 && !matches!(l.weekday(), Weekday::Sat | Weekday::Sun)
        }),
        // 30 */2 * * *, UTC
        "Check" => Box::new(|t| {
            let l = chrono::Utc.timestamp_millis_opt(t).unwrap();
            l.minute() == 30 && l.hour() % 2 == 0
        }),
        // 0 */6 * * *, America/New_York
        "Reminder" => Box::new(|t| {
            let l = chrono_tz::America::New_York.timestamp_millis_opt(t).unwrap();
            l.minute() == 0 && l.hour() % 6 == 0
        }),
        other => panic!("no model for {other}"),
    };
    (1..)
        .map(|k| T0 + k * MIN)
        .take_while(|&t| t < END)
        .filter(|&t| matches(t))
        .collect()
}

/// The runs the model expects: each slot once, except that slots inside a downtime window
/// (inclusive of the restart moment) collapse into one run of the first of them.
fn expected(all: &[i64], down: &[(i64, i64)]) -> Vec<i64> {
    let mut slots = all.to_vec();
    slots.retain(|&t| {
        !down
            .iter()
            .any(|&(a, b)| t > a && t <= b && all.iter().any(|&u| u >= a && u < t))
    });
    slots
}

#[tokio::test]
async fn ten_thousand_hours_with_restarts_every_due_run_happens_exactly_once() {
    let base = std::path::Path::new("/dev/shm");
    let dir = if base.is_dir() {
        tempfile::tempdir_in(base).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let clock = ManualClock::new(T0);
    let host = Arc::new(FakeHost::default());
    let start = |clock: &ManualClock| {
        let s = scheduler(dir.path(), clock, Arc::new(NullSink));
        s.set_host(host.clone());
        s
    };
    let mut s = start(&clock);
    let specs = [
        ("Every 7 hours", Some("7h"), ExecutionMode::Isolated, None, None),
        (
            "Weekday report",
            Some("0 9 * * 1-5"),
            ExecutionMode::Isolated,
            None,
            Some("Europe/Berlin"),
        ),
        ("Check", Some("30 */2 * * *"), ExecutionMode::Inline, None, None),
        (
            "Reminder",
            Some("0 */6 * * *"),
            ExecutionMode::Inline,
            Some("time_reminder"),
            Some("America/New_York"),
        ),
        ("Once", None, ExecutionMode::Isolated, None, None),
    ];
    let mut ids = Vec::new();
    for (title, schedule, mode, kind, zone) in specs {
        let d = RoutineDraft {
            title: Some(title.into()),
            schedule: schedule.map(str::to_string),
            execution_mode: Some(mode),
            kind: kind.map(str::to_string),
            timezone: zone.map(str::to_string),
            next_run_at: schedule.is_none().then_some(T0 + 5000 * HOUR + 17 * MIN),
            ..RoutineDraft::default()
        };
        ids.push(s.create(d, RoutineSource::Manual, false).await.unwrap().0);
    }
    let plan = restarts();
    let down: Vec<(i64, i64)> = plan.iter().filter(|p| p.1 > 0).map(|p| (p.0, p.0 + p.1)).collect();
    let mut seen: BTreeMap<String, Vec<RoutineRun>> = BTreeMap::new();
    let mut next_restart = plan.iter().peekable();
    let (mut ticks, mut crashes) = (0u64, 0u64);
    let collect = |s: &Scheduler, seen: &mut BTreeMap<String, Vec<RoutineRun>>| {
        for r in &ids {
            let runs = s.history(&r.id);
            s.deps().runlog.remove(&r.id);
            seen.entry(r.id.clone()).or_default().extend(runs);
        }
    };
    loop {
        let now = clock.now_ms();
        if now >= END {
            break;
        }
        s.tick().await;
        ticks += 1;
        let due = DueTasks::due(&s, now);
        if !due.is_empty() {
            DueTasks::finished(&s, &due, DueOutcome::Done("ok".into()));
        }
        s.settle().await;
        // The run logs keep 50 runs each: read them well before they fill; nobody reads
        // the mailbox, so empty it now and then.
        if ticks % 20 == 0 {
            collect(&s, &mut seen);
            let mailbox: Vec<String> = s
                .deps()
                .meta
                .load(PRIMARY_SESSION)
                .unwrap()
                .meta
                .mailbox
                .into_iter()
                .map(|e| e.event_id)
                .collect();
            s.deps().meta.ack_drain(PRIMARY_SESSION, &mailbox).await.unwrap();
        }
        let next_due = s.next_due().unwrap_or(END).min(END);
        match next_restart.peek() {
            Some(&&(at, downtime, crash)) if at <= next_due => {
                next_restart.next();
                clock.advance(Duration::from_millis((at - now) as u64));
                if crash && downtime == 0 {
                    // Crash mid-job: the next due run is claimed by an instance whose jobs
                    // never finish, then that instance is gone.
                    let t = s.next_due().unwrap_or(at).max(at);
                    clock.advance(Duration::from_millis((t - at) as u64));
                    let doomed = scheduler(dir.path(), &clock, Arc::new(NullSink));
                    doomed.set_host(Arc::new(FakeHost {
                        hang: true,
                        ..FakeHost::default()
                    }));
                    if !doomed.tick().await.claimed.is_empty() {
                        crashes += 1;
                    }
                    collect(&doomed, &mut seen);
                }
                clock.advance(Duration::from_millis(downtime as u64));
                s = start(&clock);
            }
            _ => clock.advance(Duration::from_millis((next_due - now).max(1_000) as u64)),
        }
    }
    collect(&s, &mut seen);
    let mut lines = Vec::new();
    for (r, (title, ..)) in ids.iter().zip(specs) {
        let all = slots(title);
        assert_eq!(r.next_run_at, all.first().copied(), "{title}: the first slot");
        let want = expected(&all, &down);
        let runs = seen.remove(&r.id).unwrap_or_default();
        let ok: Vec<i64> = runs
            .iter()
            .filter(|x| x.outcome == RunOutcome::Ok)
            .map(|x| x.due_at.unwrap())
            .collect();
        let interrupted = runs.iter().filter(|x| x.outcome == RunOutcome::Interrupted).count();
        let other: Vec<&RoutineRun> = runs
            .iter()
            .filter(|x| !matches!(x.outcome, RunOutcome::Ok | RunOutcome::Interrupted))
            .collect();
        assert!(other.is_empty(), "{}: {other:?}", r.id);
        assert_eq!(ok.len(), want.len(), "{}: runs vs due slots", r.id);
        assert_eq!(ok, want, "{}: every due slot ran exactly once, in order", r.id);
        lines.push(format!(
            "{:<16} due {:>5}, ran {:>5}, interrupted-and-retried {}",
            r.id,
            want.len(),
            ok.len(),
            interrupted
        ));
    }
    println!(
        "10 000 simulated hours: {} restarts ({} with downtime, {} crashing mid-job), {ticks} ticks",
        plan.len(),
        down.len(),
        crashes
    );
    for l in lines {
        println!("  {l}");
    }
    assert!(crashes >= 5, "the crash path was exercised: {crashes}");
}
