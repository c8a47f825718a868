//! A routine's check in the standing read-only sandbox (a fork in a sandbox that stands, not
//! a bubblewrap of its own each time): it is started there, and keeps every wall of the
//! check's sandbox there: nothing writable, its own empty `/tmp`, its errors after its
//! output, its exit code, and nothing it left running outlives it. The network and host
//! sockets: `triggers::a_check_cannot_write_the_workspace_…`, whose workspace (outside
//! `/tmp`) gets the standing sandbox too.

use std::time::Duration;

use vigil_core::sandbox::{Sandbox, SandboxSettings};
use vigil_core::watch::check::CheckSandbox;

use super::sandbox::bwrap_ready;
use super::support::*;

/// Processes (from /proc) whose arguments include `mark`.
fn running(mark: &str) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| c.split(|b| *b == 0).any(|a| a == mark.as_bytes()))
        .count()
}

#[tokio::test]
async fn a_check_runs_in_the_standing_read_only_sandbox_behind_the_same_walls() {
    bwrap_ready();
    let dir = outside_tmp();
    let ws = dir.path().join("workspace");
    std::fs::create_dir_all(&ws).unwrap();
    let cs = CheckSandbox {
        sandbox: Sandbox::new().with_idle_exit(Duration::from_secs(30)),
        settings: SandboxSettings::default(),
        data_dir: dir.path().join("data"),
        workspace: ws.clone(),
        home: None,
    };
    let marker = ws.join("marker");
    let first = cs
        .run(
            "disk",
            &format!(
                "echo from $(cat /proc/$PPID/comm); touch {} && echo WROTE; touch /tmp/mine && echo TMP-OK",
                marker.display()
            ),
        )
        .await
        .unwrap();
    assert!(
        first.output.contains("from .vigil-sandbox"),
        "started by the standing sandbox: {first:?}"
    );
    assert!(first.output.contains("TMP-OK"), "its own /tmp is writable: {first:?}");
    assert!(
        !first.output.contains("WROTE") && !marker.exists(),
        "wrote the workspace: {first:?}"
    );

    // The next check: the same standing sandbox, an empty /tmp of its own.
    let second = cs
        .run("disk", "echo from $(cat /proc/$PPID/comm); ls -A /tmp; echo listed")
        .await
        .unwrap();
    assert!(second.output.contains("from .vigil-sandbox"), "{second:?}");
    assert!(
        second.output.contains("listed") && !second.output.contains("mine"),
        "/tmp is per check: {second:?}"
    );

    // Errors come after the output, as they always did; the exit code as it was.
    let split = cs.run("disk", "echo oops >&2; echo 42; exit 3").await.unwrap();
    assert_eq!(split.code, Some(3), "{split:?}");
    assert_eq!(split.output, "42\noops\n", "{split:?}");

    // What a check leaves running ends with it: gone when its result is back.
    let left = cs
        .run("disk", "sleep 304.25 >/dev/null 2>&1 & echo started")
        .await
        .unwrap();
    assert!(left.output.contains("started"), "{left:?}");
    assert_eq!(running("304.25"), 0, "the check's leftover outlived it");
}
