//! The heartbeat through the runtime, against the fake provider: the behaviour matrix of
//! seed 003 §6.1, preflight skips, transcript take-back, 24 h dedupe, the mailbox bridge to
//! the conversation, and the prompt cache staying intact. Runs are started with
//! `heartbeat_once` (no timers) except where the wake loop itself is under test.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use vigil_core::clock::ManualClock;
use vigil_core::protocol::{
    ActiveHours, Event, EventEnvelope, HealthStatus, HeartbeatSettings, HeartbeatSkip, HeartbeatStatus, LaneHealth, Op,
    ProviderKind, Scope, WakeReason,
};
use vigil_core::session::{MailboxEvent, MetaStore, PRIMARY_SESSION};
use vigil_core::system_events::SystemEventKind;
use vigil_core::wake::WakeOutcome;
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, RecordedRequest, Script, Step};

use super::support::*;

const START_MS: i64 = 1_700_000_000_000; // 2023-11-14 22:13:20 UTC
const HB_SESSION: &str = "heartbeat_session_main";

struct Rig {
    rt: Runtime,
    rx: Events,
    clock: ManualClock,
    fake: FakeLlm,
    dir: tempfile::TempDir,
}

async fn rig(steps: Vec<Step>) -> Rig {
    let fake = FakeLlm::start(Script::steps(steps)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(START_MS);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, ProviderKind::Openai), &clock)));
    Rig {
        rt,
        rx,
        clock,
        fake,
        dir,
    }
}

impl Rig {
    fn tasks(&self, text: &str) {
        std::fs::write(self.rt.workspace().join("HEARTBEAT.md"), text).unwrap();
    }

    fn events(&mut self) -> Vec<EventEnvelope> {
        let mut out = Vec::new();
        while let Ok(e) = self.rx.try_recv() {
            out.push(e);
        }
        out
    }

    fn mailbox(&self) -> Vec<MailboxEvent> {
        let meta = MetaStore::open(self.dir.path(), Arc::new(self.clock.clone())).unwrap();
        meta.load(PRIMARY_SESSION).unwrap().meta.mailbox
    }

    fn hb_transcript_size(&self) -> u64 {
        std::fs::metadata(self.dir.path().join("sessions").join(format!("{HB_SESSION}.jsonl")))
            .map(|m| m.len())
            .unwrap_or(0)
    }

    fn hb_updated_at(&self) -> i64 {
        let meta = MetaStore::open(self.dir.path(), Arc::new(self.clock.clone())).unwrap();
        meta.load(HB_SESSION).unwrap().meta.updated_at
    }

    /// One heartbeat run; returns its (status, skip reason) from the `heartbeat` event.
    async fn beat(&mut self, reason: WakeReason) -> (HeartbeatStatus, Option<HeartbeatSkip>) {
        self.rt.heartbeat_once(reason).await;
        let beats = heartbeats(&self.events());
        assert_eq!(beats.len(), 1, "one heartbeat event per run: {beats:?}");
        assert_eq!(beats[0].0, reason);
        (beats[0].1, beats[0].2)
    }

    async fn user(&mut self, text: &str) -> Vec<Event> {
        // Heartbeat turns end with `turn_finished` too; start from a clean channel.
        self.events();
        self.rt.submit(Op::UserMessage {
            text: text.into(),
            session_id: None,
            attachments: vec![],
        });
        until_finished(&mut self.rx).await
    }
}

fn heartbeats(events: &[EventEnvelope]) -> Vec<(WakeReason, HeartbeatStatus, Option<HeartbeatSkip>)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Heartbeat {
                reason,
                status,
                skip_reason,
                ..
            } => {
                assert_eq!(e.scope, Scope::Heartbeat);
                assert_eq!(e.session_id.as_deref(), Some(HB_SESSION));
                Some((*reason, *status, *skip_reason))
            }
            _ => None,
        })
        .collect()
}

fn notifications(events: &[EventEnvelope]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Notification { title, body, .. } => Some((title.clone(), body.clone())),
            _ => None,
        })
        .collect()
}

fn cards(events: &[EventEnvelope]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.event, Event::BackgroundUpdate { .. }))
        .count()
}

/// The heartbeat's own session, whose queue holds the notices of commands it started.
fn heartbeat_session() -> String {
    vigil_core::heartbeat::session_id(vigil_core::heartbeat::AGENT)
}

fn system_of(req: &RecordedRequest) -> Value {
    req.body["messages"][0].clone()
}

/// The last user message of a request, as JSON text.
fn last_user(req: &RecordedRequest) -> String {
    req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn every_row_of_the_behaviour_matrix() {
    let short = "All quiet, disk at 41 %.";
    let exactly_300 = "x".repeat(300);
    let over_300 = "y".repeat(301);
    let alert = "Disk usage is 93 % on /home.";
    let rows: Vec<(String, HeartbeatStatus, usize)> = vec![
        ("HEARTBEAT_OK".into(), HeartbeatStatus::OkToken, 0),
        (format!("HEARTBEAT_OK {short}"), HeartbeatStatus::OkToken, 0),
        (format!("{short} **HEARTBEAT_OK**"), HeartbeatStatus::OkToken, 0),
        (format!("HEARTBEAT_OK {exactly_300}"), HeartbeatStatus::OkToken, 0),
        (format!("HEARTBEAT_OK {over_300}"), HeartbeatStatus::Sent, 1),
        (alert.into(), HeartbeatStatus::Sent, 1),
        ("<b>HEARTBEAT_OK</b>".into(), HeartbeatStatus::OkToken, 0),
        (String::new(), HeartbeatStatus::OkEmpty, 0),
    ];
    for (reply, status, delivered) in rows {
        let mut r = rig(vec![Step::text(reply.clone())]).await;
        r.tasks("- if disk usage is over 80 %, tell me\n");
        assert_eq!(r.beat(WakeReason::Interval).await, (status, None), "{reply:?}");
        let events = r.events();
        let mailbox = r.mailbox();
        assert_eq!(mailbox.len(), delivered, "{reply:?}");
        assert_eq!(cards(&events), 0, "events were taken by beat()");
        if delivered == 1 {
            let expected = reply.trim_start_matches("HEARTBEAT_OK").trim();
            let text = mailbox[0].detail.clone().unwrap_or_else(|| mailbox[0].summary.clone());
            assert_eq!(text, expected, "delivered without the token");
            assert_eq!(mailbox[0].event_type, "heartbeat_result");
            assert_eq!(mailbox[0].source, HB_SESSION);
        }
        assert_eq!(r.fake.requests().len(), 1);
    }
}

#[tokio::test]
async fn a_delivery_is_one_card_one_notification_and_one_mailbox_event() {
    let mut r = rig(vec![Step::text("Disk usage is 93 % on /home.\nDelete old builds?")]).await;
    r.tasks("- if disk usage is over 80 %, tell me\n");
    r.rt.heartbeat_once(WakeReason::Interval).await;
    let events = r.events();
    assert_eq!(cards(&events), 1);
    assert_eq!(
        notifications(&events),
        [(
            "Vigil needs your attention".to_string(),
            "Disk usage is 93 % on /home.".to_string()
        )]
    );
    let card = events.iter().find_map(|e| match &e.event {
        Event::BackgroundUpdate { update, unread } => Some((e, update.clone(), *unread)),
        _ => None,
    });
    let (envelope, update, unread) = card.unwrap();
    assert_eq!(
        (envelope.session_id.as_deref(), envelope.scope),
        (Some("main"), Scope::Primary)
    );
    assert_eq!(unread, 1);
    assert_eq!(update.summary, "Disk usage is 93 % on /home.");
    assert_eq!(r.mailbox()[0].event_id, update.event_id);
    // The heartbeat's text never lands in the conversation's transcript.
    assert!(r.rt.messages(None).is_empty());
    let stats = r.rt.heartbeat_stats();
    assert_eq!((stats.runs, stats.sent, stats.suppressed), (1, 1, 0));
    // With notifications off: the card and the mailbox, no notification.
    let mut r = rig(vec![Step::text("Disk usage is 93 %.")]).await;
    r.tasks("- check disk\n");
    r.rt.set_heartbeat_settings(&HeartbeatSettings {
        notifications: false,
        ..Default::default()
    });
    r.rt.heartbeat_once(WakeReason::Manual).await;
    let events = r.events();
    assert_eq!((cards(&events), notifications(&events).len()), (1, 0));
}

#[tokio::test]
async fn an_ok_run_leaves_no_trace_in_the_heartbeat_transcript() {
    let mut r = rig(vec![
        Step::text("HEARTBEAT_OK"),
        Step::text("The backup is 3 days old."),
        Step::text("HEARTBEAT_OK"),
        Step::text("HEARTBEAT_OK"),
    ])
    .await;
    r.tasks("- check the backup age\n");
    assert_eq!(r.beat(WakeReason::Interval).await.0, HeartbeatStatus::OkToken);
    assert_eq!(r.hb_transcript_size(), 0, "pruned back to nothing");
    assert_eq!(r.beat(WakeReason::Interval).await.0, HeartbeatStatus::Sent);
    let size = r.hb_transcript_size();
    let updated = r.hb_updated_at();
    assert!(size > 0);
    r.clock.advance(Duration::from_secs(1800));
    assert_eq!(r.beat(WakeReason::Interval).await.0, HeartbeatStatus::OkToken);
    assert_eq!(r.hb_transcript_size(), size, "truncated to its size before the run");
    assert_eq!(r.hb_updated_at(), updated, "updated_at restored");
    // The next run sees the sent exchange but none of the ok ones, and no primary history.
    r.clock.advance(Duration::from_secs(1800));
    r.beat(WakeReason::Interval).await;
    let last = r.fake.requests().pop().unwrap();
    let messages = last.body["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        4,
        "system, poll, the sent reply, this poll: {messages:?}"
    );
    assert_eq!(messages[2]["content"], "The backup is 3 days old.");
}

#[tokio::test]
async fn the_same_alert_within_24_hours_is_skipped_as_duplicate() {
    let alert = "Your certificate expires in 3 days.";
    let mut r = rig(vec![Step::text(alert), Step::text(alert), Step::text(alert)]).await;
    r.tasks("- check certificate expiry\n");
    assert_eq!(r.beat(WakeReason::Interval).await.0, HeartbeatStatus::Sent);
    r.clock.advance(Duration::from_secs(23 * 3600));
    assert_eq!(
        r.beat(WakeReason::Interval).await,
        (HeartbeatStatus::Skipped, Some(HeartbeatSkip::Duplicate))
    );
    assert_eq!(r.mailbox().len(), 1);
    r.clock.advance(Duration::from_secs(2 * 3600));
    assert_eq!(
        r.beat(WakeReason::Interval).await.0,
        HeartbeatStatus::Sent,
        "25 h later it is news again"
    );
    assert_eq!(r.mailbox().len(), 2);
    assert_eq!(r.rt.heartbeat_stats().skipped["duplicate"], 1);
}

#[tokio::test]
async fn preflight_skips_in_order_and_only_interval_runs_skip_an_empty_file() {
    let mut r = rig(vec![Step::text("HEARTBEAT_OK")]).await;
    r.tasks("# HEARTBEAT.md\n\n# Keep this file empty (or with only comments) to skip heartbeat API calls.\n- [ ]\n<!-- later -->\n");
    let empty = (HeartbeatStatus::Skipped, Some(HeartbeatSkip::EmptyHeartbeatFile));
    assert_eq!(r.beat(WakeReason::Interval).await, empty);
    assert_eq!(r.fake.requests().len(), 0, "no model call for an empty file");
    for reason in [
        WakeReason::ExecEvent,
        WakeReason::Cron,
        WakeReason::Wake,
        WakeReason::Manual,
        WakeReason::Retry,
    ] {
        r.fake.set_script(Script::steps(vec![Step::text("HEARTBEAT_OK")]));
        assert_eq!(
            r.beat(reason).await,
            (HeartbeatStatus::OkToken, None),
            "{reason:?} always runs"
        );
    }
    // A missing file is as empty for the interval poll; anything else still runs.
    std::fs::remove_file(r.rt.workspace().join("HEARTBEAT.md")).unwrap();
    assert_eq!(r.beat(WakeReason::Interval).await, empty);
    r.fake.set_script(Script::steps(vec![Step::text("HEARTBEAT_OK")]));
    assert_eq!(r.beat(WakeReason::Manual).await.0, HeartbeatStatus::OkToken);
    // Disabled comes first, then quiet hours (start == end is never active).
    let requests = r.fake.requests().len();
    r.rt.set_heartbeat_settings(&HeartbeatSettings {
        enabled: false,
        ..Default::default()
    });
    let disabled = (HeartbeatStatus::Skipped, Some(HeartbeatSkip::Disabled));
    assert_eq!(r.beat(WakeReason::Manual).await, disabled);
    r.rt.set_heartbeat_settings(&HeartbeatSettings {
        active_hours: Some(ActiveHours {
            start: "22:00".into(),
            end: "23:00".into(),
            timezone: Some("UTC".into()),
        }),
        ..Default::default()
    });
    r.fake.set_script(Script::steps(vec![Step::text("HEARTBEAT_OK")]));
    assert_eq!(
        r.beat(WakeReason::Manual).await.0,
        HeartbeatStatus::OkToken,
        "22:13 UTC is inside"
    );
    r.clock.advance(Duration::from_secs(3600));
    let quiet = (HeartbeatStatus::Skipped, Some(HeartbeatSkip::QuietHours));
    assert_eq!(r.beat(WakeReason::Interval).await, quiet, "23:13 UTC is outside");
    assert_eq!(r.fake.requests().len(), requests + 1);
    let view = r.rt.heartbeat_view();
    assert_eq!(view.last_skip_reason, Some(HeartbeatSkip::QuietHours));
    assert_eq!(view.stats.skipped["empty-heartbeat-file"], 2);
    // Active hours hold back the interval poll only: a wake (Check now, a finished command,
    // a routine) is answered at its time.
    for reason in [WakeReason::Manual, WakeReason::ExecEvent] {
        r.fake.set_script(Script::steps(vec![Step::text("HEARTBEAT_OK")]));
        assert_eq!(
            r.beat(reason).await.0,
            HeartbeatStatus::OkToken,
            "{reason:?} in quiet hours"
        );
    }
    assert_eq!(r.fake.requests().len(), requests + 3);
}

/// Issue 20 item 1: an idle fresh install with a provider set up costs nothing. The real
/// scheduler loop on paused time, the wall clock moved along with it.
#[tokio::test(start_paused = true)]
async fn a_fresh_install_makes_no_model_call_in_a_day_and_its_template_is_written_once() {
    use vigil_core::workspace::heartbeat_file::{TEMPLATE, TEMPLATE_MARKER};
    let mut r = rig(vec![Step::text("HEARTBEAT_OK")]).await;
    let path = r.rt.workspace().join("HEARTBEAT.md");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        TEMPLATE,
        "written on the first start"
    );
    assert!(r.dir.path().join(TEMPLATE_MARKER).exists());
    assert!(
        !r.dir.path().join(TEMPLATE_MARKER).starts_with(r.rt.workspace()),
        "not in the workspace"
    );
    assert!(r.rt.heartbeat_checks().unwrap().effectively_empty);
    r.rt.start_background();
    let half_hour = Duration::from_secs(30 * 60);
    for _ in 0..48 {
        r.clock.advance(half_hour);
        tokio::time::sleep(half_hour).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let beats = heartbeats(&r.events());
    let requests = r.fake.requests().len();
    println!(
        "fresh install, 24 simulated hours: {} interval heartbeats, {requests} model requests",
        beats.len()
    );
    assert_eq!(beats.len(), 48, "one interval run every 30 minutes");
    assert!(
        beats.iter().all(|b| *b
            == (
                WakeReason::Interval,
                HeartbeatStatus::Skipped,
                Some(HeartbeatSkip::EmptyHeartbeatFile)
            )),
        "{beats:?}"
    );
    assert_eq!(requests, 0);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), TEMPLATE);
    r.rt.shutdown().await;

    let restart = |r: &Rig| {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        Runtime::new(r.dir.path(), Arc::new(r.clock.clone()), Arc::new(ChannelSink(tx))).unwrap()
    };
    // Emptied by the user: stays empty across a restart.
    std::fs::write(&path, "").unwrap();
    restart(&r).shutdown().await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
    // Deleted by the user: stays deleted, and costs nothing.
    std::fs::remove_file(&path).unwrap();
    let rt = restart(&r);
    rt.set_client(Some(client(config(&r.fake, ProviderKind::Openai), &r.clock)));
    assert!(!path.exists(), "not resurrected");
    rt.heartbeat_once(WakeReason::Interval).await;
    assert_eq!(
        rt.heartbeat_view().last_skip_reason,
        Some(HeartbeatSkip::EmptyHeartbeatFile)
    );
    assert_eq!(r.fake.requests().len(), 0);
    rt.shutdown().await;
}

#[tokio::test]
async fn a_broken_heartbeat_file_is_reported_never_silent() {
    let mut r = rig(vec![Step::text("HEARTBEAT_OK")]).await;
    std::fs::write(r.rt.workspace().join("HEARTBEAT.md"), b"\x89PNG\r\n\x1a\n\0\0\0").unwrap();
    r.rt.heartbeat_once(WakeReason::Interval).await;
    let events = r.events();
    let error = events.iter().find_map(|e| match &e.event {
        Event::Error { message, .. } => Some(message.clone()),
        _ => None,
    });
    assert!(error.unwrap().contains("not a text file"));
    let beat = events.iter().find_map(|e| match &e.event {
        Event::Heartbeat {
            status,
            skip_reason,
            detail,
            ..
        } => Some((*status, *skip_reason, detail.clone())),
        _ => None,
    });
    let (status, skip, detail) = beat.unwrap();
    assert_eq!(
        (status, skip),
        (HeartbeatStatus::Skipped, Some(HeartbeatSkip::HeartbeatFileError))
    );
    assert!(detail.unwrap().contains("HEARTBEAT.md"));
    // A manual run still happens, telling the model the file could not be read.
    assert_eq!(r.beat(WakeReason::Manual).await.0, HeartbeatStatus::OkToken);
    assert!(last_user(&r.fake.requests()[0]).contains("could not be read"));
    // Bad settings are named, and defaults are used where safe.
    let warnings = r.rt.set_heartbeat_settings(&HeartbeatSettings {
        every: "often".into(),
        active_hours: Some(ActiveHours {
            start: "09:00".into(),
            end: "17:00".into(),
            timezone: Some("Atlantis/Capital".into()),
        }),
        ..Default::default()
    });
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(r.rt.heartbeat_view().warnings, warnings);
    assert_eq!(r.rt.heartbeat_view().interval_ms, None);
}

#[tokio::test]
async fn a_busy_conversation_makes_the_heartbeat_wait() {
    let slow = Step::text("one two three four five six")
        .with_chunk_chars(3)
        .with_delay_ms(150);
    let mut r = rig(vec![slow, Step::text("HEARTBEAT_OK")]).await;
    r.tasks("- check disk\n");
    r.rt.submit(Op::UserMessage {
        text: "tell me a story".into(),
        session_id: None,
        attachments: vec![],
    });
    loop {
        let e = r.rx.recv().await.unwrap();
        if matches!(e.event, Event::TurnStarted { .. }) {
            break;
        }
    }
    assert!(r.rt.is_busy(PRIMARY_SESSION));
    assert_eq!(r.rt.heartbeat_once(WakeReason::Interval).await, WakeOutcome::Busy);
    let view = r.rt.heartbeat_view();
    assert_eq!(
        (view.last_reason, view.last_status, view.last_skip_reason),
        (
            Some(WakeReason::Interval),
            Some(HeartbeatStatus::Skipped),
            Some(HeartbeatSkip::RequestsInFlight)
        )
    );
    until_finished(&mut r.rx).await;
    assert_eq!(r.fake.requests().len(), 1, "the heartbeat did not call the model");
    r.events();
    assert_eq!(r.rt.heartbeat_once(WakeReason::Retry).await, WakeOutcome::Done);
    assert_eq!(
        heartbeats(&r.events()),
        [(WakeReason::Retry, HeartbeatStatus::OkToken, None)]
    );
    assert_eq!(r.rt.heartbeat_stats().skipped["requests-in-flight"], 1);
}

#[tokio::test]
async fn a_finished_command_is_relayed_and_never_suppressed() {
    let mut r = rig(vec![Step::text("All 142 tests passed. HEARTBEAT_OK")]).await;
    r.tasks("# nothing to check\n");
    // A command the heartbeat itself started: its notice stays with the heartbeat.
    r.rt.enqueue_system_event(
        &heartbeat_session(),
        "Exec completed (abc123, code 0) :: 142 passed",
        SystemEventKind::ExecFinished,
    );
    // Even an interval wake with an empty file runs when events are waiting.
    assert_eq!(r.beat(WakeReason::Interval).await.0, HeartbeatStatus::Sent);
    let req = &r.fake.requests()[0];
    let user = last_user(req);
    assert!(
        user.contains("An async command you ran earlier has completed."),
        "{user}"
    );
    assert!(user.contains("## System Events"), "{user}");
    assert!(
        user.contains("[SYSTEM] Exec completed (abc123, code 0) :: 142 passed"),
        "{user}"
    );
    assert!(r.rt.system_events().peek(&heartbeat_session()).is_empty(), "drained");
    let mailbox = r.mailbox();
    assert_eq!(mailbox[0].summary, "All 142 tests passed.");
    assert_eq!(mailbox[0].event_type, "exec_completed");
}

#[tokio::test]
async fn the_mailbox_reaches_the_next_turn_once_and_only_after_it_succeeds() {
    let mut r = rig(vec![
        Step::text("Disk usage is 93 % on /home."),
        Step::error(400, "invalid_request_error", "the request was refused"),
        Step::text("By the way, your disk is nearly full."),
        Step::text("Sure."),
    ])
    .await;
    r.tasks("- check disk\n");
    r.rt.heartbeat_once(WakeReason::Interval).await;
    let id = r.mailbox()[0].event_id.clone();
    r.events();
    r.user("hello").await;
    assert_eq!(r.mailbox().len(), 1, "a failed turn leaves the mailbox");
    let failed = &r.fake.requests()[1];
    assert!(last_user(failed).contains("## Background Updates"));
    r.user("hello again").await;
    let seen = last_user(&r.fake.requests()[2]);
    assert!(
        seen.contains("## Background Updates\\n- [heartbeat_result] Disk usage is 93 % on /home."),
        "{seen}"
    );
    assert!(r.mailbox().is_empty(), "acknowledged after success");
    let read: Vec<Vec<String>> = r
        .events()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::BackgroundUpdatesRead { event_ids } => Some(event_ids),
            _ => None,
        })
        .collect();
    assert_eq!(read, [vec![id]]);
    r.user("thanks").await;
    assert!(
        !last_user(&r.fake.requests()[3]).contains("Background Updates"),
        "exactly once"
    );
}

#[tokio::test]
async fn the_system_prompt_stays_byte_identical_around_a_background_update() {
    for kind in KINDS {
        let fake = FakeLlm::start(Script::steps(vec![
            Step::text("Hi!"),
            Step::text("Disk usage is 95 %, clean up soon."),
            Step::text("Noted."),
        ]))
        .await
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        // The interval poll alone (the daily reflection that may follow it is tested in
        // `reflection.rs`).
        rt.set_heartbeat_settings(&HeartbeatSettings {
            reflection_every_hours: 0,
            ..HeartbeatSettings::default()
        });
        std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- check disk\n").unwrap();
        let say = |text: &str| Op::UserMessage {
            text: text.into(),
            session_id: None,
            attachments: vec![],
        };
        rt.submit(say("hello there"));
        until_finished(&mut rx).await;
        rt.heartbeat_once(WakeReason::Interval).await;
        while rx.try_recv().is_ok() {}
        rt.submit(say("what's new?"));
        until_finished(&mut rx).await;
        let reqs = fake.requests();
        let system = |r: &RecordedRequest| match kind {
            ProviderKind::Anthropic => r.body["system"].clone(),
            ProviderKind::Openai => system_of(r),
        };
        assert_eq!(
            system(&reqs[0]),
            system(&reqs[2]),
            "{kind:?}: byte-identical system prompt"
        );
        assert!(system(&reqs[1]).to_string().contains("## Heartbeats"), "{kind:?}");
        assert!(!system(&reqs[0]).to_string().contains("Heartbeats"), "{kind:?}");
        assert!(
            !reqs[1].body["messages"].to_string().contains("hello there"),
            "never the primary history"
        );
        let update = last_user(&reqs[2]);
        assert!(update.contains("## Background Updates"), "{kind:?}: {update}");
        assert!(update.contains("Disk usage is 95 %"), "{kind:?}");
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn system_events_queued_for_a_conversation_reach_its_next_turn() {
    let mut r = rig(vec![Step::text("ok"), Step::text("ok")]).await;
    r.rt.enqueue_system_event(
        PRIMARY_SESSION,
        "Exec completed (x1, code 1) :: boom",
        SystemEventKind::ExecFinished,
    );
    r.rt.enqueue_system_event(
        PRIMARY_SESSION,
        "Exec completed (x1, code 1) :: boom",
        SystemEventKind::ExecFinished,
    );
    r.user("hi").await;
    let first = last_user(&r.fake.requests()[0]);
    assert_eq!(
        first.matches("[SYSTEM] Exec completed (x1, code 1)").count(),
        1,
        "{first}"
    );
    assert!(r.rt.system_events().peek(PRIMARY_SESSION).is_empty());
    r.user("again").await;
    assert!(!last_user(&r.fake.requests()[1]).contains("[SYSTEM]"));
}

#[tokio::test]
async fn the_heartbeat_uses_its_own_model_when_set() {
    let mut r = rig(vec![Step::text("HEARTBEAT_OK"), Step::text("hello")]).await;
    r.tasks("- check\n");
    r.rt.set_heartbeat_settings(&HeartbeatSettings {
        model: Some("small-model".into()),
        ..Default::default()
    });
    r.rt.heartbeat_once(WakeReason::Manual).await;
    r.user("hi").await;
    let reqs = r.fake.requests();
    assert_eq!(reqs[0].body["model"], "small-model");
    assert_eq!(reqs[1].body["model"], "fake-model");
}

#[tokio::test]
async fn ten_thousand_wakes_make_one_run_through_the_wake_loop() {
    let r = rig(vec![Step::text("HEARTBEAT_OK")]).await;
    r.tasks("- check\n");
    r.rt.start_background();
    for _ in 0..10_000 {
        r.rt.request_wake(WakeReason::Manual);
    }
    r.rt.idle().await;
    let stats = r.rt.heartbeat_stats();
    assert_eq!((stats.runs, stats.suppressed), (1, 1));
    assert_eq!((stats.wakes_requested, stats.wakes_coalesced), (10_000, 9_999));
    assert_eq!(r.fake.requests().len(), 1);
    r.rt.shutdown().await;
}

#[tokio::test]
async fn a_wake_pending_at_shutdown_runs_after_the_restart() {
    let r = rig(vec![Step::text("Build finished: 2 warnings.")]).await;
    r.tasks("- check\n");
    r.rt.start_background();
    r.rt.request_wake(WakeReason::ExecEvent);
    r.rt.shutdown().await; // well inside the 250 ms window
    assert_eq!(r.fake.requests().len(), 0);
    assert!(r.dir.path().join("wake/pending.json").exists());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let rt = Runtime::new(r.dir.path(), Arc::new(r.clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&r.fake, ProviderKind::Openai), &r.clock)));
    rt.start_background();
    rt.idle().await;
    let mut beats = Vec::new();
    while let Ok(e) = rx.try_recv() {
        beats.push(e);
    }
    assert_eq!(
        heartbeats(&beats),
        [(WakeReason::ExecEvent, HeartbeatStatus::Sent, None)]
    );
    rt.shutdown().await;
}

#[test]
fn outside_a_tokio_runtime_the_heartbeat_refuses_to_start_instead_of_panicking() {
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::new(
        dir.path(),
        Arc::new(ManualClock::new(START_MS)),
        Arc::new(vigil_core::events::CollectingSink::default()),
    )
    .unwrap();
    assert!(!rt.start_background());
    rt.request_wake(WakeReason::Manual); // dropped with a log line, not a panic
}

#[tokio::test]
async fn paused_background_activity_skips_every_run_and_keeps_what_it_would_have_read() {
    let mut r = rig(vec![Step::text("Disk is at 91 %.")]).await;
    r.tasks("- tell me when disk usage is over 80 %\n");
    r.rt.enqueue_system_event(
        &heartbeat_session(),
        "Exec completed (abc123, code 0) :: done",
        SystemEventKind::ExecFinished,
    );
    assert!(!r.rt.is_paused());
    r.rt.set_paused(true);
    r.rt.set_paused(true);
    let paused: Vec<Event> = r.events().into_iter().map(|e| e.event).collect();
    assert_eq!(
        paused,
        [Event::BackgroundPaused { paused: true }],
        "one event per change"
    );
    let skipped = (HeartbeatStatus::Skipped, Some(HeartbeatSkip::Paused));
    for reason in [WakeReason::Interval, WakeReason::ExecEvent, WakeReason::Manual] {
        assert_eq!(r.beat(reason).await, skipped, "{reason:?} is skipped while paused");
    }
    assert_eq!(r.fake.requests().len(), 0, "no model call while paused");
    assert_eq!(
        r.rt.system_events().peek(&heartbeat_session()).len(),
        1,
        "the exec event waits"
    );
    let view = r.rt.heartbeat_view();
    assert!(view.paused);
    assert_eq!(view.last_skip_reason, Some(HeartbeatSkip::Paused));
    assert!(view.last_detail.unwrap().contains("paused"));
    assert_eq!(view.stats.skipped["paused"], 3);

    r.rt.set_paused(false);
    assert!(!r.rt.heartbeat_view().paused);
    let resumed = r.events();
    assert!(matches!(resumed[0].event, Event::BackgroundPaused { paused: false }));
    assert_eq!(r.beat(WakeReason::Interval).await.0, HeartbeatStatus::Sent);
    assert!(last_user(&r.fake.requests()[0]).contains("Exec completed (abc123, code 0) :: done"));
}

#[tokio::test]
async fn the_health_check_shows_the_running_turn_and_counts_deliveries_and_drains() {
    let slow = Step::text("one two three four five six")
        .with_chunk_chars(3)
        .with_delay_ms(150);
    let mut r = rig(vec![Step::text("Disk usage is 93 % on /home."), slow]).await;
    r.tasks("- check disk\n");
    let h = r.rt.health().await;
    assert_eq!(h.status, HealthStatus::Healthy);
    assert!(h.lanes.is_empty(), "{h:?}");
    assert!(!h.heartbeat.handler_registered, "background work has not started");
    assert_eq!((h.mailbox.deposited, h.mailbox.waiting, h.mailbox.drained), (0, 0, 0));

    assert_eq!(r.beat(WakeReason::Interval).await.0, HeartbeatStatus::Sent);
    let h = r.rt.health().await;
    assert_eq!(
        (h.mailbox.deposited, h.mailbox.waiting, h.heartbeat.delivered),
        (1, 1, 1)
    );

    r.rt.submit(Op::UserMessage {
        text: "tell me a story".into(),
        session_id: None,
        attachments: vec![],
    });
    loop {
        if matches!(r.rx.recv().await.unwrap().event, Event::TurnStarted { .. }) {
            break;
        }
    }
    let h = r.rt.health().await;
    assert_eq!(
        h.lanes,
        [LaneHealth {
            session_id: PRIMARY_SESSION.into(),
            scope: Scope::Primary,
            queued: 0
        }]
    );
    assert_eq!(r.rt.heartbeat_once(WakeReason::Interval).await, WakeOutcome::Busy);
    until_finished(&mut r.rx).await;

    r.clock.advance(Duration::from_secs(90));
    let h = r.rt.health().await;
    assert!(h.lanes.is_empty(), "{h:?}");
    assert_eq!((h.mailbox.deposited, h.mailbox.waiting, h.mailbox.drained), (1, 0, 1));
    assert_eq!(h.heartbeat.skipped_busy, 1);
    assert!(h.locks.acquired > 0 && h.locks.held == 0, "{:?}", h.locks);
    assert_eq!((h.started_at, h.uptime_ms), (START_MS, 90_000));
    assert!(h.alerts.is_empty(), "{:?}", h.alerts);

    r.rt.shutdown().await;
    assert_eq!(r.rt.health().await.status, HealthStatus::ShuttingDown);
}
