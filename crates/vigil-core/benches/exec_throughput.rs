//! Throughput of `head -c 200000000 /dev/zero | base64` through the process registry, against
//! the same command read by a minimal reader from a bare PTY (and, for the pipe fallback,
//! from a bare pipe) in the same run. Prints MB/s, ratios, UI updates/s and peak RSS.
//!
//! Both sides run the same command, so the registry's rate is the bare reader's byte count
//! over the registry's time (spawn to finished). The UI gets fewer bytes than that during a
//! flood: its coalescing buffer keeps the newest 256 KiB per 16 ms on purpose.
//!
//! The sandboxed PTY runs where a user's commands do: in the standing sandbox of a workspace
//! outside `/tmp` (one under `/tmp` gets a bwrap per command), in rounds alternated with the
//! bare PTY, compared by the median of the rounds' ratios.
//!
//! `cargo bench -p vigil-core --bench exec_throughput [-- <bytes>] [pty|pipe]`

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize};
use vigil_core::clock::SystemClock;
use vigil_core::exec::{ExecEvents, RegistryConfig, RegistryHandle, SpawnRequest};

/// Counts what the registry hands to the UI, as a real panel would receive it.
#[derive(Default)]
struct Counting {
    bytes: AtomicU64,
    calls: AtomicU64,
}

impl ExecEvents for Counting {
    fn output(&self, _: &str, _: &str, raw: &[u8]) {
        self.bytes.fetch_add(raw.len() as u64, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
    }
}

fn command(bytes: u64) -> String {
    format!("head -c {bytes} /dev/zero | base64")
}

fn drain(mut reader: impl Read) -> u64 {
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        match reader.read(&mut buf) {
            Ok(0) | Err(_) => return total,
            Ok(n) => total += n as u64,
        }
    }
}

fn bare_pty(cmd: &str) -> (u64, Duration) {
    let start = Instant::now();
    let pair = portable_pty::native_pty_system()
        .openpty(PtySize {
            rows: 32,
            cols: 120,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("a pty");
    let mut builder = CommandBuilder::new("sh");
    builder.args(["-c", cmd]);
    let mut child = pair.slave.spawn_command(builder).expect("spawn");
    drop(pair.slave);
    let reader = pair.master.try_clone_reader().expect("reader");
    let total = drain(reader);
    child.wait().expect("wait");
    (total, start.elapsed())
}

fn bare_pipe(cmd: &str) -> (u64, Duration) {
    let start = Instant::now();
    let mut child = std::process::Command::new("sh")
        .args(["-c", cmd])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let total = drain(child.stdout.take().expect("stdout"));
    child.wait().expect("wait");
    (total, start.elapsed())
}

async fn through_registry(cmd: &str, pty: bool) -> (u64, Duration, u64, usize, u64) {
    through_registry_in(cmd, pty, None, &std::env::temp_dir()).await
}

/// [`through_registry`] in `cwd`, under bubblewrap when `sandbox` holds its arguments.
async fn through_registry_in(
    cmd: &str,
    pty: bool,
    sandbox: Option<vigil_core::sandbox::Wrapped>,
    cwd: &std::path::Path,
) -> (u64, Duration, u64, usize, u64) {
    let events = Arc::new(Counting::default());
    let registry = RegistryHandle::start(RegistryConfig::default(), Arc::new(SystemClock), events.clone());
    let start = Instant::now();
    let mut req = SpawnRequest::new("bench", cmd, cwd.to_path_buf());
    req.pty = pty;
    req.sandbox = sandbox;
    let info = registry.spawn(req).await.expect("spawn");
    let done = registry.wait("bench", &info.id).await.expect("wait");
    let took = start.elapsed();
    assert_eq!(done.exit().code, Some(0), "{:?}", done.info);
    let kept = done.output.chars().count();
    registry.shutdown().await;
    let bytes = events.bytes.load(Ordering::Relaxed);
    (
        bytes,
        took,
        events.calls.load(Ordering::Relaxed),
        kept,
        done.dropped_chars,
    )
}

/// Peak resident set (VmHWM) in MiB.
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Resets the peak so each phase reports its own (Linux: `5` > clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn mbps(bytes: u64, took: Duration) -> f64 {
    bytes as f64 / 1e6 / took.as_secs_f64()
}

#[tokio::main]
async fn main() {
    let size: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200_000_000);
    let only = std::env::args().skip(1).find(|a| a == "pty" || a == "pipe");
    let cmd = command(size);
    println!("command: {cmd}");
    if only.as_deref() != Some("pipe") {
        pty_phase(&cmd).await;
    }
    if only.as_deref() != Some("pty") {
        pipe_phase(&cmd).await;
    }
}

async fn pty_phase(cmd: &str) {
    reset_peak();
    let (bare_bytes, bare_took) = tokio::task::spawn_blocking({
        let cmd = cmd.to_string();
        move || bare_pty(&cmd)
    })
    .await
    .unwrap();
    let bare = mbps(bare_bytes, bare_took);
    println!(
        "bare PTY          {:>8.1} MB/s  {} bytes in {:.2?}  peak RSS {:.1} MiB",
        bare,
        bare_bytes,
        bare_took,
        peak_rss_mib()
    );

    reset_peak();
    let (ui_bytes, took, calls, kept, dropped) = through_registry(cmd, true).await;
    let reg = mbps(bare_bytes, took);
    println!(
        "registry PTY      {:>8.1} MB/s  in {:.2?}  peak RSS {:.1} MiB  ratio {:.2}x (goal >= 0.8x: {})  \
         UI {:.0} updates/s, {} bytes  model text: {} chars kept + {} dropped",
        reg,
        took,
        peak_rss_mib(),
        reg / bare,
        if reg / bare >= 0.8 { "met" } else { "NOT met" },
        calls as f64 / took.as_secs_f64(),
        ui_bytes,
        kept,
        dropped
    );
    // Every line of the stripped text arrived (`\r\n` became `\n`).
    let lines = bare_bytes.div_ceil(78);
    assert_eq!(
        kept as u64 + dropped,
        bare_bytes - lines,
        "the registry saw all the output"
    );

    sandboxed_pty(cmd, bare_bytes - lines).await;
}

/// Bare and sandboxed rounds, alternated so that a machine that gets busier or quieter
/// during the run weighs on both sides alike.
const SANDBOX_ROUNDS: usize = 3;

/// A folder outside `/tmp`, `/var/tmp` and `/dev/shm`: a workspace there gets the standing
/// sandbox (a command's private `/tmp` would cover one inside), as a user's does.
fn outside_tmp() -> tempfile::TempDir {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if ["/tmp", "/var/tmp", "/dev/shm"].iter().any(|t| target.starts_with(t)) {
        let home = std::env::var_os("HOME").map_or_else(|| std::path::PathBuf::from("/root"), Into::into);
        home.join(".cache").join("vigil-bench")
    } else {
        target.to_path_buf()
    };
    std::fs::create_dir_all(&base).expect("a folder outside /tmp");
    tempfile::tempdir_in(base).expect("a folder outside /tmp")
}

/// The registry's PTY inside the sandbox the agent's commands run in — the standing one,
/// with the workspace in a data folder outside `/tmp` as a user's is — against the bare PTY,
/// round after round (goal >= 0.8x of bare). `text` is the stripped text every run must
/// deliver.
async fn sandboxed_pty(cmd: &str, text: u64) {
    let data = outside_tmp();
    let workspace = data.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let layout = vigil_core::sandbox::Layout {
        workspace: workspace.clone(),
        cwd: workspace.clone(),
        data_dir: data.path().to_path_buf(),
        settings: Default::default(),
        attended: true,
        home: None,
        read_only: false,
    };
    let wrapped = match vigil_core::sandbox::Sandbox::new().wrap(&layout) {
        Ok(wrapped) => wrapped,
        Err(why) => return println!("sandboxed PTY     not measured: {why}"),
    };
    // Where the commands really start: the standing sandbox's helper, or a bwrap each (this
    // first command also starts the standing sandbox, as a user's first command does).
    let parent = parent_of_a_command(wrapped.clone(), &workspace).await;
    let standing = parent.starts_with(".vigil-sandbox");
    println!(
        "sandboxed PTY     in {}: commands started by `{parent}`",
        if standing {
            "the standing sandbox"
        } else {
            "a bwrap per command (NOT the standing sandbox users get)"
        }
    );
    let mut ratios = Vec::new();
    for round in 1..=SANDBOX_ROUNDS {
        let (bare_bytes, bare_took) = tokio::task::spawn_blocking({
            let cmd = cmd.to_string();
            move || bare_pty(&cmd)
        })
        .await
        .unwrap();
        reset_peak();
        let (_, took, _, kept, dropped) = through_registry_in(cmd, true, Some(wrapped.clone()), &workspace).await;
        let (bare, boxed) = (mbps(bare_bytes, bare_took), mbps(bare_bytes, took));
        println!(
            "  round {round}: bare PTY {bare:>8.1} MB/s, sandboxed PTY {boxed:>8.1} MB/s in {took:.2?} (peak RSS {:.1} MiB) -> {:.2}x",
            peak_rss_mib(),
            boxed / bare
        );
        assert_eq!(
            kept as u64 + dropped,
            text,
            "the sandboxed command's output all arrived"
        );
        ratios.push(boxed / bare);
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios[ratios.len() / 2];
    println!(
        "sandboxed PTY     median ratio of {SANDBOX_ROUNDS} alternated rounds {median:.2}x of the bare PTY (goal >= 0.8x: {})",
        if median >= 0.8 { "met" } else { "NOT met" }
    );
}

/// The name of the process that started a command in `wrapped`, as the command sees it.
async fn parent_of_a_command(wrapped: vigil_core::sandbox::Wrapped, cwd: &std::path::Path) -> String {
    let registry = RegistryHandle::start(
        RegistryConfig::default(),
        Arc::new(SystemClock),
        Arc::new(Counting::default()),
    );
    let mut req = SpawnRequest::new("bench", "cat /proc/$PPID/comm", cwd.to_path_buf());
    req.sandbox = Some(wrapped);
    let info = registry.spawn(req).await.expect("spawn");
    let done = registry.wait("bench", &info.id).await.expect("wait");
    registry.shutdown().await;
    done.output.trim().to_string()
}

async fn pipe_phase(cmd: &str) {
    reset_peak();
    let (pipe_bytes, pipe_took) = tokio::task::spawn_blocking({
        let cmd = cmd.to_string();
        move || bare_pipe(&cmd)
    })
    .await
    .unwrap();
    let pipe = mbps(pipe_bytes, pipe_took);
    println!(
        "bare pipe         {:>8.1} MB/s  {} bytes in {:.2?}  peak RSS {:.1} MiB",
        pipe,
        pipe_bytes,
        pipe_took,
        peak_rss_mib()
    );

    reset_peak();
    let (ui_bytes, took, calls, kept, dropped) = through_registry(cmd, false).await;
    let reg = mbps(pipe_bytes, took);
    println!(
        "registry pipes    {:>8.1} MB/s  in {:.2?}  peak RSS {:.1} MiB  ratio {:.0} %  UI {:.0} updates/s, {} bytes",
        reg,
        took,
        peak_rss_mib(),
        100.0 * reg / pipe,
        calls as f64 / took.as_secs_f64(),
        ui_bytes
    );
    assert_eq!(kept as u64 + dropped, pipe_bytes, "the registry saw all the output");
}
