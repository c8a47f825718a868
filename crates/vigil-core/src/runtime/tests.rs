//! The runtime as a whole: a turn that panics, the desktop preferences, shutdown.

use super::*;
use crate::clock::ManualClock;
use crate::events::CollectingSink;
use crate::session::PRIMARY_SESSION;
use vigil_protocol::{Op, StopReason};

/// A message that makes its turn panic (see `run_turn`).
pub(super) const PLANTED_BUG: &str = "<panic in this turn>";

#[tokio::test]
async fn a_turn_that_panics_is_reported_and_frees_its_conversation() {
    let dir = tempfile::tempdir().unwrap();
    let sink = CollectingSink::default();
    let rt = Runtime::new(
        dir.path(),
        Arc::new(ManualClock::new(1_700_000_000_000)),
        Arc::new(sink.clone()),
    )
    .unwrap();
    let say = |text: &str| Op::UserMessage {
        text: text.into(),
        session_id: None,
        attachments: vec![],
    };
    rt.submit(say(PLANTED_BUG));
    rt.idle().await;
    let events: Vec<Event> = sink.take().into_iter().map(|e| e.event).collect();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Error { kind: ErrorKind::Internal, message }
            if message.contains("a planted bug") && message.contains("send your message again"))),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(
            e,
            Event::TurnFinished {
                stop_reason: StopReason::Error,
                ..
            }
        )),
        "{events:?}"
    );
    assert!(!rt.is_busy(PRIMARY_SESSION));
    // The next message gets a turn of its own instead of queueing behind the dead one.
    rt.submit(say("hello again"));
    rt.idle().await;
    let events: Vec<Event> = sink.take().into_iter().map(|e| e.event).collect();
    assert!(
        !events.iter().any(|e| matches!(e, Event::MessageQueued { .. })),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, Event::TurnStarted { .. })),
        "{events:?}"
    );
}

#[test]
fn the_saved_desktop_preferences_set_how_vigil_works_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("settings.json"),
        r#"{"desktop": {"continuation_limit": 0, "approval_timeout_secs": 90, "keep_awake": false}}"#,
    )
    .unwrap();
    let rt = Runtime::new(
        dir.path(),
        Arc::new(ManualClock::new(1_700_000_000_000)),
        Arc::new(CollectingSink::default()),
    )
    .unwrap();
    assert_eq!(
        rt.inner.unattended.autonomy.approval_timeout(),
        std::time::Duration::from_secs(90)
    );
    assert_eq!(rt.inner.unattended.autonomy.limit(), 0, "continuing on its own is off");
    assert_eq!(rt.keep_awake_status(), crate::inhibit::InhibitorStatus::Off);
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_waiting_for_a_stuck_task_after_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::new(
        dir.path(),
        Arc::new(ManualClock::new(1_700_000_000_000)),
        Arc::new(CollectingSink::default()),
    )
    .unwrap();
    // A task that ignores cancellation: shutdown must not hang on it (Quit, SIGTERM).
    rt.inner.life.tasks.spawn(std::future::pending::<()>());
    let started = tokio::time::Instant::now();
    let done = tokio::time::timeout(SHUTDOWN_GRACE * 2, rt.shutdown()).await;
    assert!(done.is_ok(), "shutdown hung on the stuck task");
    assert_eq!(started.elapsed(), SHUTDOWN_GRACE);
}
