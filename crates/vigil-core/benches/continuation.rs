//! `cargo bench -p vigil-core --bench continuation` (in `make bench`): how soon a finished
//! background command's conversation continues, and how exits close together share turns.
//!
//! - exit → the continuation's request reaching the provider (the fake LLM), p50 and p99
//!   over 50 exits, next to the 250 ms merge window every continuation waits out first
//!   (goal: p99 ≤ 350 ms);
//! - 100 background commands ending within 1 s across 10 conversations (each conversation's
//!   ten within 90 ms): exactly 10 continuation turns.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vigil_core::clock::SystemClock;
use vigil_core::events::EventSink;
use vigil_core::exec::SpawnRequest;
use vigil_core::protocol::{Event, EventEnvelope, HeartbeatSettings, Op, Source};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

/// When each process exit and each continuation start reached the sink.
#[derive(Default)]
struct Watch {
    exits: Mutex<Vec<(String, Instant)>>,
    continuations: Mutex<Vec<String>>,
    sessions: Mutex<Vec<String>>,
}

struct WatchSink(Arc<Watch>);

impl EventSink for WatchSink {
    fn emit(&self, e: EventEnvelope) {
        let w = &self.0;
        match &e.event {
            Event::ProcessExited { process } => w.exits.lock().unwrap().push((process.owner.clone(), Instant::now())),
            Event::TurnStarted { .. } if e.source == Source::Background => w
                .continuations
                .lock()
                .unwrap()
                .push(e.session_id.clone().unwrap_or_default()),
            Event::SessionsChanged { sessions } => {
                *w.sessions.lock().unwrap() = sessions.iter().map(|s| s.id.clone()).collect();
            }
            _ => {}
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

async fn rig() -> (Runtime, Arc<Watch>, FakeLlm, tempfile::TempDir) {
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("NO_REPLY")))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let watch = Arc::new(Watch::default());
    let rt = Runtime::new(dir.path(), Arc::new(SystemClock), Arc::new(WatchSink(watch.clone()))).unwrap();
    let config = vigil_core::provider::ProviderConfig::new(
        vigil_core::protocol::ProviderKind::Anthropic,
        fake.anthropic_base_url(),
        "fake-model",
    );
    rt.set_client(Some(
        vigil_core::provider::ModelClient::new(config, Arc::new(SystemClock)).unwrap(),
    ));
    rt.set_heartbeat_settings(&HeartbeatSettings {
        enabled: false,
        ..HeartbeatSettings::default()
    });
    // A bench's chains are long: no limit gets in the way.
    rt.set_autonomy(u32::MAX, Duration::from_secs(3600));
    assert!(rt.start_background());
    (rt, watch, fake, dir)
}

async fn conversations(rt: &Runtime, watch: &Watch, n: usize) -> Vec<String> {
    for i in 0..n {
        rt.submit(Op::CreateSession {
            title: Some(format!("Bench {i}")),
        });
    }
    loop {
        let have = watch.sessions.lock().unwrap().clone();
        if have.len() > n {
            return have.into_iter().filter(|s| s != "main").take(n).collect();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn spawn(rt: &Runtime, owner: &str, command: &str) {
    let mut req = SpawnRequest::new(owner, command, rt.workspace());
    req.background = true;
    rt.processes().unwrap().spawn(req).await.unwrap();
}

/// Exit → request at the provider, one command at a time.
async fn latency() -> Vec<Duration> {
    let (rt, watch, fake, _dir) = rig().await;
    let owners = conversations(&rt, &watch, 5).await;
    let mut samples = Vec::new();
    for i in 0..50 {
        let owner = &owners[i % owners.len()];
        let before = fake.request_count();
        let exits = watch.exits.lock().unwrap().len();
        spawn(&rt, owner, "sleep 0.05").await;
        let exited = loop {
            if let Some((_, at)) = watch.exits.lock().unwrap().get(exits) {
                break *at;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        while fake.request_count() == before {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        samples.push(exited.elapsed());
        rt.idle().await;
    }
    rt.shutdown().await;
    samples.sort();
    samples
}

/// 100 exits within a second across 10 conversations: how many continuation turns.
async fn burst() -> (usize, Duration, usize) {
    let (rt, watch, _fake, _dir) = rig().await;
    let owners = conversations(&rt, &watch, 10).await;
    // Conversation k's ten start 60 ms after conversation k-1's and end within 90 ms of each
    // other; all hundred end within a second, and no more than ~60 run at once (the registry
    // runs at most 64).
    let start = Instant::now();
    for (k, owner) in owners.iter().enumerate() {
        tokio::time::sleep_until((start + Duration::from_millis(60 * k as u64)).into()).await;
        for j in 0..10 {
            spawn(&rt, owner, &format!("sleep {:.2}", 0.25 + j as f64 * 0.01)).await;
        }
    }
    rt.idle().await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    rt.idle().await;
    let exits = watch.exits.lock().unwrap().clone();
    let first = exits.iter().map(|(_, t)| *t).min().unwrap();
    let last = exits.iter().map(|(_, t)| *t).max().unwrap();
    let turns = watch.continuations.lock().unwrap().len();
    rt.shutdown().await;
    (turns, last - first, exits.len())
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let samples = rt.block_on(latency());
    let (p50, p99) = (percentile(&samples, 0.5), percentile(&samples, 0.99));
    let window = vigil_core::runtime::MERGE_WINDOW;
    println!(
        "continuation: exit → request at the provider over {} exits: p50 {:.1} ms, p99 {:.1} ms (merge window {} ms; p99 is {:.2}× the window; goal p99 ≤ 350 ms: {})",
        samples.len(),
        p50.as_secs_f64() * 1e3,
        p99.as_secs_f64() * 1e3,
        window.as_millis(),
        p99.as_secs_f64() / window.as_secs_f64(),
        if p99 <= Duration::from_millis(350) { "met" } else { "NOT met" }
    );
    let (turns, spread, exits) = rt.block_on(burst());
    println!(
        "continuation: {exits} background commands ending within {:.2} s across 10 conversations → {turns} continuation turns (goal 10: {})",
        spread.as_secs_f64(),
        if turns == 10 { "met" } else { "NOT met" }
    );
}
