//! The runtime's health on the wire (seed 004 §7.3 practice 2, "health status"; seed 003
//! §12 Phase 2, "lock contention and delivery behaviour observable"): what is running now
//! and what has happened since start, for the Settings pane's Health section and for
//! scripts (`{"type":"health"}` to `vigil-headless`).
//!
//! Counters count since this process started; gauges (`held`, `running`, …) are the moment
//! the view was taken.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Whether the runtime takes work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    Healthy,
    /// Shutdown began: no new turn starts, running ones are being cancelled.
    ShuttingDown,
}

/// A session with a turn running (its lane is busy).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LaneHealth {
    pub session_id: String,
    /// `primary`, `heartbeat` or `job`.
    pub scope: crate::Scope,
    /// Messages sent meanwhile, waiting to steer the running turn.
    pub queued: u32,
}

/// The session write locks (seed 003 §12 Phase 2 and §15: `lock_wait_ms`,
/// `lock_timeout_count`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct LockHealth {
    /// Locks held right now.
    pub held: u32,
    #[ts(type = "number")]
    pub acquired: u64,
    /// Acquisitions that found the lock taken and had to wait.
    #[ts(type = "number")]
    pub waited: u64,
    /// The time those waits took, in all and the longest.
    #[ts(type = "number")]
    pub wait_ms_total: u64,
    #[ts(type = "number")]
    pub wait_ms_max: u64,
    /// Waits that gave up (the caller got "session is locked").
    #[ts(type = "number")]
    pub timeouts: u64,
    /// Locks taken back from a holder that had died or held on too long.
    #[ts(type = "number")]
    pub reclaimed: u64,
}

/// The heartbeat's wake side and its delivery decisions (`heartbeat_deliver_count`,
/// `heartbeat_suppress_count`, `heartbeat_skipped_due_to_lock`; seed 004 §7.2's
/// `heartbeat_wakes_total` by reason and `heartbeat_wake_duration_ms`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HeartbeatHealth {
    /// The wake loop runs with the heartbeat registered to handle its wakes.
    pub handler_registered: bool,
    /// A heartbeat turn is running now.
    pub running: bool,
    /// Wakes waiting to run (coalesced, or queued for a retry): one per agent at most.
    pub pending_wakes: u32,
    /// Wake requests no finished run has served yet, merged ones included: the backlog the
    /// "falling behind" alert counts.
    pub requests_waiting: u32,
    /// Wake requests since start by reason (`interval`, `exec-event`, `cron`, `manual`, …).
    #[ts(type = "Record<string, number>")]
    pub wakes_by_reason: std::collections::BTreeMap<String, u64>,
    /// Runs tried again because a conversation was busy or the lock was taken.
    #[ts(type = "number")]
    pub retried_busy: u64,
    /// Runs tried again after a provider error.
    #[ts(type = "number")]
    pub retried_failed: u64,
    /// Runs skipped because the heartbeat's lock was taken.
    #[ts(type = "number")]
    pub skipped_lock: u64,
    /// Heartbeat turns (model runs) since start and how long they took.
    #[ts(type = "number")]
    pub run_count: u64,
    #[ts(type = "number")]
    pub run_ms_total: u64,
    #[ts(type = "number")]
    pub run_ms_max: u64,
    #[ts(type = "number")]
    pub run_ms_last: u64,
    #[ts(type = "number")]
    pub delivered: u64,
    #[ts(type = "number")]
    pub suppressed: u64,
    /// Runs put off because a turn was running in a conversation.
    #[ts(type = "number")]
    pub skipped_busy: u64,
    /// Tokens background work (heartbeat runs, routine jobs, continuations) used today
    /// (local date), and in how many model runs.
    pub usage_today: crate::Usage,
    #[ts(type = "number")]
    pub runs_today: u64,
    /// The daily token budget for background work (`0`: none) and whether it is spent.
    #[ts(type = "number")]
    pub daily_token_budget: u64,
    pub budget_spent: bool,
    /// The idle gate's stretch of the interval now (1 = normal, up to 8).
    pub idle_factor: u32,
}

/// The primary session's mailbox (`mailbox_deposit_count`, `mailbox_drain_count`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct MailboxHealth {
    /// Updates waiting in the primary conversation's mailbox now.
    pub waiting: u32,
    #[ts(type = "number")]
    pub deposited: u64,
    /// Updates acknowledged after a turn took them in.
    #[ts(type = "number")]
    pub drained: u64,
}

/// Routines and their job sessions (`job_session_created`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RoutinesHealth {
    /// Enabled routines with a next run.
    pub scheduled: u32,
    /// Runs in flight (isolated jobs, deterministic runs, inline runs waiting for a heartbeat).
    pub running: u32,
    #[ts(type = "number")]
    pub job_sessions_created: u64,
}

/// The phone channels that are set up (ntfy, Telegram): each one's state, last error and
/// counters as Settings → Away shows them, and the answers and chats refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ChannelsHealth {
    /// Only the channels that are configured; none: the phone is not used.
    pub channels: Vec<crate::ChannelView>,
    #[ts(type = "number")]
    pub refused_answers: u64,
    #[ts(type = "number")]
    pub ignored_chats: u64,
}

/// What a health check returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HealthView {
    pub status: HealthStatus,
    #[ts(type = "number")]
    pub started_at: i64,
    #[ts(type = "number")]
    pub uptime_ms: u64,
    /// Background work (heartbeat, routines, processes) is paused by the user.
    pub paused: bool,
    /// Sessions with a turn running.
    pub lanes: Vec<LaneHealth>,
    pub locks: LockHealth,
    pub heartbeat: HeartbeatHealth,
    pub mailbox: MailboxHealth,
    pub routines: RoutinesHealth,
    /// Processes started by the agent or the user that are still running.
    pub processes_running: u32,
    /// The phone channels.
    #[serde(default)]
    pub channels: ChannelsHealth,
    /// What needs a look, in words (seed 004 §7.3 practice 3's alert rules: a wake backlog,
    /// a deep queue, many locks held; and any lock wait that gave up or was reclaimed).
    pub alerts: Vec<String>,
}
