//! The health check (seed 004 §7.3 practice 2; seed 003 §12 Phase 2's metrics): what runs
//! now — lanes, locks, wakes, routines, processes — and the counters since start, gathered
//! from the parts that keep them. Taking it reads the primary session's metadata for the
//! mailbox and asks the process registry for its list; it changes nothing.
//!
//! Owns: the alert thresholds and their wording. Must never: change what it reports on, or
//! hold a lane's lock while it awaits.

use vigil_protocol::{
    ChannelName, ChannelStatus, ChannelsHealth, HealthStatus, HealthView, HeartbeatHealth, HeartbeatSkip, LaneHealth,
    MailboxHealth,
};

use super::away::Away;
use super::background::Unattended;
use super::lanes::Conversations;
use super::processes::Processes;
use super::{Base, Life};
use crate::session::PRIMARY_SESSION;

/// Seed 004 §7.3 practice 3's alert thresholds: `heartbeat_pending_wakes > 10`,
/// `command_queue_depth > 100`, `session_locks_held > 50`. Checked when the view is taken
/// (a desktop app has no alert manager to hold a condition for five minutes).
///
/// Vigil keeps one pending wake per agent (requests merge), so "wakes waiting" counts the
/// wake *requests* no finished run has served yet: a heartbeat held back by a long turn,
/// or failing, while commands finish and routines fall due, piles them up.
pub const PENDING_WAKES_ALERT: u32 = 10;
pub const QUEUE_DEPTH_ALERT: u32 = 100;
pub const LOCKS_HELD_ALERT: u32 = 50;

/// How the runtime is doing now, gathered from the owners that keep each part.
pub(super) async fn view(
    base: &Base,
    life: &Life,
    conversations: &Conversations,
    unattended: &Unattended,
    processes: &Processes,
    away: &Away,
) -> HealthView {
    let now = base.clock.now_ms();
    let (deposited, drained) = conversations.meta.mailbox_counts();
    let waiting = match conversations.meta.load(PRIMARY_SESSION) {
        Ok(loaded) => loaded.meta.mailbox.len() as u32,
        Err(e) => {
            tracing::warn!("health: could not read the primary session's mailbox: {e}");
            0
        }
    };
    let mut view = HealthView {
        status: if life.shutdown.is_cancelled() {
            HealthStatus::ShuttingDown
        } else {
            HealthStatus::Healthy
        },
        started_at: base.started_at,
        uptime_ms: now.saturating_sub(base.started_at).max(0) as u64,
        paused: unattended.heartbeat.is_paused(),
        lanes: busy_lanes(&conversations.lanes),
        locks: conversations.store.locks().health(),
        heartbeat: heartbeat_health(unattended, &conversations.lanes),
        mailbox: MailboxHealth {
            waiting,
            deposited,
            drained,
        },
        routines: unattended.routines.health(),
        processes_running: processes.running().await.len() as u32,
        channels: channels_health(&away.channels),
        alerts: Vec::new(),
    };
    view.alerts = alerts(&view);
    view
}

/// The channels that are set up, as Settings → Away shows them.
fn channels_health(channels: &crate::channels::Channels) -> ChannelsHealth {
    let v = channels.view();
    ChannelsHealth {
        channels: v
            .channels
            .into_iter()
            .filter(|c| c.status != ChannelStatus::Off)
            .collect(),
        refused_answers: v.refused_answers,
        ignored_chats: v.ignored_chats,
    }
}

/// Sessions with a turn running, by id.
fn busy_lanes(lanes: &crate::run::Lanes) -> Vec<LaneHealth> {
    let mut busy: Vec<LaneHealth> = lanes
        .busy()
        .into_iter()
        .map(|(session_id, scope, queued)| LaneHealth {
            session_id,
            scope,
            queued: queued as u32,
        })
        .collect();
    busy.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    busy
}

fn heartbeat_health(unattended: &Unattended, lanes: &crate::run::Lanes) -> HeartbeatHealth {
    let stats = unattended.heartbeat_view().stats;
    let wake = unattended.wake.get().map(|s| &s.wake);
    let wake_stats = wake.map(|w| w.stats()).unwrap_or_default();
    let durations = unattended.heartbeat.durations();
    let view = unattended.heartbeat.view(wake_stats.clone());
    HeartbeatHealth {
        handler_registered: wake.is_some_and(|w| w.has_handler()),
        running: lanes.is_busy(&crate::heartbeat::session_id(crate::heartbeat::AGENT)),
        pending_wakes: wake.map_or(0, |w| w.pending().len() as u32),
        requests_waiting: wake.map_or(0, |w| w.requests_waiting()),
        wakes_by_reason: wake_stats
            .by_reason
            .iter()
            .map(|(reason, n)| (reason.as_str().to_string(), *n))
            .collect(),
        retried_busy: wake_stats.retried,
        retried_failed: wake_stats.retried_failed,
        skipped_lock: stats.skipped.get(HeartbeatSkip::Lock.as_str()).copied().unwrap_or(0),
        run_count: durations.count,
        run_ms_total: durations.total_ms,
        run_ms_max: durations.max_ms,
        run_ms_last: durations.last_ms,
        delivered: stats.sent,
        suppressed: stats.suppressed,
        skipped_busy: stats
            .skipped
            .get(HeartbeatSkip::RequestsInFlight.as_str())
            .copied()
            .unwrap_or(0),
        usage_today: view.usage_today,
        runs_today: view.runs_today,
        daily_token_budget: view.settings.daily_token_budget,
        budget_spent: view.budget_spent,
        idle_factor: view.idle_factor,
    }
}

/// What in `h` needs a look, worst first.
fn alerts(h: &HealthView) -> Vec<String> {
    let mut out = Vec::new();
    let l = &h.locks;
    if l.held > LOCKS_HELD_ALERT {
        out.push(format!(
            "{} session locks are held at once (more than {LOCKS_HELD_ALERT}): a write may be stuck.",
            l.held
        ));
    }
    if h.heartbeat.requests_waiting > PENDING_WAKES_ALERT {
        out.push(format!(
            "{} heartbeat wakes are waiting (more than {PENDING_WAKES_ALERT}): the heartbeat is falling behind, held back by a running turn or failing runs.",
            h.heartbeat.requests_waiting
        ));
    }
    let queued: u32 = h.lanes.iter().map(|lane| lane.queued).sum();
    if queued > QUEUE_DEPTH_ALERT {
        out.push(format!(
            "{queued} messages are queued behind running turns (more than {QUEUE_DEPTH_ALERT})."
        ));
    }
    if l.timeouts > 0 {
        out.push(format!(
            "A wait for a session lock gave up {} since start: another Vigil process or a stuck write held it. Nothing was lost; the action that waited reported an error.",
            times(l.timeouts)
        ));
    }
    if l.reclaimed > 0 {
        out.push(format!(
            "A session lock was taken back from a holder that had died or hung {} since start.",
            times(l.reclaimed)
        ));
    }
    for c in &h.channels.channels {
        if c.status == ChannelStatus::Retrying {
            let name = match c.channel {
                ChannelName::Ntfy => "ntfy",
                ChannelName::Telegram => "Telegram",
            };
            let error = c.last_error.as_deref().unwrap_or("no answer");
            let waiting = match c.queued {
                0 => String::new(),
                1 => "; 1 push waits and is retried".into(),
                n => format!("; {n} pushes wait and are retried"),
            };
            out.push(format!(
                "The phone cannot be reached through {name} ({error}){waiting}."
            ));
        }
    }
    out
}

fn times(n: u64) -> String {
    if n == 1 {
        "once".into()
    } else {
        format!("{n} times")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_protocol::{LockHealth, RoutinesHealth, Scope};

    fn calm() -> HealthView {
        HealthView {
            status: HealthStatus::Healthy,
            started_at: 0,
            uptime_ms: 1,
            paused: false,
            lanes: vec![],
            locks: LockHealth::default(),
            heartbeat: HeartbeatHealth::default(),
            mailbox: MailboxHealth::default(),
            routines: RoutinesHealth::default(),
            processes_running: 0,
            channels: ChannelsHealth::default(),
            alerts: vec![],
        }
    }

    #[test]
    fn alerts_start_past_the_seed_thresholds_and_name_the_numbers() {
        let mut h = calm();
        h.locks.held = LOCKS_HELD_ALERT;
        h.heartbeat.requests_waiting = PENDING_WAKES_ALERT;
        h.heartbeat.pending_wakes = 1;
        h.lanes = vec![LaneHealth {
            session_id: "main".into(),
            scope: Scope::Primary,
            queued: QUEUE_DEPTH_ALERT,
        }];
        assert!(alerts(&h).is_empty(), "at the thresholds: {:?}", alerts(&h));

        h.locks.held += 1;
        h.heartbeat.requests_waiting += 1;
        h.lanes.push(LaneHealth {
            session_id: "other".into(),
            scope: Scope::Primary,
            queued: 1,
        });
        h.locks.timeouts = 1;
        h.locks.reclaimed = 3;
        let a = alerts(&h);
        assert_eq!(a.len(), 5, "{a:?}");
        assert!(a[0].starts_with("51 session locks are held at once"), "{}", a[0]);
        assert!(a[1].starts_with("11 heartbeat wakes are waiting"), "{}", a[1]);
        assert!(a[2].starts_with("101 messages are queued"), "{}", a[2]);
        assert!(a[3].contains("gave up once since start"), "{}", a[3]);
        assert!(a[4].contains("hung 3 times since start"), "{}", a[4]);
    }

    #[test]
    fn a_channel_retrying_is_an_alert_that_names_it_its_error_and_the_pushes_waiting() {
        let channel = |channel, status, queued| vigil_protocol::ChannelView {
            channel,
            status,
            has_token: true,
            queued,
            sent: 4,
            last_error: Some("Telegram answered sendMessage with 502 Bad Gateway: Bad Gateway".into()),
            answers: true,
            sends: String::new(),
        };
        let mut h = calm();
        h.channels.channels = vec![channel(ChannelName::Ntfy, ChannelStatus::Connected, 0)];
        assert!(alerts(&h).is_empty(), "connected, an old error: no alert");
        h.channels
            .channels
            .push(channel(ChannelName::Telegram, ChannelStatus::Retrying, 3));
        assert_eq!(
            alerts(&h),
            ["The phone cannot be reached through Telegram (Telegram answered sendMessage with 502 Bad Gateway: Bad Gateway); 3 pushes wait and are retried."]
        );
    }
}
