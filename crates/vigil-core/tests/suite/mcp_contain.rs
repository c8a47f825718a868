//! What an MCP server can take from Vigil (issue 30 §8): the API keys (from its environment
//! or from Vigil's `/proc` entries) and memory (an endless stderr line).
//!
//! Each test runs in a process of its own ([`super::alone`]): the keys are set only in that
//! process's environment, and its peak RSS is its own alone.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::alone::{is_root, reset_peak, run_alone, run_alone_as, status_bytes, MIB};
use super::mcp::write_config;
use super::support::runtime;

const SECRET: &str = "sk-secret-0123456789";

/// Waits up to 60 s for `path` to hold `want`, returning what it holds.
async fn file_with(path: &Path, want: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(want) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} never held {want:?}: {text}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// No key variable reaches a server, in its environment or read from Vigil's
/// `/proc/<pid>/environ`, unless the server's own entry sets one; the rest of the environment
/// does (the control variable proves the dump saw the inherited ones).
#[test]
fn api_keys_never_reach_an_mcp_server_unless_its_entry_sets_one() {
    let env = [
        ("VIGIL_API_KEY", SECRET),
        ("ANTHROPIC_API_KEY", SECRET),
        ("OPENAI_API_KEY", SECRET),
        ("VIGIL_TEST_INHERITED", "yes"),
    ];
    let name = "api_keys_never_reach_an_mcp_server_unless_its_entry_sets_one";
    if run_alone_as(module_path!(), name, &env, true) {
        return;
    }
    assert!(!is_root(), "run as a user: root reads any process's environment");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let (own, parent) = (dir.path().join("own.txt"), dir.path().join("parent.txt"));
        // The server's parent is Vigil (this process): `sh` is the server itself.
        let script = format!(
            "env > {own}; tr '\\0' '\\n' < /proc/$PPID/environ > {parent} 2>&1; echo done >> {parent}; exec sleep 300",
            own = own.display(),
            parent = parent.display(),
        );
        write_config(
            dir.path(),
            json!({"probe": {"command": "sh", "args": ["-c", script], "env": {"OPENAI_API_KEY": "sk-for-the-server"}}}),
        );
        let (rt, _rx) = runtime(dir.path(), None);
        assert!(rt.start_background());
        let parent_seen = file_with(&parent, "done").await;
        let own_seen = std::fs::read_to_string(&own).unwrap();
        rt.shutdown().await;
        assert!(own_seen.contains("VIGIL_TEST_INHERITED=yes"), "{own_seen}");
        assert!(
            own_seen.contains("OPENAI_API_KEY=sk-for-the-server"),
            "its own entry's value passes: {own_seen}"
        );
        let leaked =
            |seen: &str| -> Vec<String> { seen.lines().filter(|l| l.contains(SECRET)).map(String::from).collect() };
        let leaks = [
            ("its environment", leaked(&own_seen)),
            ("Vigil's /proc/<pid>/environ", leaked(&parent_seen)),
        ];
        assert!(
            leaks.iter().all(|(_, lines)| lines.is_empty()),
            "a key reached the server: {leaks:?}"
        );
        for key in ["VIGIL_API_KEY", "ANTHROPIC_API_KEY"] {
            assert!(!own_seen.contains(&format!("{key}=")), "{key} in\n{own_seen}");
        }
    });
}

/// 200 MB of stderr without a newline: Vigil's memory grows by a few MiB, not by the line,
/// and the tail Settings shows holds the line cut at 500 characters, then the next one.
#[test]
fn an_endless_stderr_line_is_cut_in_bounded_memory() {
    if run_alone(module_path!(), "an_endless_stderr_line_is_cut_in_bounded_memory") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let script = "head -c 200000000 /dev/zero | tr '\\0' x >&2; echo >&2; echo after >&2; exec sleep 300";
        write_config(dir.path(), json!({"flood": {"command": "sh", "args": ["-c", script]}}));
        let (rt, _rx) = runtime(dir.path(), None);
        let before = reset_peak();
        let started = Instant::now();
        assert!(rt.start_background());
        let tail = loop {
            let view = rt.mcp_view();
            let tail = view.servers.first().map(|s| s.stderr_tail.clone()).unwrap_or_default();
            if tail.last().is_some_and(|l| l == "after") {
                break tail;
            }
            assert!(
                started.elapsed() < Duration::from_secs(90),
                "the flood never ended: {view:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let grown = status_bytes("VmHWM:").saturating_sub(before);
        println!(
            "measured: 200 MB of stderr read in {:?}, peak RSS grew by {} MiB",
            started.elapsed(),
            grown / MIB
        );
        rt.shutdown().await;
        assert!(grown < 16 * MIB, "peak RSS grew by {} MiB", grown / MIB);
        assert_eq!(tail, [format!("{}…", "x".repeat(500)), "after".into()]);
    });
}
