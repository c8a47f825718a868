//! `cargo bench -p vigil-core --bench triggers` (in `make bench`): routine triggers and checks
//! (issue 33) through the runtime against the fake provider, each number as a ratio to its
//! goal or to a baseline measured in the same run:
//!
//! - a file change → the run's request at the provider: p99 against debounce + 100 ms;
//! - a webhook POST → the run's request: p99 against 100 ms;
//! - idle CPU with 100 watching routines (34 file, 33 output, 33 one-minute URLs against
//!   loopback) against the same runtime with none: goal ≤ 1.2×, or ≤ 0.01 s CPU a minute
//!   more where the baseline is near zero;
//! - a check in the read-only sandbox against the same command unsandboxed: goal ≤ 1.2×.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use vigil_core::clock::SystemClock;
use vigil_core::events::CollectingSink;
use vigil_core::exec::SpawnRequest;
use vigil_core::protocol::{ExecutionMode, ProviderKind, RoutineDraft, Trigger};
use vigil_core::provider::{ModelClient, ProviderConfig};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

use common::{cpu_time, median, p99};

const SAMPLES: usize = 40;
const IDLE: Duration = Duration::from_secs(5);
/// Checks of each kind, taken in turn: a few milliseconds apart on a shared machine need this many.
const CHECK_RUNS: usize = 100;
const CHECK: &str = "df --output=pcent / | tail -1";

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn runtime(dir: &Path, fake: &FakeLlm) -> Runtime {
    let rt = Runtime::new(dir, Arc::new(SystemClock), Arc::new(CollectingSink::default())).unwrap();
    let mut cfg = ProviderConfig::new(ProviderKind::Anthropic, fake.anthropic_base_url(), "fake-model");
    cfg.api_key = Some("sk-bench".into());
    rt.set_client(Some(ModelClient::new(cfg, Arc::new(SystemClock)).unwrap()));
    assert!(rt.start_background());
    // The bench fires far more than a routine may in an hour.
    rt.watch().set_max_fires_per_hour(1_000_000);
    rt
}

async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

/// Fires one run with `fire`, returns how long until its request reached the provider, and
/// waits until the run is in the history (so the next fire is not merged into it).
async fn one_fire(rt: &Runtime, fake: &FakeLlm, id: &str, fire: impl std::future::Future<Output = ()>) -> Duration {
    let requests = fake.request_count();
    let runs = rt.scheduler().history(id).len();
    let start = Instant::now();
    fire.await;
    until("the run's request", || fake.request_count() > requests).await;
    let took = start.elapsed();
    until("the run ended", || rt.scheduler().history(id).len() > runs).await;
    took
}

fn agent(title: &str, trigger: Trigger) -> RoutineDraft {
    RoutineDraft {
        title: Some(title.into()),
        description: Some("Say what happened.".into()),
        trigger: Some(trigger),
        execution_mode: Some(ExecutionMode::Isolated),
        allow_duplicate: true,
        ..RoutineDraft::default()
    }
}

/// A loopback server answering every request `200 ok`.
async fn loopback_ok() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok")
                    .await;
            });
        }
    });
    port
}

async fn idle_cpu(fake: &FakeLlm) -> (Duration, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path(), fake);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = cpu_time();
    tokio::time::sleep(IDLE).await;
    let none = cpu_time() - before;

    let ws = rt.workspace().to_path_buf();
    let port = loopback_ok().await;
    let mut req = SpawnRequest::new("bench", "exec sleep 3600", &ws);
    req.pty = false;
    let process = rt.processes().unwrap().spawn(req).await.unwrap();
    let mut ids = Vec::new();
    for i in 0..100 {
        let trigger = match i % 3 {
            0 => {
                std::fs::create_dir_all(ws.join(format!("w{i}"))).unwrap();
                Trigger::File {
                    paths: vec![format!("w{i}/")],
                    debounce_ms: None,
                }
            }
            1 => Trigger::Output {
                process: process.id.clone(),
                pattern: format!("ERROR {i}"),
            },
            _ => Trigger::Url {
                url: format!("http://127.0.0.1:{port}/r{i}"),
                every: Some("1m".into()),
                when: None,
                slower_than_ms: None,
            },
        };
        let (r, _) = rt.add_routine(agent(&format!("watch {i}"), trigger)).await.unwrap();
        ids.push(r.id);
    }
    for id in &ids {
        let _ = rt.watch().approve(id);
    }
    until("every routine is watched", || {
        let view = rt.routines();
        ids.iter().all(|id| {
            view.routines
                .iter()
                .any(|v| &v.id == id && v.watch.as_ref().is_some_and(|w| w.approved))
        })
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = cpu_time();
    tokio::time::sleep(IDLE).await;
    let watching = cpu_time() - before;
    rt.shutdown().await;
    (none, watching)
}

async fn file_latency(fake: &FakeLlm) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path(), fake);
    let ws = rt.workspace().to_path_buf();
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    let (r, _) = rt
        .add_routine(agent(
            "notes",
            Trigger::File {
                paths: vec!["notes/*.md".into()],
                debounce_ms: None,
            },
        ))
        .await
        .unwrap();
    // The first fire also waits for the watch to be made: not counted.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut i = 0;
    while rt.scheduler().history(&r.id).is_empty() {
        assert!(Instant::now() < deadline, "the file trigger never fired");
        std::fs::write(ws.join("notes/plan.md"), format!("warm {i}\n")).unwrap();
        i += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut lat = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let path = ws.join("notes/plan.md");
        lat.push(
            one_fire(&rt, fake, &r.id, async move {
                std::fs::write(path, format!("sample {i}\n")).unwrap();
            })
            .await,
        );
    }
    rt.shutdown().await;
    lat
}

async fn webhook_latency(fake: &FakeLlm) -> Vec<Duration> {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime(dir.path(), fake);
    // 30 calls a minute per routine: the samples are spread over several.
    let mut hooks = Vec::new();
    for i in 0..SAMPLES.div_ceil(20) {
        let (r, _) = rt
            .add_routine(agent(&format!("hook {i}"), Trigger::Webhook))
            .await
            .unwrap();
        hooks.push(r.id);
    }
    // Every routine's address, once one listener serves them all (the same port in each).
    let deadline = Instant::now() + Duration::from_secs(20);
    let urls: Vec<String> = loop {
        let view = rt.routines();
        let urls: Vec<String> = hooks
            .iter()
            .filter_map(|id| {
                let w = view.routines.iter().find(|v| &v.id == id)?.watch.clone()?;
                Some(w.summary[w.summary.find("http://")?..].trim().to_string())
            })
            .collect();
        let port = |u: &String| u.split('/').nth(2).map(str::to_string);
        if urls.len() == hooks.len()
            && urls.iter().all(|u| port(u) == port(&urls[0]))
            && rt
                .watch()
                .webhook_port()
                .is_some_and(|p| port(&urls[0]).is_some_and(|q| q.ends_with(&format!(":{p}"))))
        {
            break urls;
        }
        assert!(Instant::now() < deadline, "the webhooks never listened: {urls:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    // A fresh connection per call, as a CI system makes.
    let client = reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap();
    let mut lat = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let (id, url) = (&hooks[i % hooks.len()], urls[i % urls.len()].clone());
        let client = client.clone();
        lat.push(
            one_fire(&rt, fake, id, async move {
                let status = client
                    .post(url)
                    .body(format!("{{\"n\":{i}}}"))
                    .send()
                    .await
                    .unwrap()
                    .status();
                assert!(status.is_success(), "{status}");
            })
            .await,
        );
    }
    rt.shutdown().await;
    lat
}

async fn check_vs_plain() -> (Duration, Duration) {
    use vigil_core::sandbox::{Sandbox, SandboxSettings};
    use vigil_core::watch::check::CheckSandbox;
    // Outside /tmp, as users' workspaces are (one under /tmp gets no standing sandbox).
    let dir = common::outside_tmp();
    let ws = dir.path().join("workspace");
    std::fs::create_dir_all(&ws).unwrap();
    let cs = CheckSandbox {
        sandbox: Sandbox::new(),
        settings: SandboxSettings::default(),
        data_dir: dir.path().join("data"),
        workspace: ws.clone(),
        home: None,
    };
    let mut sandboxed = Vec::new();
    let mut plain = Vec::new();
    for _ in 0..CHECK_RUNS {
        let start = Instant::now();
        let run = cs.run("bench", CHECK).await.expect("the read-only sandbox runs checks");
        sandboxed.push(start.elapsed());
        assert!(run.output.contains('%'), "{run:?}");
        let start = Instant::now();
        let out = tokio::process::Command::new("sh")
            .args(["-c", CHECK])
            .current_dir(&ws)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .output()
            .await
            .unwrap();
        plain.push(start.elapsed());
        assert!(String::from_utf8_lossy(&out.stdout).contains('%'));
    }
    (median(sandboxed), median(plain))
}

#[tokio::main]
async fn main() {
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("Seen.")))
        .await
        .unwrap();

    let (none, watching) = idle_cpu(&fake).await;
    let file = p99(file_latency(&fake).await);
    let hook = p99(webhook_latency(&fake).await);
    let (sandboxed, plain) = check_vs_plain().await;

    let debounce = Duration::from_millis(u64::from(vigil_core::watch::shape::DEFAULT_DEBOUNCE_MS));
    let file_goal = debounce + Duration::from_millis(100);
    println!("triggers (issue 33), one run:");
    println!(
        "  file change → request, p99:   {:8.1} ms  goal ≤ {:.0} ms (debounce + 100)  {:.2}×",
        ms(file),
        ms(file_goal),
        file.as_secs_f64() / file_goal.as_secs_f64()
    );
    println!(
        "  webhook POST → request, p99:  {:8.1} ms  goal ≤ 100 ms  {:.2}×",
        ms(hook),
        ms(hook) / 100.0
    );
    let per_minute = |d: Duration| d.as_secs_f64() * 60.0 / IDLE.as_secs_f64();
    let ratio = if none.is_zero() {
        f64::NAN
    } else {
        watching.as_secs_f64() / none.as_secs_f64()
    };
    println!(
        "  idle CPU, 100 watching vs none: {:.4} s/min vs {:.4} s/min  {ratio:.2}× (goal ≤ 1.2×), +{:.4} s/min (goal ≤ 0.01 where the baseline is near zero)",
        per_minute(watching),
        per_minute(none),
        per_minute(watching.saturating_sub(none))
    );
    println!(
        "  check `{CHECK}`, median: read-only sandbox {:.1} ms vs unsandboxed {:.1} ms  {:.2}× (goal ≤ 1.2×)",
        ms(sandboxed),
        ms(plain),
        sandboxed.as_secs_f64() / plain.as_secs_f64()
    );
    println!("  load average {}", common::load_average());
}
