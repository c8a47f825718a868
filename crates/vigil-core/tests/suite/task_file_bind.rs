//! `HEARTBEAT.md` stays read-only, and current, for a command that was already running in a
//! standing sandbox when Vigil rewrote the file. The sandbox binds the file read-only onto
//! itself; had the routine tools replaced it by a rename, the kernel would have detached
//! that bind in the standing sandbox, and the command, still running there, would have
//! written the new file (registering a routine as the user's). Vigil rewrites it in place.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::{ExecutionMode, RoutineDraft};
use vigil_fake_llm::{Script, Step};

use super::sandbox::{bwrap_ready, full_auto, results};
use super::support::*;

/// Waits until `path` exists (a command in the background wrote it).
async fn appears(path: &Path) -> String {
    for _ in 0..300 {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.is_empty() {
                return text;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never appeared", path.display());
}

#[tokio::test]
async fn a_command_running_in_a_standing_sandbox_can_neither_write_nor_see_a_stale_task_file_after_a_rewrite() {
    bwrap_ready();
    let dir = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    let ws = rt.workspace().canonicalize().unwrap();
    std::fs::write(ws.join("HEARTBEAT.md"), "- check the disk\n").unwrap();

    // Started before the rewrite, in the standing sandbox; it acts once `go` appears.
    let waiting = "cat /proc/$PPID/comm > parent.txt; while [ ! -e go ]; do sleep 0.05; done; \
                   (echo '- planted' >> HEARTBEAT.md && echo WROTE || echo REFUSED) > tried.txt 2>&1; \
                   cat HEARTBEAT.md > seen.txt";
    fake.set_script(Script::steps(vec![
        Step::tool_call("c1", "exec", json!({ "command": waiting, "background": true })),
        Step::text("started"),
    ]));
    rt.submit(user("start it"));
    let started = results(&until_finished(&mut rx).await).remove(0);
    assert!(!started.contains("error"), "{started}");
    let parent = appears(&ws.join("parent.txt")).await;
    assert!(
        parent.contains("vigil-sandbox"),
        "started by the standing sandbox: {parent}"
    );

    // The routine tools rewrite the file while the command waits.
    rt.add_routine(RoutineDraft {
        title: Some("Water the plants".into()),
        description: Some("Remind the user to water the plants.".into()),
        schedule: Some("1h".into()),
        execution_mode: Some(ExecutionMode::Inline),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();
    let now = std::fs::read_to_string(ws.join("HEARTBEAT.md")).unwrap();
    assert!(now.contains("Water the plants"), "{now}");

    std::fs::write(ws.join("go"), "").unwrap();
    let seen = appears(&ws.join("seen.txt")).await;
    let tried = appears(&ws.join("tried.txt")).await;
    assert!(
        tried.contains("Read-only file system") && tried.contains("REFUSED"),
        "the command could write the rewritten file: {tried}"
    );
    let after = std::fs::read_to_string(ws.join("HEARTBEAT.md")).unwrap();
    assert!(!after.contains("planted"), "{after}");
    assert_eq!(rt.routines().routines.len(), 1, "no routine but the user's");
    assert!(
        seen.contains("Water the plants"),
        "the command sees the current file, not a stale one: {seen}"
    );
    rt.shutdown().await;
}
