//! The gate's own tests: rules, policies, the data folder, durations.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use vigil_protocol::Event;

use super::rules::rule_covers;
use super::*;
use crate::clock::ManualClock;
use crate::events::CollectingSink;
use crate::events::Emitter;
use crate::shell::{self, Analysis};

fn exec(cmd: &str, interactive: bool) -> Request {
    Request {
        kind: ApprovalKind::Exec,
        subject: cmd.into(),
        cwd: None,
        env: vec![],
        workspace: None,
        interactive,
        started_here: false,
        outside_sandbox: false,
        exec_run: None,
        mcp: None,
    }
}

fn emitter(sink: &CollectingSink) -> Emitter {
    Emitter::new(Arc::new(sink.clone()), Arc::new(ManualClock::new(0)))
}

#[test]
fn prefixes_keep_the_subcommand() {
    assert_eq!(prefix_of(ApprovalKind::Exec, "cargo build --release"), "cargo build");
    assert_eq!(prefix_of(ApprovalKind::Exec, "ls -la /tmp"), "ls");
    assert_eq!(prefix_of(ApprovalKind::Exec, "git status"), "git status");
    assert_eq!(prefix_of(ApprovalKind::Exec, "echo hello-world"), "echo");
    let rule = Rule {
        kind: ApprovalKind::Exec,
        prefix: "cargo build".into(),
        created_at: 0,
        folder: None,
    };
    let covers = |line: &str| match shell::analyze(line) {
        Analysis::Commands(cs) => cs.iter().all(|c| rule_covers(&rule, c)),
        Analysis::Unprovable(_) => false,
    };
    assert!(covers("cargo build --release"));
    assert!(!covers("cargo buildx"));
    assert!(!covers("cargo test"));
    assert!(!covers("cargo build && cargo test"));
}

/// `exec` run in `cwd` with `workspace` as the agent's folder.
fn exec_in(cmd: &str, cwd: &Path, workspace: &Path, interactive: bool) -> Request {
    Request {
        cwd: Some(cwd.display().to_string()),
        workspace: Some(workspace.to_path_buf()),
        ..exec(cmd, interactive)
    }
}

#[tokio::test]
async fn ask_waits_for_the_user_and_always_is_remembered_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(workspace.join("src")).unwrap();
    let (approvals, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
    let sink = CollectingSink::default();
    let em = emitter(&sink);
    let asking = {
        let (a, em) = (approvals.clone(), em.clone());
        let req = exec_in("cargo build", &workspace.join("src"), &workspace, true);
        tokio::spawn(async move { a.check(req, &em, 5, &CancellationToken::new()).await })
    };
    let id = loop {
        let found = sink.events.lock().unwrap().iter().find_map(|e| match &e.event {
            Event::ApprovalRequested {
                approval_id: id,
                prefix,
                ..
            } => {
                assert_eq!(prefix, "cargo build");
                Some(id.clone())
            }
            _ => None,
        });
        if let Some(id) = found {
            break id;
        }
        tokio::task::yield_now().await;
    };
    assert!(approvals.answer(&id, ApprovalDecision::Always));
    assert_eq!(asking.await.unwrap(), Verdict::Allowed);
    assert!(!approvals.answer(&id, ApprovalDecision::Deny), "answered once");

    let (again, warnings) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
    assert!(warnings.is_empty());
    // Bound to the folder it was given in: the workspace, which the command ran inside.
    let rule = again.rules().remove(0);
    let real_ws = workspace.canonicalize().unwrap().display().to_string();
    assert_eq!(rule.folder.as_deref(), Some(real_ws.as_str()));
    let c = CancellationToken::new();
    let here = exec_in("cargo build --release", &workspace, &workspace, false);
    assert_eq!(again.check(here, &em, 6, &c).await, Verdict::Allowed);
    // Another folder is another question.
    let there = exec_in("cargo build --release", elsewhere.path(), &workspace, false);
    assert!(matches!(again.check(there, &em, 6, &c).await, Verdict::Denied(_)));
}

#[tokio::test]
async fn nobody_at_the_screen_means_denied_with_a_notification() {
    let dir = tempfile::tempdir().unwrap();
    let (approvals, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
    let sink = CollectingSink::default();
    let v = approvals
        .check(
            exec("rm -rf build", false),
            &emitter(&sink),
            0,
            &CancellationToken::new(),
        )
        .await;
    assert!(matches!(&v, Verdict::Denied(m) if m.contains("nobody to ask")), "{v:?}");
    assert!(sink
        .take()
        .iter()
        .any(|e| matches!(e.event, Event::Notification { .. })));
}

#[tokio::test]
async fn policies_decide_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = Approvals::open(dir.path(), ApprovalPolicy::FullAuto);
    let sink = CollectingSink::default();
    let em = emitter(&sink);
    let c = CancellationToken::new();
    assert_eq!(a.check(exec("make", true), &em, 0, &c).await, Verdict::Allowed);
    a.set_policy(ApprovalPolicy::ReadOnly);
    assert!(matches!(a.check(exec("make", true), &em, 0, &c).await, Verdict::Denied(m) if m.contains("read-only")));
    let read = Request {
        kind: ApprovalKind::ReadOutside,
        subject: "/etc/hosts".into(),
        cwd: None,
        env: vec![],
        workspace: None,
        interactive: false,
        started_here: false,
        outside_sandbox: false,
        exec_run: None,
        mcp: None,
    };
    // Reading outside asks under read-only too: nobody is here, so it is denied.
    assert!(matches!(a.check(read, &em, 0, &c).await, Verdict::Denied(m) if m.contains("nobody to ask")));
    a.set_policy(ApprovalPolicy::Allowlist);
    assert!(matches!(a.check(exec("make", true), &em, 0, &c).await, Verdict::Denied(m) if m.contains("allowlist")));
    assert!(
        sink.take()
            .iter()
            .all(|e| !matches!(e.event, Event::ApprovalRequested { .. })),
        "never asked"
    );
}

#[tokio::test]
async fn unattended_typing_goes_only_into_a_process_the_same_run_started() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
    let sink = CollectingSink::default();
    let (em, c) = (emitter(&sink), CancellationToken::new());
    let input = |started_here, interactive| Request {
        kind: ApprovalKind::ProcessInput,
        subject: "python3 -i".into(),
        cwd: None,
        env: vec![],
        workspace: None,
        interactive,
        started_here,
        outside_sandbox: false,
        exec_run: None,
        mcp: None,
    };
    assert_eq!(a.check(input(true, false), &em, 0, &c).await, Verdict::Allowed);
    assert!(
        matches!(a.check(input(false, false), &em, 0, &c).await, Verdict::Denied(m) if m.contains("nobody to ask"))
    );
    a.set_policy(ApprovalPolicy::ReadOnly);
    assert!(matches!(a.check(input(true, false), &em, 0, &c).await, Verdict::Denied(m) if m.contains("read-only")));
    a.set_policy(ApprovalPolicy::FullAuto);
    assert_eq!(a.check(input(false, false), &em, 0, &c).await, Verdict::Allowed);
    assert_eq!(prefix_of(ApprovalKind::ProcessInput, "cat"), "", "never remembered");
}

#[tokio::test]
async fn stop_while_asking_denies() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
    let sink = CollectingSink::default();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let v = a.check(exec("make", true), &emitter(&sink), 0, &cancel).await;
    assert!(matches!(v, Verdict::Denied(_)));
    assert_eq!(
        resolutions(&sink),
        [(ApprovalDecision::Deny, false)],
        "the user's Stop is a denial"
    );
}

/// The `approval_resolved` events in `sink`: the decision and whether the question expired.
fn resolutions(sink: &CollectingSink) -> Vec<(ApprovalDecision, bool)> {
    sink.take()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::ApprovalResolved { decision, expired, .. } => Some((decision, expired)),
            _ => None,
        })
        .collect()
}

/// Issue 31 item 5: a question from a run nobody watches expires, whether its own timeout
/// passes or the run that asked is ended first (its deadline): nobody denied it.
#[tokio::test(start_paused = true)]
async fn an_unattended_question_expires_when_its_time_runs_out_or_its_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
    let sink = CollectingSink::default();
    let hour = Some(Duration::from_secs(3600));
    let (em, ended) = (emitter(&sink), CancellationToken::new());
    let asking = a.check_away(exec("make", false), &em, 0, &ended, hour);
    let stop = async {
        tokio::time::sleep(Duration::from_secs(600)).await;
        ended.cancel();
    };
    let (v, ()) = tokio::join!(asking, stop);
    assert!(
        matches!(&v, Verdict::Denied(why) if why.contains("when the run was stopped")),
        "{v:?}"
    );
    assert_eq!(resolutions(&sink), [(ApprovalDecision::Deny, true)]);

    let v = a
        .check_away(exec("make", false), &em, 0, &CancellationToken::new(), hour)
        .await;
    assert!(
        matches!(&v, Verdict::Denied(why) if why.contains("nobody answered within 1 h")),
        "{v:?}"
    );
    assert_eq!(resolutions(&sink), [(ApprovalDecision::Deny, true)]);

    // Its tool call aborted while it asks (how a stopped run ends its tools): the card is
    // resolved all the same, and nothing waits for an answer any more.
    let (a2, em2) = (a.clone(), em.clone());
    let asking = tokio::spawn(async move {
        a2.check_away(exec("make", false), &em2, 0, &CancellationToken::new(), hour)
            .await
    });
    let asked = || {
        let events = sink.events.lock().unwrap();
        events.iter().find_map(|e| match &e.event {
            Event::ApprovalRequested { approval_id, .. } => Some(approval_id.clone()),
            _ => None,
        })
    };
    while asked().is_none() {
        tokio::task::yield_now().await;
    }
    let id = asked().unwrap();
    asking.abort();
    assert!(asking.await.unwrap_err().is_cancelled());
    assert_eq!(resolutions(&sink), [(ApprovalDecision::Deny, true)]);
    assert!(!a.answer(&id, ApprovalDecision::Approve), "no longer waiting");
}

#[tokio::test]
async fn an_mcp_call_is_asked_per_tool_passes_when_trusted_and_read_only_trusts_only_the_hint() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
    let sink = CollectingSink::default();
    let (em, c) = (emitter(&sink), CancellationToken::new());
    let call = |tool: &str, read_only, trusted, interactive| Request {
        kind: ApprovalKind::McpCall,
        subject: format!("mcp__fs__{tool}"),
        cwd: None,
        env: vec![],
        workspace: None,
        interactive,
        started_here: false,
        outside_sandbox: false,
        exec_run: None,
        mcp: Some(McpAsk {
            server: "fs".into(),
            tool: tool.into(),
            arguments: serde_json::json!({"path": "/tmp"}),
            read_only,
            trusted,
        }),
    };
    // Unattended, as a command: nobody to ask is a denial at once; a trusted server passes.
    let v = a.check(call("list", true, false, false), &em, 0, &c).await;
    assert!(
        matches!(&v, Verdict::Denied(m) if m.contains("the tool `list` of the MCP server `fs`") && m.contains("nobody to ask")),
        "{v:?}"
    );
    assert_eq!(
        a.check(call("write", false, true, false), &em, 0, &c).await,
        Verdict::Allowed
    );
    // "Always" covers that tool of that server, whatever its arguments, and no other.
    a.remember(&call("list", true, false, true), 0).unwrap();
    assert_eq!(
        a.check(call("list", true, false, false), &em, 0, &c).await,
        Verdict::Allowed
    );
    assert!(matches!(
        a.check(call("write", false, false, false), &em, 0, &c).await,
        Verdict::Denied(_)
    ));
    a.set_policy(ApprovalPolicy::Allowlist);
    assert_eq!(
        a.check(call("list", true, false, false), &em, 0, &c).await,
        Verdict::Allowed
    );
    a.set_policy(ApprovalPolicy::ReadOnly);
    assert_eq!(
        a.check(call("stat", true, false, false), &em, 0, &c).await,
        Verdict::Allowed
    );
    let v = a.check(call("write", false, true, true), &em, 0, &c).await;
    assert!(
        matches!(&v, Verdict::Denied(m) if m.contains("does not mark it read-only")),
        "{v:?}"
    );
    assert_eq!(prefix_of(ApprovalKind::McpCall, "mcp__fs__list"), "mcp__fs__list");
}

#[test]
fn an_unreadable_rule_file_is_kept_aside_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("approvals.json"), "{nope").unwrap();
    let (a, warnings) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
    assert_eq!(warnings.len(), 1);
    assert!(a.rules().is_empty());
    assert!(dir.path().join("approvals.json.broken-0").exists());
}
