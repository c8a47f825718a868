//! The scheduler on real files with a manual clock and a host that records jobs instead of
//! calling a model: claims under concurrent ticks, one-shots, inline hand-over, retries,
//! crash and restart, stuck runs, catch-up, bad input, corruption, announcements, timeouts.

use std::sync::Arc;

use crate::clock::Clock;
use crate::events::Emitter;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::sync::Semaphore;
use vigil_protocol::{ExecutionMode, Message, RoutineDraft, RoutineSource, RoutineState, StopReason};

use super::*;
use crate::clock::ManualClock;
use crate::events::{CollectingSink, EventSink};
use crate::run::{RunRequest, RunResult as RunOutput};
use crate::session::{MetaStore, SessionStore, PRIMARY_SESSION};

pub(super) const T0: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
pub(super) const MIN: i64 = 60_000;
pub(super) const HOUR: i64 = 60 * MIN;

/// Records jobs; can fail the next N, hang until cancelled, or wait for a permit.
#[derive(Default)]
pub(super) struct FakeHost {
    pub runs: Mutex<Vec<String>>,
    pub fail_next: AtomicU32,
    pub hang: bool,
    pub gate: Option<Arc<Semaphore>>,
    /// Background activity paused (the tray).
    pub paused: std::sync::atomic::AtomicBool,
    /// An interval heartbeat is scheduled.
    pub heartbeat_scheduled: bool,
    /// The heartbeat is switched off.
    pub heartbeat_off: bool,
    /// Each job first runs a command (`exec: make deploy`), as far as its claim can tell.
    pub changes_first: bool,
}

use std::sync::Mutex;

#[async_trait::async_trait]
impl JobHost for FakeHost {
    fn paused(&self) -> bool {
        self.paused.load(Ordering::SeqCst)
    }

    fn heartbeat_scheduled(&self) -> bool {
        self.heartbeat_scheduled
    }

    fn heartbeat_enabled(&self) -> bool {
        !self.heartbeat_off
    }
}

#[async_trait::async_trait]
impl crate::run::Runner for FakeHost {
    async fn run(&self, job: RunRequest) -> RunOutput {
        if self.changes_first {
            let exec = serde_json::json!({"command": "make deploy"});
            let effects = job.extras.effects.as_ref().expect("a job tells its effects");
            effects.0.before_effect("exec", &exec).await;
        }
        if self.hang {
            job.deadline.expect("a job has a deadline").cancelled().await;
            return RunOutput {
                error: Some("cancelled".into()),
                ..RunOutput::ended(StopReason::Cancelled)
            };
        }
        if let Some(g) = &self.gate {
            g.acquire().await.unwrap().forget();
        }
        self.runs.lock().unwrap().push(job.session_id.clone());
        if self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return RunOutput::failed("the provider failed");
        }
        let mut reply = Message::user_text(format!("Done: {}", job.session_id), 0);
        reply.role = vigil_protocol::Role::Assistant;
        RunOutput {
            reply: Some(reply),
            ..RunOutput::ended(StopReason::EndTurn)
        }
    }
}

/// Drops events (the long simulation would keep hundreds of megabytes of them).
pub(super) struct NullSink;
impl EventSink for NullSink {
    fn emit(&self, _: vigil_protocol::EventEnvelope) {}
}

pub(super) fn scheduler(dir: &std::path::Path, clock: &ManualClock, sink: Arc<dyn EventSink>) -> Scheduler {
    let clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let store = SessionStore::open_with(dir, clock.clone(), Default::default()).unwrap();
    let workspace = dir.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    Scheduler::new(
        Deps {
            store: RoutineStore::new(&workspace, store.locks().clone(), clock.clone()),
            runlog: RunLog::new(dir),
            meta: MetaStore::new(store, clock.clone()),
            emitter: Emitter::new(sink, clock.clone()),
            clock,
        },
        SchedulerConfig {
            default_zone: "UTC".into(),
            ..SchedulerConfig::default()
        },
    )
}

struct Rig {
    dir: tempfile::TempDir,
    clock: ManualClock,
    s: Scheduler,
    host: Arc<FakeHost>,
    sink: CollectingSink,
}

fn rig(host: FakeHost) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let sink = CollectingSink::default();
    let s = scheduler(dir.path(), &clock, Arc::new(sink.clone()));
    let host = Arc::new(host);
    s.set_host(host.clone());
    Rig {
        dir,
        clock,
        s,
        host,
        sink,
    }
}

fn draft(title: &str, schedule: Option<&str>, mode: ExecutionMode) -> RoutineDraft {
    RoutineDraft {
        title: Some(title.into()),
        description: Some(format!("do {title}")),
        schedule: schedule.map(str::to_string),
        execution_mode: Some(mode),
        timeout_seconds: Some(60),
        ..RoutineDraft::default()
    }
}

impl Rig {
    async fn add(&self, d: RoutineDraft) -> Routine {
        self.s.create(d, RoutineSource::Chat, true).await.unwrap().0
    }

    fn routine(&self, id: &str) -> Routine {
        let state = self.s.deps().store.read().unwrap();
        state
            .parsed
            .entries()
            .iter()
            .filter_map(|e| e.routine.as_ref().ok())
            .find(|r| r.id == id)
            .cloned()
            .unwrap()
    }

    fn advance_to(&self, t: i64) {
        let now = self.clock.now_ms();
        self.clock
            .advance(std::time::Duration::from_millis((t - now).max(0) as u64));
    }

    fn outcomes(&self, id: &str) -> Vec<RunOutcome> {
        self.s.history(id).into_iter().map(|r| r.outcome).collect()
    }

    /// The notifications titled `title` since the last look, by body (drops the other events).
    fn notifications(&self, title: &str) -> Vec<String> {
        self.sink
            .take()
            .into_iter()
            .filter_map(|e| match e.event {
                vigil_protocol::Event::Notification { title: t, body, .. } if t == title => Some(body),
                _ => None,
            })
            .collect()
    }

    fn errors(&self) -> Vec<String> {
        self.sink
            .take()
            .into_iter()
            .filter_map(|e| match e.event {
                vigil_protocol::Event::Error { message, .. } => Some(message),
                _ => None,
            })
            .collect()
    }
}

#[tokio::test]
async fn an_isolated_run_is_claimed_once_under_two_concurrent_ticks() {
    let gate = Arc::new(Semaphore::new(0));
    let r = rig(FakeHost {
        gate: Some(gate.clone()),
        ..FakeHost::default()
    });
    let job = r.add(draft("Fetch news", Some("1h"), ExecutionMode::Isolated)).await;
    r.advance_to(T0 + HOUR);
    let (a, b) = tokio::join!(r.s.tick(), r.s.tick());
    assert_eq!(a.claimed.len() + b.claimed.len(), 1, "{a:?} {b:?}");
    assert_eq!(r.routine(&job.id).state, RoutineState::Running);
    // While the job runs, further ticks leave it alone.
    let c = r.s.tick().await;
    assert!(c.claimed.is_empty() && c.recovered.is_empty(), "{c:?}");
    gate.add_permits(10);
    r.s.settle().await;
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    let after = r.routine(&job.id);
    assert_eq!(after.state, RoutineState::Pending);
    assert_eq!(after.next_run_at, Some(T0 + 2 * HOUR));
    assert_eq!(after.last_run_at, Some(T0 + HOUR));
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Ok]);
    // The result reached the conversation's mailbox.
    let meta = r.s.deps().meta.load(PRIMARY_SESSION).unwrap().meta;
    assert_eq!(meta.mailbox.len(), 1);
    assert_eq!(meta.mailbox[0].event_type, "job_completed");
    assert!(meta.mailbox[0].source.starts_with("job_fetch_news_"));
}

#[tokio::test]
async fn while_paused_nothing_runs_and_on_resume_what_fell_due_runs_once() {
    let r = rig(FakeHost::default());
    let job = r.add(draft("Fetch news", Some("1h"), ExecutionMode::Isolated)).await;
    r.host.paused.store(true, Ordering::SeqCst);
    r.advance_to(T0 + 3 * HOUR + MIN);
    let t = r.s.tick().await;
    assert!(t.paused && t.claimed.is_empty(), "{t:?}");
    assert_eq!(r.routine(&job.id).state, RoutineState::Pending);
    r.host.paused.store(false, Ordering::SeqCst);
    assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&job.id));
    r.s.settle().await;
    assert!(r.s.tick().await.claimed.is_empty(), "three missed slots, one run");
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    assert_eq!(r.routine(&job.id).next_run_at, Some(T0 + 4 * HOUR));
}

#[tokio::test]
async fn a_one_shot_runs_once() {
    let r = rig(FakeHost::default());
    let once = r
        .add(RoutineDraft {
            next_run_at: Some(T0 + 10 * MIN),
            ..draft("Call back", None, ExecutionMode::Isolated)
        })
        .await;
    assert!(r.s.tick().await.claimed.is_empty());
    r.advance_to(T0 + 10 * MIN);
    assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&once.id));
    r.s.settle().await;
    r.advance_to(T0 + 50 * HOUR);
    assert!(r.s.tick().await.claimed.is_empty());
    r.s.settle().await;
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    let done = r.routine(&once.id);
    assert_eq!((done.state, done.next_run_at), (RoutineState::Done, None));
}

#[tokio::test]
async fn inline_routines_due_together_go_to_one_heartbeat_and_come_back() {
    let r = rig(FakeHost::default());
    let a = r.add(draft("Drink water", Some("30m"), ExecutionMode::Inline)).await;
    let b = r
        .add(draft("Stretch", Some("*/30 * * * *"), ExecutionMode::Inline))
        .await;
    r.advance_to(T0 + 30 * MIN);
    assert_eq!(r.s.tick().await.claimed.len(), 2);
    // One heartbeat takes both.
    let due = DueTasks::due(&r.s, T0);
    assert_eq!(
        due.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        [a.id.as_str(), b.id.as_str()]
    );
    assert!(DueTasks::due(&r.s, T0).is_empty());
    DueTasks::finished(&r.s, &due, DueOutcome::Done("sent".into()), None);
    r.s.settle().await;
    for id in [&a.id, &b.id] {
        let x = r.routine(id);
        assert_eq!((x.state, x.next_run_at), (RoutineState::Pending, Some(T0 + 60 * MIN)));
        assert_eq!(r.outcomes(id), [RunOutcome::Ok]);
    }
    assert!(
        r.host.runs.lock().unwrap().is_empty(),
        "inline routines never start a job"
    );
    // A heartbeat that cannot run (quiet hours) skips them to their next time.
    r.advance_to(T0 + 60 * MIN);
    r.s.tick().await;
    let due = DueTasks::due(&r.s, T0);
    DueTasks::finished(&r.s, &due, DueOutcome::Skipped("heartbeat quiet-hours".into()), None);
    r.s.settle().await;
    assert_eq!(r.routine(&a.id).next_run_at, Some(T0 + 90 * MIN));
    assert_eq!(r.outcomes(&a.id), [RunOutcome::Ok, RunOutcome::Skipped]);
}

#[tokio::test]
async fn failures_back_off_then_a_one_shot_fails_and_a_recurring_one_moves_on() {
    let r = rig(FakeHost {
        fail_next: AtomicU32::new(100),
        ..FakeHost::default()
    });
    let once = r
        .add(RoutineDraft {
            next_run_at: Some(T0 + MIN),
            max_retry: Some(2),
            ..draft("Once", None, ExecutionMode::Isolated)
        })
        .await;
    let hourly = r
        .add(RoutineDraft {
            max_retry: Some(0),
            ..draft("Hourly", Some("0 * * * *"), ExecutionMode::Isolated)
        })
        .await;
    r.advance_to(T0 + MIN);
    r.s.tick().await;
    r.s.settle().await;
    let x = r.routine(&once.id);
    assert_eq!(
        (x.state, x.retry, x.next_run_at),
        (RoutineState::Pending, 1, Some(T0 + MIN + 30_000))
    );
    r.advance_to(T0 + MIN + 30_000);
    r.s.tick().await;
    r.s.settle().await;
    let x = r.routine(&once.id);
    assert_eq!((x.retry, x.next_run_at), (2, Some(T0 + MIN + 30_000 + 60_000)));
    r.advance_to(T0 + MIN + 90_000);
    r.s.tick().await;
    r.s.settle().await;
    let x = r.routine(&once.id);
    assert_eq!(x.state, RoutineState::Failed);
    assert!(x
        .error_message
        .unwrap()
        .starts_with("failed after 3 attempts: the provider failed"));
    assert_eq!(r.outcomes(&once.id), [RunOutcome::Failed; 3]);
    // The hourly one fails at 01:00 with no retries: it waits for 02:00.
    r.advance_to(T0 + HOUR);
    r.s.tick().await;
    r.s.settle().await;
    let h = r.routine(&hourly.id);
    assert_eq!(
        (h.state, h.retry, h.next_run_at),
        (RoutineState::Pending, 0, Some(T0 + 2 * HOUR))
    );
    // The last failure was announced to the user.
    let mailbox = r.s.deps().meta.load(PRIMARY_SESSION).unwrap().meta.mailbox;
    assert_eq!(mailbox.iter().filter(|e| e.event_type == "job_failed").count(), 2);
}

#[tokio::test]
async fn a_crash_mid_run_is_retried_by_the_next_start_never_run_twice() {
    let r = rig(FakeHost::default());
    let job = r.add(draft("Backup", Some("1d"), ExecutionMode::Isolated)).await;
    // The first instance claims the run, and its job never finishes: the process "died".
    let doomed = scheduler(r.dir.path(), &r.clock, Arc::new(NullSink));
    doomed.set_host(Arc::new(FakeHost {
        hang: true,
        ..FakeHost::default()
    }));
    r.advance_to(T0 + 24 * HOUR);
    assert_eq!(doomed.tick().await.claimed, std::slice::from_ref(&job.id));
    // The restart (`r.s`, a new instance) recovers it as interrupted and retries after 30 s.
    let t = r.s.tick().await;
    assert_eq!((t.recovered.clone(), t.claimed.clone()), (vec![job.id.clone()], vec![]));
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Interrupted]);
    assert!(r.s.tick().await.claimed.is_empty());
    r.advance_to(T0 + 24 * HOUR + 30_000);
    assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&job.id));
    r.s.settle().await;
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    let x = r.routine(&job.id);
    assert_eq!(
        (x.state, x.retry, x.next_run_at),
        (RoutineState::Pending, 0, Some(T0 + 48 * HOUR))
    );
    let runs = r.s.history(&job.id);
    assert_eq!(
        runs.iter().map(|r| r.due_at).collect::<Vec<_>>(),
        [Some(T0 + 24 * HOUR); 2]
    );
    // The list carries the latest run: the retry that went through, not the interrupted one.
    let listed = r.s.view().routines.into_iter().find(|v| v.id == job.id).unwrap();
    assert_eq!(listed.last_run.as_ref().map(|l| l.outcome), Some(RunOutcome::Ok));
    // (By its id: the history leaves out a session whose transcript is gone, and this
    // test's host writes none.)
    assert_eq!(
        listed.last_run.as_ref().map(|l| &l.run_id),
        runs.last().map(|r| &r.run_id)
    );
}

#[tokio::test]
async fn a_stuck_run_of_a_live_process_is_cleared_after_its_limit() {
    let r = rig(FakeHost::default());
    let job = r.add(draft("Slow", Some("1h"), ExecutionMode::Isolated)).await;
    // Claimed by pid 1 (alive, not us) at 01:00.
    r.s.deps()
        .store
        .update(|entries| {
            let x = entries[0].routine.as_mut().unwrap();
            x.state = RoutineState::Running;
            x.claimed_by = Some("1:elsewhere".into());
            x.run_started_at = Some(T0 + HOUR);
            Ok(())
        })
        .await
        .unwrap();
    r.advance_to(T0 + HOUR + 60_000 + 5 * MIN);
    assert!(r.s.tick().await.recovered.is_empty(), "within timeout + grace");
    r.advance_to(T0 + HOUR + 60_000 + 5 * MIN + 1);
    assert_eq!(r.s.tick().await.recovered, std::slice::from_ref(&job.id));
    assert!(r.routine(&job.id).error_message.unwrap().contains("stuck"));
}

#[tokio::test]
async fn after_ten_hours_asleep_each_missed_routine_runs_once() {
    let r = rig(FakeHost::default());
    let ids = [
        r.add(draft("Every half hour", Some("30m"), ExecutionMode::Isolated))
            .await
            .id,
        r.add(draft("Hourly", Some("0 * * * *"), ExecutionMode::Isolated))
            .await
            .id,
        r.add(draft("Quarter", Some("*/15 * * * *"), ExecutionMode::Inline))
            .await
            .id,
        r.add(RoutineDraft {
            kind: Some("time_reminder".into()),
            ..draft("Water", Some("2h"), ExecutionMode::Inline)
        })
        .await
        .id,
        r.add(RoutineDraft {
            next_run_at: Some(T0 + 3 * HOUR),
            ..draft("Once", None, ExecutionMode::Isolated)
        })
        .await
        .id,
    ];
    r.advance_to(T0 + 10 * HOUR + 7 * MIN);
    let t = r.s.tick().await;
    assert_eq!(t.claimed, ids.to_vec());
    let due = DueTasks::due(&r.s, 0);
    DueTasks::finished(&r.s, &due, DueOutcome::Done("ok".into()), None);
    r.s.settle().await;
    assert!(r.s.tick().await.claimed.is_empty());
    assert_eq!(r.host.runs.lock().unwrap().len(), 3);
    // Each ran once (`catch_up: once`), for its latest due time; the earlier ones are
    // recorded missed, in one record each.
    // Per routine: the due time its run was for, and its missed record (first, count).
    type RanFor = (Option<i64>, Option<(i64, u32)>);
    let ran_for: Vec<RanFor> = ids
        .iter()
        .map(|id| {
            let h = r.s.history(id);
            let missed = h.iter().find(|x| x.outcome == RunOutcome::Missed);
            assert_eq!(h.iter().filter(|x| x.outcome == RunOutcome::Ok).count(), 1, "{id}");
            (
                h.iter().find(|x| x.outcome == RunOutcome::Ok).and_then(|x| x.due_at),
                missed.map(|m| (m.due_at.unwrap(), m.due_count)),
            )
        })
        .collect();
    assert_eq!(
        ran_for,
        [
            (Some(T0 + 10 * HOUR), Some((T0 + 30 * MIN, 19))),
            (Some(T0 + 10 * HOUR), Some((T0 + HOUR, 9))),
            (Some(T0 + 10 * HOUR), Some((T0 + 15 * MIN, 39))),
            (Some(T0 + 10 * HOUR), Some((T0 + 2 * HOUR, 4))),
            (Some(T0 + 3 * HOUR), None),
        ]
    );
    // One notification sums it up.
    let notes = r.notifications("Vigil: missed routines");
    assert_eq!(notes, ["5 routines missed while Vigil was not running; 5 ran now"]);
    // Next times are on their grids, in the future.
    let next: Vec<Option<i64>> = ids.iter().map(|id| r.routine(id).next_run_at).collect();
    let now = T0 + 10 * HOUR + 7 * MIN;
    assert_eq!(
        next,
        [
            Some(T0 + 10 * HOUR + 30 * MIN),
            Some(T0 + 11 * HOUR),
            Some(now + 8 * MIN),
            Some(T0 + 12 * HOUR),
            None
        ]
    );
    // Two days asleep: too late to be useful; recorded as missed, not run.
    r.advance_to(now + 48 * HOUR);
    let t = r.s.tick().await;
    assert_eq!(t.missed.len(), 4);
    assert!(t.claimed.is_empty());
    assert_eq!(
        r.notifications("Vigil: missed routines"),
        ["4 routines missed while the computer slept; none ran now (their catch-up setting)"]
    );
    let hourly = r.s.history(&ids[1]);
    let last = hourly.last().unwrap();
    assert_eq!(
        (last.outcome, last.due_at, last.last_due_at, last.due_count),
        (RunOutcome::Missed, Some(T0 + 11 * HOUR), Some(T0 + 58 * HOUR), 48)
    );
}

#[tokio::test]
async fn bad_schedules_in_the_file_are_reported_and_the_rest_keep_running() {
    let r = rig(FakeHost::default());
    let good = r.add(draft("Good", Some("1h"), ExecutionMode::Isolated)).await;
    r.s.deps()
        .store
        .update(|entries| {
            let mut bad = Routine::new("bad_cron".into(), "Bad cron".into(), T0);
            bad.schedule = Some("61 * * * *".into());
            bad.next_run_at = Some(T0);
            let mut zone = Routine::new("bad_zone".into(), "Bad zone".into(), T0);
            zone.schedule = Some("1h".into());
            zone.timezone = Some("Mars/Base".into());
            zone.next_run_at = Some(T0);
            entries.push(store::Entry::new(bad));
            entries.push(store::Entry::new(zone));
            Ok(())
        })
        .await
        .unwrap();
    r.advance_to(T0 + HOUR);
    assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&good.id));
    let errors = r.errors();
    assert!(
        errors
            .iter()
            .any(|e| e.contains("\"bad_cron\" cannot run") && e.contains("cron")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("\"bad_zone\" cannot run") && e.contains("IANA")),
        "{errors:?}"
    );
    assert!(r
        .routine("bad_cron")
        .error_message
        .unwrap()
        .contains("not a valid cron expression"));
    let view = r.s.view();
    assert!(view
        .routines
        .iter()
        .find(|v| v.id == "bad_zone")
        .unwrap()
        .problem
        .is_some());
    assert!(DueTasks::context(&r.s)
        .unwrap()
        .contains("Routine \"bad_cron\" cannot run"));
    // Said once, not every tick.
    r.s.tick().await;
    assert!(r.errors().iter().all(|e| !e.contains("bad_cron")));
}

/// With no good copy to go on from (the block was never valid): see `corruption_tests.rs`
/// for the last good routines running on.
#[tokio::test]
async fn a_corrupted_block_runs_nothing_says_so_and_is_left_alone() {
    let r = rig(FakeHost::default());
    let broken = "# mine\n## Tasks\n```json\n{\"tasks\": [{\"id\": \"a\", \"title\": \"A\", \"next_run_at\": \"2020-01-01T00:00:00Z\"},]}\n```\n";
    std::fs::write(r.s.deps().store.path(), broken).unwrap();
    let t = r.s.tick().await;
    assert!(t.corrupted && t.claimed.is_empty());
    assert!(r.errors().iter().any(|e| e.contains("corrupted")));
    assert!(DueTasks::context(&r.s).unwrap().contains("corrupted"));
    let err =
        r.s.create(draft("X", Some("1h"), ExecutionMode::Inline), RoutineSource::Chat, true)
            .await;
    assert!(matches!(err, Err(StoreError::Corrupted(_))));
    assert_eq!(std::fs::read_to_string(r.s.deps().store.path()).unwrap(), broken);
}

#[tokio::test]
async fn the_agents_own_routines_are_announced_once_and_tools_are_held_to_the_rules() {
    let r = rig(FakeHost::default());
    r.s.create(
        draft("Weekly review", Some("0 18 * * 5"), ExecutionMode::Isolated),
        RoutineSource::HeartbeatReflect,
        true,
    )
    .await
    .unwrap();
    r.s.tick().await;
    r.s.tick().await;
    let mailbox = r.s.deps().meta.load(PRIMARY_SESSION).unwrap().meta.mailbox;
    assert_eq!(mailbox.iter().filter(|e| e.event_type == "routine_added").count(), 1);
    assert!(mailbox[0].summary.contains("Weekly review"));
    // A duplicate is refused unless allowed.
    let dup =
        r.s.create(
            draft("weekly  Review", Some("1h"), ExecutionMode::Inline),
            RoutineSource::Chat,
            true,
        )
        .await;
    assert!(dup.unwrap_err().to_string().contains("similar routine exists"));
    let allowed = RoutineDraft {
        allow_duplicate: true,
        ..draft("Weekly review", Some("1h"), ExecutionMode::Inline)
    };
    assert_eq!(
        r.s.create(allowed, RoutineSource::Chat, true).await.unwrap().0.id,
        "weekly_review_2"
    );
    // The soft limit: the agent is refused at 20, the user is warned.
    for i in 2..20 {
        r.add(draft(&format!("R{i}"), Some("1d"), ExecutionMode::Inline)).await;
    }
    let over =
        r.s.create(
            draft("R20", Some("1d"), ExecutionMode::Inline),
            RoutineSource::Chat,
            true,
        )
        .await;
    assert!(over.unwrap_err().to_string().contains("soft limit is 20"));
    let (_, warnings) =
        r.s.create(
            draft("R20", Some("1d"), ExecutionMode::Inline),
            RoutineSource::Manual,
            false,
        )
        .await
        .unwrap();
    assert_eq!(warnings.len(), 1);
}

#[tokio::test]
async fn a_time_reminder_needs_no_model_and_an_unknown_kind_falls_back_to_it() {
    let r = rig(FakeHost::default());
    let water = r
        .add(RoutineDraft {
            kind: Some("time_reminder".into()),
            ..draft("Drink water", Some("1h"), ExecutionMode::Isolated)
        })
        .await;
    r.advance_to(T0 + HOUR);
    r.s.tick().await;
    r.s.settle().await;
    assert!(r.host.runs.lock().unwrap().is_empty());
    let mailbox = r.s.deps().meta.load(PRIMARY_SESSION).unwrap().meta.mailbox;
    assert_eq!(
        mailbox[0].summary,
        "Reminder: Drink water — do Drink water (it is 01:00, UTC)"
    );
    assert!(r.s.history(&water.id)[0].deterministic);
    // A kind this version does not know (written by hand) runs through the model instead.
    r.s.deps()
        .store
        .update(|e| {
            e[0].routine.as_mut().unwrap().kind = Some("horoscope".into());
            Ok(())
        })
        .await
        .unwrap();
    r.advance_to(T0 + 2 * HOUR);
    r.s.tick().await;
    r.s.settle().await;
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_job_past_its_timeout_is_stopped_and_retried() {
    let r = rig(FakeHost {
        hang: true,
        ..FakeHost::default()
    });
    let job = r
        .add(RoutineDraft {
            timeout_seconds: Some(5),
            ..draft("Hangs", Some("1h"), ExecutionMode::Isolated)
        })
        .await;
    r.advance_to(T0 + HOUR);
    r.s.tick().await;
    r.s.settle().await;
    assert_eq!(r.outcomes(&job.id), [RunOutcome::TimedOut]);
    let x = r.routine(&job.id);
    assert_eq!((x.state, x.retry), (RoutineState::Pending, 1));
    assert!(x.error_message.unwrap().contains("timed out after 5 s"));
}

/// The routine's job claimed by an instance whose job never ends (after it ran a command
/// when `changes`), the instance then gone: the state a restart after a SIGKILL finds.
async fn killed_mid_job(r: &Rig, job: &Routine, changes: bool) -> String {
    let doomed = scheduler(r.dir.path(), &r.clock, Arc::new(NullSink));
    doomed.set_host(Arc::new(FakeHost {
        hang: true,
        changes_first: changes,
        ..FakeHost::default()
    }));
    assert_eq!(doomed.tick().await.claimed, std::slice::from_ref(&job.id));
    let claim = r.routine(&job.id);
    if changes {
        // The evidence is on disk before the command would start.
        let written = async {
            while r.routine(&job.id).side_effect.is_none() {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(10), written)
            .await
            .unwrap();
        assert_eq!(r.routine(&job.id).side_effect.as_deref(), Some("exec: make deploy"));
    }
    claim.run_id.unwrap()
}

#[tokio::test]
async fn a_run_killed_after_it_ran_a_command_is_unknown_never_retried_and_the_user_decides() {
    let r = rig(FakeHost::default());
    let job = r.add(draft("Deploy", Some("1d"), ExecutionMode::Isolated)).await;
    r.advance_to(T0 + 24 * HOUR);
    let run_id = killed_mid_job(&r, &job, true).await;
    // The restart: recovered as unknown, not retried.
    let t = r.s.tick().await;
    assert_eq!((t.recovered.clone(), t.claimed.clone()), (vec![job.id.clone()], vec![]));
    let h = r.s.history(&job.id);
    assert_eq!(h.len(), 1);
    assert_eq!(
        (
            h[0].outcome,
            h[0].run_id.as_str(),
            h[0].side_effect.as_deref(),
            h[0].due_at
        ),
        (
            RunOutcome::Unknown,
            run_id.as_str(),
            Some("exec: make deploy"),
            Some(T0 + 24 * HOUR)
        )
    );
    let x = r.routine(&job.id);
    assert_eq!(
        (
            x.state,
            x.retry,
            x.next_run_at,
            x.unknown_run.as_ref().map(|u| u.run_id.clone())
        ),
        (RoutineState::Pending, 0, Some(T0 + 48 * HOUR), Some(run_id.clone()))
    );
    assert_eq!((x.side_effect, x.claimed_by), (None, None));
    for later in [30_000, 5 * MIN, HOUR] {
        r.advance_to(T0 + 24 * HOUR + later);
        assert!(r.s.tick().await.claimed.is_empty(), "no automatic second run");
    }
    r.s.settle().await;
    assert!(r.host.runs.lock().unwrap().is_empty());
    // The user was told once.
    let mailbox = r.s.deps().meta.load(PRIMARY_SESSION).unwrap().meta.mailbox;
    let told: Vec<&str> = mailbox
        .iter()
        .filter(|e| e.event_type == "job_unknown")
        .map(|e| e.summary.as_str())
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].starts_with("\"Deploy\" was cut off"), "{told:?}");
    let view = r.s.view().routines.into_iter().find(|v| v.id == job.id).unwrap();
    assert_eq!(view.unknown_run.as_deref(), Some(run_id.as_str()));
    // Retry: it runs now, once; the schedule stays.
    let err = r.s.resolve_unknown(&job.id, "other", true).await.unwrap_err();
    assert!(err.to_string().contains("not waiting for a decision"), "{err}");
    r.s.resolve_unknown(&job.id, &run_id, true).await.unwrap();
    r.s.settle().await;
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Unknown, RunOutcome::Ok]);
    let x = r.routine(&job.id);
    assert_eq!((x.unknown_run, x.next_run_at), (None, Some(T0 + 48 * HOUR)));
    assert!(
        r.s.resolve_unknown(&job.id, &run_id, false).await.is_err(),
        "answered already"
    );
}

#[tokio::test]
async fn a_run_killed_before_it_changed_anything_is_retried_and_a_dismissed_unknown_one_shot_is_done() {
    let r = rig(FakeHost::default());
    let job = r.add(draft("Summarize", Some("1d"), ExecutionMode::Isolated)).await;
    r.advance_to(T0 + 24 * HOUR);
    killed_mid_job(&r, &job, false).await;
    assert_eq!(r.s.tick().await.recovered, std::slice::from_ref(&job.id));
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Interrupted]);
    r.advance_to(T0 + 24 * HOUR + 30_000);
    assert_eq!(
        r.s.tick().await.claimed,
        std::slice::from_ref(&job.id),
        "retried as before"
    );
    r.s.settle().await;
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Interrupted, RunOutcome::Ok]);
    // A one-shot cut off after a command: unknown; dismissed, it counts as done.
    let once = r
        .add(RoutineDraft {
            next_run_at: Some(T0 + 30 * HOUR),
            ..draft("Migrate once", None, ExecutionMode::Isolated)
        })
        .await;
    r.advance_to(T0 + 30 * HOUR);
    let run_id = killed_mid_job(&r, &once, true).await;
    r.s.tick().await;
    let x = r.routine(&once.id);
    assert_eq!((x.state, x.next_run_at), (RoutineState::Failed, None));
    r.s.resolve_unknown(&once.id, &run_id, false).await.unwrap();
    let x = r.routine(&once.id);
    assert_eq!(
        (x.state, x.unknown_run, x.error_message),
        (RoutineState::Done, None, None)
    );
    assert_eq!(r.outcomes(&once.id), [RunOutcome::Unknown]);
}

#[tokio::test]
async fn a_job_past_its_timeout_after_it_ran_a_command_is_unknown_not_retried() {
    let r = rig(FakeHost {
        hang: true,
        changes_first: true,
        ..FakeHost::default()
    });
    let job = r
        .add(RoutineDraft {
            timeout_seconds: Some(1),
            ..draft("Hangs after a command", Some("1h"), ExecutionMode::Isolated)
        })
        .await;
    r.advance_to(T0 + HOUR);
    r.s.tick().await;
    r.s.settle().await;
    let h = r.s.history(&job.id);
    assert_eq!(h.iter().map(|x| x.outcome).collect::<Vec<_>>(), [RunOutcome::Unknown]);
    assert!(h[0].error.as_deref().unwrap().contains("timed out after 1 s"), "{h:?}");
    assert_eq!(h[0].side_effect.as_deref(), Some("exec: make deploy"));
    let x = r.routine(&job.id);
    assert_eq!(
        (x.state, x.retry, x.next_run_at),
        (RoutineState::Pending, 0, Some(T0 + 2 * HOUR))
    );
    assert!(x.unknown_run.is_some());
}

#[tokio::test]
async fn run_now_and_pause_from_the_editor() {
    let r = rig(FakeHost::default());
    let job = r.add(draft("Report", Some("0 9 * * *"), ExecutionMode::Isolated)).await;
    r.s.run_now(&job.id).await.unwrap();
    r.s.settle().await;
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    assert_eq!(
        r.routine(&job.id).next_run_at,
        Some(T0 + 9 * HOUR),
        "the schedule is unchanged"
    );
    r.s.set_enabled(&job.id, false).await.unwrap();
    r.advance_to(T0 + 30 * HOUR);
    assert!(r.s.tick().await.claimed.is_empty());
    assert!(r.s.run_now(&job.id).await.unwrap_err().to_string().contains("paused"));
    // Resuming does not run the slots missed while paused.
    r.s.set_enabled(&job.id, true).await.unwrap();
    assert_eq!(r.routine(&job.id).next_run_at, Some(T0 + 33 * HOUR));
    assert!(r.s.tick().await.claimed.is_empty());
}

#[tokio::test]
async fn each_refusal_names_the_draft_field_it_is_about() {
    let r = rig(FakeHost::default());
    let field = |e: StoreError| match e {
        StoreError::Rejected(refusal) => refusal.field,
        other => panic!("not a refusal: {other}"),
    };
    let create = |d: RoutineDraft| r.s.create(d, RoutineSource::Manual, false);
    let base = || draft("Water the plants", Some("0 9 * * *"), ExecutionMode::Inline);
    let cases = [
        (
            RoutineDraft {
                title: Some("  ".into()),
                ..base()
            },
            Some("title"),
        ),
        (
            RoutineDraft {
                schedule: Some("0 61 * * *".into()),
                ..base()
            },
            Some("schedule"),
        ),
        (
            RoutineDraft {
                schedule: None,
                ..base()
            },
            Some("schedule"),
        ),
        (
            RoutineDraft {
                timezone: Some("Mars/Base".into()),
                ..base()
            },
            Some("timezone"),
        ),
        (
            RoutineDraft {
                timeout_seconds: Some(0),
                ..base()
            },
            Some("timeout_seconds"),
        ),
        (
            RoutineDraft {
                kind: Some("x".into()),
                ..base()
            },
            Some("kind"),
        ),
        (
            RoutineDraft {
                schedule: None,
                next_run_at: Some(1),
                ..base()
            },
            Some("next_run_at"),
        ),
    ];
    for (d, expected) in cases {
        let refused = create(d.clone()).await.expect_err(&format!("{d:?} is refused"));
        assert_eq!(field(refused), expected, "{d:?}");
    }
    let kept = create(base()).await.unwrap().0;
    assert_eq!(
        field(create(base()).await.unwrap_err()),
        Some("title"),
        "a similar routine exists"
    );
    let changes = RoutineDraft {
        timeout_seconds: Some(0),
        ..RoutineDraft::default()
    };
    assert_eq!(
        field(r.s.update_routine(&kept.id, changes).await.unwrap_err()),
        Some("timeout_seconds")
    );
    let missing = r.s.update_routine("nope", RoutineDraft::default()).await.unwrap_err();
    assert_eq!(field(missing), None, "about the request, not a field");
}

#[tokio::test]
async fn a_removed_routine_never_runs_keeps_its_history_and_comes_back_as_it_was() {
    let r = rig(FakeHost::default());
    let job = r.add(draft("Report", Some("0 9 * * *"), ExecutionMode::Isolated)).await;
    let paused = r.add(draft("Stretch", Some("1h"), ExecutionMode::Inline)).await;
    r.s.set_enabled(&paused.id, false).await.unwrap();
    r.s.run_now(&job.id).await.unwrap();
    r.s.settle().await;
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Ok]);

    r.s.remove(&job.id, false).await.unwrap();
    r.s.remove(&paused.id, false).await.unwrap();
    assert_eq!(r.routine(&job.id).removed_at, Some(T0));
    r.advance_to(T0 + 30 * HOUR);
    assert!(
        r.s.tick().await.claimed.is_empty(),
        "a removed routine is never claimed"
    );
    assert_eq!(r.s.next_due(), None);
    assert_eq!(r.s.health().scheduled, 0);
    for refused in [
        r.s.run_now(&job.id).await.unwrap_err(),
        r.s.set_enabled(&job.id, true).await.unwrap_err(),
        r.s.update_routine(&job.id, draft("Report 2", None, ExecutionMode::Isolated))
            .await
            .unwrap_err(),
    ] {
        assert!(
            refused.to_string().contains("was removed; restore it first"),
            "{refused}"
        );
    }
    // It no longer counts as a duplicate: the same title can be added again.
    assert_eq!(
        r.add(draft("Report", Some("1d"), ExecutionMode::Isolated)).await.id,
        "report_2"
    );
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Ok], "the history is kept");

    // Restored: the missed slots are not run, the next one is; the paused one stays paused.
    r.s.restore(&job.id).await.unwrap();
    r.s.restore(&paused.id).await.unwrap();
    let back = r.routine(&job.id);
    assert_eq!(
        (back.removed_at, back.enabled, back.next_run_at),
        (None, true, Some(T0 + 33 * HOUR))
    );
    assert!(!r.routine(&paused.id).enabled && r.routine(&paused.id).removed_at.is_none());
    r.advance_to(T0 + 33 * HOUR);
    assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&job.id));
    r.s.settle().await;
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Ok, RunOutcome::Ok]);
}

#[tokio::test]
async fn a_hard_removal_deletes_the_routine_and_its_history_and_old_removals_are_purged() {
    let r = rig(FakeHost::default());
    let job = r.add(draft("Report", Some("0 9 * * *"), ExecutionMode::Isolated)).await;
    let old = r.add(draft("Old", Some("1d"), ExecutionMode::Inline)).await;
    r.s.run_now(&job.id).await.unwrap();
    r.s.settle().await;
    r.s.remove(&old.id, false).await.unwrap();
    r.s.remove(&job.id, true).await.unwrap();
    let ids = |r: &Rig| -> Vec<String> { r.s.view().routines.into_iter().map(|v| v.id).collect() };
    assert_eq!(ids(&r), std::slice::from_ref(&old.id));
    assert!(r.s.history(&job.id).is_empty(), "the run log went with it");
    let again = r.s.remove(&job.id, false).await.unwrap_err();
    assert!(again.to_string().contains("there is no routine"), "{again}");

    // A removal a month later deletes what was removed more than 30 days before.
    let fresh = r.add(draft("Fresh", Some("1d"), ExecutionMode::Inline)).await;
    r.advance_to(T0 + edit::REMOVED_KEPT_MS + MIN);
    r.s.remove(&fresh.id, false).await.unwrap();
    assert_eq!(ids(&r), std::slice::from_ref(&fresh.id));
    assert!(r.s.view().routines[0].removed_at.is_some());
}

/// A wake loop with no handler: it keeps what it is asked, for counting.
fn wake_loop() -> (crate::wake::Wake, tokio_util::sync::CancellationToken) {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let wake = crate::wake::Wake::start(
        crate::wake::WakeConfig::default(),
        Arc::new(ManualClock::new(T0)),
        shutdown.clone(),
        &tokio_util::task::TaskTracker::new(),
    );
    (wake, shutdown)
}

#[tokio::test]
async fn a_next_heartbeat_routine_waits_for_the_heartbeat_unless_none_is_scheduled() {
    for scheduled in [true, false] {
        let r = rig(FakeHost {
            heartbeat_scheduled: scheduled,
            ..FakeHost::default()
        });
        let (wake, _stop) = wake_loop();
        r.s.set_wake(wake.clone());
        let check = r
            .add(RoutineDraft {
                wake_mode: Some(vigil_protocol::WakeMode::NextHeartbeat),
                ..draft("Check the inbox", Some("1h"), ExecutionMode::Inline)
            })
            .await;
        let file = || r.s.deps().store.read().unwrap().text.clone();
        assert!(file().contains("\"wake_mode\": \"next_heartbeat\""), "{}", file());
        assert_eq!(r.routine(&check.id).wake_mode, vigil_protocol::WakeMode::NextHeartbeat);
        r.advance_to(T0 + HOUR);
        assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&check.id));
        assert_eq!(r.s.inline_waiting().len(), 1, "handed to the heartbeat either way");
        assert_eq!(
            wake.stats().requested,
            u64::from(!scheduled),
            "with a heartbeat scheduled: {scheduled}"
        );

        // A `now` routine due at the same time wakes the heartbeat, for both.
        let now = r.add(draft("Stretch", Some("1h"), ExecutionMode::Inline)).await;
        assert_eq!(file().matches("wake_mode").count(), 1, "the default is not written");
        r.advance_to(T0 + 2 * HOUR);
        r.s.tick().await;
        assert!(r.s.inline_waiting().iter().any(|t| t.id == now.id));
        assert_eq!(wake.stats().requested, u64::from(!scheduled) + 1);
    }
}

#[tokio::test]
async fn while_the_heartbeat_is_off_an_inline_routine_runs_as_a_job_of_its_own() {
    let r = rig(FakeHost {
        heartbeat_off: true,
        ..FakeHost::default()
    });
    let check = r.add(draft("Check the inbox", Some("1h"), ExecutionMode::Inline)).await;
    r.advance_to(T0 + HOUR);
    assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&check.id));
    r.s.settle().await;
    assert!(r.s.inline_waiting().is_empty(), "not left waiting for a heartbeat turn");
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    assert_eq!(r.outcomes(&check.id), [RunOutcome::Ok]);
    assert_eq!(r.routine(&check.id).state, RoutineState::Pending);
}

#[tokio::test]
async fn inline_runs_waiting_when_the_heartbeat_is_turned_off_run_as_jobs() {
    let r = rig(FakeHost::default());
    let check = r.add(draft("Check the inbox", Some("1h"), ExecutionMode::Inline)).await;
    r.advance_to(T0 + HOUR);
    r.s.tick().await;
    assert_eq!(r.s.inline_waiting().len(), 1, "waiting for a heartbeat turn");
    r.s.heartbeat_turned_off();
    r.s.settle().await;
    assert!(r.s.inline_waiting().is_empty());
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    assert_eq!(r.outcomes(&check.id), [RunOutcome::Ok]);
    assert_eq!(r.routine(&check.id).state, RoutineState::Pending);
}
