//! Each kind of event goes where its own choice says (issue 34): the result of a routine a
//! watch trigger ran is a monitor's, routed by the monitor choice, and the result of one its
//! schedule ran a routine's, routed by the routine choice, to the phone (the fake ntfy
//! server) and as the kind of the desktop's notification.

use std::time::Duration;

use vigil_core::channels::Keys;
use vigil_core::clock::Clock;
use vigil_core::protocol::{
    Action, ChannelKinds, ChannelWhen, ChannelsSettings, Event, NotificationKind, NtfySettings, RoutineDraft, Trigger,
};
use vigil_fake_llm::Script;
use vigil_fake_phone::FakeNtfy;

use super::channels::WAIT;
use super::routines::rig;
use super::support::*;

const NTFY_TOKEN: &str = "tk_fakeaccesstoken0123456789";

fn choices(ntfy: &FakeNtfy, routine: ChannelWhen, monitor: ChannelWhen) -> ChannelsSettings {
    ChannelsSettings {
        ntfy: Some(NtfySettings {
            server: ntfy.url(),
            topic: Some("vigil-push".into()),
            reply_topic: Some("vigil-reply".into()),
        }),
        when: ChannelWhen::Never,
        kinds: ChannelKinds {
            routine: Some(routine),
            monitor: Some(monitor),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A routine that notifies (no model) when `notes/*.md` changes.
fn monitor() -> RoutineDraft {
    RoutineDraft {
        title: Some("Notes monitor".into()),
        trigger: Some(Trigger::File {
            paths: vec!["notes/*.md".into()],
            debounce_ms: None,
        }),
        action: Some(Action::Notify),
        ..RoutineDraft::default()
    }
}

/// A routine that notifies (no model) at `due`.
fn reminder(title: &str, due: i64) -> RoutineDraft {
    RoutineDraft {
        title: Some(title.into()),
        next_run_at: Some(due),
        action: Some(Action::Notify),
        ..RoutineDraft::default()
    }
}

/// The kind of the next desktop notification whose body names `title`.
async fn notified(rx: &mut Events, title: &str) -> NotificationKind {
    next_matching(rx, |e| match e {
        Event::Notification { kind, body, .. } if body.contains(title) => Some(*kind),
        _ => None,
    })
    .await
}

async fn watched(rt: &vigil_core::Runtime, id: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !rt.watch().armed(id) {
        assert!(tokio::time::Instant::now() < deadline, "routine {id} was never watched");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_monitors_fire_follows_the_monitor_choice_and_a_scheduled_routine_the_routine_choice() {
    let (rt, mut rx, clock, _fake, _dir) = rig(Script::steps(vec![])).await;
    let ntfy = FakeNtfy::start(Some(NTFY_TOKEN)).await.unwrap();
    rt.channels().use_keys(Keys::fixed(Some(NTFY_TOKEN), None));
    rt.channels().set_away(Some(true));
    let ws = rt.workspace().to_path_buf();
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    assert!(rt.start_background());
    let (watching, _) = rt.add_routine(monitor()).await.unwrap();
    watched(&rt, &watching.id).await;
    let pushed = || -> Vec<String> {
        ntfy.published_to("vigil-push")
            .iter()
            .map(|p| p.body["message"].as_str().unwrap_or_default().to_string())
            .collect()
    };

    // Monitors to the phone, routines to the desktop only.
    rt.channels()
        .set_settings(choices(&ntfy, ChannelWhen::Never, ChannelWhen::Always));
    let now = clock.now_ms();
    rt.add_routine(reminder("Stretch reminder", now + 1_000)).await.unwrap();
    clock.advance(Duration::from_secs(2));
    rt.scheduler().tick().await;
    assert_eq!(notified(&mut rx, "Stretch reminder").await, NotificationKind::Routine);
    std::fs::write(ws.join("notes/plan.md"), "milk\n").unwrap();
    assert_eq!(notified(&mut rx, "Notes monitor").await, NotificationKind::Monitor);
    ntfy.wait_for("vigil-push", 1, WAIT).await;
    // The reminder came first: had it been pushed, it would be here before the monitor's.
    let first = pushed();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].contains("Notes monitor"), "{first:?}");

    // The other way round (past the minute a conversation's pushes are coalesced in).
    clock.advance(Duration::from_secs(120));
    rt.channels()
        .set_settings(choices(&ntfy, ChannelWhen::Always, ChannelWhen::Never));
    std::fs::write(ws.join("notes/plan.md"), "milk\neggs\n").unwrap();
    assert_eq!(notified(&mut rx, "Notes monitor").await, NotificationKind::Monitor);
    let now = clock.now_ms();
    rt.add_routine(reminder("Water reminder", now + 1_000)).await.unwrap();
    clock.advance(Duration::from_secs(2));
    rt.scheduler().tick().await;
    assert_eq!(notified(&mut rx, "Water reminder").await, NotificationKind::Routine);
    ntfy.wait_for("vigil-push", 2, WAIT).await;
    let both = pushed();
    assert_eq!(both.len(), 2, "{both:?}");
    assert!(both[1].contains("Water reminder"), "{both:?}");
    rt.shutdown().await;
}
