//! Hostile input and secrets (issue 18 §8): what a child can see of the parent's
//! environment, where the provider client sends the key, and how much memory a server or a
//! child can make Vigil hold.
//!
//! The environment and memory tests run their body in a process of their own (this test
//! binary started again for one test): variables are set only for that process, never with
//! `set_var` under the other tests' threads, and its peak RSS is its own alone.

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use vigil_core::clock::SystemClock;
use vigil_core::exec::{NoExecEvents, RegistryConfig, RegistryHandle, SpawnRequest};

/// Set in the child to the name of the one test it runs.
const ALONE: &str = "VIGIL_TEST_ALONE";

/// In the test process: runs test `name` (of this module) again in a child process with
/// `env` added, asserts that it passed and returns true, the caller then returns. In that
/// child: returns false, and the caller runs the body.
///
/// With `unprivileged`, a test run as root runs the child as `nobody` (through `setpriv`),
/// because root may read every process's memory and `/proc` entries whatever the process
/// does to protect itself, and a user may not.
fn run_alone_as(name: &str, env: &[(&str, &str)], unprivileged: bool) -> bool {
    // `all::suite::hostile` → `suite::hostile::<name>`, the name the harness filters on.
    let path = module_path!().split_once("::").map_or(module_path!(), |(_, rest)| rest);
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
    let out = cmd
        .args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env(ALONE, &test)
        .envs(env.iter().copied())
        .output()
        .expect("start the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{test} failed in its own process:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What the child measured, for the record (`--nocapture` shows it).
    for line in stdout.lines().filter(|l| l.contains("measured:")) {
        println!("{line}");
    }
    true
}

fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

/// A registry whose children inherit this process's environment, as the app's do.
fn registry() -> RegistryHandle {
    let config = RegistryConfig {
        kill_grace: Duration::from_millis(300),
        ..RegistryConfig::default()
    };
    RegistryHandle::start(config, Arc::new(SystemClock), Arc::new(NoExecEvents))
}

/// The variables a key is read from never reach a child, with a terminal or with pipes; the
/// rest of the environment does (the control variable proves `env` saw the inherited ones).
/// Nor can the child read them from the parent's `/proc/<pid>/environ`.
#[test]
fn api_keys_never_reach_a_child() {
    const KEYS: [&str; 3] = ["VIGIL_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"];
    let env: Vec<(&str, &str)> = KEYS
        .iter()
        .map(|k| (*k, "sk-secret-0123456789"))
        .chain([
            ("VIGIL_BASE_URL", "http://127.0.0.1:9"),
            ("VIGIL_TEST_INHERITED", "yes"),
        ])
        .collect();
    if run_alone_as("api_keys_never_reach_a_child", &env, true) {
        return;
    }
    assert!(!is_root(), "run as a user: root reads any process's environment");
    for key in KEYS {
        assert_eq!(
            std::env::var(key).as_deref(),
            Ok("sk-secret-0123456789"),
            "set in the parent"
        );
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let registry = registry();
        let dir = tempfile::tempdir().unwrap();
        for pty in [true, false] {
            let req = SpawnRequest {
                pty,
                ..SpawnRequest::new("a", "env", dir.path())
            };
            let info = registry.spawn(req).await.unwrap();
            let outcome = registry.wait("a", &info.id).await.unwrap();
            assert!(outcome.exit().success(), "{outcome:?}");
            let output = outcome.output;
            assert!(output.contains("VIGIL_TEST_INHERITED=yes"), "pty {pty}: {output}");
            assert!(output.contains("VIGIL_BASE_URL="), "not a secret, passes: {output}");
            assert!(
                !output.contains("sk-secret"),
                "pty {pty}: a key reached the child:\n{output}"
            );
            for key in KEYS {
                assert!(!output.contains(&format!("{key}=")), "pty {pty}: {key} in\n{output}");
            }
            let read = "tr '\\0' '\\n' < /proc/$PPID/environ; echo done";
            let req = SpawnRequest {
                pty,
                ..SpawnRequest::new("a", read, dir.path())
            };
            let info = registry.spawn(req).await.unwrap();
            let output = registry.wait("a", &info.id).await.unwrap().output;
            assert!(output.contains("done"), "{output}");
            assert!(
                !output.contains("sk-secret"),
                "pty {pty}: read from the parent:\n{output}"
            );
        }
        registry.shutdown().await;
    });
}
