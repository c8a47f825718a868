//! Issue 31 item 5: a heartbeat run has a deadline (`runTimeoutMinutes`, 10 by default), and
//! the run that carries an inline routine also ends at that routine's `timeout_seconds`. On
//! the [`timing_rig`](super::timing_rig): paused tokio time, a [`crate::clock::ManualClock`]
//! moved in step with it, and a host whose turns can hang.

use std::time::Duration;

use vigil_protocol::{ExecutionMode, HeartbeatSettings, RoutineDraft, RoutineSource, RunOutcome};

use super::timing_rig::{rig, Act, Hang, T0};
use super::*;

fn no_idle_gate() -> HeartbeatSettings {
    HeartbeatSettings {
        idle_after_hours: 0,
        ..Default::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_run_that_never_ends_is_let_go_at_its_deadline_and_the_next_poll_runs_on_time() {
    let r = rig(no_idle_gate(), &[(0, Act::Hang(Hang::Forever))]);
    r.pass(Duration::from_secs(61 * 60)).await;
    assert_eq!(
        r.turn_seconds(),
        [30 * 60, 60 * 60],
        "the 60-minute poll ran at its time"
    );
    // Ended at 30 min + the 10-minute deadline + the 10 s it had to stop after its cancellation.
    assert_eq!(
        r.beats(),
        [
            ("timed-out".to_string(), 40 * 60 + 10),
            ("ok-empty".to_string(), 60 * 60)
        ]
    );
    r.shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn the_run_carrying_an_inline_routine_ends_at_the_routines_timeout() {
    // No interval polls: only the routine wakes the heartbeat.
    let settings = HeartbeatSettings {
        every: "0".into(),
        ..no_idle_gate()
    };
    let r = rig(settings, &[(0, Act::Hang(Hang::Forever))]);
    let (routine, _) = r
        .scheduler
        .create(
            RoutineDraft {
                title: Some("Drink water".into()),
                schedule: Some("1h".into()),
                execution_mode: Some(ExecutionMode::Inline),
                timeout_seconds: Some(60),
                ..RoutineDraft::default()
            },
            RoutineSource::Chat,
            true,
        )
        .await
        .unwrap();
    r.pass(Duration::from_secs(65 * 60)).await;
    // Ended at 60 s (and the 10 s to stop), then tried again 30 s later by the retry rules.
    let ended = 60 * 60 + 60 + 10;
    assert_eq!(r.turn_seconds(), [60 * 60, ended + 30]);
    assert_eq!(
        r.beats(),
        [("timed-out".to_string(), ended), ("ok-empty".to_string(), ended + 30)]
    );
    r.scheduler.settle().await;
    let runs = r.scheduler.history(&routine.id);
    let seen: Vec<_> = runs
        .iter()
        .map(|run| (run.outcome, (run.finished_at - T0) / 1000))
        .collect();
    assert_eq!(
        seen,
        [(RunOutcome::TimedOut, ended), (RunOutcome::Acknowledged, ended + 30)]
    );
    assert!(runs[0].error.as_deref().unwrap().contains("1 min"), "{runs:?}");
    r.shutdown.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_turn_that_stops_when_cancelled_ends_at_the_configured_deadline() {
    let settings = HeartbeatSettings {
        run_timeout_minutes: 3,
        ..no_idle_gate()
    };
    let r = rig(settings, &[(0, Act::Hang(Hang::UntilCancelled))]);
    r.pass(Duration::from_secs(61 * 60)).await;
    assert_eq!(r.turn_seconds(), [30 * 60, 60 * 60]);
    assert_eq!(
        r.beats(),
        [("timed-out".to_string(), 33 * 60), ("ok-empty".to_string(), 60 * 60)]
    );
    r.shutdown.cancel();
}

#[test]
fn the_deadline_is_the_shortest_limit_and_says_which() {
    let config = HeartbeatConfig::default();
    let task = |title: &str, secs: u64| DueTask {
        id: title.to_lowercase(),
        title: title.into(),
        description: String::new(),
        timeout: Duration::from_secs(secs),
    };
    let alone = turn::Deadline::of(&config, &[]);
    assert_eq!(alone.limit, Duration::from_secs(600));
    assert_eq!(
        alone.passed(),
        "timed out after 10 min (the heartbeat's run limit, runTimeoutMinutes): its open questions expired and the \
         commands it started were stopped"
    );
    let carried = turn::Deadline::of(&config, &[task("Backup", 3600), task("Water", 60), task("Stretch", 90)]);
    assert_eq!(carried.limit, Duration::from_secs(60));
    assert!(carried
        .passed()
        .starts_with("timed out after 1 min (the timeout_seconds of routine \"Water\")"));
}
