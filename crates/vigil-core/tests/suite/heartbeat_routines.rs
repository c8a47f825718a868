//! Issue 20 items 2 and 6 through the runtime: a routine due in a heartbeat run is sent with
//! seed 002's cron prompt and its reply is recorded as acknowledged or delivered (never
//! swallowed by the poll's 300-character rule); active hours hold back the interval poll
//! only, so a reminder due at night fires at its time.

use std::sync::Arc;
use std::time::Duration;

use vigil_core::clock::ManualClock;
use vigil_core::heartbeat::prompts::cron_prompt;
use vigil_core::protocol::{
    ActiveHours, Event, EventEnvelope, ExecutionMode, HeartbeatSettings, HeartbeatSkip, HeartbeatStatus, ProviderKind,
    RoutineDraft, RunOutcome, WakeMode, WakeReason,
};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, RecordedRequest, Script, Step};

use super::support::*;

const START_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const HOUR: i64 = 3_600_000;

async fn rig(script: Script) -> (Runtime, Events, ManualClock, FakeLlm, tempfile::TempDir) {
    let fake = FakeLlm::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(START_MS);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, ProviderKind::Openai), &clock)));
    (rt, rx, clock, fake, dir)
}

/// The text of the last user message of a request (its context blocks and its words).
fn last_user_text(req: &RecordedRequest) -> String {
    let message = req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()
        .clone();
    match &message["content"] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => other.to_string(),
    }
}

fn system_text(req: &RecordedRequest) -> String {
    req.body["messages"][0]["content"].to_string()
}

fn drain(rx: &mut Events) -> Vec<EventEnvelope> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

fn notification_bodies(events: &[EventEnvelope]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Notification { body, .. } => Some(body.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_due_routine_gets_the_cron_prompt_and_its_history_says_acknowledged_or_delivered() {
    let short = "Time for a glass of water.";
    let script = Script::steps(vec![
        Step::text("HEARTBEAT_OK"),
        // Short enough that the poll's ackMaxChars rule would call it an acknowledgement.
        Step::text(format!("{short} HEARTBEAT_OK")),
    ]);
    let (rt, mut rx, clock, fake, _dir) = rig(script).await;
    rt.add_routine(RoutineDraft {
        title: Some("Drink water".into()),
        description: Some("Remind the user to drink water.".into()),
        schedule: Some("1h".into()),
        execution_mode: Some(ExecutionMode::Inline),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();
    let id = rt.routines().routines[0].id.clone();
    for hour in 1..=2 {
        clock.advance(Duration::from_secs(3600));
        assert_eq!(
            rt.scheduler().tick().await.claimed,
            std::slice::from_ref(&id),
            "hour {hour}"
        );
        rt.heartbeat_once(WakeReason::Cron).await;
        rt.scheduler().settle().await;
    }
    let requests = fake.requests();
    assert_eq!(requests.len(), 2);
    let expected = cron_prompt("Drink water: Remind the user to drink water.");
    assert_eq!(
        expected,
        "A scheduled reminder has been triggered. The reminder content is:\n\nDrink water: Remind the user to drink water.\n\nPlease relay this reminder to the user in a helpful and friendly way."
    );
    for req in &requests {
        let text = last_user_text(req);
        assert!(text.ends_with(&expected), "the cron prompt is the message: {text}");
        assert!(!text.contains("Read HEARTBEAT.md if it exists"), "not the poll: {text}");
    }
    let runs = rt.routine_history(&id);
    let outcomes: Vec<RunOutcome> = runs.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [RunOutcome::Acknowledged, RunOutcome::Ok]);
    assert_eq!(runs[0].summary, None);
    assert_eq!(runs[1].summary.as_deref(), Some(short));
    assert_eq!(
        notification_bodies(&drain(&mut rx)),
        [short],
        "only the real result is told"
    );
    // Both count as done: the routine moved on to its next hour each time.
    let view = rt.routines().routines[0].clone();
    assert_eq!(view.next_run_at, Some(START_MS + 3 * HOUR));
}

/// The interval poll that carries a routine still asks for the checklist.
#[tokio::test]
async fn an_interval_run_with_a_due_routine_sends_the_cron_prompt_then_the_poll() {
    let (rt, _rx, clock, fake, _dir) = rig(Script::steps(vec![Step::text("HEARTBEAT_OK")])).await;
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- check the disk\n").unwrap();
    rt.add_routine(RoutineDraft {
        title: Some("Stretch".into()),
        schedule: Some("1h".into()),
        execution_mode: Some(ExecutionMode::Inline),
        wake_mode: Some(WakeMode::NextHeartbeat),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();
    clock.advance(Duration::from_secs(3600));
    rt.scheduler().tick().await;
    rt.heartbeat_once(WakeReason::Interval).await;
    rt.scheduler().settle().await;
    let text = last_user_text(&fake.requests()[0]);
    let cron = text.find(&cron_prompt("Stretch")).expect("the cron prompt");
    let poll = text.find("Read HEARTBEAT.md if it exists").expect("and the poll");
    assert!(cron < poll, "{text}");
    assert_eq!(
        rt.routine_history(&rt.routines().routines[0].id)[0].outcome,
        RunOutcome::Acknowledged
    );
}

/// Issue 20 item 6: active hours 08:00–22:00; a reminder at 23:00 fires at 23:00, whether it
/// needs the model (a job) or not (a `time_reminder`); an inline routine that was waiting for
/// the next heartbeat when the window closed runs as a job instead of waiting till morning.
#[tokio::test]
async fn outside_active_hours_a_reminder_at_23_00_fires_at_23_00() {
    let pills = "Take your evening pills now.";
    // The first job is the stretch at 22:00, the second the pills at 23:00.
    let (rt, mut rx, clock, fake, _dir) = rig(Script::steps(vec![Step::text("Stretched."), Step::text(pills)])).await;
    assert!(rt
        .set_heartbeat_settings(&HeartbeatSettings {
            active_hours: Some(ActiveHours {
                start: "08:00".into(),
                end: "22:00".into(),
                timezone: Some("UTC".into()),
            }),
            ..Default::default()
        })
        .is_empty());
    let at_23 = |title: &str, kind: Option<&str>| RoutineDraft {
        title: Some(title.into()),
        description: Some(format!("Remind the user: {title}")),
        schedule: Some("0 23 * * *".into()),
        timezone: Some("UTC".into()),
        execution_mode: Some(ExecutionMode::Inline),
        kind: kind.map(String::from),
        ..RoutineDraft::default()
    };
    rt.add_routine(at_23("Pills", None)).await.unwrap();
    rt.add_routine(at_23("Bedtime", Some("time_reminder"))).await.unwrap();
    // An inline routine at 21:30 that waits for the next interval heartbeat.
    rt.add_routine(RoutineDraft {
        title: Some("Stretch".into()),
        schedule: Some("30 21 * * *".into()),
        timezone: Some("UTC".into()),
        execution_mode: Some(ExecutionMode::Inline),
        wake_mode: Some(WakeMode::NextHeartbeat),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();

    clock.advance(Duration::from_millis((21 * HOUR + 30 * 60_000) as u64));
    assert_eq!(rt.scheduler().tick().await.claimed, ["stretch"]);
    assert_eq!(rt.scheduler().inline_waiting().len(), 1, "waits for the next heartbeat");
    // The next interval run comes at 22:00, when the window has closed.
    clock.advance(Duration::from_secs(30 * 60));
    rt.heartbeat_once(WakeReason::Interval).await;
    assert_eq!(
        rt.heartbeat_view().last_skip_reason,
        Some(HeartbeatSkip::QuietHours),
        "the poll itself keeps quiet"
    );
    rt.scheduler().settle().await;
    assert!(rt.scheduler().inline_waiting().is_empty());
    let stretch = rt.routine_history("stretch");
    assert_eq!(stretch.len(), 1);
    assert_eq!(
        (stretch[0].outcome, stretch[0].finished_at),
        (RunOutcome::Ok, START_MS + 22 * HOUR)
    );
    assert!(stretch[0].session_id.as_deref().unwrap().starts_with("job_stretch_"));

    clock.advance(Duration::from_secs(3600) - Duration::from_secs(1));
    assert!(rt.scheduler().tick().await.claimed.is_empty(), "22:59:59");
    clock.advance(Duration::from_secs(1));
    let mut claimed = rt.scheduler().tick().await.claimed;
    claimed.sort();
    assert_eq!(claimed, ["bedtime", "pills"]);
    assert!(
        rt.scheduler().inline_waiting().is_empty(),
        "nothing waits for the morning"
    );
    rt.scheduler().settle().await;
    let at_23_ms = START_MS + 23 * HOUR;
    for id in ["pills", "bedtime"] {
        let runs = rt.routine_history(id);
        assert_eq!(runs.len(), 1, "{id}");
        assert_eq!(
            (runs[0].outcome, runs[0].finished_at),
            (RunOutcome::Ok, at_23_ms),
            "{id}"
        );
    }
    assert!(
        rt.routine_history("bedtime")[0].deterministic,
        "no model for a time reminder"
    );
    let pills_run = &rt.routine_history("pills")[0];
    assert!(
        pills_run.session_id.as_deref().unwrap().starts_with("job_pills_"),
        "a job"
    );
    assert_eq!(
        fake.requests().len(),
        2,
        "the stretch and the pills jobs, nothing for bedtime"
    );
    assert!(system_text(&fake.requests()[1]).contains("## Scheduled job"));
    let told = notification_bodies(&drain(&mut rx));
    assert!(told.iter().any(|b| b == pills), "{told:?}");
    assert!(told.iter().any(|b| b.starts_with("Reminder: Bedtime")), "{told:?}");
    assert!(
        rt.heartbeat_view().last_status == Some(HeartbeatStatus::Skipped),
        "no heartbeat turn ran at night"
    );
}
