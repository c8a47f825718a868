//! How a background command's end reaches a conversation and the user, as the README says
//! it: a turn already running there takes the notice in at its next step (no second turn);
//! a continuation that answers `NO_REPLY` notifies nobody; and while a continuation waits
//! for an approval, only that conversation waits: others go on.

use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::{ApprovalDecision, ApprovalPolicy, Event, EventEnvelope, Op, Source};
use vigil_core::session::PRIMARY_SESSION;
use vigil_fake_llm::{Script, Step};

use super::continuation::{
    background, conversation, drain_for, once_there, say, sent, started, until_continuation_finished,
};
use super::support::*;

/// Envelopes up to and including the next `turn_finished` of `session`.
async fn until_turn_finished(rx: &mut Events, session: &str) -> Vec<EventEnvelope> {
    let mut seen = Vec::new();
    loop {
        let env = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("the turn finished in time")
            .expect("alive");
        let done = env.session_id.as_deref() == Some(session) && matches!(env.event, Event::TurnFinished { .. });
        seen.push(env);
        if done {
            return seen;
        }
    }
}

fn notifications(seen: &[EventEnvelope]) -> Vec<String> {
    seen.iter()
        .filter_map(|e| match &e.event {
            Event::Notification { body, .. } => Some(body.clone()),
            _ => None,
        })
        .collect()
}

/// The background command ends while the turn that started it still works (its next call
/// waits for that): the turn's next request carries the exit notice, and no continuation
/// follows, since the notice was taken.
#[tokio::test]
async fn a_turn_already_running_takes_the_notice_at_its_next_step() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        background("b1", "sleep 0.2; echo written > bg.txt; echo bg-finished"),
        // Waits for the background command's file, then long enough for its exit notice.
        Step::tool_call(
            "w1",
            "exec",
            json!({"command": "until [ -e bg.txt ]; do sleep 0.05; done; sleep 1; echo waited"}),
        ),
        Step::text("Both done."),
    ])
    .with_fallback(Step::text("unexpected"));
    let (rt, mut rx, fake) = started(dir.path(), script, false).await;
    rt.submit(user("start it in the background, then wait for it"));
    let turn = until_turn_finished(&mut rx, PRIMARY_SESSION).await;
    assert!(
        !turn.iter().any(|e| e.source == Source::Background),
        "nothing ran on its own during the turn"
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 3, "one turn of three steps");
    let next_step = sent(&requests[2]);
    assert!(
        next_step.contains("System: Exec completed") && next_step.contains("bg-finished"),
        "the step after the wait carries the notice: {next_step}"
    );
    assert!(!sent(&requests[1]).contains("Exec completed"), "not before it ended");
    let after = drain_for(&mut rx, Duration::from_millis(1000)).await;
    assert!(
        !after
            .iter()
            .any(|e| e.source == Source::Background && matches!(e.event, Event::TurnStarted { .. })),
        "no continuation for a notice the turn took: {after:?}"
    );
    assert_eq!(fake.request_count(), 3);
    assert_eq!(rt.messages(None).last().unwrap().text(), "Both done.");
    rt.shutdown().await;
}

/// A continuation whose answer is `NO_REPLY` notifies nobody; one with something to say
/// notifies once, with its first line.
#[tokio::test]
async fn a_continuation_that_answers_no_reply_notifies_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        background("q1", "sleep 0.2; echo quiet-done"),
        Step::text("Started."),
        Step::text("NO_REPLY"),
        background("q2", "sleep 0.2; echo loud-done"),
        Step::text("Started again."),
        Step::text("The build passed.\nDetails follow."),
    ])
    .with_fallback(Step::text("unexpected"));
    let (rt, mut rx, fake) = started(dir.path(), script, false).await;

    rt.submit(user("run the quiet one"));
    until_finished(&mut rx).await;
    let mut quiet = until_continuation_finished(&mut rx, PRIMARY_SESSION).await;
    quiet.extend(drain_for(&mut rx, Duration::from_millis(800)).await);
    assert!(sent(&fake.requests()[2]).contains("quiet-done"));
    assert_eq!(rt.messages(None).last().unwrap().text(), "NO_REPLY");
    assert_eq!(notifications(&quiet), Vec::<String>::new(), "NO_REPLY notifies nobody");

    rt.submit(user("run the loud one"));
    until_finished(&mut rx).await;
    let mut loud = until_continuation_finished(&mut rx, PRIMARY_SESSION).await;
    loud.extend(drain_for(&mut rx, Duration::from_millis(800)).await);
    assert_eq!(notifications(&loud), ["The build passed."]);
    assert_eq!(fake.request_count(), 6);
    rt.shutdown().await;
}

/// Under `ask`, a continuation in the main conversation waits for an approval; meanwhile
/// the user's turn in another conversation runs and finishes, and the main one still
/// waits until the answer comes.
#[tokio::test]
async fn while_a_continuation_waits_for_an_approval_only_its_conversation_waits() {
    let dir = outside_tmp();
    let marker = dir.path().join("workspace/approved-marker");
    let go = dir.path().join("workspace/go");
    let script = Script::steps(vec![
        background("a1", &once_there(&go, "echo tests-pass")),
        // A slow reply, so the turn outlasts what a fixed sleep would have waited.
        Step::text("Running the tests.").with_delay_ms(150),
        Step::tool_call("a2", "exec", json!({"command": format!("touch {}", marker.display())})),
        Step::text("The other conversation answers."),
        Step::text("Built."),
    ])
    .with_fallback(Step::text("unexpected"));
    let (rt, mut rx, fake) = started(dir.path(), script, false).await;
    let other = conversation(&rt, &mut rx, "Other").await;
    rt.submit(user("run the tests, and if they pass, build"));
    until_turn_finished(&mut rx, PRIMARY_SESSION).await;
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    std::fs::write(&go, "").unwrap();
    let id = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested { approval_id, .. } => Some(approval_id.clone()),
        _ => None,
    })
    .await;
    assert!(rt.is_busy(PRIMARY_SESSION), "the main conversation waits");

    rt.submit(say(&other, "a question for the other conversation"));
    let seen = until_turn_finished(&mut rx, &other).await;
    assert!(
        seen.iter().any(|e| matches!(
            &e.event,
            Event::MessageAppended { message } if message.text() == "The other conversation answers."
        )),
        "the other conversation answered while the question was open"
    );
    assert!(rt.is_busy(PRIMARY_SESSION), "the main conversation still waits");
    assert!(!marker.exists(), "ran before the answer");

    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Approve,
    });
    until_continuation_finished(&mut rx, PRIMARY_SESSION).await;
    assert!(marker.exists(), "ran once allowed");
    assert_eq!(fake.request_count(), 5);
    rt.shutdown().await;
}
