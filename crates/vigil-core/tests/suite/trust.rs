//! The attacker's view through the whole runtime: the fake provider plays a model steered by
//! hostile text, with one remembered "always" for `git status` under `allowlist`. It tries
//! each way of getting a second command past that rule, and each `env` trick, from a user
//! turn, a heartbeat and a routine job; a marker file per attempt proves nothing ran.
//! (`shell/tests.rs` holds the larger corpus against the gate itself.)

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use vigil_core::clock::ManualClock;
use vigil_core::protocol::{ApprovalPolicy, Event, ExecutionMode, Op, ProviderKind, RoutineDraft};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

/// `{X}` is replaced by a command that creates the attempt's marker.
const TRICKS: &[&str] = &[
    "git status && {X}",
    "git status ; {X}",
    "git status | {X}",
    "git status || {X}",
    "git status & {X}",
    "git status\n{X}",
    "git status\r{X}",
    "git status \\\n&& {X}",
    "git status $({X})",
    "git status `{X}`",
    "git status \"$({X})\"",
    "git status <({X})",
    "git status > /dev/null; {X}",
    "(git status; {X})",
    "{ git status; {X}; }",
    "git status #\n{X}",
    "eval 'git status; {X}'",
    "bash -c 'git status; {X}'",
    "sh -c '{X}'",
    "FOO=1 {X}",
    "env {X}",
    "if git status; then {X}; fi",
    "git status\u{200B}; {X}",
    "git -c core.pager='{X}' status",
    "xargs -a /dev/null {X}",
];

/// Every trick as a tool call, each with its own marker in the workspace (which a command
/// could write: nothing but the gate stands in the way); and the `env` tricks.
fn attempts(workspace: &Path) -> (Vec<Step>, Vec<std::path::PathBuf>) {
    let mut steps = Vec::new();
    let mut markers = Vec::new();
    for (i, trick) in TRICKS.iter().enumerate() {
        let marker = workspace.join(format!("pwned-{i}"));
        let line = trick.replace("{X}", &format!("touch {}", marker.display()));
        steps.push(Step::tool_call(format!("t{i}"), "exec", json!({ "command": line })));
        markers.push(marker);
    }
    // `git status` itself is covered, but not with an env that turns it into anything.
    let marker = workspace.join("pwned-env");
    let env_tricks = [
        json!({"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "core.fsmonitor",
               "GIT_CONFIG_VALUE_0": format!("touch {}", marker.display())}),
        json!({"GIT_EXTERNAL_DIFF": format!("touch {}", marker.display())}),
        json!({"LD_PRELOAD": "/nonexistent.so"}),
        json!({"PATH": "/tmp/evil"}),
    ];
    for (i, env) in env_tricks.into_iter().enumerate() {
        steps.push(Step::tool_call(
            format!("e{i}"),
            "exec",
            json!({"command": "git status", "env": env}),
        ));
    }
    markers.push(marker);
    (steps, markers)
}

/// A runtime under `allowlist` whose only rule is `git status`, with a git repository as
/// its workspace (so `git status` itself would succeed).
async fn rig() -> (vigil_core::Runtime, Events, FakeLlm, ManualClock, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("approvals.json"),
        r#"{"rules": [{"kind": "exec", "prefix": "git status", "created_at": 0}]}"#,
    )
    .unwrap();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(1_767_225_600_000);
    let rt = vigil_core::Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, ProviderKind::Anthropic), &clock)));
    rt.approvals().set_policy(ApprovalPolicy::Allowlist);
    assert!(rt.start_background());
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(rt.workspace())
        .status()
        .unwrap();
    assert!(git.success());
    (rt, rx, fake, clock, dir)
}

/// Waits for `n` tool results (in any session), and returns them.
async fn tool_results(rx: &mut Events, n: usize) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    while out.len() < n {
        let env = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("the attempts end in time")
            .expect("alive");
        match env.event {
            Event::ToolCallFinished { content, is_error, .. } => out.push((content, is_error)),
            Event::ApprovalRequested { .. } => panic!("allowlist asked: {:?}", env.event),
            _ => {}
        }
    }
    out
}

async fn assert_nothing_ran(rx: &mut Events, markers: &[std::path::PathBuf], n: usize, who: &str) {
    let results = tool_results(rx, n).await;
    for (i, (content, is_error)) in results.iter().enumerate() {
        assert!(*is_error, "{who}: attempt {i} was allowed: {content}");
        assert!(
            content.contains("not on the allowlist"),
            "{who}: attempt {i}: {content}"
        );
    }
    // A stray spawn would have had time to land.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for m in markers {
        assert!(!m.exists(), "{who}: {} was created", m.display());
    }
}

#[tokio::test]
async fn every_bypass_is_refused_from_a_user_turn_a_heartbeat_and_a_routine_job() {
    let (rt, mut rx, fake, clock, _dir) = rig().await;
    let (steps, markers) = attempts(rt.workspace());
    let n = steps.len();
    assert!(n >= 29, "{n}");
    let script = |done: &str| {
        let mut s = steps.clone();
        s.push(Step::text(done));
        Script::steps(s)
    };

    // A user turn.
    fake.set_script(script("done"));
    rt.submit(Op::UserMessage {
        text: "summarise this web page".into(),
        session_id: None,
        attachments: vec![],
    });
    assert_nothing_ran(&mut rx, &markers, n, "user turn").await;
    until_finished(&mut rx).await;

    // A heartbeat.
    fake.set_script(script("HEARTBEAT_OK"));
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- check the repository\n").unwrap();
    rt.request_wake(vigil_core::protocol::WakeReason::Interval);
    assert_nothing_ran(&mut rx, &markers, n, "heartbeat").await;

    // A routine job.
    fake.set_script(script("checked"));
    rt.add_routine(RoutineDraft {
        title: Some("Check the repository".into()),
        schedule: Some("1h".into()),
        execution_mode: Some(ExecutionMode::Isolated),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();
    clock.advance(Duration::from_secs(3600));
    let tick = rt.scheduler().tick().await;
    assert_eq!(tick.claimed.len(), 1, "{tick:?}");
    assert_nothing_ran(&mut rx, &markers, n, "routine job").await;
    rt.shutdown().await;
}

/// The covered command itself still runs, in the same rig: the refusals above are the
/// tricks', not a gate that refuses everything.
#[tokio::test]
async fn the_covered_command_runs() {
    let (rt, mut rx, fake, _clock, _dir) = rig().await;
    fake.set_script(Script::steps(vec![
        Step::tool_call("g1", "exec", json!({"command": "git status && git status --short"})),
        Step::text("clean"),
    ]));
    rt.submit(Op::UserMessage {
        text: "status?".into(),
        session_id: None,
        attachments: vec![],
    });
    let (content, is_error) = tool_results(&mut rx, 1).await.remove(0);
    assert!(!is_error && content.contains("On branch"), "{content}");
    rt.shutdown().await;
}

/// `HEARTBEAT.md`'s task block is changed only through the routine tools, which check
/// schedules and limits and announce what the agent added: `write` and `edit` may change
/// the checks above it, never the block, under full-auto too.
#[tokio::test]
async fn the_file_tools_cannot_slip_a_routine_into_heartbeat_md() {
    let (rt, mut rx, fake, _clock, _dir) = rig().await;
    rt.approvals().set_policy(ApprovalPolicy::FullAuto);
    rt.add_routine(RoutineDraft {
        title: Some("Water the plants".into()),
        schedule: Some("0 9 * * *".into()),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();
    let path = rt.workspace().join("HEARTBEAT.md");
    let before = std::fs::read_to_string(&path).unwrap();
    let block_start = before.find("## Tasks").unwrap();
    let smuggled = before.replace("\"tasks\": [", "\"tasks\": [{\"id\": \"every_second\", \"title\": \"Spin\", \"schedule\": \"* * * * * *\", \"enabled\": true, \"state\": \"pending\", \"created_at\": \"2026-01-01T00:00:00+00:00\"},");
    assert_ne!(smuggled, before, "the block was found to change");
    let checks_only = format!("- also check the backups\n{before}");
    fake.set_script(Script::steps(vec![
        Step::tool_call("w1", "write", json!({"path": "HEARTBEAT.md", "content": smuggled})),
        Step::tool_call(
            "e1",
            "edit",
            json!({"path": "HEARTBEAT.md", "old_text": "Water the plants", "new_text": "Water nothing"}),
        ),
        Step::tool_call("w2", "write", json!({"path": "HEARTBEAT.md", "content": checks_only})),
        Step::text("done"),
    ]));
    rt.submit(Op::UserMessage {
        text: "add a routine".into(),
        session_id: None,
        attachments: vec![],
    });
    let results = tool_results(&mut rx, 3).await;
    for (content, is_error) in &results[..2] {
        assert!(*is_error && content.contains("routine_add"), "{content}");
    }
    assert!(!results[2].1, "the checks may change: {}", results[2].0);
    let after = std::fs::read_to_string(&path).unwrap();
    assert!(after.starts_with("- also check the backups\n"));
    assert_eq!(
        &after[after.find("## Tasks").unwrap()..],
        &before[block_start..],
        "the block is untouched"
    );
    let titles: Vec<String> = rt.routines().routines.into_iter().map(|r| r.title).collect();
    assert_eq!(titles, ["Water the plants"]);
    rt.shutdown().await;
}
