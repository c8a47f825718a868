//! A `HEARTBEAT.md` replaced by another program while a sandboxed command runs is held. The
//! sandbox binds the file read-only, but the kernel detaches that bind in a running sandbox
//! when the file is renamed over or deleted from outside (an editor saving by rename); a
//! command still running there can then write the new file. Vigil does not act on such a
//! file (none of its routines run; the routines view says why) until the user trusts it; a
//! replacement while nothing sandboxed runs needs no Trust; a hold outlives a restart.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::ProviderKind;
use vigil_core::sandbox::Sandbox;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::sandbox::{bwrap_ready, full_auto, results, run};
use super::support::*;

/// What the planted routine's job says: in a request the fake provider saw, it ran.
const MARKER: &str = "PLANTED-7f3c";

/// The support runtime's manual clock, as the task block writes times: the planted routine is
/// due at once.
const NOW: &str = "2023-11-14T22:13:20.000Z";

/// A whole `HEARTBEAT.md` with one isolated job, due now, whose job makes `job-ran.txt`.
fn planted() -> String {
    let task = json!({"version": 2, "tasks": [{
        "id": "planted", "title": "Planted", "schedule": "1d", "execution_mode": "isolated",
        "next_run_at": NOW, "description": format!("{MARKER}: touch job-ran.txt")}]});
    format!("# Checks\n\n## Tasks\n\n```json\n{task:#}\n```\n")
}

/// Waits, with a deadline, until `f` holds.
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..400 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what} did not happen in 20 s");
}

fn saw_marker(fake: &FakeLlm) -> bool {
    fake.requests().iter().any(|r| r.body.to_string().contains(MARKER))
}

/// Starts, in the standing sandbox, a command that keeps trying to write `plant.txt` over
/// `HEARTBEAT.md` once it has text (refused while the bind holds) and says `planted.txt`
/// once the file reads back planted: a write that lands in the old file in the instant the
/// rename detaches the bind (the kernel detaches before it moves the name) is tried again.
async fn start_planter(rt: &vigil_core::Runtime, rx: &mut Events, fake: &FakeLlm, ws: &Path) {
    std::fs::write(ws.join("plant.txt"), planted()).unwrap();
    let planter = "cat /proc/$PPID/comm > parent.txt; \
                   until [ -s HEARTBEAT.md ] && (cat plant.txt > HEARTBEAT.md) 2>/dev/null \
                   && grep -q 'PLANTED-7f3[c]' HEARTBEAT.md; do sleep 0.05; done; echo yes > planted.txt";
    fake.set_script(Script::steps(vec![
        Step::tool_call("c1", "exec", json!({ "command": planter, "background": true })),
        Step::text("started"),
    ]));
    rt.submit(user("start it"));
    let started = results(&until_finished(rx).await).remove(0);
    assert!(!started.contains("error"), "{started}");
    until("the planter's start", || {
        std::fs::read_to_string(ws.join("parent.txt")).is_ok_and(|t| !t.is_empty())
    })
    .await;
    let parent = std::fs::read_to_string(ws.join("parent.txt")).unwrap();
    assert!(parent.contains("vigil-sandbox"), "in the standing sandbox: {parent}");
    // The bind holds while the file is the one it bound.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!ws.join("planted.txt").exists(), "the bound file was written");
}

/// An editor's save: the whole file written anew beside it and renamed over it.
fn save_by_rename(ws: &Path, text: &str) {
    std::fs::write(ws.join(".HEARTBEAT.md.swp"), text).unwrap();
    std::fs::rename(ws.join(".HEARTBEAT.md.swp"), ws.join("HEARTBEAT.md")).unwrap();
}

/// The planted routine has not run and does not: the scheduler claims nothing, the provider
/// saw no request for it, and the view says why while listing it for review.
async fn assert_held(rt: &vigil_core::Runtime, fake: &FakeLlm) {
    let view = rt.routines();
    assert_eq!(
        view.held.as_deref(),
        Some("HEARTBEAT.md was replaced while a sandboxed command was running; its routines wait for you: review the file, then Trust it.")
    );
    assert_eq!(
        view.routines.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["planted"],
        "listed for review"
    );
    let tick = rt.scheduler().tick().await;
    assert!(tick.claimed.is_empty() && tick.waiting.is_empty(), "{:?}", tick.claimed);
    // Run now, as the pane's button asks, is refused with the reason.
    let refused = rt.run_routine_now("planted").await.unwrap_err().to_string();
    assert!(
        refused.starts_with("HEARTBEAT.md was replaced while a sandboxed command"),
        "{refused}"
    );
    assert!(!saw_marker(fake), "the planted routine ran");
}

/// Trust releases the file: the planted routine runs (its job reaches the provider).
async fn trust_and_see_it_run(rt: &vigil_core::Runtime, fake: &FakeLlm) {
    fake.set_script(Script::steps(vec![]).with_fallback(Step::text("done")));
    let view = rt.trust_heartbeat_file().await.unwrap();
    assert_eq!(view.held, None);
    for _ in 0..400 {
        rt.scheduler().tick().await;
        if saw_marker(fake) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the trusted routine never ran");
}

#[tokio::test]
async fn a_task_file_replaced_by_rename_while_a_sandboxed_command_runs_is_held_until_trusted() {
    bwrap_ready();
    let dir = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    let ws = rt.workspace().canonicalize().unwrap();
    std::fs::write(ws.join("HEARTBEAT.md"), "- check the disk\n").unwrap();
    assert_eq!(rt.routines().held, None, "a hand edit in place needs no Trust");
    start_planter(&rt, &mut rx, &fake, &ws).await;

    save_by_rename(&ws, "- check the disk\n- water the plants\n");
    until("the planter's write", || ws.join("planted.txt").exists()).await;
    let now = std::fs::read_to_string(ws.join("HEARTBEAT.md")).unwrap();
    assert!(now.contains(MARKER), "the detached bind let the command write: {now}");

    assert_held(&rt, &fake).await;
    // The window is told, not only the pane.
    let mut told = Vec::new();
    while let Ok(env) = rx.try_recv() {
        if let vigil_core::protocol::Event::Error { message, .. } = env.event {
            told.push(message);
        }
    }
    assert!(
        told.iter()
            .any(|m| m.starts_with("HEARTBEAT.md was replaced while a sandboxed command was running")),
        "{told:?}"
    );
    trust_and_see_it_run(&rt, &fake).await;
    rt.shutdown().await;
}

#[tokio::test]
async fn a_task_file_replaced_by_rename_with_no_sandbox_alive_runs_without_asking() {
    bwrap_ready();
    let dir = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    rt.approvals()
        .set_sandbox(Sandbox::new().with_idle_exit(Duration::from_millis(300)));
    let ws = rt.workspace().canonicalize().unwrap();
    assert_eq!(rt.routines().held, None);
    // A sandbox stood, and left.
    let out = run(&rt, &mut rx, &fake, "echo from $(cat /proc/$PPID/comm)").await;
    assert!(out.contains("from .vigil-sandbox"), "{out}");
    until("the standing sandbox's end", || {
        vigil_core::sandbox::pins::live(&ws) == 0
    })
    .await;
    // Vigil has not looked at the file since the sandbox ended; it need not have.

    save_by_rename(&ws, &planted());
    fake.set_script(Script::steps(vec![]).with_fallback(Step::text("done")));
    assert_eq!(rt.routines().held, None, "nothing sandboxed ran since the last look");
    for _ in 0..400 {
        rt.scheduler().tick().await;
        if saw_marker(&fake) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(saw_marker(&fake), "the edited routine never ran");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_task_file_deleted_and_made_again_while_a_command_runs_is_held_and_stays_held_after_a_restart() {
    bwrap_ready();
    let dir = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    let ws = rt.workspace().canonicalize().unwrap();
    std::fs::write(ws.join("HEARTBEAT.md"), "- check the disk\n").unwrap();
    assert_eq!(rt.routines().held, None);
    start_planter(&rt, &mut rx, &fake, &ws).await;

    std::fs::remove_file(ws.join("HEARTBEAT.md")).unwrap();
    std::fs::write(ws.join("HEARTBEAT.md"), "- check the disk\n").unwrap();
    until("the planter's write", || ws.join("planted.txt").exists()).await;
    assert_held(&rt, &fake).await;
    rt.shutdown().await;
    drop(rt);

    let (rt, _rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    assert!(rt.start_background());
    assert_held(&rt, &fake).await;
    trust_and_see_it_run(&rt, &fake).await;
    rt.shutdown().await;
}
