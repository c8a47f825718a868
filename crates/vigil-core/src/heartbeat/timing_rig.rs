//! A heartbeat for tests of its timing: the heartbeat, its wake loop, the scheduler (as the
//! source of due routines) and the one timing loop, on paused tokio time, with wall time on a
//! [`ManualClock`] the test moves in step with it ([`Rig::pass`]). The host records turns
//! instead of calling a model; a turn can hang, or reply with text as the model would.
//! [`Bench`] is the part every timing test shares (the budget's and the schedule's too): the
//! folder with a checklist, the heartbeat's dependencies, the wake and timing loops.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vigil_protocol::{Event, HeartbeatSettings, Message, Role, StopReason};

use super::{Deps, Heartbeat, HeartbeatConfig, HeartbeatHost};
use crate::clock::{Clock, ManualClock};
use crate::events::{CollectingSink, Emitter};
use crate::routines::SchedulerConfig;
use crate::run::{RunRequest, RunResult};
use crate::session::SessionStore;
use crate::wake::{Wake, WakeConfig};

/// 2026-01-01T00:00:00Z.
pub(super) const T0: i64 = 1_767_225_600_000;

/// How a turn that hangs behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hang {
    /// Never ends, cancelled or not (a turn stuck where cancellation does not reach).
    Forever,
    /// Ends as soon as its cancellation fires (what a real turn does).
    UntilCancelled,
}

/// What one turn does; a turn without one ends at once with no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Act {
    Hang(Hang),
    /// Ends with this reply in the heartbeat session's transcript.
    Reply(String),
}

pub(super) struct FakeHost {
    clock: ManualClock,
    store: SessionStore,
    /// What the turn of each index (0: the first) does.
    acts: Mutex<HashMap<usize, Act>>,
    /// When each turn started (wall ms).
    turns: Mutex<Vec<i64>>,
}

impl HeartbeatHost for FakeHost {
    fn conversation_busy(&self) -> bool {
        false
    }
    fn has_provider(&self) -> bool {
        true
    }
}

#[async_trait::async_trait]
impl crate::run::Runner for FakeHost {
    async fn run(&self, turn: RunRequest) -> RunResult {
        let act = {
            let mut turns = self.turns.lock().unwrap();
            turns.push(self.clock.now_ms());
            self.acts.lock().unwrap().remove(&(turns.len() - 1))
        };
        match act {
            Some(Act::Hang(Hang::Forever)) => std::future::pending().await,
            Some(Act::Hang(Hang::UntilCancelled)) => {
                turn.deadline.expect("a heartbeat run has a deadline").cancelled().await;
                RunResult::ended(StopReason::Cancelled)
            }
            Some(Act::Reply(text)) => {
                let mut reply = Message::user_text(text, self.clock.now_ms());
                reply.role = Role::Assistant;
                self.store.append(&turn.session_id, &reply).unwrap();
                RunResult {
                    reply: Some(reply),
                    ..RunResult::ended(StopReason::EndTurn)
                }
            }
            None => RunResult::ended(StopReason::EndTurn),
        }
    }
}

pub(super) struct Rig {
    _dir: tempfile::TempDir,
    pub(super) clock: ManualClock,
    pub(super) sink: CollectingSink,
    pub(super) host: Arc<FakeHost>,
    pub(super) heartbeat: Heartbeat,
    pub(super) scheduler: crate::routines::Scheduler,
    pub(super) shutdown: CancellationToken,
}

/// What every timing test of the heartbeat starts from: a data folder whose workspace holds a
/// non-empty checklist, and the heartbeat's dependencies on the test's clock.
pub(super) struct Bench {
    pub(super) dir: tempfile::TempDir,
    pub(super) deps: Deps,
    pub(super) sink: CollectingSink,
}

impl Bench {
    pub(super) fn new(clock: Arc<dyn Clock>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(workspace.join("HEARTBEAT.md"), "- check disk\n").unwrap();
        let store = SessionStore::open_with(dir.path(), clock.clone(), Default::default()).unwrap();
        let sink = CollectingSink::default();
        let deps = Deps::new(
            store,
            Emitter::new(Arc::new(sink.clone()), clock.clone()),
            clock,
            workspace,
        );
        Self { dir, deps, sink }
    }

    /// Starts the wake loop with `heartbeat` as its handler, and the one timing loop: the
    /// scheduler (with `config`), which also hands the heartbeat its due routines. Everything
    /// stops with `shutdown`. Returns the scheduler and the wake loop's handle.
    pub(super) fn start(
        &self,
        heartbeat: &Heartbeat,
        config: SchedulerConfig,
        shutdown: &CancellationToken,
    ) -> (crate::routines::Scheduler, Wake) {
        let deps = &self.deps;
        let tasks = TaskTracker::new();
        let wake = Wake::start(WakeConfig::default(), deps.clock.clone(), shutdown.clone(), &tasks);
        std::mem::forget(wake.set_handler(Arc::new(heartbeat.clone())));
        let scheduler = crate::routines::Scheduler::new(
            crate::routines::Deps {
                store: crate::routines::RoutineStore::new(
                    &deps.workspace,
                    deps.store.locks().clone(),
                    deps.clock.clone(),
                ),
                runlog: crate::routines::RunLog::new(self.dir.path()),
                meta: deps.meta.clone(),
                emitter: deps.emitter.clone(),
                clock: deps.clock.clone(),
            },
            config,
        );
        scheduler.set_wake(wake.clone());
        heartbeat.set_due_tasks(Arc::new(scheduler.clone()));
        let timer = crate::routines::IntervalTimer::new(heartbeat.clone(), wake.clone());
        tasks.spawn(scheduler.clone().run(timer, shutdown.clone()));
        (scheduler, wake)
    }
}

/// A heartbeat with a non-empty checklist whose turns do what `acts` says (by turn index),
/// with its wake loop, the scheduler and the timing loop running.
pub(super) fn rig(settings: HeartbeatSettings, acts: &[(usize, Act)]) -> Rig {
    let clock = ManualClock::new(T0);
    let bench = Bench::new(Arc::new(clock.clone()));
    let host = Arc::new(FakeHost {
        clock: clock.clone(),
        store: bench.deps.store.clone(),
        acts: Mutex::new(acts.iter().cloned().collect()),
        turns: Mutex::new(vec![]),
    });
    let heartbeat = Heartbeat::new(bench.deps.clone(), host.clone(), HeartbeatConfig::resolve(&settings));
    let shutdown = CancellationToken::new();
    let config = SchedulerConfig {
        default_zone: "UTC".into(),
        ..Default::default()
    };
    let (scheduler, _) = bench.start(&heartbeat, config, &shutdown);
    Rig {
        _dir: bench.dir,
        clock,
        sink: bench.sink,
        host,
        heartbeat,
        scheduler,
        shutdown,
    }
}

impl Rig {
    /// Moves wall time and tokio's paused time on together, a quarter of a second at a time.
    pub(super) async fn pass(&self, d: Duration) {
        self.pass_by(d, Duration::from_millis(250)).await
    }

    /// [`Self::pass`] in steps of `step` (coarser for long stretches).
    pub(super) async fn pass_by(&self, d: Duration, step: Duration) {
        for _ in 0..d.as_millis() / step.as_millis() {
            self.clock.advance(step);
            tokio::time::sleep(step).await;
        }
    }

    /// Seconds after the start at which each turn started.
    pub(super) fn turn_seconds(&self) -> Vec<i64> {
        let turns = self.host.turns.lock().unwrap();
        turns.iter().map(|t| (t - T0) / 1000).collect()
    }

    /// Each `heartbeat` event since the last look: its status as on the wire, and when (seconds
    /// after the start).
    pub(super) fn beats(&self) -> Vec<(String, i64)> {
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
