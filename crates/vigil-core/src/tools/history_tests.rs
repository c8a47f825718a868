use std::sync::Arc;

use serde_json::json;
use vigil_protocol::Message;

use super::*;
use crate::session::{ids, SessionStore};

/// The agent's search finds a job's words with its conversation, time and message id, and
/// `read_history` on that id shows the message among its neighbours; both only read.
#[tokio::test]
async fn the_agent_finds_a_message_and_reads_around_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let history = History::open(dir.path(), &store, Arc::new(crate::clock::SystemClock)).unwrap();
    let day = 1_795_860_000_000; // 2026-11-28 10:00 UTC
    store
        .append("job_disk_1", &Message::user_text("check the disk", day))
        .unwrap();
    store
        .append("job_disk_1", &Message::user_text("root is at 91% full", day + 60_000))
        .unwrap();
    store
        .append("job_disk_1", &Message::user_text("done", day + 120_000))
        .unwrap();
    store
        .append("chat_a", &Message::user_text("nothing here", day))
        .unwrap();
    history.settle();
    let bytes = std::fs::read(dir.path().join("sessions/job_disk_1.jsonl")).unwrap();
    let id = ids::lines_with_ids(&bytes).nth(1).unwrap().1;
    let ctx = ToolContext::new(dir.path());

    let search = SearchHistoryTool::new(history.clone());
    assert!(!search.changes_things(&json!({})));
    let out = search.run(json!({"query": "full root", "kind": "job"}), &ctx).await;
    assert!(!out.is_error, "{}", out.content);
    assert!(
        out.content.contains(&format!(
            "1. job (conversation job_disk_1), 2026-11-28 10:01 UTC, user, message {id}:\n   **root** is at 91% **full**\n"
        )),
        "{}",
        out.content
    );
    let none = search.run(json!({"query": "full", "since": "2026-11-29"}), &ctx).await;
    assert!(none.content.starts_with("No message matches"), "{}", none.content);

    let read = ReadHistoryTool::new(history);
    assert!(!read.changes_things(&json!({})));
    let out = read
        .run(
            json!({"conversation": "job_disk_1", "message_id": id, "before": 1, "after": 0}),
            &ctx,
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    assert!(out.content.contains("check the disk"), "{}", out.content);
    assert!(
        out.content
            .contains(&format!(">> [1] 2026-11-28 10:01 UTC user (message {id})")),
        "{}",
        out.content
    );
    assert!(!out.content.contains("done"), "{}", out.content);
}
