//! Issue 31 item 8 through the runtime: a hand edit breaks the JSON of the task block; the
//! last good routine still fires at its time, the heartbeat tells the agent the block can be
//! repaired with the routine tools, and the agent's `routine_add` does repair it (the last
//! good routines plus the new one, the broken file kept beside it). Broken again,
//! `routine_restore` repairs it without a change. (Issue 20 item 5 made every write refuse a
//! corrupted block; that is now only so when there is no good copy.)

use std::sync::Arc;
use std::time::Duration;

use vigil_core::clock::ManualClock;
use vigil_core::protocol::{Event, ExecutionMode, Op, ProviderKind, RoutineDraft, RunOutcome, WakeReason};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

const START_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// The tool results of a turn's events: `(tool, is_error, content)`.
fn tool_results(events: &[Event]) -> Vec<(String, bool, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                name,
                content,
                is_error,
                ..
            } => Some((name.clone(), *is_error, content.clone())),
            _ => None,
        })
        .collect()
}

/// What a hand edit that breaks the JSON makes of the file: a comma where none may be.
fn break_by_hand(text: &str) -> String {
    let broken = text.replacen("\"tasks\": [", "\"tasks\": [,", 1);
    assert_ne!(broken, text);
    broken
}

#[tokio::test]
async fn the_last_good_routine_fires_and_the_agent_repairs_the_block_with_its_routine_tools() {
    let fake = FakeLlm::start(Script::steps(vec![
        // The reminder's heartbeat run, which also carries the note about the block.
        Step::text("Time for a glass of water. (Your routines file has a typo; I can repair it.)"),
        Step::tool_call(
            "c1",
            "routine_add",
            serde_json::json!({"title": "Stretch", "schedule": "2h"}),
        ),
        Step::text("Repaired, and your stretch routine is added."),
        Step::tool_call("c2", "routine_restore", serde_json::json!({})),
        Step::text("Restored."),
    ]))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(START_MS);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, ProviderKind::Openai), &clock)));
    let (water, _) = rt
        .add_routine(RoutineDraft {
            title: Some("Drink water".into()),
            schedule: Some("1h".into()),
            execution_mode: Some(ExecutionMode::Inline),
            ..RoutineDraft::default()
        })
        .await
        .unwrap();
    let path = rt.workspace().join("HEARTBEAT.md");
    let good = std::fs::read_to_string(&path).unwrap();
    let broken = break_by_hand(&good);
    std::fs::write(&path, &broken).unwrap();
    let view = rt.routines();
    assert!(view.error.is_some(), "seen as corrupted");
    assert_eq!(view.routines.len(), 1, "and the last good routine listed");

    // It fires at its time.
    clock.advance(Duration::from_secs(3600));
    assert_eq!(rt.scheduler().tick().await.claimed, std::slice::from_ref(&water.id));
    rt.heartbeat_once(WakeReason::Cron).await;
    rt.scheduler().settle().await;
    let outcomes: Vec<RunOutcome> = rt.routine_history(&water.id).iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [RunOutcome::Ok]);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        broken,
        "left as the user wrote it"
    );
    // The run's context says what runs and how to repair it.
    let messages = fake.requests()[0].body["messages"].to_string();
    let note = &messages[messages.find("## Routine Problems").expect("the note")..];
    assert!(
        note.contains("The last good routines keep running") && note.contains("repairs the block"),
        "{note}"
    );

    while rx.try_recv().is_ok() {} // the heartbeat turn's events
    rt.submit(Op::UserMessage {
        text: "yes, repair it, and remind me to stretch every two hours".into(),
        session_id: None,
        attachments: vec![],
    });
    let results = tool_results(&until_finished(&mut rx).await);
    assert_eq!(results.len(), 1, "{results:?}");
    let (tool, is_error, content) = &results[0];
    assert_eq!((tool.as_str(), *is_error), ("routine_add", false), "{content}");
    let view = rt.routines();
    assert_eq!(view.error, None, "repaired");
    let shown: Vec<(&str, Option<i64>)> = view
        .routines
        .iter()
        .map(|v| (v.title.as_str(), v.next_run_at))
        .collect();
    assert_eq!(
        shown,
        [
            ("Drink water", Some(START_MS + 2 * 3_600_000)),
            ("Stretch", Some(START_MS + 3 * 3_600_000))
        ],
        "the last good routine, its run included, and the new one"
    );
    assert_eq!(
        std::fs::read_to_string(rt.workspace().join("HEARTBEAT.md.corrupt")).unwrap(),
        broken
    );

    // Broken again: routine_restore repairs it without a change.
    let good = std::fs::read_to_string(&path).unwrap();
    let broken = break_by_hand(&good);
    std::fs::write(&path, &broken).unwrap();
    rt.submit(Op::UserMessage {
        text: "I broke it again, put it back please".into(),
        session_id: None,
        attachments: vec![],
    });
    let results = tool_results(&until_finished(&mut rx).await);
    assert_eq!(results.len(), 1, "{results:?}");
    let (tool, is_error, content) = &results[0];
    assert_eq!((tool.as_str(), *is_error), ("routine_restore", false), "{content}");
    assert!(content.starts_with("Restored 2 routine"), "{content}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        good,
        "the last good block, byte for byte"
    );
    rt.shutdown().await;
}
