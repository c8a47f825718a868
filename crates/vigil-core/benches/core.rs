//! `cargo bench -p vigil-core --bench core` (or `make bench`): the agent loop's own costs,
//! each against a goal and, where there is one, a baseline measured in the same run.
//!
//! - session append: median `SessionStore::append` at message 10 000 vs at message 10
//!   (ratio; goal ≤ 2×);
//! - session load: `SessionStore::load` of a 10 000-message transcript vs reading the same
//!   file and parsing each line into `Message` with serde_json alone (ratio; goal ≤ 100 ms);
//! - turn: a full turn against the in-process fake provider, from `submit` to `turn_finished`,
//!   vs, right after it, a bare reqwest client posting the very body that turn sent (system
//!   prompt, tools, history) to the same endpoint and streaming the reply to the end; the
//!   core overhead is the median per-turn difference (goal ≤ 1 ms);
//! - turn, of that: the durable writes inside that window (the turn's two transcript appends,
//!   replayed one after the other right after it through `SessionStore::append_async` into a
//!   session on the same file system) subtracted per turn. The turn syncs the user's message
//!   while its request is out, so less than the replay is in its window, and the rest may come
//!   out below zero. The metadata commit comes after `turn_finished` (checked on disk on a
//!   warm-up turn), so it is outside the window and not subtracted;
//! - scheduler tick with 1 000 routines (every catch-up policy), none due, against a tick
//!   with none (goal ≤ 1 ms);
//! - fire lateness on the real clock: 40 reminders due 100 ms apart through the whole
//!   runtime, from due time to the reminder's card, vs a bare tokio timer sleeping to the
//!   same 40 due times on the same clock, measured the same way (p99 ratio; goal p99 ≤ 100 ms).
//!   Each reminder is measured by its own first card: one that never fires, or fires twice,
//!   fails the bench.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vigil_core::clock::{Clock, SystemClock};
use vigil_core::events::CollectingSink;
use vigil_core::protocol::{Event, Message, Op, ProviderKind, Role};
use vigil_core::provider::{ModelClient, ProviderConfig};
use vigil_core::session::{MetaStore, SessionStore, PRIMARY_SESSION};
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

/// How a figure stands against its goal, as every bench prints it.
fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT met"
    }
}

/// The median of signed values (seconds), e.g. per-turn differences.
fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Seconds, printed like a `Duration` (µs or ms), with a sign when negative.
fn show(secs: f64) -> String {
    let d = Duration::from_secs_f64(secs.abs());
    if secs < 0.0 {
        format!("-{d:.3?}")
    } else {
        format!("{d:.3?}")
    }
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

/// Median `SessionStore::load` of an `n`-message transcript, and, as its baseline, the
/// median of reading the same file and parsing each line into `Message` with serde_json
/// alone. The two are sampled in turn, so both see the same page cache and CPU.
fn load_cost(n: usize) -> (Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&serde_json::to_string(&message(i)).unwrap());
        text.push('\n');
    }
    let path = dir.path().join("sessions/bench.jsonl");
    std::fs::write(&path, text).unwrap();
    let (mut loads, mut bare) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        let t = Instant::now();
        assert_eq!(store.load("bench").unwrap().messages.len(), n);
        loads.push(t.elapsed());
        let t = Instant::now();
        let bytes = std::fs::read(&path).unwrap();
        let parsed: Vec<Message> = bytes
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        assert_eq!(parsed.len(), n);
        drop(parsed);
        bare.push(t.elapsed());
    }
    (median(loads), median(bare))
}

/// What is on disk for the primary session: its metadata revision and transcript length.
type OnDisk = (u64, usize);

/// Signals each finished turn, so the timing loop waits without polling (a spinning
/// waiter took one of the two cores from the runtime it was timing). While `probe` is set
/// (untimed warm-up turns only), it first reads what is on disk at `turn_finished`.
struct TurnEnds {
    finished: tokio::sync::mpsc::UnboundedSender<Option<OnDisk>>,
    probe: AtomicBool,
    store: SessionStore,
    meta: MetaStore,
}

impl TurnEnds {
    fn on_disk(&self) -> OnDisk {
        (
            self.meta.load(PRIMARY_SESSION).unwrap().meta.revision,
            self.store.load(PRIMARY_SESSION).unwrap().messages.len(),
        )
    }
}

impl vigil_core::events::EventSink for TurnEnds {
    fn emit(&self, e: vigil_core::protocol::EventEnvelope) {
        if matches!(e.event, Event::TurnFinished { .. }) {
            // Read synchronously inside the turn's own task, before it goes on.
            let seen = self.probe.load(Ordering::SeqCst).then(|| self.on_disk());
            let _ = self.finished.send(seen);
        }
    }
}

/// Per timed turn (same order in each): the full turn, the bare exchange of that turn's
/// request body, and the turn's in-window durable writes replayed.
struct TurnCosts {
    full: Vec<Duration>,
    bare: Vec<Duration>,
    durable: Vec<Duration>,
    /// Smallest and largest request body, in bytes.
    body_bytes: (usize, usize),
    /// Metadata revision at `turn_finished` and after the turn's wrap-up, on a warm-up turn.
    revisions: (u64, u64),
}

const WARM_UP_TURNS: usize = 2;
const TIMED_TURNS: usize = 60;

async fn turn_costs() -> TurnCosts {
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("ok")))
        .await
        .unwrap();
    let mut cfg = ProviderConfig::new(ProviderKind::Anthropic, fake.anthropic_base_url(), "fake-model");
    cfg.max_retries = 0;
    let client = ModelClient::new(cfg.clone(), Arc::new(SystemClock)).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let (finished, mut turns) = tokio::sync::mpsc::unbounded_channel();
    let disk = SessionStore::open(dir.path()).unwrap();
    let ends = Arc::new(TurnEnds {
        finished,
        probe: AtomicBool::new(false),
        meta: MetaStore::new(disk.clone(), Arc::new(SystemClock)),
        store: disk,
    });
    let rt = vigil_core::Runtime::new(dir.path(), Arc::new(SystemClock), ends.clone()).unwrap();
    rt.set_client(Some(client));
    let submit = |text: String| {
        rt.submit(Op::UserMessage {
            text,
            session_id: None,
            attachments: vec![],
        })
    };

    // Warm-up, untimed. The first turn creates the session and names it (two metadata
    // commits before the turn starts); the second is a steady-state turn, watched on disk:
    // what is durable at `turn_finished` is what the timed window contains.
    submit("hello".into());
    turns.recv().await.expect("the runtime is alive");
    rt.idle().await;
    let before = ends.on_disk();
    ends.probe.store(true, Ordering::SeqCst);
    submit("hello again".into());
    let at_finish = turns.recv().await.flatten().expect("the probe read the disk");
    rt.idle().await;
    ends.probe.store(false, Ordering::SeqCst);
    let after = ends.on_disk();
    assert_eq!(
        at_finish,
        (before.0, before.1 + 2),
        "at turn_finished the turn's two transcript appends are on disk and its metadata is not yet committed"
    );
    assert_eq!(
        after,
        (before.0 + 1, before.1 + 2),
        "after turn_finished the turn commits its metadata once, and appends nothing more"
    );

    // Each timed turn is followed at once by its two baselines, so all three see the same
    // disk and CPU conditions on this shared machine:
    // - the bare HTTP exchange: a bare client posts exactly the body (and headers) that turn
    //   sent to the same endpoint and streams the reply to the end;
    // - the durable work inside the turn's window: that turn's user and assistant messages,
    //   appended through the same code path (`append_async`: session lock, open, write,
    //   fdatasync) to a session of their own in a temp data dir on the same file system.
    let bare_client = reqwest::Client::new();
    let url = format!("{}/v1/messages", fake.anthropic_base_url());
    let replay_dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let dev = |p: &std::path::Path| std::fs::metadata(p).unwrap().dev();
        assert_eq!(
            dev(replay_dir.path()),
            dev(dir.path()),
            "the replay is on the runtime's file system"
        );
    }
    let replay = SessionStore::open(replay_dir.path()).unwrap();
    // Untimed: the warm-up turns' bodies open the connection, their messages the session.
    for recorded in fake.requests() {
        bare_exchange(&bare_client, &url, &recorded).await;
    }
    for m in rt.history(None).unwrap().messages {
        replay.append_async(PRIMARY_SESSION, &m).await.unwrap();
    }
    let (mut full, mut bare, mut durable, mut sizes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..TIMED_TURNS {
        // The user types while the lane is idle: the previous turn's wrap-up (its metadata
        // commit, after turn_finished) is not timed.
        rt.idle().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let recorded_before = fake.request_count();
        let t = Instant::now();
        submit(format!("hi {i}"));
        turns.recv().await.expect("the runtime is alive");
        full.push(t.elapsed());
        rt.idle().await;

        let sent: Vec<_> = fake
            .requests_since(recorded_before)
            .into_iter()
            .filter(|r| r.path == "/v1/messages")
            .collect();
        assert_eq!(sent.len(), 1, "one model request per turn");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (took, bytes) = bare_exchange(&bare_client, &url, &sent[0]).await;
        bare.push(took);
        sizes.push(bytes);

        let messages = rt.history(None).unwrap().messages;
        assert_eq!(messages.len(), 2 * (WARM_UP_TURNS + i + 1), "two messages per turn");
        let pair = &messages[messages.len() - 2..];
        assert!(matches!((&pair[0].role, &pair[1].role), (Role::User, Role::Assistant)));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let t = Instant::now();
        for m in pair {
            replay.append_async(PRIMARY_SESSION, m).await.unwrap();
        }
        durable.push(t.elapsed());
    }
    rt.shutdown().await;
    TurnCosts {
        full,
        bare,
        durable,
        body_bytes: (*sizes.iter().min().unwrap(), *sizes.iter().max().unwrap()),
        revisions: (at_finish.0, after.0),
    }
}

/// Posts exactly `recorded`'s body with its headers and streams the reply to the end:
/// how long that took, and the body's size.
async fn bare_exchange(
    client: &reqwest::Client,
    url: &str,
    recorded: &vigil_fake_llm::RecordedRequest,
) -> (Duration, usize) {
    let body = serde_json::to_vec(&recorded.body).unwrap();
    if let Some(sent) = recorded.headers.get("content-length") {
        assert_eq!(
            body.len(),
            sent.parse::<usize>().unwrap(),
            "the baseline body is the one sent"
        );
    }
    let bytes = body.len();
    let mut request = client.post(url).body(body);
    for (name, value) in &recorded.headers {
        if !matches!(name.as_str(), "host" | "content-length") {
            request = request.header(name, value);
        }
    }
    let t = Instant::now();
    let mut reply = request.send().await.unwrap();
    assert!(reply.status().is_success(), "the fake answered {}", reply.status());
    while reply.chunk().await.unwrap().is_some() {}
    (t.elapsed(), bytes)
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
    // Every catch-up policy, as a real block would hold them.
    let policies = ["once", "skip", "all"];
    let tasks: Vec<serde_json::Value> = (0..n)
        .map(|i| {
            serde_json::json!({"id": format!("r{i}"), "title": format!("Routine {i}"), "description": "check something",
                "schedule": schedules[i % schedules.len()], "timezone": "Europe/Berlin", "execution_mode": "isolated",
                "source": "manual", "enabled": true, "state": "pending", "next_run_at": "2027-01-01T00:00:00+00:00",
                "created_at": "2026-01-01T00:00:00+00:00", "timeout_seconds": 120, "catch_up": policies[i % policies.len()]})
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
/// Each reminder is measured by its own first card, and taken off the list then: a second
/// card for one is a double fire (counted, and an error), never the measure of another, so
/// one that fires twice cannot stand in for one that never fires.
async fn fire_lateness(n: i64) -> Vec<i64> {
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
        due.insert(title, at);
    }
    let mut late = Vec::new();
    let mut again = Vec::new();
    let mut last_due = Duration::from_secs(10);
    loop {
        // Once every reminder fired, a little longer for a late second card.
        if due.is_empty() {
            last_due = last_due.min(Duration::from_millis(500));
        }
        let Ok(Some(env)) = tokio::time::timeout(last_due, rx.recv()).await else {
            break;
        };
        let Event::BackgroundUpdate { update, .. } = &env.event else {
            continue;
        };
        let Some(title) = update
            .summary
            .strip_prefix("Reminder: ")
            .and_then(|rest| rest.split(' ').next())
        else {
            continue;
        };
        match due.remove(title) {
            Some(at) => late.push(env.ts - at),
            None => again.push(title.to_string()),
        }
    }
    rt.shutdown().await;
    let mut missed: Vec<&String> = due.keys().collect();
    missed.sort();
    assert!(missed.is_empty(), "reminders that never fired: {missed:?}");
    assert!(again.is_empty(), "reminders that fired more than once: {again:?}");
    assert_eq!(late.len(), n as usize);
    late.sort_unstable();
    late
}

/// The baseline for [`fire_lateness`]: nothing but a tokio timer. One task sleeps to each of
/// `n` due times 100 ms apart, the way the scheduler's loop waits (`sleep_until` now plus
/// the milliseconds left on `SystemClock`); its lateness is `SystemClock`'s milliseconds
/// at wake-up minus the due time, as a card's timestamp minus its due time is.
async fn timer_lateness(n: i64) -> Vec<i64> {
    let start = SystemClock.now_ms() + 500;
    let mut late = Vec::new();
    for i in 0..n {
        let at = start + i * 100;
        let wait = Duration::from_millis((at - SystemClock.now_ms()).max(0) as u64);
        tokio::time::sleep_until(tokio::time::Instant::now() + wait).await;
        late.push(SystemClock.now_ms() - at);
    }
    late.sort_unstable();
    late
}

/// Times the turns and prints the core's overhead per turn.
fn turn_report(rt: &tokio::runtime::Runtime) {
    let turns = rt.block_on(turn_costs());
    let secs = |v: &[Duration]| v.iter().map(Duration::as_secs_f64).collect::<Vec<_>>();
    let (full, bare, durable) = (secs(&turns.full), secs(&turns.bare), secs(&turns.durable));
    let overhead: Vec<f64> = full.iter().zip(&bare).map(|(f, b)| f - b).collect();
    let rest: Vec<f64> = overhead.iter().zip(&durable).map(|(o, d)| o - d).collect();
    let core = median_f(overhead);
    println!(
        "turn: {} turns; bare HTTP exchange of the same request bodies ({}-{} bytes) {}, full turn (submit to \
         turn_finished) {} -> core overhead {} per turn (median of per-turn differences; full/bare {:.2}x; goal <= 1 ms: {})",
        TIMED_TURNS,
        turns.body_bytes.0,
        turns.body_bytes.1,
        show(median_f(bare.clone())),
        show(median_f(full.clone())),
        show(core),
        median_f(full) / median_f(bare),
        verdict(core <= 1e-3)
    );
    println!(
        "turn: of that, subtracted per turn: the durable writes inside the window, its 2 transcript appends \
         (user + assistant message; SessionStore::append_async: lock, write, fdatasync) replayed on the same \
         file system one after the other, {}; the rest {} per turn (median; below zero when the user message's \
         sync, which overlaps the request, hides more than the rest costs). Not subtracted: the metadata commit, which lands after \
         turn_finished (revision {} at turn_finished, {} after)",
        show(median_f(durable)),
        show(median_f(rest)),
        turns.revisions.0,
        turns.revisions.1
    );
}

fn main() {
    // `BENCH_ONLY=turn` times the turn alone (while profiling it), `fire` the lateness.
    match std::env::var("BENCH_ONLY").as_deref() {
        Ok("turn") => return turn_report(&tokio::runtime::Runtime::new().unwrap()),
        Ok("fire") => return fire_report(&tokio::runtime::Runtime::new().unwrap()),
        _ => {}
    }
    let small = append_cost(10);
    let large = append_cost(10_000);
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    println!(
        "session append: at message 10 {:?}, at message 10 000 {:?} -> ratio {:.2}x (goal <= 2x: {})",
        small,
        large,
        ratio,
        verdict(ratio <= 2.0)
    );
    let (load, parse) = load_cost(10_000);
    println!(
        "session load: 10 000 messages in {:?} (goal <= 100 ms: {}); reading the file and parsing each line into \
         Message with serde_json alone {:?} -> ratio {:.2}x",
        load,
        verdict(load <= Duration::from_millis(100)),
        parse,
        load.as_secs_f64() / parse.as_secs_f64()
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    turn_report(&rt);

    let (empty, full) = rt.block_on(async { (tick_cost(0).await, tick_cost(1000).await) });
    println!(
        "scheduler tick: 0 routines {:?}, 1 000 routines {:?} -> {:.2}x; {:.3} ms per tick (goal <= 1 ms: {})",
        empty,
        full,
        full.as_secs_f64() / empty.as_secs_f64().max(1e-9),
        full.as_secs_f64() * 1000.0,
        verdict(full <= Duration::from_millis(1))
    );

    fire_report(&rt);
}

/// Measures and prints the reminders' fire lateness against a bare timer's.
fn fire_report(rt: &tokio::runtime::Runtime) {
    let late = rt.block_on(fire_lateness(40));
    let timer = rt.block_on(timer_lateness(40));
    let p = |v: &[i64], q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    let ratio = if p(&timer, 0.99) > 0 {
        format!("{:.2}x", p(&late, 0.99) as f64 / p(&timer, 0.99) as f64)
    } else {
        "none (the timer's p99 is 0 ms)".into()
    };
    println!(
        "fire lateness (real clock, 40 reminders 100 ms apart): p50 {} ms, p99 {} ms, max {} ms (goal p99 <= 100 ms: {}); \
         bare tokio timer, same due times and clock: p50 {} ms, p99 {} ms, max {} ms -> p99 ratio {}",
        p(&late, 0.5),
        p(&late, 0.99),
        late.last().unwrap(),
        verdict(p(&late, 0.99) <= 100),
        p(&timer, 0.5),
        p(&timer, 0.99),
        timer.last().unwrap(),
        ratio
    );
}
