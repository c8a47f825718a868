//! Background updates after a long absence (issue 31 item 7): every update still in the
//! mailbox reaches the next turn, none dropped for space, each with the id the agent opens it
//! by; above the size bound as a digest.

use std::sync::Arc;

use serde_json::json;

use vigil_core::clock::ManualClock;
use vigil_core::protocol::ProviderKind;
use vigil_core::session::{MailboxEvent, MetaStore, PRIMARY_SESSION};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

/// A routine's report as a job delivers it: a one-line summary and a detail of a few hundred
/// characters. `n` makes each one distinct, so no two are merged as repeats.
fn report(n: usize) -> MailboxEvent {
    let detail = format!(
        "Backup #{n} finished: 3 files changed.\n{}",
        "The nightly copy of ~/Documents to /mnt/backup went through; nothing needs you. ".repeat(6)
    );
    MailboxEvent {
        event_id: format!("0b5e{n:04}-7c1d-4e0a-9f4e-5a1c{n:08}"),
        source: "job_backup".into(),
        summary: format!("Backup #{n} finished: 3 files changed."),
        detail: Some(detail),
        created_at: 1_700_000_000_000 - (60 - n as i64) * 3_600_000,
        run_id: None,
        event_type: "job_completed".into(),
        priority: 1,
        dedupe_key: None,
        claim: None,
    }
}

#[tokio::test]
async fn sixty_updates_all_reach_the_next_request_with_their_ids() {
    let fake = FakeLlm::start(Script::steps(vec![
        Step::text("Welcome back."),
        Step::tool_call("call_u", "updates", json!({"id": report(0).event_id})),
        Step::text("The first backup went through."),
    ]))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let meta = MetaStore::open(dir.path(), Arc::new(clock.clone())).unwrap();
    let updates: Vec<MailboxEvent> = (0..60).map(report).collect();
    for u in &updates {
        meta.deposit(PRIMARY_SESSION, u.clone()).await.unwrap();
    }
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.submit(user("What happened while I was away?"));
    until_finished(&mut rx).await;

    let requests = fake.requests();
    assert_eq!(requests.len(), 1);
    let sent = requests[0].body.to_string();
    let missing_ids: Vec<&str> = updates
        .iter()
        .map(|u| u.event_id.as_str())
        .filter(|id| !sent.contains(id))
        .collect();
    let missing_summaries: Vec<&str> = updates
        .iter()
        .map(|u| u.summary.as_str())
        .filter(|s| !sent.contains(s))
        .collect();
    assert!(
        missing_ids.is_empty() && missing_summaries.is_empty(),
        "the request lacks {} of 60 ids and {} of 60 summaries; ids missing: {missing_ids:?}; summaries missing: \
         {missing_summaries:?}",
        missing_ids.len(),
        missing_summaries.len()
    );
    // Sixty reports with their detail are past the bound: a digest, one line each.
    assert!(sent.contains("so this is a digest"), "{sent}");
    assert!(!sent.contains("The nightly copy"), "no detail in the digest");

    // A turn later, after they were acknowledged, the agent opens the oldest by its id.
    rt.submit(user("Tell me more about the first backup."));
    until_finished(&mut rx).await;
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let result = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .find(|b| b["type"] == "tool_result")
        .expect("the tool's result was sent");
    let text = result["content"].to_string();
    assert!(text.contains("Status: read by an earlier turn"), "{text}");
    assert!(text.contains(&json_str(report(0).detail.unwrap().trim_end())), "{text}");
}

/// `s` as it appears inside a JSON string.
fn json_str(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap();
    quoted[1..quoted.len() - 1].to_string()
}
