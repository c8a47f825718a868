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

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use vigil_core::approval::{Approvals, Request, Verdict};
use vigil_core::clock::{ManualClock, SystemClock};
use vigil_core::events::{CollectingSink, Emitter};
use vigil_core::exec::{NoExecEvents, RegistryConfig, RegistryHandle, SpawnRequest};
use vigil_core::protocol::{ApprovalKind, ApprovalPolicy};
use vigil_core::sandbox::{Layout, Sandbox, SandboxSettings};

/// A temporary folder outside /tmp (in the target folder, or under ~/.cache when that is in
/// /tmp too).
fn outside_tmp() -> tempfile::TempDir {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target.starts_with("/tmp") || target.starts_with("/var/tmp") {
        let home = std::env::var_os("HOME").map_or_else(|| std::path::PathBuf::from("/root"), Into::into);
        home.join(".cache").join("vigil-bench")
    } else {
        target.to_path_buf()
    };
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

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

async fn spawn_cost(
    registry: &RegistryHandle,
    sandbox: Option<vigil_core::sandbox::Wrapped>,
    cwd: &std::path::Path,
) -> Duration {
    let mut samples = Vec::new();
    for _ in 0..40 {
        let mut req = SpawnRequest::new("bench", "true", cwd);
        req.sandbox = sandbox.clone();
        let t = Instant::now();
        let info = registry.spawn(req).await.expect("spawn");
        let done = registry.wait("bench", &info.id).await.expect("wait");
        samples.push(t.elapsed());
        assert_eq!(done.exit().code, Some(0), "{:?}", done.info);
        registry.remove("bench", &info.id).await.ok();
    }
    median(samples)
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
    let registry = RegistryHandle::start(RegistryConfig::default(), Arc::new(SystemClock), Arc::new(NoExecEvents));
    // Alternating rounds, so all see the same machine.
    let (mut bare, mut boxed, mut alone) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ro, mut away) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        bare.push(spawn_cost(&registry, None, &workspace).await);
        boxed.push(spawn_cost(&registry, Some(wrapped.clone()), &workspace).await);
        alone.push(spawn_cost(&registry, Some(own.clone()), &workspace).await);
        ro.push(spawn_cost(&registry, Some(read_only.clone()), &workspace).await);
        away.push(spawn_cost(&registry, Some(unattended.clone()), &workspace).await);
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
