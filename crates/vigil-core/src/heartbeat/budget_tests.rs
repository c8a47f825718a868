//! The daily token budget for background work and the idle gate, on paused time, through the
//! scheduler's interval timer and the wake loop, with a host that records turns instead of
//! calling a model (each turn "uses" 100 input and 20 output tokens).

use std::pin::Pin;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use vigil_protocol::{Event, HeartbeatSettings, StopReason, Usage};

use super::timing_rig::Bench;
use super::*;
use crate::events::CollectingSink;

/// Wall time that follows tokio's paused clock, so "8 hours without a user message" passes
/// as the simulated hours do.
struct PausedClock {
    start_ms: i64,
    t0: Instant,
    /// Extra time, for jumping to the next day.
    shift_ms: Mutex<i64>,
}

impl Clock for PausedClock {
    fn now_ms(&self) -> i64 {
        self.start_ms + self.t0.elapsed().as_millis() as i64 + *self.shift_ms.lock().unwrap()
    }

    fn sleep(&self, d: Duration) -> Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(d))
    }
}

struct FakeHost {
    turns: Mutex<Vec<Instant>>,
    /// Charged as the runtime's runs charge it.
    budget: crate::run::Budget,
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
    async fn run(&self, _req: crate::run::RunRequest) -> crate::run::RunResult {
        self.turns.lock().unwrap().push(Instant::now());
        let usage = Usage {
            input_tokens: 100,
            output_tokens: 20,
            ..Usage::default()
        };
        self.budget.charge(usage);
        crate::run::RunResult {
            usage: Some(usage),
            ..crate::run::RunResult::ended(StopReason::EndTurn)
        }
    }
}

struct Rig {
    _dir: tempfile::TempDir,
    clock: Arc<PausedClock>,
    sink: CollectingSink,
    host: Arc<FakeHost>,
    heartbeat: Heartbeat,
    shutdown: CancellationToken,
    t0: Instant,
}

/// A heartbeat with a non-empty checklist, its wake loop and the scheduler's timing loop.
fn rig(settings: HeartbeatSettings) -> Rig {
    let t0 = Instant::now();
    let clock = Arc::new(PausedClock {
        // 2023-11-14 12:13 UTC: the budget test stays on one date in zones within ±7 hours.
        start_ms: 1_699_964_000_000,
        t0,
        shift_ms: Mutex::new(0),
    });
    let bench = Bench::new(clock.clone());
    let host = Arc::new(FakeHost {
        turns: Mutex::default(),
        budget: bench.deps.budget.clone(),
    });
    let heartbeat = Heartbeat::new(bench.deps.clone(), host.clone(), HeartbeatConfig::resolve(&settings));
    let shutdown = CancellationToken::new();
    bench.start(&heartbeat, Default::default(), &shutdown);
    Rig {
        _dir: bench.dir,
        clock,
        sink: bench.sink,
        host,
        heartbeat,
        shutdown,
        t0,
    }
}

type Beat = (HeartbeatStatus, Option<HeartbeatSkip>, Option<Usage>);

fn beats(events: &[vigil_protocol::EventEnvelope]) -> Vec<Beat> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Heartbeat {
                status,
                skip_reason,
                usage,
                ..
            } => Some((*status, *skip_reason, *usage)),
            _ => None,
        })
        .collect()
}

fn budget_notices(events: &[vigil_protocol::EventEnvelope]) -> usize {
    events
        .iter()
        .filter(|e| matches!(&e.event, Event::Notification { title, .. } if title.contains("budget")))
        .count()
}

fn minutes(m: u64) -> Duration {
    Duration::from_secs(m * 60)
}

#[tokio::test(start_paused = true)]
async fn a_spent_budget_skips_background_runs_with_one_notification_until_raised_or_tomorrow() {
    let settings = HeartbeatSettings {
        daily_token_budget: 300,
        idle_after_hours: 0,
        ..Default::default()
    };
    let r = rig(settings.clone());
    // Six interval runs; each turn uses 120 tokens, so the budget is spent after the third.
    tokio::time::sleep(minutes(6 * 30 + 1)).await;
    assert_eq!(r.host.turns.lock().unwrap().len(), 3, "3 runs fit in a budget of 300");
    let events = r.sink.take();
    let used = Some(Usage {
        input_tokens: 100,
        output_tokens: 20,
        ..Usage::default()
    });
    let ok = (HeartbeatStatus::OkEmpty, None, used);
    let budget = (HeartbeatStatus::Skipped, Some(HeartbeatSkip::Budget), None);
    assert_eq!(beats(&events), [ok, ok, ok, budget, budget, budget]);
    assert_eq!(budget_notices(&events), 1, "one notification, not one per skipped run");
    let view = r.heartbeat.view(Default::default());
    assert_eq!(
        (view.usage_today.input_tokens, view.usage_today.output_tokens),
        (300, 60)
    );
    assert_eq!(view.runs_today, 3);
    assert!(view.budget_spent);
    assert_eq!(view.last_skip_reason, Some(HeartbeatSkip::Budget));
    assert!(view.last_detail.unwrap().contains("budget"));

    // Raised: the next run calls the model again (and is spent again at once: one more notice
    // for the new budget).
    r.heartbeat.set_config(HeartbeatConfig::resolve(&HeartbeatSettings {
        daily_token_budget: 400,
        ..settings.clone()
    }));
    tokio::time::sleep(minutes(2 * 30)).await;
    assert_eq!(r.host.turns.lock().unwrap().len(), 4);
    let events = r.sink.take();
    assert_eq!(beats(&events), [ok, budget]);
    assert_eq!(budget_notices(&events), 1);

    // The next local day starts from zero.
    *r.clock.shift_ms.lock().unwrap() += 24 * 3600 * 1000;
    tokio::time::sleep(minutes(30)).await;
    assert_eq!(r.host.turns.lock().unwrap().len(), 5);
    assert_eq!(r.heartbeat.view(Default::default()).usage_today.input_tokens, 100);
    r.shutdown.cancel();
}

/// The hours after the start of each interval run in 24 simulated hours with no user
/// message, rounded to a hundredth of an hour, and the rig, still running.
async fn a_quiet_day(idle_after_hours: u32) -> (Vec<f64>, Rig) {
    let r = rig(HeartbeatSettings {
        idle_after_hours,
        ..Default::default()
    });
    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
    let hours = r
        .host
        .turns
        .lock()
        .unwrap()
        .iter()
        .map(|t| ((*t - r.t0).as_secs_f64() / 3600.0 * 100.0).round() / 100.0)
        .collect();
    (hours, r)
}

#[tokio::test(start_paused = true)]
async fn the_idle_gate_doubles_the_interval_after_quiet_runs_and_a_user_message_resets_it() {
    // The gate off (0): every 30 minutes, the whole day.
    let (without, off) = a_quiet_day(0).await;
    let every_half_hour: Vec<f64> = (1..=47).map(|n| n as f64 * 0.5).collect();
    assert_eq!(
        without, every_half_hour,
        "interval runs without the gate (hours after start)"
    );
    assert_eq!(off.heartbeat.interval_factor(), 1);
    off.shutdown.cancel();

    let (hours, r) = a_quiet_day(8).await;
    // Every 30 minutes for the first 8 hours; then 1 h, 2 h, and 4 h apart (8×, the cap).
    let mut expected: Vec<f64> = (1..=16).map(|n| n as f64 * 0.5).collect();
    expected.extend([9.0, 11.0, 15.0, 19.0, 23.0]);
    assert_eq!(hours, expected, "interval runs (hours after start)");
    println!(
        "Numbers: 24 simulated hours, a non-empty checklist, no user message: {} model requests ({} without the idle gate)",
        hours.len(),
        without.len()
    );
    assert_eq!(r.heartbeat.interval_factor(), MAX_IDLE_FACTOR);

    // A user message at 24 h 30 m: the next run is at most one interval away, and the rhythm is
    // back to every 30 minutes.
    tokio::time::sleep(minutes(30)).await;
    r.heartbeat.user_active();
    assert_eq!(r.heartbeat.interval_factor(), 1);
    let before = r.host.turns.lock().unwrap().len();
    tokio::time::sleep(minutes(61)).await;
    let turns = r.host.turns.lock().unwrap().clone();
    assert_eq!(turns.len() - before, 2, "two runs in the hour after the user came back");
    assert!(turns[before] - r.t0 <= Duration::from_secs(25 * 3600 + 1));
    r.shutdown.cancel();
}
