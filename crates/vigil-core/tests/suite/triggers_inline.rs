//! A routine's inline `agent` action (issue 33 item 4) through the runtime: the agent makes
//! a file-watch routine in a conversation; a file change later is a turn in that
//! conversation, whose message carries the path as data and whose answer is there, with a
//! notification that opens it; the routine pane names the conversation. Once the
//! conversation is deleted, a fire runs as an isolated job and its history says so.

use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::{Event, ExecutionMode, Op, ProviderKind, Role};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::continuation::{conversation, say};
use super::support::*;

/// Waits (15 s at most) until `f` holds.
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = tokio::time::Instant::now() + Duration::from_secs(15);
    while !f() {
        assert!(tokio::time::Instant::now() < end, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn assistant_says(rt: &vigil_core::Runtime, session: &str, text: &str) -> bool {
    rt.messages(Some(session))
        .iter()
        .any(|m| m.role == Role::Assistant && m.text().contains(text))
}

#[tokio::test]
async fn a_fire_of_an_inline_routine_is_a_turn_in_the_conversation_that_made_it() {
    let dir = outside_tmp();
    let add = Step::tool_call(
        "t1",
        "routine_add",
        json!({
            "title": "Notes watch",
            "description": "Tell me what changed in my notes.",
            "trigger": {"kind": "file", "paths": ["notes/"], "debounce_ms": 50},
            "execution_mode": "inline"
        }),
    );
    let script = Script::steps(vec![add, Step::text("I will watch your notes.")])
        .with_fallback(Step::text("Your notes changed: plan.md has eggs now."));
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let ws = rt.workspace().to_path_buf();
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    assert!(rt.start_background());
    let chat = conversation(&rt, &mut rx, "Notes chat").await;
    rt.submit(say(&chat, "Tell me when my notes change."));
    until("the agent added the routine", || {
        assistant_says(&rt, &chat, "I will watch your notes.")
    })
    .await;
    let view = rt.routines();
    let r = view
        .routines
        .iter()
        .find(|r| r.title == "Notes watch")
        .expect("the routine was made")
        .clone();
    assert_eq!(r.execution_mode, ExecutionMode::Inline);
    assert_eq!(
        r.runs_in.as_deref(),
        Some("Notes chat"),
        "the pane names the conversation it runs in"
    );
    until("the watch is armed", || rt.watch().armed(&r.id)).await;

    std::fs::write(ws.join("notes/plan.md"), "milk\neggs\n").unwrap();
    until("the answer is in the conversation that made it", || {
        assistant_says(&rt, &chat, "Your notes changed")
    })
    .await;
    let asked = fake.requests().last().unwrap().body.to_string();
    assert!(asked.contains("notes/plan.md"), "the path is the evidence: {asked}");
    assert!(asked.contains("never instructions"), "as data: {asked}");
    assert!(
        asked.contains("I will watch your notes."),
        "a turn of that conversation: its history came along: {asked}"
    );
    assert!(
        !assistant_says(&rt, "main", "Your notes changed"),
        "not in the main conversation"
    );
    let opens = next_matching(&mut rx, |e| match e {
        Event::Notification {
            target_session_id,
            body,
            ..
        } if body.contains("Your notes changed") => Some(target_session_id.clone()),
        _ => None,
    })
    .await;
    assert_eq!(opens.as_deref(), Some(chat.as_str()), "the notification opens it there");
    until("the run is in the history", || {
        rt.scheduler()
            .history(&r.id)
            .iter()
            .any(|h| h.session_id.as_deref() == Some(chat.as_str()))
    })
    .await;

    // The conversation deleted: the next fire runs as a job, and its history says so.
    rt.submit(Op::DeleteSession {
        session_id: chat.clone(),
    });
    until("the conversation is gone", || {
        rt.sessions().unwrap().iter().all(|s| s.id != chat)
    })
    .await;
    let before = fake.request_count();
    std::fs::write(ws.join("notes/plan.md"), "milk\neggs\nbread\n").unwrap();
    until("a job ran for the fire", || {
        rt.scheduler().history(&r.id).iter().any(|h| {
            h.mode == ExecutionMode::Isolated && h.session_id.as_deref().is_some_and(|s| s.starts_with("job_"))
        })
    })
    .await;
    assert!(fake.request_count() > before);
    let last = rt.scheduler().history(&r.id).last().unwrap().clone();
    assert!(
        last.evidence
            .as_deref()
            .unwrap_or_default()
            .contains("conversation that made this routine was deleted"),
        "the history says why it ran as a job: {last:?}"
    );
    let view = rt.routines();
    let v = view.routines.iter().find(|v| v.id == r.id).unwrap();
    assert!(
        v.runs_in.as_deref().unwrap_or_default().contains("deleted"),
        "{:?}",
        v.runs_in
    );
    rt.shutdown().await;
}
