//! Issue 31 item 6: the idle gate stretches the interval while nobody writes — exactly when
//! nobody watches — so an interval run that found something resets it: back to the normal
//! interval, stretched again only after `idleAfterHours` more with nothing found and no
//! message. On the [`timing_rig`](super::timing_rig).

use std::time::Duration;

use vigil_protocol::HeartbeatSettings;

use super::timing_rig::{rig, Act};

/// The hours after the start at which each turn started, to the nearest 36 s.
fn hours(seconds: &[i64]) -> Vec<f64> {
    seconds.iter().map(|s| (*s as f64 / 36.0).round() / 100.0).collect()
}

#[tokio::test(start_paused = true)]
async fn an_interval_run_that_found_something_resets_the_idle_gate() {
    // Every 30 minutes for the first 8 hours, then 9 h, 11 h, 15 h as the gate stretches
    // the interval: the run at 15 h (the 19th) finds the disk full.
    let r = rig(
        HeartbeatSettings::default(),
        &[(18, Act::Reply("Disk usage is 93 % on /home.".into()))],
    );
    r.pass_by(Duration::from_secs(24 * 3600 + 60), Duration::from_secs(1))
        .await;
    let mut expected: Vec<f64> = (1..=16).map(|n| n as f64 * 0.5).collect();
    expected.extend([9.0, 11.0, 15.0]);
    // After the alert: every 30 minutes again, for another 8 hours, then stretched again.
    expected.extend((31..=46).map(|n| n as f64 * 0.5));
    expected.push(24.0);
    assert_eq!(
        hours(&r.turn_seconds()),
        expected,
        "interval runs (hours after the start)"
    );
    let beats = r.beats();
    assert_eq!(beats[18].0, "sent", "{beats:?}");
    // The quiet runs at 23 h and 24 h doubled it again.
    assert_eq!(r.heartbeat.interval_factor(), 4);
    r.shutdown.cancel();
}
