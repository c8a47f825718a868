//! `cargo bench -p vigil-core --bench trust` (in `make bench`): what the approval gate and the
//! sandbox cost, each as a ratio against its goal or a baseline measured in the same run.
//!
//! - deciding a 1 000-character compound command through the real gate (parse with
//!   tree-sitter-bash, every part against the rules and the read-only list), against the
//!   goal of 1 ms, and against the string-prefix test the gate used before (for scale);
//! - `true` through the process registry sandboxed vs unsandboxed, spawn to exit: goal ≤ 1.5×
//!   and ≤ 20 ms added. Sandboxed as `exec` does it (in the layout's zygote, which stands
//!   after the first command), and with a bwrap of its own per command (the fallback), for
//!   scale.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use vigil_core::approval::{Approvals, Request, Verdict};
use vigil_core::clock::{ManualClock, SystemClock};
use vigil_core::events::{CollectingSink, Emitter};
use vigil_core::exec::{NoExecEvents, RegistryConfig, RegistryHandle, SpawnRequest};
use vigil_core::protocol::{ApprovalKind, ApprovalPolicy};
use vigil_core::sandbox::{Layout, Sandbox, SandboxSettings};

use common::{load_average, median, outside_tmp};

/// A compound line of about 1 000 characters, every part covered (so the whole line is read).
fn compound_line() -> String {
    let parts = [
        "git status --short",
        "git log --oneline -n 20 -- src/main.rs",
        "ls -la src | grep -n 'rs' | wc -l",
        "cargo build --release 2>&1 | tail -n 40",
        "cat notes.txt | grep -i todo | head -5",
    ];
    let mut line = String::new();
    let mut i = 0;
    while line.len() < 1_000 {
        if !line.is_empty() {
            line.push_str(" && ");
        }
        line.push_str(parts[i % parts.len()]);
        i += 1;
    }
    line
}

async fn decision_cost() -> (Duration, Duration, usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("approvals.json"),
        r#"{"rules": [{"kind": "exec", "prefix": "cargo build", "created_at": 0}]}"#,
    )
    .unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let (approvals, _) = Approvals::open(dir.path(), ApprovalPolicy::Allowlist);
    let emitter = Emitter::new(Arc::new(CollectingSink::default()), Arc::new(ManualClock::new(0)));
    let line = compound_line();
    let request = Request {
        kind: ApprovalKind::Exec,
        subject: line.clone(),
        cwd: Some(workspace.display().to_string()),
        env: vec![],
        workspace: Some(workspace.clone()),
        interactive: false,
        started_here: false,
        outside_sandbox: false,
        exec_run: None,
        mcp: None,
    };
    let cancel = CancellationToken::new();
    let mut samples = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let v = approvals.check(request.clone(), &emitter, 0, &cancel).await;
        samples.push(t.elapsed());
        assert_eq!(v, Verdict::Allowed, "every part is covered");
    }
    // The old gate: one string-prefix test of the whole line.
    let mut prefix = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let hit = line == "cargo build" || line.starts_with("cargo build ");
        std::hint::black_box(hit);
        prefix.push(t.elapsed());
    }
    (median(samples), median(prefix), line.len())
}

/// Samples of each way of starting a command, taken in turn (one of each, then the next):
/// a few hundred microseconds apart on a machine others share, rounds of one way after
/// another see different machines; interleaved, every way sees the same one.
const SAMPLES: usize = 300;
/// A bwrap of its own per command costs ten times the others: one sample in this many.
const ALONE_EVERY: usize = 5;

/// `true` through the registry, spawn to exit.
async fn spawn_once(
    registry: &RegistryHandle,
    sandbox: Option<&vigil_core::sandbox::Wrapped>,
    cwd: &std::path::Path,
) -> Duration {
    let mut req = SpawnRequest::new("bench", "true", cwd);
    req.sandbox = sandbox.cloned();
    let t = Instant::now();
    let info = registry.spawn(req).await.expect("spawn");
    let done = registry.wait("bench", &info.id).await.expect("wait");
    let took = t.elapsed();
    assert_eq!(done.exit().code, Some(0), "{:?}", done.info);
    registry.remove("bench", &info.id).await.ok();
    took
}

#[tokio::main]
async fn main() {
    let (decide, prefix, len) = decision_cost().await;
    println!(
        "approval: deciding a {len}-character compound command {decide:?} (goal <= 1 ms: {}) -> {:.3}x of the goal; \
         the old whole-line prefix test {prefix:?}",
        if decide <= Duration::from_millis(1) {
            "met"
        } else {
            "NOT met"
        },
        decide.as_secs_f64() / 1e-3
    );

    // A data folder outside /tmp, as users have (a workspace under /tmp gets no zygote: each
    // command's private /tmp would cover it).
    let dir = outside_tmp();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let layout = Layout {
        workspace: workspace.clone(),
        cwd: workspace.clone(),
        data_dir: dir.path().to_path_buf(),
        settings: SandboxSettings::default(),
        attended: true,
        home: None,
        read_only: false,
    };
    let wrapped = match Sandbox::new().wrap(&layout) {
        Ok(w) => w,
        Err(why) => {
            println!("sandbox: not measured, bubblewrap is not available ({why})");
            return;
        }
    };
    if wrapped.zygote.is_none() {
        println!("sandbox: no zygote (the vigil-sandbox helper was not built beside this bench)");
    }
    let own = wrapped.clone().without_zygote();
    // The two kinds of sandbox issue 30 added: read-only (commands allowed because they only
    // read) and unattended (no network by default).
    let read_only = Sandbox::new()
        .wrap(&Layout {
            read_only: true,
            ..layout.clone()
        })
        .unwrap();
    let unattended = Sandbox::new()
        .wrap(&Layout {
            attended: false,
            ..layout.clone()
        })
        .unwrap();
    // `VIGIL_BENCH_OTHER_HELPER`: another build of `vigil-sandbox` (main's, say), measured in
    // the same turns for an A/B of the helper alone.
    let other = std::env::var_os("VIGIL_BENCH_OTHER_HELPER").map(|h| {
        let with = |layout: &Layout| Sandbox::new().with_helper(h.clone().into()).wrap(layout).unwrap();
        (
            with(&Layout {
                read_only: true,
                ..layout.clone()
            }),
            with(&Layout {
                attended: false,
                ..layout.clone()
            }),
        )
    });
    let registry = RegistryHandle::start(RegistryConfig::default(), Arc::new(SystemClock), Arc::new(NoExecEvents));
    let (mut bare, mut boxed, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ro, mut away) = (Vec::new(), Vec::new());
    let (mut other_ro, mut other_away) = (Vec::new(), Vec::new());
    // The standing sandboxes start on their first command: not counted.
    for w in [&wrapped, &read_only, &unattended] {
        spawn_once(&registry, Some(w), &workspace).await;
    }
    if let Some((o_ro, o_away)) = &other {
        spawn_once(&registry, Some(o_ro), &workspace).await;
        spawn_once(&registry, Some(o_away), &workspace).await;
    }
    for i in 0..SAMPLES {
        bare.push(spawn_once(&registry, None, &workspace).await);
        boxed.push(spawn_once(&registry, Some(&wrapped), &workspace).await);
        ro.push(spawn_once(&registry, Some(&read_only), &workspace).await);
        away.push(spawn_once(&registry, Some(&unattended), &workspace).await);
        if let Some((o_ro, o_away)) = &other {
            other_ro.push(spawn_once(&registry, Some(o_ro), &workspace).await);
            other_away.push(spawn_once(&registry, Some(o_away), &workspace).await);
        }
        if i % ALONE_EVERY == 0 {
            alone.push(spawn_once(&registry, Some(&own), &workspace).await);
        }
    }
    println!(
        "sandbox: {SAMPLES} samples of each, taken in turn; load average {}",
        load_average()
    );
    if other.is_some() {
        let (o_ro, o_away) = (median(other_ro), median(other_away));
        let bare_now = median(bare.clone());
        println!(
            "sandbox: the other helper: read-only {o_ro:?} -> {:.2}x, unattended {o_away:?} -> {:.2}x unsandboxed",
            o_ro.as_secs_f64() / bare_now.as_secs_f64(),
            o_away.as_secs_f64() / bare_now.as_secs_f64()
        );
    }
    let (ro, away) = (median(ro), median(away));
    let bare_now = median(bare.clone());
    for (name, took) in [("read-only", ro), ("unattended", away)] {
        let ratio = took.as_secs_f64() / bare_now.as_secs_f64();
        println!(
            "sandbox: `true` through exec in the {name} sandbox {took:?} vs unsandboxed {bare_now:?} -> {ratio:.2}x (goal <= 1.2x: {})",
            if ratio <= 1.2 { "met" } else { "NOT met" }
        );
    }
    let (bare, boxed, alone) = (median(bare), median(boxed), median(alone));
    let ratio = boxed.as_secs_f64() / bare.as_secs_f64();
    let added = boxed.saturating_sub(bare).as_secs_f64() * 1000.0;
    println!(
        "sandbox: `true` through exec unsandboxed {bare:?}, sandboxed {boxed:?} -> {ratio:.2}x, {added:.1} ms added (goal <= 1.5x and <= 20 ms: {}); \
         a bwrap of its own per command {alone:?} -> {:.2}x",
        if ratio <= 1.5 && added <= 20.0 { "met" } else { "NOT met" },
        alone.as_secs_f64() / bare.as_secs_f64(),
    );
    registry.shutdown().await;
}
