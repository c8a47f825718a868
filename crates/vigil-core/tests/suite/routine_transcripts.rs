//! Issue 35, a routine's run history links to its job's transcript, through the runtime
//! against the fake provider: the session a run records is the conversation holding the
//! job's reply, and once that transcript is gone the run no longer names it.

use std::sync::Arc;
use std::time::Duration;

use vigil_core::clock::ManualClock;
use vigil_core::protocol::{ExecutionMode, Op, ProviderKind, Role, RoutineDraft, RunOutcome};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

const START_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn a_jobs_run_names_the_transcript_that_holds_its_reply() {
    let fake = FakeLlm::start(Script::steps(vec![Step::text(
        "Disk at 42%, nothing to do.\nThe pelican folder is the largest.",
    )]))
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(START_MS);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, ProviderKind::Openai), &clock)));
    let id = rt
        .add_routine(RoutineDraft {
            title: Some("Disk check".into()),
            schedule: Some("1h".into()),
            execution_mode: Some(ExecutionMode::Isolated),
            ..RoutineDraft::default()
        })
        .await
        .unwrap()
        .0
        .id;

    clock.advance(HOUR);
    assert_eq!(rt.scheduler().tick().await.claimed, std::slice::from_ref(&id));
    rt.scheduler().settle().await;

    let runs = rt.routine_history(&id);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].outcome, RunOutcome::Ok);
    let session = runs[0].session_id.clone().expect("the run names its job's transcript");
    assert_ne!(session, "main", "a job runs in a session of its own");
    let transcript = rt.history(Some(&session)).unwrap().messages;
    let reply = transcript
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.text())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(reply.contains("The pelican folder is the largest."), "{transcript:?}");
    let asked = transcript.iter().find(|m| m.role == Role::User).map(|m| m.text());
    assert!(
        asked.is_some_and(|t| t.contains("\"Disk check\"") || t.contains(&id)),
        "the job's own prompt opens it"
    );

    // Deleted (by the user, or by job retention): the run stays, without a link to nothing.
    rt.submit(Op::DeleteSession {
        session_id: session.clone(),
    });
    let runs = rt.routine_history(&id);
    assert_eq!(runs.len(), 1, "the run's record stays");
    assert_eq!(runs[0].session_id, None, "{session} is gone");
    rt.shutdown().await;
}
