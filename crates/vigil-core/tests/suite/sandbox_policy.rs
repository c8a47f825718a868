//! Who may leave the sandbox: runs nobody watches never do (without bubblewrap they ask,
//! or in an interval heartbeat run nothing), a user turn leaves only when asked each time,
//! full-auto never, and the commands the user starts from the Processes panel are the
//! user's own and not sandboxed.

use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::{ApprovalDecision, ApprovalPolicy, Event, Op, ProviderKind};
use vigil_core::sandbox::Sandbox;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::sandbox::{bwrap_ready, full_auto, results, run, tool_results};
use super::support::*;

/// A heartbeat under full-auto is sandboxed too, and never leaves it; with no bubblewrap it
/// runs no command at all rather than one unsandboxed.
#[tokio::test]
async fn unattended_commands_run_sandboxed_or_not_at_all() {
    bwrap_ready();
    let dir = tempfile::tempdir().unwrap();
    let outside = outside_tmp();
    let marker = outside.path().join("heartbeat-wrote");
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- write the marker\n").unwrap();
    let touch = format!("touch {}", marker.display());
    let heartbeat = |steps: Vec<Step>| {
        fake.set_script(Script::steps(steps));
        rt.request_wake(vigil_core::protocol::WakeReason::Interval);
    };
    heartbeat(vec![
        Step::tool_call("h1", "exec", json!({ "command": touch })),
        Step::tool_call("h2", "exec", json!({ "command": touch, "sandbox": false })),
        Step::text("HEARTBEAT_OK"),
    ]);
    let seen = tool_results(&mut rx, 2).await;
    assert!(seen[0].contains("Read-only file system"), "{}", seen[0]);
    assert!(seen[1].contains("always run in the sandbox"), "{}", seen[1]);
    assert!(!marker.exists());
    next_matching(&mut rx, |e| matches!(e, Event::Heartbeat { .. }).then_some(())).await;

    rt.approvals()
        .set_sandbox(Sandbox::unavailable("bubblewrap (bwrap) is not installed"));
    heartbeat(vec![
        Step::tool_call("h3", "exec", json!({ "command": touch })),
        Step::text("HEARTBEAT_OK"),
    ]);
    // An interval poll may not ask: even under full-auto it is refused, and the user is told.
    let mut told = None;
    let seen = next_matching(&mut rx, |e| match e {
        Event::Notification { body, .. } if body.contains("outside the sandbox") => {
            told = Some(body.clone());
            None
        }
        Event::ToolCallFinished { content, .. } => Some(content.clone()),
        _ => None,
    })
    .await;
    assert!(
        seen.contains("nobody to ask")
            && seen.contains("sandbox is not available")
            && seen.contains("bubblewrap (bwrap) is not installed"),
        "{seen}"
    );
    assert!(told.is_some(), "the user is told by a notification");
    assert!(!marker.exists(), "ran unsandboxed");
    let view = rt.approvals().view().sandbox;
    assert!(!view.available && view.problem.unwrap().contains("not installed"));
    rt.shutdown().await;
}

/// Without bubblewrap, under `ask`, a run that may ask (a continuation) asks before a
/// command runs outside the sandbox; allowed, it runs; never silently. (Full-auto refuses it:
/// see `full_auto_never_leaves_the_sandbox`.)
#[tokio::test]
async fn without_bubblewrap_an_unattended_command_asks_before_it_runs_outside() {
    let dir = outside_tmp();
    let marker = dir.path().join("workspace/continued-outside");
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    rt.approvals()
        .set_sandbox(Sandbox::unavailable("bubblewrap (bwrap) is not installed"));
    fake.set_script(Script::steps(vec![
        // The user's turn (attended) starts a background command outside, as the user allows.
        Step::tool_call(
            "b1",
            "exec",
            json!({"command": "sleep 0.2; echo first-done", "background": true}),
        ),
        Step::text("Started."),
        // Its continuation nobody watches: asks before running outside the sandbox.
        Step::tool_call("b2", "exec", json!({"command": format!("touch {}", marker.display())})),
        Step::text("Done."),
    ]));
    rt.submit(user("start it, then touch the marker"));
    let first = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id,
            expires_at,
            ..
        } => {
            assert!(expires_at.is_none(), "the user's own turn waits for them");
            Some(approval_id.clone())
        }
        _ => None,
    })
    .await;
    rt.submit(Op::Approval {
        id: first,
        decision: ApprovalDecision::Approve,
    });
    until_finished(&mut rx).await;
    let (id, outside) = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id: id,
            outside_sandbox,
            expires_at,
            ..
        } => {
            assert!(expires_at.is_some(), "asked while nobody watches");
            Some((id.clone(), *outside_sandbox))
        }
        Event::ToolCallFinished { content, .. } if content.contains("continued-outside") => {
            panic!("ran without asking: {content}")
        }
        _ => None,
    })
    .await;
    assert!(outside, "the card says it runs outside the sandbox");
    assert!(!marker.exists());
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Approve,
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !marker.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the allowed command did not run"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rt.shutdown().await;
}

/// Leaving the sandbox is an approval the user gives for one command: asked each time
/// ("always" is not offered), under `ask`; denied, nothing runs; approved, it runs outside.
#[tokio::test]
async fn leaving_the_sandbox_is_asked_for_each_command() {
    bwrap_ready();
    let dir = tempfile::tempdir().unwrap();
    let outside = outside_tmp();
    let marker = outside.path().join("outside-wrote");
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    assert!(rt.start_background());
    let touch = format!("touch {}", marker.display());
    for decision in [ApprovalDecision::Deny, ApprovalDecision::Always] {
        fake.set_script(Script::steps(vec![
            Step::tool_call("o1", "exec", json!({ "command": touch, "sandbox": false })),
            Step::text("done"),
        ]));
        rt.submit(user("write outside"));
        let id = next_matching(&mut rx, |e| match e {
            Event::ApprovalRequested {
                approval_id: id,
                outside_sandbox,
                prefix,
                ..
            } => {
                assert!(*outside_sandbox);
                assert_eq!(prefix, "", "no \"always\" for leaving the sandbox");
                Some(id.clone())
            }
            _ => None,
        })
        .await;
        rt.submit(Op::Approval { id, decision });
        until_finished(&mut rx).await;
        assert_eq!(marker.exists(), decision != ApprovalDecision::Deny, "{decision:?}");
    }
    // "Always" counted once: nothing was remembered.
    assert!(rt.approvals().rules().is_empty());

    // Without bubblewrap, a user turn asks before every command, even a read-only one.
    rt.approvals().set_sandbox(Sandbox::unavailable("no user namespaces"));
    fake.set_script(Script::steps(vec![
        Step::tool_call("l1", "exec", json!({ "command": "ls" })),
        Step::text("done"),
    ]));
    rt.submit(user("list"));
    let outside_sandbox = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested { outside_sandbox, .. } => Some(*outside_sandbox),
        _ => None,
    })
    .await;
    assert!(outside_sandbox);
    rt.shutdown().await;
}

/// Commands the user starts from the Processes panel are the user's own: not sandboxed.
/// Only where a sandbox could start does the write outside prove it.
#[tokio::test]
async fn the_users_own_commands_are_not_sandboxed() {
    bwrap_ready();
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("panel-wrote");
    let (rt, mut rx) = runtime(dir.path(), None);
    assert!(rt.start_background());
    rt.submit(Op::StartProcess {
        command: format!("touch {}", marker.display()),
        cwd: None,
    });
    next_matching(&mut rx, |e| matches!(e, Event::ProcessExited { .. }).then_some(())).await;
    assert!(marker.exists());
    rt.shutdown().await;
}

/// Full-auto never asks and never leaves the box: `sandbox: false` is refused, as is a
/// command with no sandbox to run in, and `write` outside the workspace and the folders the
/// user added; a folder the user added is writable. Each refusal proven by a marker.
#[tokio::test]
async fn full_auto_never_leaves_the_sandbox() {
    bwrap_ready();
    let dir = outside_tmp();
    let added = outside_tmp();
    let elsewhere = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    let added_path = added.path().canonicalize().unwrap();
    rt.approvals()
        .set_sandbox_writable(&[added_path.display().to_string()])
        .unwrap();
    let outside_marker = elsewhere.path().join("escaped");
    let touch = format!("touch {}", outside_marker.display());
    fake.set_script(Script::steps(vec![
        Step::tool_call("f1", "exec", json!({ "command": touch, "sandbox": false })),
        Step::tool_call(
            "f2",
            "write",
            json!({ "path": elsewhere.path().join("written").display().to_string(), "content": "x" }),
        ),
        Step::tool_call(
            "f3",
            "write",
            json!({ "path": added_path.join("ok.txt").display().to_string(), "content": "fine" }),
        ),
        Step::text("done"),
    ]));
    rt.submit(user("escape"));
    let events = until_finished(&mut rx).await;
    let seen = results(&events);
    assert!(
        !events.iter().any(|e| matches!(e, Event::ApprovalRequested { .. })),
        "full-auto never asks"
    );
    assert!(
        seen[0].contains("full-auto runs commands only inside the sandbox"),
        "{}",
        seen[0]
    );
    assert!(
        seen[1].contains("full-auto changes files only in the workspace"),
        "{}",
        seen[1]
    );
    assert!(!outside_marker.exists(), "sandbox: false ran outside");
    assert!(!elsewhere.path().join("written").exists(), "write landed outside");
    assert_eq!(std::fs::read_to_string(added_path.join("ok.txt")).unwrap(), "fine");

    // No sandbox at all: the user's own turn is refused too, not run unsandboxed.
    rt.approvals().set_sandbox(Sandbox::unavailable("no user namespaces"));
    let out = run(&rt, &mut rx, &fake, &touch).await;
    assert!(out.contains("full-auto runs commands only inside the sandbox"), "{out}");
    assert!(!outside_marker.exists(), "ran unsandboxed");
    rt.shutdown().await;
}
