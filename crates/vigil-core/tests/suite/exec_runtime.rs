//! exec through the whole runtime: the approval policy in front of it, and a background
//! command's exit waking the agent to tell the user.

use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::{ApprovalDecision, ApprovalPolicy, Event, ExecRun, Op, ProviderKind};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

/// A runtime on `dir` against the fake provider with `script`, commands allowed without
/// asking, and its background work (heartbeat, wakes) started.
async fn full_auto(dir: &std::path::Path, script: Script) -> (vigil_core::Runtime, Events, FakeLlm) {
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, rx) = runtime(dir, Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::FullAuto);
    assert!(rt.start_background());
    (rt, rx, fake)
}

#[tokio::test]
async fn a_command_waits_for_approval_and_runs_once_approved() {
    let dir = tempfile::tempdir().unwrap();
    // In the workspace, which a command may write (the data folder around it is hidden).
    let (marker, second) = (
        dir.path().join("workspace/ran-marker"),
        dir.path().join("workspace/second-marker"),
    );
    let script = Script::steps(vec![
        Step::tool_call("c1", "exec", json!({"command": format!("touch {}", marker.display())})),
        Step::tool_call("c2", "exec", json!({"command": format!("touch {}", second.display())})),
        Step::text("done"),
    ]);
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    assert!(rt.start_background());
    rt.submit(user("run it"));
    let (id, prefix) = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id: id,
            prefix,
            ..
        } => Some((id.clone(), prefix.clone())),
        _ => None,
    })
    .await;
    assert_eq!(prefix, "touch");
    // While the question is open nothing has started: no process, no file.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        rt.list_processes().await.is_empty(),
        "a process started before the answer"
    );
    assert!(!marker.exists(), "the command ran before the answer");
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Always,
    });
    // The second `touch` is covered by "always": no second question.
    let events = until_finished(&mut rx).await;
    let asked_again = events.iter().any(|e| matches!(e, Event::ApprovalRequested { .. }));
    assert!(!asked_again, "{events:?}");
    assert!(marker.exists() && second.exists(), "both commands ran");
    assert_eq!(rt.list_processes().await.len(), 2, "both commands ran, once each");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_denied_command_does_not_run_and_the_model_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/denied-marker");
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("c1", "exec", json!({"command": format!("touch {}", marker.display())})),
        Step::text("ok"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Openai)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    assert!(rt.start_background());
    rt.submit(user("clean up"));
    let id = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested { approval_id: id, .. } => Some(id.clone()),
        _ => None,
    })
    .await;
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Deny,
    });
    until_finished(&mut rx).await;
    let sent = fake.requests()[1].body["messages"].to_string();
    assert!(sent.contains("The user denied the command"), "{sent}");
    // Give a stray spawn time to land before looking for it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "the denied command ran");
    assert!(
        rt.list_processes().await.is_empty(),
        "a denied command started a process"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_heartbeat_under_ask_is_refused_a_command_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/heartbeat-marker");
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("h1", "exec", json!({"command": format!("touch {}", marker.display())})),
        Step::text("HEARTBEAT_OK"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    assert!(rt.start_background());
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- touch the marker\n").unwrap();
    rt.request_wake(vigil_core::protocol::WakeReason::Interval);
    // Nobody is at the screen to ask: denied without a question, and the model is told so.
    let told = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested { .. } => panic!("a heartbeat asked: {e:?}"),
        Event::Notification {
            kind: vigil_core::protocol::NotificationKind::Approval,
            body,
            ..
        } => Some(body.clone()),
        _ => None,
    })
    .await;
    assert!(told.contains("denied because nobody was asked"), "{told}");
    next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested { .. } => panic!("a heartbeat asked: {e:?}"),
        Event::Heartbeat { .. } => Some(()),
        _ => None,
    })
    .await;
    assert_eq!(fake.requests().len(), 2, "the heartbeat went on after the refusal");
    let sent = fake.requests()[1].body["messages"].to_string();
    assert!(sent.contains("this run has nobody to ask"), "{sent}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!marker.exists(), "the refused command ran");
    assert!(
        rt.list_processes().await.is_empty(),
        "a refused command started a process"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_background_command_that_exits_continues_its_conversation_to_tell_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        Step::tool_call(
            "c1",
            "exec",
            json!({"command": "sleep 0.3; echo build-ok", "background": true}),
        ),
        Step::text("Started the build in the background."),
        // The conversation's own agent continues with the result.
        Step::text("Your background build finished: build-ok."),
    ]);
    let (rt, mut rx, fake) = full_auto(dir.path(), script).await;
    rt.submit(user("build it in the background"));
    until_finished(&mut rx).await;
    // Within a few seconds: the process exits, the agent is woken, and the user is told once.
    let mut exit_notifications = 0;
    let report = next_matching(&mut rx, |e| match e {
        Event::Notification { body, .. } if body.starts_with("Exec completed") => {
            exit_notifications += 1;
            None
        }
        Event::Notification { body, .. } if body.contains("build finished") => Some(body.clone()),
        _ => None,
    })
    .await;
    assert!(report.contains("build-ok"));
    assert_eq!(
        exit_notifications, 0,
        "one notification: the agent's report, not also the raw exit"
    );
    // The conversation's agent saw the exit, with the command's output, after its history.
    let sent = fake.requests().last().unwrap().body["messages"].to_string();
    assert!(sent.contains("Exec completed") && sent.contains("build-ok"), "{sent}");
    assert!(sent.contains("build it in the background"), "{sent}");
    assert_eq!(rt.heartbeat_stats().runs, 0, "no heartbeat relays it");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_command_the_heartbeat_backgrounds_is_relayed_by_the_next_heartbeat_which_can_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        // An interval heartbeat starts a long check in the background.
        Step::tool_call(
            "h1",
            "exec",
            json!({"command": "sleep 0.3; echo nightly-check-ok", "background": true}),
        ),
        Step::text("HEARTBEAT_OK"),
        // Its exit wakes the heartbeat, which looks at the command before it reports.
        Step::tool_call("h2", "process", json!({"action": "list"})),
        Step::text("The nightly check finished: nightly-check-ok."),
    ]);
    let (rt, mut rx, fake) = full_auto(dir.path(), script).await;
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- run the nightly check\n").unwrap();
    rt.request_wake(vigil_core::protocol::WakeReason::Interval);
    let report = next_matching(&mut rx, |e| match e {
        Event::Notification { body, .. } if body.contains("nightly check finished") => Some(body.clone()),
        _ => None,
    })
    .await;
    assert!(report.contains("nightly-check-ok"));
    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    let relay = requests[2].body["messages"].to_string();
    assert!(
        relay.contains("Exec completed") && relay.contains("nightly-check-ok"),
        "{relay}"
    );
    // The relay's `process list` shows the command the heartbeat started.
    let listed = requests[3].body["messages"].to_string();
    assert!(
        listed.contains("echo nightly-check-ok") && listed.contains("exited"),
        "{listed}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn files_outside_the_workspace_follow_the_approval_policy() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("notes.txt");
    std::fs::write(&secret, "outside text").unwrap();
    let script = Script::steps(vec![
        Step::tool_call("r1", "read", json!({"path": secret.display().to_string()})),
        Step::tool_call(
            "w1",
            "write",
            json!({"path": outside.path().join("new.txt").display().to_string(), "content": "x"}),
        ),
        Step::text("done"),
    ]);
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    rt.submit(user("read my notes"));
    let (id, kind) = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id: id, kind, ..
        } => Some((id.clone(), *kind)),
        _ => None,
    })
    .await;
    assert_eq!(kind, vigil_core::protocol::ApprovalKind::ReadOutside);
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Approve,
    });
    let (id, kind) = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id: id, kind, ..
        } => Some((id.clone(), *kind)),
        _ => None,
    })
    .await;
    assert_eq!(
        kind,
        vigil_core::protocol::ApprovalKind::WriteOutside,
        "writing is asked about separately"
    );
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Deny,
    });
    until_finished(&mut rx).await;
    let sent = fake.requests()[2].body["messages"].to_string();
    assert!(sent.contains("outside text"), "the approved read ran");
    assert!(sent.contains("The user denied changing"), "{sent}");
    assert!(!outside.path().join("new.txt").exists());
}

#[tokio::test]
async fn running_processes_are_what_quitting_would_kill() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = vigil_core::clock::ManualClock::new(1_700_000_000_000);
    let rt = vigil_core::Runtime::new(
        dir.path(),
        std::sync::Arc::new(clock),
        std::sync::Arc::new(ChannelSink(tx)),
    )
    .unwrap();
    assert!(
        rt.running_processes().await.is_empty(),
        "nothing before the registry starts"
    );
    assert!(rt.start_background());
    for command in ["sleep 30", "true"] {
        rt.submit(Op::StartProcess {
            command: command.into(),
            cwd: None,
        });
    }
    next_matching(&mut rx, |e| match e {
        Event::ProcessExited { process } if process.command == "true" => Some(()),
        _ => None,
    })
    .await;
    let running = rt.running_processes().await;
    assert_eq!(running.len(), 1, "{running:?}");
    assert_eq!(running[0].command, "sleep 30");
    assert_eq!(rt.list_processes().await.len(), 2);
    rt.shutdown().await;
    assert!(rt.running_processes().await.is_empty(), "shutdown killed it");
}

/// Under full-auto, where everything else runs unasked, the file tools still cannot read or
/// change Vigil's own files, whatever the spelling: `..`, an absolute path, a symlink made
/// in the workspace, `/proc/self/root`, an exec `workdir` in the data folder.
#[tokio::test]
async fn the_data_folder_is_out_of_every_file_tools_reach_even_under_full_auto() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().canonicalize().unwrap();
    std::fs::write(data.join("approvals.json"), r#"{"rules": []}"#).unwrap();
    std::fs::create_dir_all(data.join("secrets")).unwrap();
    std::fs::write(data.join("secrets/key"), "sk-secret-in-the-data-dir").unwrap();
    let abs = |p: &str| data.join(p).display().to_string();
    let proc_root = format!("/proc/self/root{}", abs("approvals.json"));
    let attempts = vec![
        (
            "write",
            json!({"path": "../approvals.json", "content": "{\"rules\":[{\"kind\":\"exec\",\"prefix\":\"rm\",\"created_at\":0}]}"}),
        ),
        (
            "write",
            json!({"path": "../settings.json", "content": "{\"approvals\":{\"policy\":\"full-auto\"}}"}),
        ),
        ("write", json!({"path": abs("approvals.json"), "content": "{}"})),
        (
            "edit",
            json!({"path": "../approvals.json", "old_text": "[]", "new_text": "[1]"}),
        ),
        ("read", json!({"path": "../secrets/key"})),
        ("read", json!({"path": abs("secrets/key")})),
        ("read", json!({"path": proc_root})),
        ("read", json!({"path": "link/secrets/key"})),
        ("write", json!({"path": "link/approvals.json", "content": "{}"})),
        ("read", json!({"path": "./././../secrets//key"})),
        ("exec", json!({"command": "true", "workdir": abs("secrets")})),
    ];
    let mut steps: Vec<Step> = attempts
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| Step::tool_call(format!("t{i}"), *tool, args.clone()))
        .collect();
    steps.push(Step::text("done"));
    let (rt, mut rx, fake) = full_auto(&data, Script::steps(steps)).await;
    std::os::unix::fs::symlink(&data, rt.workspace().join("link")).unwrap();
    rt.submit(user("tidy up"));
    let events = until_finished(&mut rx).await;
    assert!(
        !events.iter().any(|e| matches!(e, Event::ApprovalRequested { .. })),
        "nothing is asked"
    );
    let results: Vec<(String, bool)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { content, is_error, .. } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), attempts.len(), "{results:?}");
    for ((tool, args), (content, is_error)) in attempts.iter().zip(&results) {
        assert!(*is_error, "{tool} {args} was allowed: {content}");
        assert!(content.contains("Vigil's own data folder"), "{tool} {args}: {content}");
        assert!(!content.contains("sk-secret-in-the-data-dir"), "{content}");
    }
    assert_eq!(
        std::fs::read_to_string(data.join("approvals.json")).unwrap(),
        r#"{"rules": []}"#
    );
    assert!(
        !data.join("settings.json").exists()
            || !std::fs::read_to_string(data.join("settings.json"))
                .unwrap()
                .contains("full-auto")
    );
    let sent = fake.requests().last().unwrap().body["messages"].to_string();
    assert!(
        !sent.contains("sk-secret-in-the-data-dir"),
        "the key never reached the model"
    );
    // The workspace inside the data folder stays the agent's own.
    rt.shutdown().await;
}

/// Starts `bash` in the background from a user turn under full-auto, then sets the policy to
/// `ask`: a shell the agent could type anything into. Returns its process id.
async fn a_background_shell(rt: &vigil_core::Runtime, rx: &mut Events, fake: &FakeLlm) -> String {
    fake.set_script(Script::steps(vec![
        Step::tool_call("s1", "exec", json!({"command": "bash", "background": true})),
        Step::text("A shell is open."),
    ]));
    rt.submit(user("open a shell"));
    until_finished(rx).await;
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    let processes = rt.list_processes().await;
    assert_eq!(processes.len(), 1, "{processes:?}");
    processes[0].id.clone()
}

/// `process write` / `send-keys` into a shell run whatever is typed: a heartbeat may not type
/// into a process a conversation started (it does not see it), and nothing lands in the shell.
#[tokio::test]
async fn a_heartbeat_cannot_type_into_a_shell_it_did_not_start() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/typed-marker");
    let (rt, mut rx, fake) = full_auto(dir.path(), Script::steps(vec![])).await;
    let id = a_background_shell(&rt, &mut rx, &fake).await;
    let typed = format!("touch {}\n", marker.display());
    fake.set_script(Script::steps(vec![
        Step::tool_call(
            "h1",
            "process",
            json!({"action": "write", "sessionId": id, "data": typed}),
        ),
        Step::tool_call(
            "h2",
            "process",
            json!({"action": "send-keys", "sessionId": id, "keys": [format!("touch {}", marker.display()), "Enter"]}),
        ),
        Step::text("HEARTBEAT_OK"),
    ]));
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- check the shell\n").unwrap();
    rt.request_wake(vigil_core::protocol::WakeReason::Interval);
    let refusals = next_matching(&mut rx, {
        let mut seen = Vec::new();
        move |e| {
            if let Event::ApprovalRequested { .. } = e {
                panic!("a heartbeat asked: {e:?}");
            }
            if let Event::ToolCallFinished { content, is_error, .. } = e {
                assert!(*is_error, "typing was allowed: {content}");
                seen.push(content.clone());
            }
            (seen.len() == 2).then(|| seen.clone())
        }
    })
    .await;
    // The heartbeat's processes are its own: a conversation's shell is not even visible to it.
    for r in &refusals {
        assert!(r.contains(&format!("No process with id `{id}`")), "{r}");
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!marker.exists(), "the typed command ran");
    rt.shutdown().await;
}

/// From a user turn under `ask`, typing into a shell asks first (the card names the
/// process's command), offers no "always", and a denial types nothing.
#[tokio::test]
async fn a_user_turn_asks_before_typing_into_a_shell() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("workspace/typed-marker");
    let (rt, mut rx, fake) = full_auto(dir.path(), Script::steps(vec![])).await;
    let id = a_background_shell(&rt, &mut rx, &fake).await;
    fake.set_script(Script::steps(vec![
        Step::tool_call(
            "w1",
            "process",
            json!({"action": "write", "sessionId": id, "data": format!("touch {}\n", marker.display())}),
        ),
        Step::text("ok"),
    ]));
    rt.submit(user("touch the marker in that shell"));
    let (approval, prefix) = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id: id,
            kind,
            command,
            prefix,
            ..
        } => {
            assert_eq!(*kind, vigil_core::protocol::ApprovalKind::ProcessInput);
            assert_eq!(command, "bash");
            Some((id.clone(), prefix.clone()))
        }
        _ => None,
    })
    .await;
    assert_eq!(prefix, "", "no \"always\" for typing");
    rt.submit(Op::Approval {
        id: approval,
        decision: ApprovalDecision::Deny,
    });
    until_finished(&mut rx).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!marker.exists(), "the denied input reached the shell");
    rt.shutdown().await;
}

#[tokio::test]
async fn the_approval_card_says_how_long_a_command_may_run() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        Step::tool_call("c1", "exec", json!({"command": "sleep 5", "background": true})),
        Step::tool_call(
            "c2",
            "exec",
            json!({"command": "sleep 6", "background": true, "timeout": 0}),
        ),
        Step::tool_call("c3", "exec", json!({"command": "sleep 7", "timeout": 86_400})),
        Step::text("Nothing ran."),
    ]);
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    assert!(rt.start_background());
    rt.submit(user("start them"));
    let mut runs = Vec::new();
    for _ in 0..3 {
        let (id, run) = next_matching(&mut rx, |e| match e {
            Event::ApprovalRequested {
                approval_id: id,
                exec_run,
                ..
            } => Some((id.clone(), *exec_run)),
            _ => None,
        })
        .await;
        runs.push(run);
        rt.submit(Op::Approval {
            id,
            decision: ApprovalDecision::Deny,
        });
    }
    let run = |background, timeout_ms| Some(ExecRun { background, timeout_ms });
    assert_eq!(
        runs,
        [
            run(true, Some(1_800_000)),
            run(true, None),
            run(false, Some(86_400_000))
        ]
    );
    until_finished(&mut rx).await;
    rt.shutdown().await;
}
