//! Running one test's body in a process of its own: this test binary started again for
//! that one test. Environment variables are then set only for that process, never with
//! `set_var` under the other tests' threads, and its peak RSS is its own alone.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Set in the child to the name of the one test it runs.
const ALONE: &str = "VIGIL_TEST_ALONE";

/// How long a test run by [`run_alone`] may take before it counts as hung; most take well
/// under a second, the image bombs about 50 s in a debug build on an idle machine, and a
/// loaded 2-core machine (the rest of the suite beside it) can take three times that.
const ALONE_DEADLINE: Duration = Duration::from_secs(400);

pub const MIB: u64 = 1024 * 1024;

/// In the test process: runs test `name` of `module` (the caller's `module_path!()`) again
/// in a child process, asserts that it passed and returns true, the caller then returns. In
/// that child: returns false, and the caller runs the body.
pub fn run_alone(module: &str, name: &str) -> bool {
    run_alone_as(module, name, &[], false)
}

/// [`run_alone`] with `env` added to the child's environment. With `unprivileged`, a test
/// run as root runs the child as `nobody` (through `setpriv`), because root may read every
/// process's memory and `/proc` entries whatever the process does to protect itself, and a
/// user may not.
pub fn run_alone_as(module: &str, name: &str, env: &[(&str, &str)], unprivileged: bool) -> bool {
    // `all::suite::hostile` → `suite::hostile::<name>`, the name the harness filters on.
    let path = module.split_once("::").map_or(module, |(_, rest)| rest);
    let test = format!("{path}::{name}");
    if std::env::var(ALONE).as_deref() == Ok(test.as_str()) {
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(&exe);
    if unprivileged && is_root() {
        cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&exe);
        // Its own temp folders: root's TMPDIR may be closed to `nobody`.
        cmd.env("TMPDIR", "/tmp");
    }
    let mut child = cmd
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env(ALONE, &test)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the test binary again");
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    // A regression here is often a hang (a parser that never yields, memory that grows
    // slowly): the child gets a deadline, so the test fails instead of running for hours.
    let deadline = Instant::now() + ALONE_DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let Some(status) = status else {
        panic!("{test} did not finish within {ALONE_DEADLINE:?}:\n{stdout}\n{stderr}");
    };
    assert!(
        status.success() && stdout.contains("1 passed"),
        "{test} failed in its own process:\n{stdout}\n{stderr}"
    );
    // What the child measured, for the record (`--nocapture` shows it).
    for line in stdout.lines().filter(|l| l.contains("measured:")) {
        println!("{line}");
    }
    true
}

pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// A field of `/proc/self/status` (`VmRSS`, `VmHWM`) in bytes.
pub fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Lowers the peak (`VmHWM`) to the current resident size and returns it, so what a test
/// built beforehand (a large input) does not hide what it measures next. Linux ≥ 4.0.
pub fn reset_peak() -> u64 {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset the peak RSS through /proc/self/clear_refs");
    status_bytes("VmHWM:")
}
