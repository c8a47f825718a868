//! Issue 20 item 7 through the runtime: the heartbeat waits for a turn in *any* conversation,
//! a provider error is tried again a few times and then recorded failed, a taken run lock is
//! a skip (`lock`) and not a failure, and the health check counts wakes by reason, times the
//! runs, and says when wake requests pile up. (The back-off timings themselves are asserted
//! on paused time in `wake_tests.rs`.)

use std::sync::Arc;
use std::time::Duration;

use vigil_core::clock::ManualClock;
use vigil_core::protocol::{Event, EventEnvelope, HeartbeatSkip, HeartbeatStatus, Op, ProviderKind, WakeReason};
use vigil_core::wake::{WakeConfig, WakeOutcome};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Faults, Script, Step};

use super::support::*;

const HB_SESSION: &str = "heartbeat_session_main";

/// How long the heartbeat's reply is held back where its run is timed.
const HEARTBEAT_REPLY_MS: u64 = 400;

/// A runtime against `script` whose client does not retry by itself (the heartbeat's own
/// retries are under test), with a checklist in `HEARTBEAT.md`.
async fn rig(script: Script) -> (Runtime, Events, FakeLlm, tempfile::TempDir) {
    let fake = FakeLlm::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(1_700_000_000_000);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    let mut cfg = config(&fake, ProviderKind::Openai);
    cfg.max_retries = 0;
    rt.set_client(Some(client(cfg, &clock)));
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- check the disk\n").unwrap();
    (rt, rx, fake, dir)
}

/// `heartbeat` events as (reason, status, skip, detail, retrying).
type Beat = (WakeReason, HeartbeatStatus, Option<HeartbeatSkip>, Option<String>, bool);

fn beat(e: &EventEnvelope) -> Option<Beat> {
    match &e.event {
        Event::Heartbeat {
            reason,
            status,
            skip_reason,
            detail,
            retrying,
            ..
        } => Some((*reason, *status, *skip_reason, detail.clone(), *retrying)),
        _ => None,
    }
}

/// The next `n` heartbeat events (20 s at most).
async fn beats(rx: &mut Events, n: usize) -> Vec<Beat> {
    let mut out = Vec::new();
    while out.len() < n {
        let e = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("heartbeat events in time")
            .expect("runtime alive");
        out.extend(beat(&e));
    }
    out
}

async fn turn_started(rx: &mut Events) {
    next_matching(rx, |e| matches!(e, Event::TurnStarted { .. }).then_some(())).await;
}

/// A new conversation titled `title`; returns its id.
async fn conversation(rt: &Runtime, rx: &mut Events, title: &str) -> String {
    rt.submit(Op::CreateSession {
        title: Some(title.into()),
    });
    next_matching(rx, |e| match e {
        Event::SessionsChanged { sessions } => sessions.iter().find(|s| s.title == title).map(|s| s.id.clone()),
        _ => None,
    })
    .await
}

#[tokio::test]
async fn a_turn_in_a_conversation_other_than_main_holds_the_heartbeat_back() {
    let slow = Step::text("one two three four five six seven eight")
        .with_chunk_chars(3)
        .with_delay_ms(150);
    let (rt, mut rx, fake, _dir) = rig(Script::steps(vec![slow, Step::text("HEARTBEAT_OK")])).await;
    let other = conversation(&rt, &mut rx, "Taxes").await;
    assert_ne!(other, vigil_core::session::PRIMARY_SESSION);
    rt.submit(Op::UserMessage {
        text: "tell me a long story".into(),
        session_id: Some(other.clone()),
        attachments: vec![],
    });
    turn_started(&mut rx).await;
    assert!(rt.is_busy(&other) && !rt.is_busy(vigil_core::session::PRIMARY_SESSION));
    assert_eq!(rt.heartbeat_once(WakeReason::Interval).await, WakeOutcome::Busy);
    let view = rt.heartbeat_view();
    assert_eq!(
        (view.last_status, view.last_skip_reason),
        (Some(HeartbeatStatus::Skipped), Some(HeartbeatSkip::RequestsInFlight))
    );
    until_finished(&mut rx).await;
    assert_eq!(
        fake.requests().len(),
        1,
        "only the conversation's turn reached the model"
    );
    assert_eq!(rt.heartbeat_once(WakeReason::Retry).await, WakeOutcome::Done);
    assert_eq!(rt.heartbeat_view().last_status, Some(HeartbeatStatus::OkToken));
    assert_eq!(fake.requests().len(), 2);
}

#[tokio::test]
async fn a_provider_500_on_the_heartbeat_is_retried_three_times_then_recorded_failed() {
    let script = Script::steps(vec![]).with_fallback(Step::error(500, "server_error", "the model is on fire"));
    let (rt, mut rx, fake, _dir) = rig(script).await;
    assert!(rt.start_background_with(WakeConfig {
        coalesce: Duration::from_millis(10),
        failure_retry_delay: Duration::from_millis(50),
        max_retry_delay: Duration::from_millis(100),
        ..WakeConfig::default()
    }));
    rt.request_wake(WakeReason::Manual);
    let got = beats(&mut rx, 4).await;
    assert_eq!(fake.requests().len(), 4, "the first try and three retries");
    let reasons: Vec<WakeReason> = got.iter().map(|b| b.0).collect();
    assert_eq!(
        reasons,
        [
            WakeReason::Manual,
            WakeReason::Retry,
            WakeReason::Retry,
            WakeReason::Retry
        ]
    );
    for (i, b) in got.iter().enumerate() {
        assert_eq!(b.1, HeartbeatStatus::Failed, "{b:?}");
        let detail = b.3.clone().unwrap_or_default();
        assert!(detail.contains("the model is on fire"), "{detail}");
        if i < 3 {
            assert!(b.4, "try {i} is retried: {b:?}");
            assert!(detail.contains(&format!("retry {} of 3", i + 1)), "{detail}");
        } else {
            assert!(!b.4, "the last try is final: {b:?}");
            assert!(!detail.contains("trying again"), "{detail}");
        }
    }
    // Nothing more: three retries, not a loop.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fake.requests().len(), 4);
    let stats = rt.heartbeat_stats();
    assert_eq!((stats.runs, stats.failed), (4, 1), "one failed run, four tries");
    let health = rt.health().await;
    assert_eq!(health.heartbeat.retried_failed, 3);
    assert_eq!(health.heartbeat.requests_waiting, 0, "the failure answered the request");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_heartbeat_that_cannot_take_its_lock_is_skipped_with_reason_lock_not_failed() {
    let (rt, mut rx, fake, dir) = rig(Script::steps(vec![Step::text("HEARTBEAT_OK")])).await;
    // Another process on the same data folder holds the heartbeat's run lock.
    let sessions = dir.path().join("sessions");
    let held = vigil_core::heartbeat::run_lock::try_take(&sessions, HB_SESSION)
        .unwrap()
        .expect("free");
    assert_eq!(rt.heartbeat_once(WakeReason::Manual).await, WakeOutcome::Busy);
    let got = beats(&mut rx, 1).await;
    assert_eq!(
        (got[0].1, got[0].2, got[0].4),
        (HeartbeatStatus::Skipped, Some(HeartbeatSkip::Lock), true)
    );
    assert_eq!(fake.requests().len(), 0);
    let stats = rt.heartbeat_stats();
    assert_eq!((stats.failed, stats.skipped["lock"]), (0, 1));
    assert_eq!(rt.health().await.heartbeat.skipped_lock, 1);
    drop(held);
    assert_eq!(rt.heartbeat_once(WakeReason::Retry).await, WakeOutcome::Done);
    assert_eq!(beats(&mut rx, 1).await[0].1, HeartbeatStatus::OkToken);
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn the_health_check_counts_wakes_by_reason_times_runs_and_says_when_they_pile_up() {
    let slow = Step::text("one two three four five six seven eight nine ten")
        .with_chunk_chars(2)
        .with_delay_ms(100);
    // The heartbeat's own reply goes silent for a while mid-stream: its run takes at
    // least that long, and the health check must say so.
    let stall = Faults {
        stall_after_events: Some(1),
        stall_ms: Some(HEARTBEAT_REPLY_MS),
        ..Faults::default()
    };
    let script = Script::steps(vec![slow]).with_fallback(Step::text("HEARTBEAT_OK").with_faults(stall));
    let (rt, mut rx, _fake, _dir) = rig(script).await;
    assert!(rt.start_background_with(WakeConfig {
        coalesce: Duration::from_millis(10),
        ..WakeConfig::default()
    }));
    rt.submit(user("tell me a story"));
    turn_started(&mut rx).await;
    // Finished commands and a Check now while the conversation works: each merges into the
    // one pending wake, but none is served yet.
    for _ in 0..10 {
        rt.request_wake(WakeReason::ExecEvent);
    }
    rt.request_wake(WakeReason::Manual);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let health = rt.health().await;
    assert_eq!(health.heartbeat.pending_wakes, 1);
    assert_eq!(health.heartbeat.requests_waiting, 11);
    assert!(
        health
            .alerts
            .iter()
            .any(|a| a.starts_with("11 heartbeat wakes are waiting (more than 10)")),
        "{:?}",
        health.alerts
    );
    let by_reason = &health.heartbeat.wakes_by_reason;
    assert_eq!((by_reason["exec-event"], by_reason["manual"]), (10, 1));
    assert!(health.heartbeat.retried_busy >= 1, "held back and retried");
    // The turn ends; the retry runs and serves them all.
    until_finished(&mut rx).await;
    let mut done = Vec::new();
    while done.is_empty() {
        done = beats(&mut rx, 1)
            .await
            .into_iter()
            .filter(|b| b.1 == HeartbeatStatus::OkToken)
            .collect();
    }
    let health = rt.health().await;
    assert_eq!(health.heartbeat.requests_waiting, 0);
    assert!(health.alerts.is_empty(), "{:?}", health.alerts);
    assert_eq!(health.heartbeat.run_count, 1);
    let hb = &health.heartbeat;
    assert!(
        hb.run_ms_last >= HEARTBEAT_REPLY_MS,
        "the run took at least the {HEARTBEAT_REPLY_MS} ms its reply was held back: {hb:?}"
    );
    assert_eq!(
        (hb.run_ms_total, hb.run_ms_max),
        (hb.run_ms_last, hb.run_ms_last),
        "one run"
    );
    rt.shutdown().await;
}
