//! Issue 31 item 5: a heartbeat run has a deadline (`runTimeoutMinutes`, 10 by default), and
//! the run that carries an inline routine also ends at that routine's `timeout_seconds`. The
//! heartbeat, its wake loop, the scheduler (as the source of due routines) and its timing loop
//! run on paused tokio time; wall time is a [`ManualClock`] the test moves in step with it, a
//! quarter of a second at a time. The host records turns instead of calling a model, and can hang.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vigil_protocol::{Event, ExecutionMode, HeartbeatSettings, RoutineDraft, RoutineSource, RunOutcome};

use super::*;
use crate::clock::ManualClock;
use crate::events::CollectingSink;
use crate::wake::{Wake, WakeConfig};

/// 2026-01-01T00:00:00Z.
const T0: i64 = 1_767_225_600_000;

/// How the host's turns behave.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hang {
    /// Never ends, cancelled or not (a turn stuck where cancellation does not reach).
    Forever,
    /// Ends as soon as its cancellation fires (what a real turn does).
    UntilCancelled,
}

struct FakeHost {
    clock: ManualClock,
    /// How many of the first turns hang, and how.
    hang: Mutex<(usize, Hang)>,
    /// When each turn started (wall ms).
    turns: Mutex<Vec<i64>>,
}

#[async_trait::async_trait]
impl HeartbeatHost for FakeHost {
    fn conversation_busy(&self) -> bool {
        false
    }
    fn has_provider(&self) -> bool {
        true
    }
    async fn run_turn(&self, turn: HeartbeatTurn) -> TurnResult {
        self.turns.lock().unwrap().push(self.clock.now_ms());
        let hang = {
            let mut hang = self.hang.lock().unwrap();
            let how = hang.1;
            match hang.0.checked_sub(1) {
                Some(left) => {
                    hang.0 = left;
                    Some(how)
                }
                None => None,
            }
        };
        match hang {
            Some(Hang::Forever) => std::future::pending().await,
            Some(Hang::UntilCancelled) => {
                turn.cancel.cancelled().await;
                TurnResult::ended(StopReason::Cancelled)
            }
            None => TurnResult::ended(StopReason::EndTurn),
        }
    }
}

struct Rig {
    _dir: tempfile::TempDir,
    clock: ManualClock,
    sink: CollectingSink,
    host: Arc<FakeHost>,
    scheduler: crate::routines::Scheduler,
    shutdown: CancellationToken,
}

/// A heartbeat with a non-empty checklist whose first `hangs` turns hang as `how`, with its
/// wake loop, the scheduler and the timing loop.
fn rig(settings: HeartbeatSettings, hangs: usize, how: Hang) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("HEARTBEAT.md"), "- check disk\n").unwrap();
    let clock = ManualClock::new(T0);
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let store = SessionStore::open_with(dir.path(), dyn_clock.clone(), Default::default()).unwrap();
    let sink = CollectingSink::default();
    let deps = Deps {
        meta: MetaStore::new(store.clone(), dyn_clock.clone()),
        store,
        events: SystemEvents::new(),
        emitter: Emitter::new(Arc::new(sink.clone()), dyn_clock.clone()),
        clock: dyn_clock.clone(),
        workspace,
    };
    let host = Arc::new(FakeHost {
        clock: clock.clone(),
        hang: Mutex::new((hangs, how)),
        turns: Mutex::new(vec![]),
    });
    let heartbeat = Heartbeat::new(deps.clone(), host.clone(), HeartbeatConfig::resolve(&settings));
    let shutdown = CancellationToken::new();
    let tasks = TaskTracker::new();
    let wake = Wake::start(WakeConfig::default(), dyn_clock, shutdown.clone(), &tasks);
    std::mem::forget(wake.set_handler(Arc::new(heartbeat.clone())));
    let scheduler = crate::routines::Scheduler::new(
        crate::routines::Deps {
            store: crate::routines::RoutineStore::new(&deps.workspace, deps.store.locks().clone(), deps.clock.clone()),
            runlog: crate::routines::RunLog::new(dir.path()),
            meta: deps.meta.clone(),
            emitter: deps.emitter.clone(),
            clock: deps.clock.clone(),
        },
        crate::routines::SchedulerConfig {
            default_zone: "UTC".into(),
            ..Default::default()
        },
    );
    scheduler.set_wake(wake.clone());
    heartbeat.set_due_tasks(Arc::new(scheduler.clone()));
    let timer = crate::routines::IntervalTimer::new(heartbeat.clone(), wake);
    tasks.spawn(scheduler.clone().run(timer, shutdown.clone()));
    Rig {
        _dir: dir,
        clock,
        sink,
        host,
        scheduler,
        shutdown,
    }
}

impl Rig {
    /// Moves wall time and tokio's paused time on together, a quarter of a second at a time.
    async fn pass(&self, d: Duration) {
        let step = Duration::from_millis(250);
        for _ in 0..d.as_millis() / step.as_millis() {
            self.clock.advance(step);
            tokio::time::sleep(step).await;
        }
    }

    /// Seconds after the start at which each turn started.
    fn turn_seconds(&self) -> Vec<i64> {
        let turns = self.host.turns.lock().unwrap();
        turns.iter().map(|t| (t - T0) / 1000).collect()
    }

    /// Each `heartbeat` event since the last look: its status as on the wire, and when (seconds
    /// after the start).
    fn beats(&self) -> Vec<(String, i64)> {
        self.sink
            .take()
            .into_iter()
            .filter_map(|e| match &e.event {
                Event::Heartbeat { status, .. } => Some((
                    serde_json::to_value(status).unwrap().as_str().unwrap().to_string(),
                    (e.ts - T0) / 1000,
                )),
                _ => None,
            })
            .collect()
    }
}

fn no_idle_gate() -> HeartbeatSettings {
    HeartbeatSettings {
        idle_after_hours: 0,
        ..Default::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_that_never_ends_is_let_go_at_its_deadline_and_the_next_poll_runs_on_time() {
    let r = rig(no_idle_gate(), 1, Hang::Forever);
    r.pass(Duration::from_secs(61 * 60)).await;
    assert_eq!(
        r.turn_seconds(),
        [30 * 60, 60 * 60],
        "the 60-minute poll ran at its time"
    );
    // Ended at 30 min + the 10-minute deadline + the 10 s it had to stop after its cancellation.
    assert_eq!(
        r.beats(),
        [
            ("timed-out".to_string(), 40 * 60 + 10),
            ("ok-empty".to_string(), 60 * 60)
        ]
    );
    r.shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn the_run_carrying_an_inline_routine_ends_at_the_routines_timeout() {
    // No interval polls: only the routine wakes the heartbeat.
    let settings = HeartbeatSettings {
        every: "0".into(),
        ..no_idle_gate()
    };
    let r = rig(settings, 1, Hang::Forever);
    let (routine, _) = r
        .scheduler
        .create(
            RoutineDraft {
                title: Some("Drink water".into()),
                schedule: Some("1h".into()),
                execution_mode: Some(ExecutionMode::Inline),
                timeout_seconds: Some(60),
                ..RoutineDraft::default()
            },
            RoutineSource::Chat,
            true,
        )
        .await
        .unwrap();
    r.pass(Duration::from_secs(65 * 60)).await;
    // Ended at 60 s (and the 10 s to stop), then tried again 30 s later by the retry rules.
    let ended = 60 * 60 + 60 + 10;
    assert_eq!(r.turn_seconds(), [60 * 60, ended + 30]);
    assert_eq!(
        r.beats(),
        [("timed-out".to_string(), ended), ("ok-empty".to_string(), ended + 30)]
    );
    r.scheduler.settle().await;
    let runs = r.scheduler.history(&routine.id);
    let seen: Vec<_> = runs
        .iter()
        .map(|run| (run.outcome, (run.finished_at - T0) / 1000))
        .collect();
    assert_eq!(
        seen,
        [(RunOutcome::TimedOut, ended), (RunOutcome::Acknowledged, ended + 30)]
    );
    assert!(runs[0].error.as_deref().unwrap().contains("1 min"), "{runs:?}");
    r.shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_turn_that_stops_when_cancelled_ends_at_the_configured_deadline() {
    let settings = HeartbeatSettings {
        run_timeout_minutes: 3,
        ..no_idle_gate()
    };
    let r = rig(settings, 1, Hang::UntilCancelled);
    r.pass(Duration::from_secs(61 * 60)).await;
    assert_eq!(r.turn_seconds(), [30 * 60, 60 * 60]);
    assert_eq!(
        r.beats(),
        [("timed-out".to_string(), 33 * 60), ("ok-empty".to_string(), 60 * 60)]
    );
    r.shutdown.cancel();
}

#[test]
fn the_deadline_is_the_shortest_limit_and_says_which() {
    let config = HeartbeatConfig::default();
    let task = |title: &str, secs: u64| DueTask {
        id: title.to_lowercase(),
        title: title.into(),
        description: String::new(),
        timeout: Duration::from_secs(secs),
    };
    let alone = turn::Deadline::of(&config, &[]);
    assert_eq!(alone.limit, Duration::from_secs(600));
    assert_eq!(
        alone.passed(),
        "timed out after 10 min (the heartbeat's run limit, runTimeoutMinutes): its open questions expired and the \
         commands it started were stopped"
    );
    let carried = turn::Deadline::of(&config, &[task("Backup", 3600), task("Water", 60), task("Stretch", 90)]);
    assert_eq!(carried.limit, Duration::from_secs(60));
    assert!(carried
        .passed()
        .starts_with("timed out after 1 min (the timeout_seconds of routine \"Water\")"));
}
