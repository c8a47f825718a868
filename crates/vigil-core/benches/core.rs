//! `cargo bench -p vigil-core --bench core` (or `make bench`): the agent loop's own costs,
//! each printed as a ratio against a baseline measured in the same run.
//!
//! - session append at message 10 000 vs at message 10 (goal ≤ 2×);
//! - loading a 10 000-message session (goal ≤ 100 ms);
//! - core overhead per turn: a full turn against the in-process fake provider vs the same
//!   HTTP exchange done by a bare client (goal ≤ 1 ms);
//! - scheduler tick with 1 000 routines, none due (goal ≤ 1 ms), against a tick with none;
//! - fire lateness on the real clock: 40 reminders due 100 ms apart through the whole
//!   runtime, from due time to the reminder's card (goal p99 ≤ 100 ms).

use std::sync::Arc;
use std::time::{Duration, Instant};

use vigil_core::clock::SystemClock;
use vigil_core::events::CollectingSink;
use vigil_core::protocol::{Event, Message, Op, ProviderKind};
use vigil_core::provider::{ModelClient, ProviderConfig};
use vigil_core::session::SessionStore;
use vigil_fake_llm::{FakeLlm, Script, Step};

fn message(i: usize) -> Message {
    Message::user_text(
        format!("message {i}: {}", "lorem ipsum dolor sit amet ".repeat(8)),
        i as i64,
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Median cost of one append once the session already holds `prefill` messages.
fn append_cost(prefill: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    for i in 0..prefill {
        store.append("bench", &message(i)).unwrap();
    }
    let samples = (0..200)
        .map(|i| {
            let m = message(prefill + i);
            let t = Instant::now();
            store.append("bench", &m).unwrap();
            t.elapsed()
        })
        .collect();
    median(samples)
}

fn load_cost(n: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&serde_json::to_string(&message(i)).unwrap());
        text.push('\n');
    }
    std::fs::write(dir.path().join("sessions/bench.jsonl"), text).unwrap();
    let samples = (0..15)
        .map(|_| {
            let t = Instant::now();
            assert_eq!(store.load("bench").unwrap().messages.len(), n);
            t.elapsed()
        })
        .collect();
    median(samples)
}

/// Signals each finished turn, so the timing loop waits without polling (a spinning
/// waiter took one of the two cores from the runtime it was timing).
struct TurnEnds(tokio::sync::mpsc::UnboundedSender<()>);

impl vigil_core::events::EventSink for TurnEnds {
    fn emit(&self, e: vigil_core::protocol::EventEnvelope) {
        if matches!(e.event, Event::TurnFinished { .. }) {
            let _ = self.0.send(());
        }
    }
}

async fn turn_overhead() -> (Duration, Duration) {
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("ok")))
        .await
        .unwrap();
    let mut cfg = ProviderConfig::new(ProviderKind::Anthropic, fake.anthropic_base_url(), "fake-model");
    cfg.max_retries = 0;
    let client = ModelClient::new(cfg.clone(), Arc::new(SystemClock)).unwrap();

    // Baseline: the bare HTTP exchange, streamed to the end.
    let bare = reqwest::Client::new();
    let body = serde_json::json!({"model": "fake-model", "max_tokens": 16, "stream": true,
        "messages": [{"role": "user", "content": "hi"}]});
    let mut base = Vec::new();
    for _ in 0..60 {
        let t = Instant::now();
        let r = bare
            .post(format!("{}/v1/messages", fake.anthropic_base_url()))
            .json(&body)
            .send()
            .await
            .unwrap();
        let _ = r.bytes().await.unwrap();
        base.push(t.elapsed());
    }

    let dir = tempfile::tempdir().unwrap();
    let (finished, mut turns) = tokio::sync::mpsc::unbounded_channel();
    let rt = vigil_core::Runtime::new(dir.path(), Arc::new(SystemClock), Arc::new(TurnEnds(finished))).unwrap();
    rt.set_client(Some(client));
    let mut full = Vec::new();
    for i in 0..60 {
        // The user types while the lane is idle: the previous turn's wrap-up is not timed.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let t = Instant::now();
        rt.submit(Op::UserMessage {
            text: format!("hi {i}"),
            session_id: None,
        });
        turns.recv().await.expect("the runtime is alive");
        full.push(t.elapsed());
    }
    rt.shutdown().await;
    (median(base), median(full))
}

/// What durability alone costs on this disk: one fsync'd line append and one atomic
/// file replacement (temp + fsync + rename + folder fsync), medians.
fn durability_costs() -> (Duration, Duration) {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.jsonl");
    let line = vec![b'x'; 300];
    let appends = (0..200)
        .map(|_| {
            let t = Instant::now();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(&line).unwrap();
            f.sync_data().unwrap();
            t.elapsed()
        })
        .collect();
    let target = dir.path().join("meta.json");
    let commits = (0..100)
        .map(|_| {
            let t = Instant::now();
            let mut f = atomic_write_file::AtomicWriteFile::options().open(&target).unwrap();
            f.write_all(&line).unwrap();
            f.commit().unwrap();
            t.elapsed()
        })
        .collect();
    (median(appends), median(commits))
}

/// Median tick cost with `n` routines in HEARTBEAT.md, none of them due.
async fn tick_cost(n: usize) -> Duration {
    use vigil_core::routines::{Deps, RoutineStore, RunLog, Scheduler, SchedulerConfig};
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn vigil_core::clock::Clock> = Arc::new(vigil_core::clock::ManualClock::new(1_767_225_600_000));
    let store = SessionStore::open_with(dir.path(), clock.clone(), Default::default()).unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let schedules = ["0 9 * * 1-5", "30m", "*/15 * * * *", "2h", "0 18 * * 5"];
    let tasks: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({"id": format!("r{i}"), "title": format!("Routine {i}"), "description": "check something",
                "schedule": schedules[i % schedules.len()], "timezone": "Europe/Berlin", "execution_mode": "isolated",
                "source": "manual", "enabled": true, "state": "pending", "next_run_at": "2027-01-01T00:00:00+00:00",
                "created_at": "2026-01-01T00:00:00+00:00", "timeout_seconds": 120})
        })
        .collect();
    let text = format!(
        "# Checks\n\n## Tasks\n\n```json\n{}\n```\n",
        serde_json::to_string_pretty(&serde_json::json!({"version": 2, "tasks": tasks})).unwrap()
    );
    std::fs::write(workspace.join("HEARTBEAT.md"), text).unwrap();
    let s = Scheduler::new(
        Deps {
            store: RoutineStore::new(&workspace, store.locks().clone(), clock.clone()),
            runlog: RunLog::new(dir.path()),
            meta: vigil_core::session::MetaStore::new(store, clock.clone()),
            emitter: vigil_core::events::Emitter::new(Arc::new(CollectingSink::default()), clock.clone()),
            clock,
        },
        SchedulerConfig {
            default_zone: "UTC".into(),
            ..SchedulerConfig::default()
        },
    );
    // The first tick reads and parses the file; the steady state is what the loop pays.
    assert!(s.tick().await.claimed.is_empty());
    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let report = s.tick().await;
        samples.push(t.elapsed());
        assert!(report.claimed.is_empty());
    }
    median(samples)
}

/// Hands events to the bench as they happen.
struct ChannelSink(tokio::sync::mpsc::UnboundedSender<vigil_core::protocol::EventEnvelope>);

impl vigil_core::events::EventSink for ChannelSink {
    fn emit(&self, event: vigil_core::protocol::EventEnvelope) {
        let _ = self.0.send(event);
    }
}

/// Milliseconds from each reminder's due time to its card (`background_update`), on the
/// real clock through the whole runtime: the scheduler's sleep, tick, claim and delivery.
async fn fire_lateness(n: i64) -> Vec<i64> {
    use vigil_core::clock::Clock;
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let rt = vigil_core::Runtime::new(dir.path(), Arc::new(SystemClock), Arc::new(ChannelSink(tx))).unwrap();
    assert!(rt.start_background());
    let start = SystemClock.now_ms() + 2_000;
    let mut due = std::collections::HashMap::new();
    for i in 0..n {
        let title = format!("L{i:03}");
        let at = start + i * 100;
        let draft = vigil_core::protocol::RoutineDraft {
            title: Some(title.clone()),
            description: Some("stand up".into()),
            next_run_at: Some(at),
            timezone: Some("UTC".into()),
            kind: Some("time_reminder".into()),
            allow_duplicate: true,
            ..Default::default()
        };
        rt.add_routine(draft).await.unwrap();
        due.insert(format!("Reminder: {title} "), at);
    }
    let mut late = Vec::new();
    while late.len() < n as usize {
        let Ok(Some(env)) = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await else {
            break;
        };
        if let Event::BackgroundUpdate { update, .. } = &env.event {
            if let Some((_, at)) = due
                .iter()
                .find(|(prefix, _)| update.summary.starts_with(prefix.as_str()))
            {
                late.push(env.ts - at);
            }
        }
    }
    rt.shutdown().await;
    assert_eq!(late.len(), n as usize, "every reminder fired");
    late.sort_unstable();
    late
}

fn main() {
    let small = append_cost(10);
    let large = append_cost(10_000);
    println!(
        "session append: at message 10 {:?}, at message 10 000 {:?} -> ratio {:.2}x (goal <= 2x)",
        small,
        large,
        large.as_secs_f64() / small.as_secs_f64()
    );
    let load = load_cost(10_000);
    println!(
        "session load: 10 000 messages in {:?} (goal <= 100 ms) -> {:.2}x of the goal",
        load,
        load.as_secs_f64() / 0.1
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (base, full) = rt.block_on(turn_overhead());
    let overhead = full.saturating_sub(base);
    println!(
        "turn: bare HTTP exchange {:?}, full turn {:?} -> core overhead {:?} per turn ({:.2}x the exchange; goal <= 1 ms)",
        base,
        full,
        overhead,
        full.as_secs_f64() / base.as_secs_f64()
    );
    let (empty, full) = rt.block_on(async { (tick_cost(0).await, tick_cost(1000).await) });
    println!(
        "scheduler tick: 0 routines {:?}, 1 000 routines {:?} -> {:.2}x; {:.3} ms per tick (goal <= 1 ms)",
        empty,
        full,
        full.as_secs_f64() / empty.as_secs_f64().max(1e-9),
        full.as_secs_f64() * 1000.0
    );
    let late = rt.block_on(fire_lateness(40));
    let p = |q: f64| late[((late.len() - 1) as f64 * q).round() as usize];
    println!(
        "fire lateness (real clock, 40 reminders): p50 {} ms, p99 {} ms, max {} ms (goal p99 <= 100 ms) -> {:.2}x of the goal",
        p(0.5),
        p(0.99),
        late.last().unwrap(),
        p(0.99) as f64 / 100.0
    );
    let (append, commit) = durability_costs();
    let durable = append * 2 + commit;
    println!(
        "turn: of that, durability (2 fsync'd appends at {:?} + 1 metadata commit at {:?}) = {:?}; the rest {:?}",
        append,
        commit,
        durable,
        overhead.saturating_sub(durable)
    );
}
