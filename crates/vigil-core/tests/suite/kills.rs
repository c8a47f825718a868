//! Kills, and who hears of them: a kill from the Processes panel is news to the agent that
//! started the command (one notice, and its conversation continues); a kill the agent asked
//! for itself is not (it has the `process` tool's answer); a kill of the user's own panel
//! command tells nobody.

use base64::Engine as _;
use serde_json::json;
use vigil_core::protocol::{ApprovalPolicy, Event, MessageKind, Op, ProviderKind, Source};
use vigil_fake_llm::{FakeLlm, RecordedRequest, Script, Step};

use super::support::*;

/// A runtime on `dir` against `script`, commands allowed without asking, background work
/// started.
async fn full_auto(dir: &std::path::Path, script: Script) -> (vigil_core::Runtime, Events, FakeLlm) {
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, rx) = runtime(dir, Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::FullAuto);
    assert!(rt.start_background());
    (rt, rx, fake)
}

/// The agent's dev server: says it is up, then runs until it is killed.
fn start_server() -> Step {
    Step::tool_call(
        "s1",
        "exec",
        json!({"command": "echo server-up; sleep 60", "background": true}),
    )
}

/// The text of every message a request sent.
fn sent(request: &RecordedRequest) -> String {
    request.body["messages"].to_string()
}

/// The id of the only process there is.
async fn the_one_process(rt: &vigil_core::Runtime) -> String {
    let processes = rt.list_processes().await;
    assert_eq!(processes.len(), 1, "{processes:?}");
    processes[0].id.clone()
}

/// Waits until process `id` has written `text` to its terminal, looking at `seen` first.
async fn until_output(rx: &mut Events, seen: &[Event], id: &str, text: &str) {
    let mut shown = Vec::new();
    let mut take = |e: &Event| {
        if let Event::ProcessOutput { process_id, data_b64 } = e {
            if process_id == id {
                shown.extend(base64::engine::general_purpose::STANDARD.decode(data_b64).unwrap());
            }
        }
        String::from_utf8_lossy(&shown).contains(text).then_some(())
    };
    if seen.iter().any(|e| take(e).is_some()) {
        return;
    }
    next_matching(rx, take).await;
}

/// Starts `true` from the panel and waits until the panel hears of it. The registry reports
/// in order, one report at a time: whatever an earlier exit set off (a notice, a
/// notification) has happened by then. Returns every event before it.
async fn barrier(rt: &vigil_core::Runtime, rx: &mut Events) -> Vec<Event> {
    rt.submit(Op::StartProcess {
        command: "true".into(),
        cwd: None,
    });
    let mut before = Vec::new();
    next_matching(rx, |e| match e {
        Event::ProcessStarted { process } if process.command == "true" => Some(()),
        other => {
            before.push(other.clone());
            None
        }
    })
    .await;
    before
}

#[tokio::test]
async fn a_kill_from_the_panel_is_told_to_the_conversation_that_started_the_command_which_continues() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        start_server(),
        Step::text("The dev server is starting."),
        Step::text("You stopped the dev server; tell me if you want it back."),
        Step::text("You're welcome."),
    ]);
    let (rt, mut rx, fake) = full_auto(dir.path(), script).await;
    rt.submit(user("start the dev server"));
    let turn = until_finished(&mut rx).await;
    let id = the_one_process(&rt).await;
    until_output(&mut rx, &turn, &id, "server-up").await;

    rt.submit(Op::ProcessKill { process_id: id.clone() });
    // The conversation's own agent continues, on its own, with the notice.
    next_matching(&mut rx, |e| matches!(e, Event::ProcessExited { .. }).then_some(())).await;
    let continued = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            let env = rx.recv().await.expect("alive");
            if env.source == Source::Background && matches!(env.event, Event::TurnFinished { .. }) {
                return env;
            }
        }
    })
    .await
    .expect("the conversation continues after the kill");
    assert_eq!(continued.session_id.as_deref(), Some("main"));
    assert_eq!(fake.request_count(), 3, "one continuation");
    // The seed's exit notice, saying who ended it and how, with the end of its output.
    let notice = format!("Exec killed by the user ({id}, signal SIGTERM) :: server-up");
    let continuation = sent(&fake.requests()[2]);
    assert!(continuation.contains(&notice), "{continuation}");
    assert!(continuation.contains("start the dev server"), "{continuation}");
    let kept = rt
        .messages(None)
        .into_iter()
        .filter(|m| m.kind == MessageKind::SystemEvent)
        .map(|m| m.text())
        .collect::<Vec<_>>();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(kept[0].contains(&notice), "{kept:?}");

    // One notice: the next turn carries it once, in the history, and nothing else ran.
    rt.submit(user("thanks"));
    until_finished(&mut rx).await;
    assert_eq!(fake.request_count(), 4);
    let next = sent(&fake.requests()[3]);
    assert_eq!(next.matches(&notice).count(), 1, "{next}");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_kill_the_agent_asks_for_is_not_told_back_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![start_server(), Step::text("The dev server is starting.")]);
    let (rt, mut rx, fake) = full_auto(dir.path(), script).await;
    rt.submit(user("start the dev server"));
    until_finished(&mut rx).await;
    let id = the_one_process(&rt).await;

    fake.set_script(Script::steps(vec![
        Step::tool_call("k1", "process", json!({"action": "kill", "sessionId": id})),
        Step::text("Stopped it."),
        Step::text("Nothing new."),
    ]));
    rt.submit(user("stop the dev server"));
    until_finished(&mut rx).await;
    assert_eq!(
        fake.request_count(),
        4,
        "the call and the answer: its own kill is no news to it"
    );
    let killed = sent(&fake.requests()[3]);
    assert!(
        killed.contains(&format!("Killed {id} and everything it started")),
        "{killed}"
    );
    barrier(&rt, &mut rx).await;

    // A notice queued by now would reach this turn, or a continuation before it.
    rt.submit(user("anything new?"));
    until_finished(&mut rx).await;
    assert_eq!(fake.request_count(), 5, "no continuation");
    for request in fake.requests() {
        let text = sent(&request);
        assert!(!text.contains("Exec killed") && !text.contains("Exec failed"), "{text}");
    }
    let notices = rt
        .messages(None)
        .into_iter()
        .filter(|m| m.kind == MessageKind::SystemEvent)
        .count();
    assert_eq!(notices, 0);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_kill_of_the_users_own_command_tells_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, mut rx, fake) = full_auto(dir.path(), Script::steps(vec![])).await;
    rt.submit(Op::StartProcess {
        command: "sleep 60".into(),
        cwd: None,
    });
    let id = next_matching(&mut rx, |e| match e {
        Event::ProcessStarted { process } => Some(process.id.clone()),
        _ => None,
    })
    .await;
    rt.submit(Op::ProcessKill { process_id: id.clone() });
    let mut seen = Vec::new();
    let exited = next_matching(&mut rx, |e| match e {
        Event::ProcessExited { process } if process.id == id => Some(process.state.clone()),
        other => {
            seen.push(other.clone());
            None
        }
    })
    .await;
    assert_eq!(exited, "killed");
    // Started only now, so the barrier's report follows the exit's.
    seen.extend(barrier(&rt, &mut rx).await);
    let notifications: Vec<_> = seen
        .iter()
        .filter(|e| matches!(e, Event::Notification { .. }))
        .collect();
    assert!(notifications.is_empty(), "{notifications:?}");
    assert_eq!(fake.request_count(), 0);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_command_the_agent_waits_on_killed_from_the_panel_answers_that_the_user_killed_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        Step::tool_call(
            "w1",
            "exec",
            json!({"command": "echo migrating; sleep 60", "yieldMs": 120_000}),
        ),
        Step::text("You stopped the migration."),
    ]);
    let (rt, mut rx, fake) = full_auto(dir.path(), script).await;
    rt.submit(user("run the migration"));
    let id = next_matching(&mut rx, |e| match e {
        Event::ProcessStarted { process } => Some(process.id.clone()),
        _ => None,
    })
    .await;
    until_output(&mut rx, &[], &id, "migrating").await;
    rt.submit(Op::ProcessKill { process_id: id.clone() });
    until_finished(&mut rx).await;
    assert_eq!(fake.request_count(), 2);
    let result = sent(&fake.requests()[1]);
    assert!(
        result.contains("migrating")
            && result.contains("(The user killed this command from the Processes panel; it ended with signal SIGTERM)"),
        "{result}"
    );
    // Its answer came as the call's result; no notice repeats it.
    barrier(&rt, &mut rx).await;
    assert!(rt.messages(None).iter().all(|m| m.kind != MessageKind::SystemEvent));
    rt.shutdown().await;
}
