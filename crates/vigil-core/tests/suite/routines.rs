//! Routines through the runtime against the fake provider: the agent registers a routine
//! in a chat and it fires as a job whose result reaches the notification and the chat;
//! inline routines due together share one heartbeat turn; a user turn, a heartbeat and a
//! job run at the same time without waiting for each other.

use std::sync::Arc;
use std::time::Duration;

use vigil_core::clock::ManualClock;
use vigil_core::protocol::{
    Event, EventEnvelope, ExecutionMode, NotificationKind, Op, ProviderKind, RoutineDraft, RoutineSource, WakeReason,
};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

const START_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

pub(super) async fn rig(script: Script) -> (Runtime, Events, ManualClock, FakeLlm, tempfile::TempDir) {
    let fake = FakeLlm::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(START_MS);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, ProviderKind::Openai), &clock)));
    (rt, rx, clock, fake, dir)
}

/// [`rig`] whose every reply is `text` streamed 3 characters per `delay_ms`, with the
/// background work started.
async fn slow_rig(text: &str, delay_ms: u64) -> (Runtime, Events, ManualClock, FakeLlm, tempfile::TempDir) {
    let slow = Step::text(text).with_chunk_chars(3).with_delay_ms(delay_ms);
    let rig = rig(Script::steps(vec![]).with_fallback(slow)).await;
    rig.0.start_background();
    rig
}

/// An isolated routine due every hour, first at `START_MS` + 1 h.
pub(super) async fn add_hourly_job(rt: &Runtime, title: &str) {
    rt.add_routine(RoutineDraft {
        title: Some(title.into()),
        schedule: Some("1h".into()),
        execution_mode: Some(ExecutionMode::Isolated),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();
}

/// Events until `done` says stop (10 s at most).
pub(super) async fn until(rx: &mut Events, mut done: impl FnMut(&[EventEnvelope]) -> bool) -> Vec<EventEnvelope> {
    let mut out = Vec::new();
    while !done(&out) {
        let e = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("events in time")
            .expect("runtime alive");
        out.push(e);
    }
    out
}

fn request_text(fake: &FakeLlm, i: usize) -> String {
    fake.requests()[i].body.to_string()
}

#[tokio::test]
async fn a_routine_registered_in_chat_fires_and_its_result_reaches_the_notification_and_the_chat() {
    let due = "2026-01-01T00:00:03+00:00";
    let (rt, mut rx, clock, fake, _dir) = rig(Script::steps(vec![
        Step::tool_call(
            "c1",
            "routine_add",
            serde_json::json!({"title": "Stretch", "description": "Remind me to stand up and stretch.",
                "next_run_at": due, "execution_mode": "isolated", "timezone": "Europe/Berlin"}),
        ),
        Step::text("I'll remind you in a few seconds."),
        Step::text("Time to stand up and stretch!"),
        Step::text("You stretched, good."),
    ]))
    .await;
    rt.start_background();
    rt.submit(Op::UserMessage {
        text: "remind me to stretch in 3 seconds".into(),
        session_id: None,
        attachments: vec![],
    });
    let events = until_finished(&mut rx).await;
    let added = events.iter().any(|e| {
        matches!(e, Event::ToolCallFinished { name, is_error: false, content, .. }
            if name == "routine_add" && content.contains("stretch"))
    });
    assert!(added, "{events:?}");
    let view = rt.routines();
    assert_eq!(view.routines.len(), 1);
    assert_eq!(view.routines[0].timezone, "Europe/Berlin");
    assert_eq!(view.routines[0].execution_mode, ExecutionMode::Isolated);
    assert_eq!(format!("{:?}", view.routines[0].source), "Chat");

    clock.advance(Duration::from_secs(4));
    rt.scheduler().tick().await;
    rt.scheduler().settle().await;
    let events = until(&mut rx, |seen| {
        seen.iter().any(|e| matches!(e.event, Event::Notification { .. }))
    })
    .await;
    let card = events.iter().find_map(|e| match &e.event {
        Event::BackgroundUpdate { update, .. } => Some(update.clone()),
        _ => None,
    });
    let card = card.expect("a background update card");
    assert_eq!(card.event_type, "job_completed");
    assert_eq!(card.summary, "Time to stand up and stretch!");
    assert!(card.source.starts_with("job_stretch_"), "{}", card.source);
    let note = events.iter().find_map(|e| match &e.event {
        Event::Notification {
            kind, body, event_id, ..
        } => Some((*kind, body.clone(), event_id.clone())),
        _ => None,
    });
    assert_eq!(
        note,
        Some((
            NotificationKind::Routine,
            "Time to stand up and stretch!".to_string(),
            Some(card.event_id.clone())
        )),
        "a routine's notification, leading to its card"
    );
    // The job ran in its own session with the job instructions.
    assert!(request_text(&fake, 2).contains("Scheduled job"));
    assert!(!request_text(&fake, 2).contains("remind me to stretch in 3 seconds"));
    let history = rt.routine_history(&view.routines[0].id);
    assert_eq!(history.len(), 1);
    assert_eq!(
        rt.routines().routines[0].state,
        vigil_core::protocol::RoutineState::Done
    );

    // The next chat turn reads it from the mailbox.
    rt.submit(Op::UserMessage {
        text: "did I miss anything?".into(),
        session_id: None,
        attachments: vec![],
    });
    until_finished(&mut rx).await;
    assert!(request_text(&fake, 3).contains("Time to stand up and stretch!"));
    rt.shutdown().await;
}

#[tokio::test]
async fn inline_routines_due_together_share_one_heartbeat_turn() {
    let (rt, mut rx, clock, fake, _dir) = rig(Script::steps(vec![Step::text(
        "Drink some water and stretch your legs.",
    )]))
    .await;
    for (title, schedule) in [("Drink water", "30m"), ("Stretch", "*/30 * * * *")] {
        rt.add_routine(RoutineDraft {
            title: Some(title.into()),
            description: Some(format!("Remind the user: {title}")),
            schedule: Some(schedule.into()),
            execution_mode: Some(ExecutionMode::Inline),
            ..RoutineDraft::default()
        })
        .await
        .unwrap();
    }
    clock.advance(Duration::from_secs(30 * 60));
    assert_eq!(rt.scheduler().tick().await.claimed.len(), 2);
    rt.heartbeat_once(WakeReason::Cron).await;
    rt.scheduler().settle().await;
    assert_eq!(fake.requests().len(), 1, "one turn for both");
    let body = request_text(&fake, 0);
    assert!(body.contains("## Due Tasks"), "{body}");
    assert!(
        body.contains("[drink_water] Drink water") && body.contains("[stretch] Stretch"),
        "{body}"
    );
    // The JSON block itself is not handed to the model as instructions.
    assert!(!body.contains("\\\"version\\\": 2"), "{body}");
    for r in rt.routines().routines {
        assert_eq!(r.last_run_at, Some(START_MS + 30 * 60_000), "{}", r.id);
        assert_eq!(r.next_run_at, Some(START_MS + 60 * 60_000), "{}", r.id);
    }
    let events: Vec<EventEnvelope> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert!(events.iter().any(|e| matches!(e.event, Event::RoutinesChanged { .. })));
}

#[tokio::test]
async fn an_hourly_inline_reminder_is_delivered_every_hour_even_in_the_same_words() {
    let reminder = "Time to drink a glass of water.";
    let (rt, mut rx, clock, fake, _dir) = rig(Script::steps(vec![Step::text(reminder), Step::text(reminder)])).await;
    rt.add_routine(RoutineDraft {
        title: Some("Drink water".into()),
        description: Some("Remind the user to drink water.".into()),
        schedule: Some("1h".into()),
        execution_mode: Some(ExecutionMode::Inline),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();
    for hour in 1..=2 {
        clock.advance(Duration::from_secs(60 * 60));
        assert_eq!(rt.scheduler().tick().await.claimed.len(), 1, "hour {hour}");
        rt.heartbeat_once(WakeReason::Cron).await;
        rt.scheduler().settle().await;
    }
    assert_eq!(fake.requests().len(), 2);
    let events: Vec<EventEnvelope> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let told = events
        .iter()
        .filter(|e| matches!(&e.event, Event::Notification { body, .. } if body == reminder))
        .count();
    assert_eq!(told, 2, "both hours reach the user, not only the first");
}

#[tokio::test]
async fn five_jobs_due_together_run_three_at_a_time_and_all_of_them_run() {
    // Every reply streams for about half a second, so the jobs overlap.
    let (rt, mut rx, clock, _fake, _dir) = slow_rig("checked, all fine here", 60).await;
    for i in 1..=5 {
        add_hourly_job(&rt, &format!("Report {i}")).await;
    }
    clock.advance(Duration::from_secs(3600));
    let first = rt.scheduler().tick().await;
    assert_eq!(first.claimed.len(), 3, "{first:?}");
    assert_eq!(first.waiting.len(), 2, "{first:?}");
    assert!(
        first.next_due.is_none_or(|t| t > START_MS + 3_600_000),
        "the waiting two do not make the loop spin"
    );
    let job_turns = |seen: &[EventEnvelope]| {
        seen.iter()
            .filter(|e| matches!(e.event, Event::TurnFinished { .. }))
            .filter(|e| e.session_id.as_deref().is_some_and(|s| s.starts_with("job_")))
            .count()
    };
    // The end of a job frees a slot and wakes the loop for the next one.
    let events = until(&mut rx, |seen| job_turns(seen) >= 5).await;
    let (mut running, mut most) = (0i32, 0i32);
    for e in events
        .iter()
        .filter(|e| e.session_id.as_deref().is_some_and(|s| s.starts_with("job_")))
    {
        match e.event {
            Event::TurnStarted { .. } => running += 1,
            Event::TurnFinished { .. } => running -= 1,
            _ => continue,
        }
        most = most.max(running);
    }
    assert_eq!(most, 3, "three at a time, never more");
    rt.scheduler().settle().await;
    for r in rt.routines().routines {
        assert_eq!(r.last_run_at, Some(START_MS + 3_600_000), "{} ran for its slot", r.id);
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn a_user_turn_a_heartbeat_and_a_job_run_at_the_same_time() {
    // Every reply streams for about a second.
    let (rt, mut rx, clock, _fake, _dir) = slow_rig("working on it, step by step, slowly", 80).await;
    add_hourly_job(&rt, "Long job").await;
    clock.advance(Duration::from_secs(3600));
    let started = std::time::Instant::now();
    rt.scheduler().tick().await;
    let hb = {
        let rt = rt.clone();
        tokio::spawn(async move { rt.heartbeat_once(WakeReason::Manual).await })
    };
    let is_start = |e: &EventEnvelope, prefix: &str| {
        matches!(e.event, Event::TurnStarted { .. }) && e.session_id.as_deref().is_some_and(|s| s.starts_with(prefix))
    };
    let mut events = until(&mut rx, |seen| {
        seen.iter().any(|e| is_start(e, "job_")) && seen.iter().any(|e| is_start(e, "heartbeat_"))
    })
    .await;
    rt.submit(Op::UserMessage {
        text: "hello while you work".into(),
        session_id: None,
        attachments: vec![],
    });
    events.extend(
        until(&mut rx, |seen| {
            seen.iter()
                .filter(|e| matches!(e.event, Event::TurnFinished { .. }))
                .count()
                >= 3
        })
        .await,
    );
    hb.await.unwrap();
    rt.scheduler().settle().await;
    let elapsed = started.elapsed();
    let order: Vec<(bool, String)> = events
        .iter()
        .filter_map(|e| match e.event {
            Event::TurnStarted { .. } => Some((true, e.session_id.clone().unwrap_or_default())),
            Event::TurnFinished { .. } => Some((false, e.session_id.clone().unwrap_or_default())),
            _ => None,
        })
        .collect();
    let first_finish = order.iter().position(|(start, _)| !start).unwrap();
    assert_eq!(first_finish, 3, "all three started before any finished: {order:?}");
    let sessions: Vec<&str> = order[..3].iter().map(|(_, s)| s.as_str()).collect();
    assert!(sessions.contains(&"main"), "{sessions:?}");
    // Three one-second turns one after another would take three seconds.
    assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
    rt.shutdown().await;
}

#[tokio::test]
async fn the_agent_removes_a_routine_softly_and_the_user_can_restore_it_or_delete_it_for_good() {
    let (rt, mut rx, _clock, fake, _dir) = rig(Script::steps(vec![
        Step::tool_call("c1", "routine_remove", serde_json::json!({"id": "water"})),
        Step::tool_call("c2", "routine_list", serde_json::json!({})),
        Step::text("Removed it."),
    ]))
    .await;
    add_hourly_job(&rt, "Water").await;
    add_hourly_job(&rt, "Stretch").await;
    rt.submit(Op::UserMessage {
        text: "stop the water reminder".into(),
        session_id: None,
        attachments: vec![],
    });
    let events = until_finished(&mut rx).await;
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                content,
                is_error: false,
                ..
            } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2, "{events:?}");
    assert!(results[0].contains("the user can restore it"), "{}", results[0]);
    assert!(
        results[1].starts_with("stretch — ") && !results[1].contains("water"),
        "{}",
        results[1]
    );
    let removed = |rt: &Runtime| -> Vec<(String, bool)> {
        rt.routines()
            .routines
            .into_iter()
            .map(|v| (v.id, v.removed_at.is_some()))
            .collect()
    };
    assert_eq!(removed(&rt), [("water".into(), true), ("stretch".into(), false)]);
    assert_eq!(fake.requests().len(), 3);

    // Each op is answered by a `routines_changed` showing its effect.
    let answered = |count: usize, water_removed: Option<bool>| {
        move |seen: &[EventEnvelope]| {
            seen.iter().any(|e| match &e.event {
                Event::RoutinesChanged { routines } => {
                    let water = routines.routines.iter().find(|v| v.id == "water");
                    routines.routines.len() == count && water.map(|v| v.removed_at.is_some()) == water_removed
                }
                _ => false,
            })
        }
    };
    rt.submit(Op::RestoreRoutine { id: "water".into() });
    until(&mut rx, answered(2, Some(false))).await;
    assert_eq!(removed(&rt), [("water".into(), false), ("stretch".into(), false)]);

    rt.submit(Op::RemoveRoutine {
        id: "water".into(),
        hard: Some(true),
    });
    until(&mut rx, answered(1, None)).await;
    assert_eq!(removed(&rt), [("stretch".into(), false)]);
}

#[tokio::test]
async fn turning_the_heartbeat_off_runs_the_inline_routines_waiting_for_it() {
    let (rt, _rx, clock, fake, _dir) = rig(Script::steps(vec![Step::text("Three new mails.")])).await;
    rt.add_routine(RoutineDraft {
        title: Some("Inbox".into()),
        description: Some("Count the new mails.".into()),
        next_run_at: Some(START_MS + 3_000),
        execution_mode: Some(ExecutionMode::Inline),
        ..RoutineDraft::default()
    })
    .await
    .unwrap();
    clock.advance(Duration::from_secs(4));
    rt.scheduler().tick().await;
    assert_eq!(rt.scheduler().inline_waiting().len(), 1, "waiting for a heartbeat turn");

    rt.set_heartbeat_settings(&vigil_core::protocol::HeartbeatSettings {
        enabled: false,
        ..Default::default()
    });
    rt.scheduler().settle().await;
    assert!(rt.scheduler().inline_waiting().is_empty());
    assert_eq!(fake.requests().len(), 1, "it ran as a job");
    let runs = rt.routine_history(&rt.routines().routines[0].id);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].summary.as_deref(), Some("Three new mails."));
}

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

/// Issue 20 item 3, through the tool path: the heartbeat's owner is the conversation's, yet a
/// routine its turn adds is Vigil's own, announced once, and `routine_list` says so.
#[tokio::test]
async fn a_routine_the_agent_adds_in_a_heartbeat_is_vigils_and_announced_exactly_once() {
    let (rt, mut rx, _clock, _fake, _dir) = rig(Script::steps(vec![
        Step::tool_call(
            "c1",
            "routine_add",
            serde_json::json!({"title": "Weekly review", "description": "Summarise the week's notes.",
                "schedule": "0 18 * * 5", "execution_mode": "isolated"}),
        ),
        Step::text("HEARTBEAT_OK"),
        Step::tool_call("c2", "routine_list", serde_json::json!({})),
        Step::text("One routine, which I added."),
    ]))
    .await;
    rt.heartbeat_once(WakeReason::Manual).await;
    let view = rt.routines();
    assert_eq!(view.routines.len(), 1);
    assert_eq!(view.routines[0].source, RoutineSource::HeartbeatReflect);
    for _ in 0..3 {
        rt.scheduler().tick().await;
        rt.scheduler().settle().await;
    }
    let events: Vec<EventEnvelope> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    let cards: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::BackgroundUpdate { update, .. } if update.event_type == "routine_added" => {
                Some(update.summary.clone())
            }
            _ => None,
        })
        .collect();
    let notes: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Notification { title, body, .. } if title == "Vigil added a routine" => Some(body.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(cards.len(), 1, "{events:?}");
    assert!(cards[0].contains("Weekly review"), "{}", cards[0]);
    assert_eq!(notes.len(), 1, "{events:?}");

    rt.submit(Op::UserMessage {
        text: "which routines do I have?".into(),
        session_id: None,
        attachments: vec![],
    });
    let results = tool_results(&until_finished(&mut rx).await);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].2.starts_with("weekly_review — ") && results[0].2.ends_with("made by Vigil (you) on your own"),
        "{}",
        results[0].2
    );
    rt.shutdown().await;
}

/// `vigil-headless` killed with SIGKILL in the middle of a routine's job, then started
/// again on the same data folder: what the next start makes of the cut-off run.
mod killed_mid_job {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    use serde_json::{json, Value};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

    use super::*;

    pub(super) const KEY: &str = "sk-killed";

    /// The runner on `dir`, commands allowed, the heartbeat off; its stdout events are
    /// collected into the returned list. Stdin stays open (the runner keeps running).
    pub(super) fn start(
        dir: &Path,
        fake: &FakeLlm,
    ) -> (
        tokio::process::Child,
        tokio::process::ChildStdin,
        Arc<Mutex<Vec<Value>>>,
    ) {
        let mut cmd = tokio::process::Command::from(headless(dir, fake, KEY));
        cmd.env("VIGIL_APPROVAL_POLICY", "full-auto")
            .env("VIGIL_LOG", "error")
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let seen = events.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    seen.lock().unwrap().push(v);
                }
            }
        });
        (child, stdin, events)
    }

    /// A data folder with the heartbeat off, and a runner on it (and its stdin) that was
    /// given an isolated daily routine `title`, first due in two seconds.
    async fn with_routine(
        fake: &FakeLlm,
        title: &str,
    ) -> (tempfile::TempDir, tokio::process::Child, tokio::process::ChildStdin) {
        let dir = crate::suite::support::outside_tmp();
        std::fs::write(
            dir.path().join("settings.json"),
            json!({"heartbeat": {"enabled": false}}).to_string(),
        )
        .unwrap();
        let (child, mut stdin, _) = start(dir.path(), fake);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let add = json!({"type": "add_routine", "routine": {"title": title, "schedule": "1d",
            "execution_mode": "isolated", "next_run_at": now + 2000}});
        stdin.write_all(format!("{add}\n").as_bytes()).await.unwrap();
        (dir, child, stdin)
    }

    /// The routine's run log, as records.
    fn runs(dir: &Path, id: &str) -> Vec<Value> {
        let path = dir.join("routines").join("runs").join(format!("{id}.jsonl"));
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    pub(super) fn outcomes(dir: &Path, id: &str) -> Vec<String> {
        runs(dir, id)
            .iter()
            .map(|r| r["outcome"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// The job sessions of routine `id` (one per run).
    fn job_sessions(dir: &Path, id: &str) -> Vec<PathBuf> {
        let prefix = format!("job_{id}_");
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join("sessions"))
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        found.retain(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(&prefix) && name.ends_with(".jsonl")
        });
        found
    }

    /// Waits (up to `secs`) until `f` holds.
    pub(super) async fn wait_for(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        while !f() {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// A SIGKILL, as a crash or the OOM killer would: nothing is written on the way out.
    async fn kill(mut child: tokio::process::Child) {
        child.start_kill().unwrap();
        child.wait().await.unwrap();
    }

    #[tokio::test]
    async fn a_job_killed_after_it_ran_exec_is_unknown_after_restart_and_not_run_again() {
        let script = Script::steps(vec![Step::tool_call(
            "c1",
            "exec",
            json!({"command": "echo started > deploy-started.txt; sleep 90"}),
        )])
        .with_api_key(KEY)
        .with_fallback(Step::text("Deployed."));
        let fake = FakeLlm::start(script).await.unwrap();
        let (dir, child, _stdin) = with_routine(&fake, "Deploy").await;
        let started = dir.path().join("workspace").join("deploy-started.txt");
        wait_for(30, "the job's command to run", || started.exists()).await;
        kill(child).await;
        assert_eq!(fake.request_count(), 1);

        let (child, mut stdin, events) = start(dir.path(), &fake);
        wait_for(20, "the cut-off run's record", || {
            !runs(dir.path(), "deploy").is_empty()
        })
        .await;
        let run = runs(dir.path(), "deploy").remove(0);
        assert_eq!(run["outcome"], "unknown", "{run}");
        assert!(
            run["side_effect"].as_str().unwrap().starts_with("exec: echo started"),
            "{run}"
        );
        // Past the first retry's back-off (30 s): nothing ran again.
        tokio::time::sleep(Duration::from_secs(35)).await;
        assert_eq!(outcomes(dir.path(), "deploy"), ["unknown"]);
        assert_eq!(job_sessions(dir.path(), "deploy").len(), 1, "no second job");
        let told: Vec<Value> = events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "notification" && e["title"] == "Vigil: a routine was cut off")
            .cloned()
            .collect();
        assert_eq!(told.len(), 1, "one notification: {told:?}");
        // The user retries it from the history: it runs now, once.
        let retry = json!({"type": "retry_routine_run", "id": "deploy", "run_id": run["run_id"]});
        stdin.write_all(format!("{retry}\n").as_bytes()).await.unwrap();
        wait_for(20, "the retried run", || outcomes(dir.path(), "deploy").len() == 2).await;
        assert_eq!(outcomes(dir.path(), "deploy"), ["unknown", "ok"]);
        assert_eq!(job_sessions(dir.path(), "deploy").len(), 2);
        kill(child).await;
    }

    #[tokio::test]
    async fn a_job_killed_while_it_only_answered_is_retried_after_restart() {
        // The answer takes a minute to come: the kill lands in the middle of it.
        let slow = Step::text("Here is the summary.").with_delay_ms(60_000);
        let fake = FakeLlm::start(
            Script::steps(vec![slow])
                .with_api_key(KEY)
                .with_fallback(Step::text("Summary.")),
        )
        .await
        .unwrap();
        let (dir, child, _stdin) = with_routine(&fake, "Summarize").await;
        wait_for(30, "the job's model request", || fake.request_count() == 1).await;
        kill(child).await;

        let (child, _stdin, _) = start(dir.path(), &fake);
        wait_for(20, "the cut-off run's record", || {
            !runs(dir.path(), "summarize").is_empty()
        })
        .await;
        assert_eq!(outcomes(dir.path(), "summarize"), ["interrupted"]);
        // Retried on its own after the back-off, once.
        wait_for(45, "the retry", || outcomes(dir.path(), "summarize").len() == 2).await;
        assert_eq!(outcomes(dir.path(), "summarize"), ["interrupted", "ok"]);
        assert_eq!(fake.request_count(), 2);
        kill(child).await;
    }
}

/// `vigil-headless` while its task file is edited by hand: the scheduler is told of the edit
/// (routines/alarm.rs, Linux), rather than finding it at its next look 30 s later.
#[cfg(target_os = "linux")]
mod hand_edit {
    use serde_json::json;
    use tokio::io::AsyncWriteExt;

    use super::killed_mid_job::{outcomes, start, wait_for, KEY};
    use super::*;

    fn now_ms() -> i64 {
        chrono::Utc::now().timestamp_millis()
    }

    #[tokio::test]
    async fn a_routine_made_due_by_a_hand_edit_runs_at_once() {
        let fake = FakeLlm::start(
            Script::steps(vec![])
                .with_api_key(KEY)
                .with_fallback(Step::text("Inbox checked.")),
        )
        .await
        .unwrap();
        let dir = crate::suite::support::outside_tmp();
        std::fs::write(
            dir.path().join("settings.json"),
            json!({"heartbeat": {"enabled": false}}).to_string(),
        )
        .unwrap();
        let (mut child, mut stdin, _) = start(dir.path(), &fake);
        let add = json!({"type": "add_routine", "routine": {"title": "Check mail", "schedule": "1d",
            "execution_mode": "isolated", "next_run_at": now_ms() + 3_600_000}});
        stdin.write_all(format!("{add}\n").as_bytes()).await.unwrap();
        let file = dir.path().join("workspace").join("HEARTBEAT.md");
        let read = || std::fs::read_to_string(&file).unwrap_or_default();
        let due_line = |text: &str| {
            text.lines()
                .find(|l| l.contains("\"next_run_at\": \""))
                .map(str::to_string)
        };
        wait_for(20, "the routine in HEARTBEAT.md", || due_line(&read()).is_some()).await;
        // The loop has looked at the file since the add: it now sleeps toward the hour.
        tokio::time::sleep(Duration::from_secs(2)).await;
        // As an editor saves: the whole file written anew and renamed over the old one.
        let text = read();
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
        let edited = text.replace(&due_line(&text).unwrap(), &format!("      \"next_run_at\": \"{now}\","));
        let tmp = dir.path().join("workspace").join(".HEARTBEAT.md.swp");
        std::fs::write(&tmp, edited).unwrap();
        std::fs::rename(&tmp, &file).unwrap();
        let edited_at = std::time::Instant::now();
        // Looking every 30 s, the scheduler would find the edit 28 s from now at the earliest.
        wait_for(10, "the run the edit made due", || {
            outcomes(dir.path(), "check_mail") == ["ok"]
        })
        .await;
        println!("the edited routine ran {:?} after the edit", edited_at.elapsed());
        assert_eq!(fake.request_count(), 1);
        child.start_kill().unwrap();
        child.wait().await.unwrap();
    }
}
