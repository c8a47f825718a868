//! Issue 20 item 4 through the runtime: the daily reflection is a run of its own after an
//! interval poll, once a simulated day whatever the checklist holds, never when the user
//! wrote nothing since the last one, not again after a restart; what it finds is a
//! suggestion (off, announced once, not made twice) unless the user let it add routines.

use std::sync::Arc;
use std::time::Duration;

use vigil_core::clock::ManualClock;
use vigil_core::heartbeat::reflection::BRIEFING_HEADING;
use vigil_core::protocol::{Event, EventEnvelope, HeartbeatSettings, ProviderKind, RoutineSource, WakeReason};
use vigil_core::wake::WakeOutcome;
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, RecordedRequest, Script, Step};

use super::support::*;

const START_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const HALF_HOUR: Duration = Duration::from_secs(30 * 60);

fn start(dir: &std::path::Path, fake: &FakeLlm, clock: &ManualClock) -> (Runtime, Events) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let rt = Runtime::new(dir, Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(fake, ProviderKind::Openai), clock)));
    (rt, rx)
}

/// Everything the requests' user messages said, one string per request.
fn user_texts(req: &RecordedRequest) -> String {
    req.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A request that starts a reflection (not a later step of its turn, after a tool result).
fn is_reflection(req: &RecordedRequest) -> bool {
    let last = req.body["messages"].as_array().unwrap().last().unwrap();
    let text = last["content"].to_string();
    last["role"] == "user" && text.contains("Reflection: under") && text.contains(BRIEFING_HEADING)
}

fn reflections(fake: &FakeLlm) -> usize {
    fake.requests().iter().filter(|r| is_reflection(r)).count()
}

/// One interval heartbeat, half an hour after the last; tried again, as the wake loop
/// would, while the turn that just finished still holds its conversation.
async fn interval_beat(rt: &Runtime, clock: &ManualClock) {
    clock.advance(HALF_HOUR);
    for _ in 0..200 {
        if rt.heartbeat_once(WakeReason::Interval).await != WakeOutcome::Busy {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the heartbeat stayed busy");
}

async fn say(rt: &Runtime, rx: &mut Events, text: &str) {
    rt.submit(user(text));
    until_finished(rx).await;
}

#[tokio::test]
async fn reflection_runs_once_a_simulated_day_with_an_empty_and_with_a_non_empty_checklist() {
    for checklist in [None, Some("- Check that the backup folder has today's file.\n")] {
        let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("HEARTBEAT_OK")))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(START_MS);
        let (rt, mut rx) = start(dir.path(), &fake, &clock);
        if let Some(text) = checklist {
            std::fs::write(rt.workspace().join("HEARTBEAT.md"), text).unwrap();
        }
        say(&rt, &mut rx, "Please remind me to stretch every afternoon at 3.").await;
        let mut chat = vec![fake.request_count() - 1];
        for _ in 0..10 {
            interval_beat(&rt, &clock).await;
        }
        assert_eq!(reflections(&fake), 1, "at the first beat");
        // Vigil restarts mid-day and the user writes again: the day's reflection was had.
        rt.shutdown().await;
        let (rt, mut rx) = start(dir.path(), &fake, &clock);
        chat.push(fake.request_count());
        say(&rt, &mut rx, "Also, every Monday, tell me which bills are due.").await;
        for _ in 10..48 {
            interval_beat(&rt, &clock).await;
        }
        let requests = fake.requests();
        let polls = (0..requests.len())
            .filter(|i| !chat.contains(i) && !is_reflection(&requests[*i]))
            .count();
        println!(
            "checklist {:?}: 24 simulated hours, {polls} polls, {} reflection",
            checklist.is_some(),
            reflections(&fake)
        );
        assert_eq!(reflections(&fake), 1, "once in the day, checklist {checklist:?}");
        assert_eq!(polls, if checklist.is_some() { 48 } else { 0 });
        let first = requests.iter().find(|r| is_reflection(r)).unwrap();
        assert!(
            user_texts(first).contains("remind me to stretch every afternoon"),
            "the briefing carries the user's words"
        );
        for (i, poll) in requests.iter().enumerate() {
            if chat.contains(&i) || is_reflection(poll) {
                continue;
            }
            let all = poll.body.to_string();
            assert!(!all.contains(BRIEFING_HEADING), "the poll gets no briefing");
            assert!(!all.contains("look through MEMORY.md"), "nor the old reflection phase");
        }

        // A day after the first: what was written since, and only that.
        interval_beat(&rt, &clock).await;
        assert_eq!(reflections(&fake), 2, "a day after the first");
        let second = fake.requests().into_iter().rfind(is_reflection).unwrap();
        let words = user_texts(&second);
        assert!(
            words.contains("every Monday") && !words.contains("stretch"),
            "only what is new: {words}"
        );
        // Nothing new written: no reflection. Something new, the same day: none either.
        for _ in 0..4 {
            interval_beat(&rt, &clock).await;
        }
        say(&rt, &mut rx, "Thanks!").await;
        interval_beat(&rt, &clock).await;
        assert_eq!(reflections(&fake), 2, "not twice in a day");
        rt.shutdown().await;
    }
}

/// The reflection's turn: list the routines, add one, acknowledge.
fn reflection_steps() -> Vec<Step> {
    vec![
        Step::tool_call("l1", "routine_list", serde_json::json!({"include_disabled": true})),
        Step::tool_call(
            "a1",
            "routine_add",
            serde_json::json!({"title": "Stretch", "description": "Remind the user to stretch.",
                "schedule": "0 15 * * *", "kind": "time_reminder"}),
        ),
        Step::text("HEARTBEAT_OK"),
    ]
}

fn tool_result(events: &[EventEnvelope], name: &str) -> Option<(bool, String)> {
    events.iter().find_map(|e| match &e.event {
        Event::ToolCallFinished {
            name: n,
            is_error,
            content,
            ..
        } if n == name => Some((*is_error, content.clone())),
        _ => None,
    })
}

fn announcements(events: &[EventEnvelope]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Notification { title, body, .. } if title.contains("routine") => Some((title.clone(), body.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn what_the_reflection_finds_is_a_suggestion_unless_the_user_let_it_add_routines() {
    for adds in [false, true] {
        let mut steps = vec![Step::text("Noted.")];
        steps.extend(reflection_steps());
        let fake = FakeLlm::start(Script::steps(steps).with_fallback(Step::text("HEARTBEAT_OK")))
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(START_MS);
        let (rt, mut rx) = start(dir.path(), &fake, &clock);
        rt.set_heartbeat_settings(&HeartbeatSettings {
            reflection_adds_routines: adds,
            ..HeartbeatSettings::default()
        });
        say(&rt, &mut rx, "Remind me to stretch every day at 3 pm.").await;
        interval_beat(&rt, &clock).await;
        assert_eq!(reflections(&fake), 1);
        for _ in 0..3 {
            rt.scheduler().tick().await;
            rt.scheduler().settle().await;
        }
        let events: Vec<EventEnvelope> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
        let view = rt.routines();
        assert_eq!(view.routines.len(), 1, "{:?}", view.routines);
        let stretch = &view.routines[0];
        assert_eq!(stretch.source, RoutineSource::HeartbeatReflect);
        let said = announcements(&events);
        assert_eq!(said.len(), 1, "announced once: {said:?}");
        let (is_error, result) = tool_result(&events, "routine_add").expect("the tool ran");
        assert!(!is_error, "{result}");
        if adds {
            assert!(stretch.enabled && !stretch.suggested, "{stretch:?}");
            assert_eq!(said[0].0, "Vigil added a routine");
        } else {
            assert!(
                !stretch.enabled && stretch.suggested,
                "off until the user says so: {stretch:?}"
            );
            assert_eq!(said[0].0, "Vigil suggests a routine");
            assert!(result.starts_with("Suggested routine"), "{result}");

            // Declined: removed by the user. The next day's reflection may not bring it back.
            rt.remove_routine(&stretch.id, false).await.unwrap();
            for _ in 0..48 {
                clock.advance(HALF_HOUR);
            }
            say(&rt, &mut rx, "And drink water, please.").await;
            fake.set_script(Script::steps(reflection_steps()).with_fallback(Step::text("HEARTBEAT_OK")));
            interval_beat(&rt, &clock).await;
            assert_eq!(reflections(&fake), 2);
            let events: Vec<EventEnvelope> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
            let (is_error, result) = tool_result(&events, "routine_add").expect("the tool ran");
            assert!(is_error && result.contains("similar routine"), "{result}");
            let view = rt.routines();
            assert!(
                view.routines.iter().all(|r| r.removed_at.is_some()),
                "{:?}",
                view.routines
            );
            // Turned on by the user, a suggestion is an ordinary routine.
            rt.restore_routine(&stretch.id).await.unwrap();
            let on = rt.set_routine_enabled(&stretch.id, true).await.unwrap();
            assert!(on.enabled && !on.suggested, "{on:?}");
        }
        rt.shutdown().await;
    }
}
