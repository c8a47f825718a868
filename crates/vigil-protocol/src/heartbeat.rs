//! The heartbeat on the wire: why a run happened ([`WakeReason`]), how it ended
//! ([`HeartbeatStatus`], [`HeartbeatSkip`]), the settings the user edits
//! ([`HeartbeatSettings`]), the status view, and the background-update card.
//!
//! Names follow OpenClaw's (`exec-event`, `ok-token`, `requests-in-flight`, `ackMaxChars`)
//! so its documentation reads true for Vigil.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use ts_rs::TS;

/// Why a heartbeat run was asked for. Decides the wake's priority when several wait for the
/// same target, and whether an effectively empty `HEARTBEAT.md` skips the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
pub enum WakeReason {
    /// The interval came round (`every`, default 30 minutes).
    Interval,
    /// A background command finished.
    ExecEvent,
    /// A scheduled routine is due.
    Cron,
    /// Something inside Vigil asked for a run.
    Wake,
    /// An internal hook asked for a run.
    Hook,
    /// The user asked for a run ("check now", `{"type":"wake"}`).
    Manual,
    /// An earlier run found the conversation busy and is tried again.
    Retry,
    /// The daily reflection (seed 003 §8.3): a run of its own after an interval poll, when
    /// one is due and the user wrote something since the last. Never asked for as a wake.
    Reflection,
}

impl WakeReason {
    /// The default of `Op::Wake`.
    pub fn manual() -> Self {
        WakeReason::Manual
    }

    /// The wire name (`exec-event`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            WakeReason::Interval => "interval",
            WakeReason::ExecEvent => "exec-event",
            WakeReason::Cron => "cron",
            WakeReason::Wake => "wake",
            WakeReason::Hook => "hook",
            WakeReason::Manual => "manual",
            WakeReason::Retry => "retry",
            WakeReason::Reflection => "reflection",
        }
    }
}

/// How a heartbeat run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
pub enum HeartbeatStatus {
    /// The reply was `HEARTBEAT_OK` (with at most `ackMaxChars` besides): nothing to tell.
    OkToken,
    /// The reply was empty: nothing to tell.
    OkEmpty,
    /// The reply went to the user (mailbox, card, notification).
    Sent,
    /// The run did not reach the user; `skip_reason` says why.
    Skipped,
    /// The model call failed; `detail` says how. A provider error is tried again (up to 3
    /// times, 30 s then 60 s apart) before the run counts as failed.
    Failed,
    /// The run passed its deadline (`runTimeoutMinutes`, or the `timeout_seconds` of an
    /// inline routine it carried) and was ended: its open approval questions expired, the
    /// commands it started were killed; `detail` says which limit. Not tried again: the next
    /// run comes at its time.
    TimedOut,
}

/// Why a heartbeat run was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
pub enum HeartbeatSkip {
    /// The heartbeat is switched off.
    Disabled,
    /// Outside the active hours.
    QuietHours,
    /// A turn is running in a conversation; retried after 1 s, 2 s, 4 s … up to 60 s.
    RequestsInFlight,
    /// `HEARTBEAT.md` holds no task (only headings, comments, blank lines): no model call.
    EmptyHeartbeatFile,
    /// `HEARTBEAT.md` could not be read; `detail` says why.
    HeartbeatFileError,
    /// The same text was delivered less than 24 hours ago.
    Duplicate,
    /// No provider is configured.
    NoProvider,
    /// The user paused background activity (the tray's "Pause background activity").
    Paused,
    /// The heartbeat's lock was taken (another heartbeat run, here or in another Vigil
    /// process on the same data folder): not a failure; retried like a busy conversation.
    Lock,
    /// Today's token budget for background work is spent (`dailyTokenBudget`): no model call
    /// until the next local day or a higher budget.
    Budget,
}

impl HeartbeatSkip {
    pub fn as_str(self) -> &'static str {
        match self {
            HeartbeatSkip::Disabled => "disabled",
            HeartbeatSkip::QuietHours => "quiet-hours",
            HeartbeatSkip::RequestsInFlight => "requests-in-flight",
            HeartbeatSkip::EmptyHeartbeatFile => "empty-heartbeat-file",
            HeartbeatSkip::HeartbeatFileError => "heartbeat-file-error",
            HeartbeatSkip::Duplicate => "duplicate",
            HeartbeatSkip::NoProvider => "no-provider",
            HeartbeatSkip::Paused => "paused",
            HeartbeatSkip::Lock => "lock",
            HeartbeatSkip::Budget => "budget",
        }
    }
}

/// A background result waiting in a conversation's mailbox, as the chat card shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct BackgroundUpdate {
    pub event_id: String,
    /// `heartbeat_result`, `exec_completed`, `job_completed`, …
    pub event_type: String,
    /// The session that produced it (`heartbeat_session_main`, `job_…`).
    pub source: String,
    /// One sentence, always shown.
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub detail: Option<String>,
    /// 0 info, 1 important, 2 urgent.
    pub priority: u8,
    #[ts(type = "number")]
    pub created_at: i64,
}

/// When the heartbeat may run: `start` to `end` (`HH:MM`, `end` may be `24:00`) in
/// `timezone` (an IANA name; empty or absent means the computer's). A window whose end is
/// before its start runs across midnight; `start == end` is never active.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ActiveHours {
    pub start: String,
    pub end: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub timezone: Option<String>,
}

/// The `heartbeat` entry of the settings store, as the user writes it (OpenClaw's names).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatSettings {
    /// Off switches every run, event-driven ones included.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// The interval: `30m`, `1h30m`, `45s`; a bare number is minutes; `0` or an invalid
    /// value turns interval runs off (event-driven runs still happen).
    #[serde(default = "default_every", deserialize_with = "string_or_number")]
    pub every: String,
    /// Replaces the built-in heartbeat prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub prompt: Option<String>,
    /// How much text may accompany `HEARTBEAT_OK` and still count as "nothing to tell".
    #[serde(default = "default_ack_max_chars", alias = "ack_max_chars")]
    pub ack_max_chars: u32,
    #[serde(default, alias = "active_hours", skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub active_hours: Option<ActiveHours>,
    /// A model for heartbeat runs instead of the conversation's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub model: Option<String>,
    /// Raise a native notification when a heartbeat has something to tell.
    #[serde(default = "yes")]
    pub notifications: bool,
    /// Tokens (input + output) background work (heartbeat runs, routine jobs, continuations)
    /// may use per local day; `0` (the default) is no budget.
    #[serde(default, alias = "daily_token_budget")]
    #[ts(type = "number")]
    pub daily_token_budget: u64,
    /// After this many hours with no user message, each quiet interval run doubles the
    /// interval, up to 8×; the next user message, or an interval run that told the user
    /// something, brings it back. It trades vigilance for cost while nobody watches; `0` turns
    /// the idle gate off.
    #[serde(default = "default_idle_after_hours", alias = "idle_after_hours")]
    pub idle_after_hours: u32,
    /// How often, in hours, Vigil reads what the user wrote lately and looks for routines
    /// they asked for and never got (seed 003 §8.3); `0` turns reflection off.
    #[serde(default = "default_reflection_every_hours", alias = "reflection_every_hours")]
    pub reflection_every_hours: u32,
    /// What reflection finds becomes a routine at once; off (the default), it is a
    /// suggestion the user turns on under Routines.
    #[serde(default, alias = "reflection_adds_routines")]
    pub reflection_adds_routines: bool,
    /// The longest a heartbeat run may take, in minutes (1–1440, default 10): a run still
    /// going then is ended and recorded `timed-out`, so one hung run (a long command, an
    /// unanswered question) cannot hold back the polls and reminders after it.
    #[serde(default = "default_run_timeout_minutes", alias = "run_timeout_minutes")]
    pub run_timeout_minutes: u32,
}

impl Default for HeartbeatSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            every: default_every(),
            prompt: None,
            ack_max_chars: default_ack_max_chars(),
            active_hours: None,
            model: None,
            notifications: true,
            daily_token_budget: 0,
            idle_after_hours: default_idle_after_hours(),
            reflection_every_hours: default_reflection_every_hours(),
            reflection_adds_routines: false,
            run_timeout_minutes: default_run_timeout_minutes(),
        }
    }
}

fn default_run_timeout_minutes() -> u32 {
    10
}

fn default_idle_after_hours() -> u32 {
    8
}

fn default_reflection_every_hours() -> u32 {
    24
}

fn yes() -> bool {
    true
}

fn default_every() -> String {
    "30m".into()
}

fn default_ack_max_chars() -> u32 {
    300
}

/// `"every": 45` and `"every": "45"` both mean 45 minutes; keep what the user wrote.
fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Every {
        S(String),
        N(serde_json::Number),
    }
    Ok(match Every::deserialize(d)? {
        Every::S(s) => s,
        Every::N(n) => n.to_string(),
    })
}

/// Counters since start, for the diagnostics view.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HeartbeatStats {
    /// Runs that called the model.
    #[ts(type = "number")]
    pub runs: u64,
    #[ts(type = "number")]
    pub sent: u64,
    /// `ok-token` and `ok-empty` runs.
    #[ts(type = "number")]
    pub suppressed: u64,
    #[ts(type = "number")]
    pub failed: u64,
    /// Skips by reason (`requests-in-flight`, `quiet-hours`, …).
    #[ts(type = "Record<string, number>")]
    pub skipped: BTreeMap<String, u64>,
    /// Every `request_wake`.
    #[ts(type = "number")]
    pub wakes_requested: u64,
    /// Requests merged into a wake already waiting for the same target.
    #[ts(type = "number")]
    pub wakes_coalesced: u64,
}

/// The status indicator: the last run, the next one, and what needs fixing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HeartbeatView {
    pub settings: HeartbeatSettings,
    /// The interval in force; `None` when interval runs are off.
    #[ts(type = "number | null")]
    pub interval_ms: Option<u64>,
    #[ts(type = "number | null")]
    pub last_run_at: Option<i64>,
    pub last_reason: Option<WakeReason>,
    pub last_status: Option<HeartbeatStatus>,
    pub last_skip_reason: Option<HeartbeatSkip>,
    pub last_detail: Option<String>,
    /// The tokens the last run's model turn used; `None` when it called no model (a skip).
    pub last_usage: Option<crate::Usage>,
    #[ts(type = "number | null")]
    pub next_run_at: Option<i64>,
    /// Settings problems (an unknown time zone, a bad interval…), for the status view.
    pub warnings: Vec<String>,
    pub stats: HeartbeatStats,
    /// Background activity is paused: every run is skipped (`paused`) until resumed.
    pub paused: bool,
    /// Tokens background work (heartbeat runs, routine jobs, continuations) used today
    /// (local date).
    pub usage_today: crate::Usage,
    /// Background model runs today.
    #[ts(type = "number")]
    pub runs_today: u64,
    /// Today's budget (`dailyTokenBudget`) is spent: background model calls wait for
    /// tomorrow or a higher budget.
    pub budget_spent: bool,
    /// The idle gate: how many times the interval is stretched now (1 = normal, up to 8).
    pub idle_factor: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_take_openclaw_names_numbers_and_defaults() {
        let s: HeartbeatSettings = serde_json::from_value(json!({})).unwrap();
        assert_eq!(s, HeartbeatSettings::default());
        let s: HeartbeatSettings = serde_json::from_value(json!({
            "every": 45, "ackMaxChars": 10,
            "activeHours": {"start": "09:00", "end": "24:00", "timezone": "Asia/Shanghai"}
        }))
        .unwrap();
        assert_eq!(s.every, "45");
        assert_eq!(s.ack_max_chars, 10);
        assert_eq!(s.active_hours.unwrap().end, "24:00");
        let s: HeartbeatSettings = serde_json::from_value(json!({"ack_max_chars": 5})).unwrap();
        assert_eq!(s.ack_max_chars, 5);
        assert_eq!(
            serde_json::to_value(HeartbeatSettings::default()).unwrap(),
            json!({"enabled": true, "every": "30m", "ackMaxChars": 300, "notifications": true,
                "dailyTokenBudget": 0, "idleAfterHours": 8, "reflectionEveryHours": 24,
                "reflectionAddsRoutines": false, "runTimeoutMinutes": 10})
        );
        // A settings file from before the reflection's settings (and the run's deadline) gets
        // them by default.
        let old: HeartbeatSettings = serde_json::from_value(json!({"every": "1h", "idle_after_hours": 2})).unwrap();
        assert_eq!((old.reflection_every_hours, old.reflection_adds_routines), (24, false));
        assert_eq!(old.run_timeout_minutes, 10);
    }
}
