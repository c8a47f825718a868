//! 10 000 simulated hours with a restart about every 100 hours — some with a few hours of
//! downtime, some with more than a day, some crashing in the middle of a job — and the
//! computer asleep now and then, checked against an independent model of when each routine
//! is due and what its `catch_up` policy (`once`, `skip`, `all`) makes of the due times that
//! pass while Vigil cannot run it: every due time is accounted for exactly once, by a run or
//! a `missed` record, as the policy says (0 duplicates, 0 silent misses).

use std::sync::Arc;

use crate::clock::Clock;
use std::collections::BTreeMap;
use std::time::Duration;

use vigil_protocol::{CatchUp, ExecutionMode, RoutineDraft, RoutineRun, RoutineSource};

use super::scheduler_tests::{scheduler, FakeHost, NullSink, HOUR, MIN, T0};
use super::*;
use crate::clock::ManualClock;
use crate::session::PRIMARY_SESSION;

const END: i64 = T0 + 10_000 * HOUR;
/// When the one-shots are due: inside a sleep (see [`sleeps`]).
const ONCE_AT: i64 = T0 + 5000 * HOUR + 17 * MIN;

/// Restart times (~every 100 h, jittered), their downtime, and which crash mid-job.
fn restarts() -> Vec<(i64, i64, bool)> {
    let mut out = Vec::new();
    let mut t = T0;
    let mut k = 0i64;
    loop {
        t += (97 + (k * 7) % 7) * HOUR + (k * 13 % 60) * MIN;
        if t >= END {
            return out;
        }
        let downtime = match k % 20 {
            // More than a day: past `once`'s limit.
            14 => 26 * HOUR + 10 * MIN,
            _ if k % 5 == 4 => 3 * HOUR + 20 * MIN,
            _ => 0,
        };
        let crash = k % 10 == 7;
        out.push((t, downtime, crash));
        k += 1;
    }
}

/// Times the computer sleeps (the same scheduler, no tick meanwhile), `(from, to)`: about
/// every 230 h, for 45 min, 5 h, 30 h or 90 s (within the grace: not late), none within two
/// hours of a restart; and one over the one-shots' time.
fn sleeps(restarts: &[(i64, i64, bool)]) -> Vec<(i64, i64)> {
    let lengths = [45 * MIN, 5 * HOUR, 30 * HOUR, 90_000];
    let mut out: Vec<(i64, i64)> = (1..)
        .map(|k: i64| {
            let from = T0 + k * 230 * HOUR + (k * 17 % 60) * MIN + 7_000;
            (from, from + lengths[k as usize % lengths.len()])
        })
        .take_while(|&(_, to)| to < END)
        .collect();
    out.push((ONCE_AT - 2 * HOUR - 3 * MIN, ONCE_AT + 2 * HOUR));
    out.retain(|&(from, to)| {
        restarts
            .iter()
            .all(|&(at, down, _)| to + 2 * HOUR < at || from > at + down + 2 * HOUR)
    });
    out.sort();
    out
}

/// Every slot of a routine in `(T0, END)`, worked out without the scheduler's schedule code:
/// each UTC minute is turned into the routine's local time with chrono-tz and tested against
/// the schedule's fields written out by hand. Across the 10 000 hours both zones change to
/// and from summer time (none of these slots falls in a skipped or repeated local hour).
fn slots(title: &str) -> Vec<i64> {
    use chrono::{Datelike, TimeZone, Timelike, Weekday};
    let matches: Box<dyn Fn(i64) -> bool> = match title {
        "Every 7 hours" => return (1..).map(|k| T0 + k * 7 * HOUR).take_while(|&t| t < END).collect(),
        "Once" => return vec![ONCE_AT],
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

/// What a policy makes of the due times of a routine: each due time runs, except those in
/// a window when Vigil could not run it (`[from, to]`, the look at `to`), where the policy
/// decides. Returns the runs (first and last due time they stand for, and how many) and the
/// `missed` records, the same way.
type Span = (i64, i64, u32);

fn model(all: &[i64], windows: &[(i64, i64)], policy: CatchUp) -> (Vec<Span>, Vec<Span>) {
    const GRACE: i64 = 2 * MIN;
    const LIMIT: i64 = 24 * HOUR;
    let (mut runs, mut missed) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < all.len() {
        let Some(&(_, to)) = windows.iter().find(|&&(from, to)| all[i] >= from && all[i] <= to) else {
            runs.push((all[i], all[i], 1));
            i += 1;
            continue;
        };
        let due: Vec<i64> = all[i..].iter().copied().take_while(|&t| t <= to).collect();
        i += due.len();
        let (first, last, n) = (due[0], due[due.len() - 1], due.len() as u32);
        if to - first <= GRACE {
            assert_eq!(n, 1, "the model's schedules are hours apart");
            runs.push((first, first, 1));
            continue;
        }
        let earlier = (n > 1).then(|| (first, due[due.len() - 2], n - 1));
        match policy {
            CatchUp::All => runs.push((first, last, n)),
            CatchUp::Once if to - first > LIMIT => missed.push((first, last, n)),
            CatchUp::Skip if to - last > GRACE => missed.push((first, last, n)),
            CatchUp::Once | CatchUp::Skip => {
                runs.push((last, last, 1));
                missed.extend(earlier);
            }
        }
    }
    (runs, missed)
}

/// The span a record stands for.
fn span(r: &RoutineRun) -> Span {
    let first = r.due_at.unwrap();
    (first, r.last_due_at.unwrap_or(first), r.due_count)
}

#[tokio::test]
async fn ten_thousand_hours_catch_up_once_runs_each_due_time_or_one_late_run_and_records_the_rest() {
    soak(CatchUp::Once).await;
}

#[tokio::test]
async fn ten_thousand_hours_catch_up_skip_runs_only_on_time_and_records_every_missed_due_time() {
    soak(CatchUp::Skip).await;
}

#[tokio::test]
async fn ten_thousand_hours_catch_up_all_runs_once_for_every_missed_due_time() {
    soak(CatchUp::All).await;
}

/// The routines of five schedules with `policy`, 10 000 hours (see the module docs). One
/// policy per test: the three run side by side.
async fn soak(policy: CatchUp) {
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
    let mut routines = Vec::new();
    for (title, schedule, mode, kind, zone) in specs {
        let d = RoutineDraft {
            title: Some(title.into()),
            schedule: schedule.map(str::to_string),
            execution_mode: Some(mode),
            kind: kind.map(str::to_string),
            timezone: zone.map(str::to_string),
            next_run_at: schedule.is_none().then_some(ONCE_AT),
            catch_up: Some(policy),
            ..RoutineDraft::default()
        };
        let r = s.create(d, RoutineSource::Manual, false).await.unwrap().0;
        routines.push((title, r));
    }
    let plan = restarts();
    let naps = sleeps(&plan);
    let mut windows: Vec<(i64, i64)> = plan.iter().filter(|p| p.1 > 0).map(|p| (p.0, p.0 + p.1)).collect();
    windows.extend(naps.iter().copied());
    let mut seen: BTreeMap<String, Vec<RoutineRun>> = BTreeMap::new();
    let mut next_restart = plan.iter().peekable();
    let mut next_sleep = naps.iter().peekable();
    let (mut ticks, mut crashes) = (0u64, 0u64);
    let collect = |s: &Scheduler, seen: &mut BTreeMap<String, Vec<RoutineRun>>| {
        for (_, r) in &routines {
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
            DueTasks::finished(&s, &due, DueOutcome::Done("ok".into()), None);
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
        let restart_at = next_restart.peek().map_or(i64::MAX, |p| p.0);
        let sleep_at = next_sleep.peek().map_or(i64::MAX, |p| p.0);
        if sleep_at <= next_due && sleep_at < restart_at {
            // Asleep: the same scheduler looks again only when the computer wakes.
            let (_, to) = next_sleep.next().copied().unwrap();
            clock.advance(Duration::from_millis((to - now) as u64));
            continue;
        }
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
    for (title, r) in &routines {
        let all = slots(title);
        assert_eq!(r.next_run_at, all.first().copied(), "{title}: the first slot");
        let (want_runs, want_missed) = model(&all, &windows, policy);
        let records = seen.remove(&r.id).unwrap_or_default();
        let of = |o: RunOutcome| -> Vec<Span> { records.iter().filter(|x| x.outcome == o).map(span).collect() };
        let (ran, missed) = (of(RunOutcome::Ok), of(RunOutcome::Missed));
        let interrupted = records.iter().filter(|x| x.outcome == RunOutcome::Interrupted).count();
        let other: Vec<&RoutineRun> = records
            .iter()
            .filter(|x| !matches!(x.outcome, RunOutcome::Ok | RunOutcome::Interrupted | RunOutcome::Missed))
            .collect();
        assert!(other.is_empty(), "{}: {other:?}", r.id);
        assert_eq!(
            ran, want_runs,
            "{}: the runs the policy gives, in order, each once",
            r.id
        );
        assert_eq!(missed, want_missed, "{}: the missed records the policy gives", r.id);
        // Every due time is in exactly one record: a run's or a missed one's.
        let mut covered: Vec<i64> = Vec::new();
        for (first, last, n) in ran.iter().chain(&missed) {
            let inside: Vec<i64> = all.iter().copied().filter(|t| t >= first && t <= last).collect();
            assert_eq!(inside.len() as u32, *n, "{}: a record's count", r.id);
            covered.extend(inside);
        }
        covered.sort();
        let duplicates = covered.windows(2).filter(|w| w[0] == w[1]).count();
        covered.dedup();
        assert_eq!(
            (duplicates, covered.len()),
            (0, all.len()),
            "{}: 0 duplicates, 0 silent misses",
            r.id
        );
        lines.push(format!(
            "{:<16} due {:>5}: ran {:>5} (standing for {:>5}), missed records {:>3} ({:>4} due times), interrupted-and-retried {}",
            r.id,
            all.len(),
            ran.len(),
            ran.iter().map(|x| x.2).sum::<u32>(),
            missed.len(),
            missed.iter().map(|x| x.2).sum::<u32>(),
            interrupted
        ));
    }
    println!(
        "catch_up {policy:?}, 10 000 simulated hours: {} restarts ({} with downtime, {} crashing mid-job), {} sleeps, {ticks} ticks",
        plan.len(),
        plan.iter().filter(|p| p.1 > 0).count(),
        crashes,
        naps.len()
    );
    for l in lines {
        println!("  {l}");
    }
    assert!(crashes >= 5, "the crash path was exercised: {crashes}");
}
