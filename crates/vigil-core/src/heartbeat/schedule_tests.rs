//! The interval schedule (timed by the scheduler loop) and the wake loop together, on paused time, with a host that
//! records turns instead of calling a model.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use vigil_protocol::{HeartbeatSettings, StopReason};

use tokio_util::sync::CancellationToken;

use super::timing_rig::Bench;
use super::*;
use crate::clock::ManualClock;
use crate::events::CollectingSink;

#[derive(Default)]
struct FakeHost {
    busy: AtomicBool,
    turns: Mutex<Vec<(Instant, String)>>,
}

impl HeartbeatHost for FakeHost {
    fn conversation_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }
    fn has_provider(&self) -> bool {
        true
    }
}

#[async_trait::async_trait]
impl crate::run::Runner for FakeHost {
    async fn run(&self, req: crate::run::RunRequest) -> crate::run::RunResult {
        self.turns.lock().unwrap().push((Instant::now(), req.input.text));
        crate::run::RunResult::ended(StopReason::EndTurn)
    }
}

fn events_of(sink: &CollectingSink) -> Vec<(WakeReason, HeartbeatStatus, Option<HeartbeatSkip>)> {
    sink.take()
        .into_iter()
        .filter_map(|e| match e.event {
            vigil_protocol::Event::Heartbeat {
                reason,
                status,
                skip_reason,
                ..
            } => Some((reason, status, skip_reason)),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn intervals_fire_on_schedule_and_a_busy_retry_does_not_move_them() {
    let bench = Bench::new(Arc::new(ManualClock::new(1_700_000_000_000)));
    let host = Arc::new(FakeHost::default());
    let heartbeat = Heartbeat::new(bench.deps.clone(), host.clone(), HeartbeatConfig::default());
    let shutdown = CancellationToken::new();
    let t0 = Instant::now();
    // The one timing loop: the scheduler, with no routines in the file.
    let (_, wake) = bench.start(&heartbeat, Default::default(), &shutdown);
    let sink = bench.sink.clone();
    let minutes = |m: u64| Duration::from_secs(m * 60);

    tokio::time::sleep(minutes(29)).await;
    assert!(host.turns.lock().unwrap().is_empty());
    // The conversation is busy when the first interval comes round: retried after 1 s.
    host.busy.store(true, Ordering::SeqCst);
    tokio::time::sleep(minutes(1) + Duration::from_millis(500)).await;
    host.busy.store(false, Ordering::SeqCst);
    tokio::time::sleep(minutes(29)).await;
    let turns = host.turns.lock().unwrap().clone();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0].0 - t0, minutes(30) + Duration::from_millis(1250));
    assert!(turns[0].1.starts_with("Read HEARTBEAT.md if it exists"));
    assert!(turns[0].1.contains("\nCurrent time: "));
    // The next interval is still at 60 minutes, not 60 minutes and a second.
    tokio::time::sleep(minutes(2)).await;
    let turns = host.turns.lock().unwrap().clone();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].0 - t0, minutes(60) + Duration::from_millis(250));
    assert_eq!(
        events_of(&sink),
        [
            (
                WakeReason::Interval,
                HeartbeatStatus::Skipped,
                Some(HeartbeatSkip::RequestsInFlight)
            ),
            (WakeReason::Retry, HeartbeatStatus::OkEmpty, None),
            (WakeReason::Interval, HeartbeatStatus::OkEmpty, None),
        ]
    );
    let view = heartbeat.view(wake.stats());
    assert_eq!(view.interval_ms, Some(1_800_000));
    assert!(view.next_run_at.is_some());

    // New settings apply without a restart: a 5-minute interval counts from now.
    heartbeat.set_config(HeartbeatConfig::resolve(&HeartbeatSettings {
        every: "5".into(),
        ..Default::default()
    }));
    tokio::time::sleep(minutes(11)).await;
    assert_eq!(host.turns.lock().unwrap().len(), 4);
    // `0` turns interval runs off.
    heartbeat.set_config(HeartbeatConfig::resolve(&HeartbeatSettings {
        every: "0".into(),
        ..Default::default()
    }));
    tokio::time::sleep(minutes(120)).await;
    assert_eq!(host.turns.lock().unwrap().len(), 4);
    assert_eq!(heartbeat.view(wake.stats()).next_run_at, None);
    shutdown.cancel();
}
