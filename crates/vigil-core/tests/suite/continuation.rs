//! Continuations: a background command ends and the conversation whose agent started it
//! gets a turn of its own, with its whole history and the exit notice, merged within the
//! window, bounded in length, and asking (and waiting) when it needs an approval.

use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::{
    ApprovalDecision, ApprovalPolicy, Event, EventEnvelope, HeartbeatSettings, MessageKind, Op, ProviderKind, Source,
};
use vigil_fake_llm::{FakeLlm, Script, Step, ToolCall};

use super::support::*;

/// A runtime against `script` with commands allowed, background work started, and the
/// heartbeat on or off.
pub(super) async fn started(
    dir: &std::path::Path,
    script: Script,
    heartbeat: bool,
) -> (vigil_core::Runtime, Events, FakeLlm) {
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, rx) = runtime(dir, Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::FullAuto);
    let settings = HeartbeatSettings {
        enabled: heartbeat,
        ..HeartbeatSettings::default()
    };
    assert!(rt.set_heartbeat_settings(&settings).is_empty());
    assert!(rt.start_background());
    (rt, rx, fake)
}

pub(super) fn background(id: &str, command: &str) -> Step {
    Step::tool_call(id, "exec", json!({"command": command, "background": true}))
}

/// A command that runs `then` once `file` exists (20 s at most). A test that changes the
/// approval policy after the user's turn lets its background command end only then: on a
/// slow machine the turn can outlast a fixed sleep, and the continuation would start (and
/// run its command unasked) before the policy changed.
pub(super) fn once_there(file: &std::path::Path, then: &str) -> String {
    format!(
        "for i in $(seq 400); do [ -e {} ] && break; sleep 0.05; done; {then}",
        file.display()
    )
}

/// A new conversation titled `title`; returns its id.
pub(super) async fn conversation(rt: &vigil_core::Runtime, rx: &mut Events, title: &str) -> String {
    rt.submit(Op::CreateSession {
        title: Some(title.into()),
    });
    next_matching(rx, |e| match e {
        Event::SessionsChanged { sessions } => sessions.iter().find(|s| s.title == title).map(|s| s.id.clone()),
        _ => None,
    })
    .await
}

pub(super) fn say(session: &str, text: &str) -> Op {
    Op::UserMessage {
        text: text.into(),
        session_id: Some(session.into()),
        attachments: vec![],
    }
}

/// Envelopes until `session`'s next turn that Vigil started on its own has finished.
pub(super) async fn until_continuation_finished(rx: &mut Events, session: &str) -> Vec<EventEnvelope> {
    let mut seen = Vec::new();
    loop {
        let env = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("a continuation in time")
            .expect("alive");
        let done = env.session_id.as_deref() == Some(session)
            && env.source == Source::Background
            && matches!(env.event, Event::TurnFinished { .. });
        seen.push(env);
        if done {
            return seen;
        }
    }
}

/// Everything sent within `d`.
pub(super) async fn drain_for(rx: &mut Events, d: Duration) -> Vec<EventEnvelope> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + d;
    while let Ok(Some(env)) = tokio::time::timeout_at(deadline, rx.recv()).await {
        seen.push(env);
    }
    seen
}

/// The text of every message a request sent.
pub(super) fn sent(request: &vigil_fake_llm::RecordedRequest) -> String {
    request.body["messages"].to_string()
}

async fn two_conversations_each_continue_with_their_own_notice(heartbeat: bool) {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        background("a1", "sleep 1; echo done-A"),
        Step::text("Started A."),
        background("b1", "sleep 1; echo done-B"),
        Step::text("Started B."),
    ])
    .with_fallback(Step::text("The background job finished."));
    let (rt, mut rx, fake) = started(dir.path(), script, heartbeat).await;
    let a = conversation(&rt, &mut rx, "Project A").await;
    let b = conversation(&rt, &mut rx, "Project B").await;
    rt.submit(say(&a, "build project alpha in the background"));
    until_finished(&mut rx).await;
    rt.submit(say(&b, "build project beta in the background"));
    until_finished(&mut rx).await;
    assert_eq!(fake.request_count(), 4);

    // Both commands end; each conversation continues on its own, once.
    let mut finished = std::collections::HashSet::new();
    let mut notified = Vec::new();
    while finished.len() < 2 {
        let env = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("both continuations in time")
            .expect("alive");
        match &env.event {
            Event::TurnFinished { .. } => {
                assert_eq!(env.source, Source::Background, "{env:?}");
                finished.insert(env.session_id.clone().unwrap());
            }
            Event::Notification {
                target_session_id: session_id,
                body,
                ..
            } => notified.push((session_id.clone(), body.clone())),
            _ => {}
        }
    }
    assert_eq!(
        finished,
        [a.clone(), b.clone()].into_iter().collect(),
        "each conversation continued"
    );
    // Nothing else follows: no heartbeat relay, no second continuation.
    for env in drain_for(&mut rx, Duration::from_millis(800)).await {
        if let Event::Notification {
            target_session_id: session_id,
            body,
            ..
        } = env.event
        {
            notified.push((session_id, body));
        }
    }
    let continuations = fake.requests_since(4);
    assert_eq!(continuations.len(), 2, "{continuations:#?}");
    let of = |mine: &str| {
        continuations
            .iter()
            .map(sent)
            .find(|s| s.contains(mine))
            .unwrap_or_else(|| panic!("no continuation carried {mine}"))
    };
    let (to_a, to_b) = (of("done-A"), of("done-B"));
    assert!(to_a.contains("project alpha") && to_a.contains("Started A."), "{to_a}");
    assert!(!to_a.contains("done-B") && !to_a.contains("project beta"), "{to_a}");
    assert!(to_b.contains("project beta") && to_b.contains("Started B."), "{to_b}");
    assert!(!to_b.contains("done-A") && !to_b.contains("project alpha"), "{to_b}");
    // In the seed's form.
    assert!(
        to_a.contains("Exec completed (") && to_a.contains(", code 0) :: done-A"),
        "{to_a}"
    );
    assert_eq!(rt.heartbeat_stats().runs, 0, "the heartbeat relays nothing");
    // One notification per conversation, the answer's first line, leading to it.
    notified.sort();
    assert_eq!(
        notified,
        {
            let mut want = vec![
                (Some(a.clone()), "The background job finished.".to_string()),
                (Some(b.clone()), "The background job finished.".to_string()),
            ];
            want.sort();
            want
        },
        "one notification each, with the answer"
    );
    // The notice is in the transcript as what started the turn, not as the user's words.
    let notice = rt
        .messages(Some(&a))
        .into_iter()
        .find(|m| m.kind == MessageKind::SystemEvent)
        .expect("the notice is kept");
    assert!(notice.text().contains("done-A"));
    rt.shutdown().await;
}

#[tokio::test]
async fn two_conversations_each_continue_with_their_own_notice_with_the_heartbeat_on() {
    two_conversations_each_continue_with_their_own_notice(true).await;
}

#[tokio::test]
async fn two_conversations_each_continue_with_their_own_notice_with_the_heartbeat_off() {
    two_conversations_each_continue_with_their_own_notice(false).await;
}

#[tokio::test]
async fn three_exits_close_together_make_one_continuation() {
    let dir = tempfile::tempdir().unwrap();
    let call = |id: &str, cmd: &str| ToolCall {
        id: id.into(),
        name: "exec".into(),
        arguments: json!({"command": cmd, "background": true}),
    };
    let script = Script::steps(vec![
        Step::tool_calls(vec![
            call("x1", "sleep 0.5; echo first-done"),
            call("x2", "sleep 0.55; echo second-done"),
            call("x3", "sleep 0.6; echo third-done"),
        ]),
        Step::text("Started three."),
    ])
    .with_fallback(Step::text("All three finished."));
    let (rt, mut rx, fake) = started(dir.path(), script, false).await;
    rt.submit(user("start three jobs"));
    until_finished(&mut rx).await;
    until_continuation_finished(&mut rx, vigil_core::session::PRIMARY_SESSION).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    let continuations = fake.requests_since(2);
    assert_eq!(continuations.len(), 1, "one continuation for three exits");
    let text = sent(&continuations[0]);
    for done in ["first-done", "second-done", "third-done"] {
        assert!(text.contains(done), "{done} missing: {text}");
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn a_chain_of_continuations_stops_at_the_limit_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        background("c0", "sleep 0.2; echo round-0"),
        Step::text("Started round 0."),
        background("c1", "sleep 0.2; echo round-1"),
        Step::text("Round 0 done; started round 1."),
        background("c2", "sleep 0.2; echo round-2"),
        Step::text("Round 1 done; started round 2."),
    ])
    .with_fallback(Step::text("unexpected"));
    let (rt, mut rx, fake) = started(dir.path(), script, false).await;
    rt.set_autonomy(2, Duration::from_secs(3600));
    rt.submit(user("keep going round after round"));
    until_finished(&mut rx).await;
    let notice = next_matching(&mut rx, |e| match e {
        Event::MessageAppended { message }
            if message.kind == MessageKind::SystemEvent && message.text().contains("stopped") =>
        {
            Some(message.text())
        }
        _ => None,
    })
    .await;
    assert!(notice.contains("after 2 turns in a row"), "{notice}");
    let told = next_matching(&mut rx, |e| match e {
        Event::Notification { title, .. } if title.contains("stopped continuing") => Some(title.clone()),
        _ => None,
    })
    .await;
    assert_eq!(told, "Vigil stopped continuing on its own");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        fake.request_count(),
        6,
        "two continuations of two requests each, no third"
    );
    let summary = rt.sessions().unwrap();
    assert_eq!(summary[0].continuations, 2);
    // The third exit waits for the user's next message, which also starts a new chain.
    rt.submit(user("what happened?"));
    until_finished(&mut rx).await;
    let last = sent(fake.requests().last().unwrap());
    assert!(last.contains("round-2"), "{last}");
    assert_eq!(rt.sessions().unwrap()[0].continuations, 0);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_conversation_set_to_zero_does_not_continue_but_keeps_the_notice() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        background("z1", "sleep 0.2; echo quiet-done"),
        Step::text("Started."),
    ])
    .with_fallback(Step::text("ok"));
    let (rt, mut rx, fake) = started(dir.path(), script, false).await;
    rt.submit(Op::SetContinuationLimit {
        session_id: vigil_core::session::PRIMARY_SESSION.into(),
        limit: Some(0),
    });
    rt.submit(user("run it"));
    until_finished(&mut rx).await;
    let body = next_matching(&mut rx, |e| match e {
        Event::Notification { body, .. } => Some(body.clone()),
        _ => None,
    })
    .await;
    assert!(body.contains("quiet-done"), "the bare exit is announced: {body}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(fake.request_count(), 2, "no continuation");
    rt.submit(user("and?"));
    until_finished(&mut rx).await;
    assert!(sent(fake.requests().last().unwrap()).contains("quiet-done"));
    rt.shutdown().await;
}

/// A continuation that needs an approval under `ask`: the card and a notification with the
/// question's id; the answer comes back as the `approval` op (or never).
async fn continuation_asks(answer: Option<ApprovalDecision>) -> (bool, String) {
    let dir = super::support::outside_tmp();
    let marker = dir.path().join("workspace/approved-marker");
    // The command ends only once the policy below is `ask` (see `once_there`).
    let go = dir.path().join("workspace/go");
    let script = Script::steps(vec![
        background("w1", &once_there(&go, "echo tests-pass")),
        // A slow reply, so the turn outlasts what a fixed sleep would have waited.
        Step::text("Running the tests.").with_delay_ms(150),
        Step::tool_call("w2", "exec", json!({"command": format!("touch {}", marker.display())})),
        Step::text("Built."),
    ]);
    let (rt, mut rx, fake) = started(dir.path(), script, true).await;
    rt.set_autonomy(10, Duration::from_millis(700));
    rt.submit(user("run the tests, and if they pass, build"));
    until_finished(&mut rx).await;
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    std::fs::write(&go, "").unwrap();
    let (id, expires_at) = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id: id,
            expires_at,
            ..
        } => Some((id.clone(), *expires_at)),
        _ => None,
    })
    .await;
    assert!(expires_at.is_some(), "an unattended question says when it lapses");
    let (note_id, note_session) = next_matching(&mut rx, |e| match e {
        Event::Notification {
            approval_id: Some(a),
            target_session_id: session_id,
            ..
        } => Some((a.clone(), session_id.clone())),
        _ => None,
    })
    .await;
    assert_eq!(note_id, id, "the notification answers this question");
    assert_eq!(note_session.as_deref(), Some(vigil_core::session::PRIMARY_SESSION));
    assert!(!marker.exists(), "ran before the answer");
    assert!(rt.is_busy(vigil_core::session::PRIMARY_SESSION), "the lane waits");
    if let Some(decision) = answer {
        rt.submit(Op::Approval { id, decision });
    }
    let events = until_continuation_finished(&mut rx, vigil_core::session::PRIMARY_SESSION).await;
    let result = events
        .iter()
        .find_map(|e| match &e.event {
            Event::ToolCallFinished { name, content, .. } if name == "exec" => Some(content.clone()),
            _ => None,
        })
        .expect("the exec call ended");
    assert_eq!(fake.request_count(), 4);
    rt.shutdown().await;
    (marker.exists(), result)
}

#[tokio::test]
async fn a_continuation_waits_for_an_approval_and_runs_the_command_once_allowed() {
    let (ran, _) = continuation_asks(Some(ApprovalDecision::Approve)).await;
    assert!(ran, "the approved command ran");
}

#[tokio::test]
async fn an_unanswered_continuation_approval_is_denied_after_the_timeout() {
    let (ran, result) = continuation_asks(None).await;
    assert!(!ran, "the unanswered command ran");
    assert!(result.contains("nobody answered within 700 ms"), "{result}");
}

/// `vigil-headless` on `dir` with commands allowed; `ops` go to its stdin, which stays open
/// while `keep_open`.
fn restartable(dir: &std::path::Path, fake: &FakeLlm) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::from(headless(dir, fake, "sk-restart"));
    cmd.env("VIGIL_APPROVAL_POLICY", "full-auto").kill_on_drop(true);
    cmd
}

/// Runs the runner to the end of its work with nothing to say (stdin closed at once).
async fn start_and_settle(dir: &std::path::Path, fake: &FakeLlm) {
    let mut child = restartable(dir, fake).spawn().unwrap();
    drop(child.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the runner settled in time")
        .unwrap();
    assert!(status.success());
}

fn stopped_notices(dir: &std::path::Path) -> Vec<String> {
    let (rt, _rx) = runtime(dir, None);
    rt.messages(None)
        .into_iter()
        .filter(|m| m.kind == MessageKind::SystemEvent)
        .map(|m| m.text())
        .filter(|t| t.contains("was running when Vigil stopped"))
        .collect()
}

#[tokio::test]
async fn a_command_running_when_vigil_is_killed_is_announced_once_at_the_next_start() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = super::support::outside_tmp();
    let script = Script::steps(vec![
        background("k1", "sleep 30; echo never-printed"),
        Step::text("Started the long job."),
    ])
    .with_api_key("sk-restart")
    .with_fallback(Step::text("The long job was cut off when Vigil stopped."));
    let fake = FakeLlm::start(script).await.unwrap();
    let mut child = restartable(dir.path(), &fake).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"type\":\"user_message\",\"text\":\"run the long job in the background\"}\n")
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("the turn in time")
            .unwrap()
            .expect("the runner is alive");
        if line.contains("\"type\":\"turn_finished\"") {
            break;
        }
    }
    child.start_kill().unwrap(); // SIGKILL: no shutdown, nothing written on the way out
    child.wait().await.unwrap();
    assert_eq!(fake.request_count(), 2);

    start_and_settle(dir.path(), &fake).await;
    let notices = stopped_notices(dir.path());
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("`sleep 30; echo never-printed` was running when Vigil stopped and was ended"));
    assert_eq!(fake.request_count(), 3, "one continuation tells the user");
    assert!(sent(fake.requests().last().unwrap()).contains("run the long job in the background"));

    start_and_settle(dir.path(), &fake).await;
    assert_eq!(stopped_notices(dir.path()).len(), 1, "announced once");
    assert_eq!(fake.request_count(), 3);
}

#[tokio::test]
async fn a_routine_jobs_background_command_continues_inside_its_job() {
    use vigil_core::protocol::{ExecutionMode, NotificationKind, RoutineDraft};
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        background("j1", "sleep 0.3; echo nightly-bg-done"),
        Step::text("Started the nightly build."),
        Step::text("The nightly build finished: nightly-bg-done."),
    ]);
    let (rt, mut rx, fake) = started(dir.path(), script, false).await;
    let (routine, _) = rt
        .add_routine(RoutineDraft {
            title: Some("Nightly build".into()),
            description: Some("Start the nightly build in the background".into()),
            schedule: Some("1d".into()),
            execution_mode: Some(ExecutionMode::Isolated),
            ..RoutineDraft::default()
        })
        .await
        .unwrap();
    rt.run_routine_now(&routine.id).await.unwrap();
    let mut routine_notes = Vec::new();
    while routine_notes.len() < 2 {
        let body = next_matching(&mut rx, |e| match e {
            Event::Notification {
                kind: NotificationKind::Routine,
                body,
                ..
            } => Some(body.clone()),
            _ => None,
        })
        .await;
        routine_notes.push(body);
    }
    assert_eq!(routine_notes[0], "Started the nightly build.");
    assert_eq!(routine_notes[1], "The nightly build finished: nightly-bg-done.");
    let continuation = sent(&fake.requests()[2]);
    assert!(continuation.contains("nightly-bg-done"), "{continuation}");
    assert!(
        continuation.contains("Start the nightly build in the background"),
        "the job's own history: {continuation}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn a_routine_job_asks_in_the_main_conversation_and_waits_for_the_answer() {
    use vigil_core::protocol::{ExecutionMode, RoutineDraft};
    let dir = super::support::outside_tmp();
    let marker = dir.path().join("workspace/job-approved-marker");
    let script = Script::steps(vec![
        Step::tool_call("q1", "exec", json!({"command": format!("touch {}", marker.display())})),
        Step::text("Touched it."),
    ]);
    let (rt, mut rx, _fake) = started(dir.path(), script, false).await;
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    let (routine, _) = rt
        .add_routine(RoutineDraft {
            title: Some("Touch the marker".into()),
            schedule: Some("1d".into()),
            execution_mode: Some(ExecutionMode::Isolated),
            ..RoutineDraft::default()
        })
        .await
        .unwrap();
    rt.run_routine_now(&routine.id).await.unwrap();
    let (id, asked_in) = next_matching_envelope(&mut rx, |env| match &env.event {
        Event::ApprovalRequested {
            approval_id: id,
            expires_at,
            ..
        } => {
            assert!(expires_at.is_some());
            Some((id.clone(), env.session_id.clone()))
        }
        _ => None,
    })
    .await;
    assert_eq!(
        asked_in.as_deref(),
        Some(vigil_core::session::PRIMARY_SESSION),
        "the card is where the user looks"
    );
    assert!(!marker.exists());
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Approve,
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !marker.exists() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the approved command did not run"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rt.shutdown().await;
}

async fn next_matching_envelope<T>(rx: &mut Events, mut f: impl FnMut(&EventEnvelope) -> Option<T>) -> T {
    loop {
        let env = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("in time")
            .expect("alive");
        if let Some(t) = f(&env) {
            return t;
        }
    }
}

#[tokio::test]
async fn a_deleted_conversation_is_not_brought_back_by_its_commands_exit() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        background("d1", "sleep 0.4; echo orphan-done"),
        Step::text("Started."),
    ])
    .with_fallback(Step::text("should not be asked"));
    let (rt, mut rx, fake) = started(dir.path(), script, false).await;
    let side = conversation(&rt, &mut rx, "Short-lived").await;
    rt.submit(say(&side, "start it"));
    until_finished(&mut rx).await;
    rt.submit(Op::DeleteSession {
        session_id: side.clone(),
    });
    let body = next_matching(&mut rx, |e| match e {
        Event::Notification { body, .. } => Some(body.clone()),
        _ => None,
    })
    .await;
    assert!(body.contains("orphan-done"), "the exit is still announced: {body}");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(fake.request_count(), 2, "no continuation of a deleted conversation");
    assert!(
        rt.sessions().unwrap().iter().all(|s| s.id != side),
        "the deleted conversation came back"
    );
    rt.shutdown().await;
}
