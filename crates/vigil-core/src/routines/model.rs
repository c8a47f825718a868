//! The routine as it is written in `HEARTBEAT.md` (schema v2, seed 003 §11, plus `kind` for
//! deterministic tasks and three bookkeeping fields the scheduler needs to claim runs
//! safely), the defaults a v1 task gets, and `infer_execution_mode`.
//!
//! Timestamps are ISO-8601 with an offset on disk (seed 003 §11.3) and milliseconds in
//! memory. Fields this version does not know are kept, so an older Vigil rewriting the
//! block never erases what a newer one wrote.
//!
//! Must never: decide when something runs (that is [`super::schedule`]) or touch a file.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use vigil_protocol::{CatchUp, ExecutionMode, RoutineSource, RoutineState, WakeMode};

/// `timeout_seconds` when a task does not say (short enough that inference says `inline`).
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 60;
/// `timeout_seconds` of an isolated routine created without one: a job may use tools.
pub const DEFAULT_JOB_TIMEOUT_SECONDS: u32 = 600;
/// `max_retry` when a task does not say (seed 003 §11 example).
pub const DEFAULT_MAX_RETRY: u32 = 3;
/// Longest accepted `timeout_seconds` (a day).
pub const MAX_TIMEOUT_SECONDS: u32 = 24 * 3600;
/// Deterministic kind: the reminder text and the current time, no model call.
pub const KIND_TIME_REMINDER: &str = "time_reminder";

/// One task of the JSON block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Routine {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// Cron expression or interval; `None` for a one-shot (`next_run_at` only).
    #[serde(
        default,
        skip_serializing_if = "is_none_or_empty",
        deserialize_with = "empty_as_none"
    )]
    pub schedule: Option<String>,
    /// IANA zone; filled with the user's zone when missing (v1), then written explicitly.
    #[serde(default)]
    pub timezone: Option<String>,
    /// Missing in a v1 task means `inline` (seed 003 §13.1 #20).
    #[serde(default = "inline")]
    pub execution_mode: ExecutionMode,
    /// For an inline routine: wake the heartbeat when due (`now`, the default, not written)
    /// or ride along with the next interval heartbeat (`next_heartbeat`).
    #[serde(default, skip_serializing_if = "is_now")]
    pub wake_mode: WakeMode,
    /// What happens to due times missed while Vigil could not run it: `once` (the default,
    /// not written), `skip` or `all`.
    #[serde(default, skip_serializing_if = "is_once")]
    pub catch_up: CatchUp,
    #[serde(default)]
    pub source: RoutineSource,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub state: RoutineState,
    #[serde(default, with = "iso")]
    pub last_run_at: Option<i64>,
    #[serde(default, with = "iso")]
    pub next_run_at: Option<i64>,
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u32,
    #[serde(default)]
    pub retry: u32,
    #[serde(default = "default_max_retry")]
    pub max_retry: u32,
    #[serde(default)]
    pub error_message: Option<String>,
    #[serde(default, with = "iso")]
    pub created_at: Option<i64>,
    /// A deterministic task kind (`time_reminder`); `None` runs through the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Who runs it now: `<pid>:<scheduler instance>`, set by the claim (pending → running).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    /// When the running attempt started, for the stuck-run limit.
    #[serde(default, with = "iso", skip_serializing_if = "Option::is_none")]
    pub run_started_at: Option<i64>,
    /// The slot being run or retried (a retry's `next_run_at` is its back-off, not the slot).
    #[serde(default, with = "iso", skip_serializing_if = "Option::is_none")]
    pub due_at: Option<i64>,
    /// The running attempt's run id (a job's session is `job_<id>_<run_id>`), so a run
    /// cut off by a crash is recorded under its own id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The first thing the running attempt did that changes something (`exec: …`),
    /// written before it started: after a crash, the evidence that retrying could do it
    /// twice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effect: Option<String>,
    /// For a `catch_up: all` run in hand: how many earlier due times it also stands for,
    /// from `missed_from`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub missed_count: u32,
    #[serde(default, with = "iso", skip_serializing_if = "Option::is_none")]
    pub missed_from: Option<i64>,
    /// A run that ended `unknown` and waits for the user's Retry or Dismiss.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_run: Option<UnknownRun>,
    /// A routine the agent registered on its own has been announced to the user.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub announced: bool,
    /// Found by the daily reflection and suggested, not made: it stays off until the user
    /// turns it on (which makes it an ordinary routine).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suggested: bool,
    /// When it was removed without `hard` (seed 003 §8.2: `remove --id` keeps the entry,
    /// `remove --id --hard` deletes it): kept in the block, never run, listed apart so the
    /// user can restore it. `None` for a routine in use.
    #[serde(default, with = "iso", skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<i64>,
    /// What wakes it besides its schedule (issue 33); `None` is the schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger: Option<vigil_protocol::Trigger>,
    /// A command in the read-only sandbox that decides, without the model, whether to act.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<vigil_protocol::Check>,
    /// What a fire does; `None` is `agent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<vigil_protocol::Action>,
    /// The conversation that made it (the agent's `routine_add` there, or the one open in
    /// the user's editor): an inline fire is a turn there. `None` (a routine written by hand
    /// into `HEARTBEAT.md`, or made by the heartbeat or a job): the main conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<String>,
    /// Fields this version does not know, kept as they were.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A run cut off after it changed something, waiting for the user.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnknownRun {
    pub run_id: String,
    /// The due time it ran for.
    #[serde(default, with = "iso")]
    pub due_at: Option<i64>,
}

/// An empty schedule reads as none, as it is written (found by the task-block fuzz target:
/// `"schedule": ""` came back from a write as a different routine).
fn empty_as_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s: Option<String> = serde::Deserialize::deserialize(d)?;
    Ok(s.filter(|s| !s.trim().is_empty()))
}

fn is_none_or_empty(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

fn is_now(m: &WakeMode) -> bool {
    *m == WakeMode::Now
}

fn is_once(c: &CatchUp) -> bool {
    *c == CatchUp::Once
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn inline() -> ExecutionMode {
    ExecutionMode::Inline
}

fn yes() -> bool {
    true
}

fn default_timeout() -> u32 {
    DEFAULT_TIMEOUT_SECONDS
}

fn default_max_retry() -> u32 {
    DEFAULT_MAX_RETRY
}

impl Routine {
    /// A new pending routine with every default, stamped `now`.
    pub fn new(id: String, title: String, now_ms: i64) -> Self {
        Self {
            id,
            title,
            description: String::new(),
            schedule: None,
            timezone: None,
            execution_mode: ExecutionMode::Inline,
            wake_mode: WakeMode::Now,
            catch_up: CatchUp::Once,
            source: RoutineSource::Manual,
            enabled: true,
            state: RoutineState::Pending,
            last_run_at: None,
            next_run_at: None,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            retry: 0,
            max_retry: DEFAULT_MAX_RETRY,
            error_message: None,
            created_at: Some(now_ms),
            kind: None,
            claimed_by: None,
            run_started_at: None,
            due_at: None,
            run_id: None,
            side_effect: None,
            missed_count: 0,
            missed_from: None,
            unknown_run: None,
            announced: false,
            suggested: false,
            removed_at: None,
            trigger: None,
            check: None,
            action: None,
            conversation: None,
            extra: Default::default(),
        }
    }

    /// The schedule text, `None` when empty.
    pub fn schedule_text(&self) -> Option<&str> {
        self.schedule.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }

    /// Whether the routine repeats (has a schedule) rather than running once.
    pub fn recurring(&self) -> bool {
        self.schedule_text().is_some()
    }

    /// Woken by something other than the clock (a file, an output line, a URL, a webhook):
    /// the scheduler's tick never claims it; `crate::watch` fires it.
    pub fn triggered(&self) -> bool {
        self.trigger
            .as_ref()
            .is_some_and(|t| !matches!(t, vigil_protocol::Trigger::Schedule))
    }

    /// May be claimed and run: enabled and not removed.
    pub fn live(&self) -> bool {
        self.enabled && self.removed_at.is_none()
    }

    /// Active: counts against the soft limit and is considered for duplicates.
    pub fn active(&self) -> bool {
        self.live() && !matches!(self.state, RoutineState::Done | RoutineState::Failed)
    }
}

/// The framework's guess when the agent gave no mode (seed 003 §4.6): long timeouts and
/// long instructions need a job of their own.
pub fn infer_execution_mode(timeout_seconds: u32, description: &str) -> ExecutionMode {
    if timeout_seconds > 60 || description.chars().count() > 200 {
        ExecutionMode::Isolated
    } else {
        ExecutionMode::Inline
    }
}

/// `2026-02-12T09:00:00+00:00` for a millisecond time.
pub fn iso_string(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(SecondsFormat::AutoSi, false))
        .unwrap_or_else(|| ms.to_string())
}

/// Parses ISO-8601 with an offset (`Z` or `+01:00`); a bare number is milliseconds.
pub fn parse_iso(s: &str) -> Result<i64, String> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<i64>() {
        return Ok(ms);
    }
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.timestamp_millis())
        .map_err(|e| format!("\"{s}\" is not an ISO-8601 time with an offset (like 2026-02-12T09:00:00+00:00): {e}"))
}

/// Optional ISO-8601 times as strings on disk, milliseconds in memory.
mod iso {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(ms) => s.serialize_str(&iso_string(*ms)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            S(String),
            N(i64),
        }
        match Option::<Raw>::deserialize(d)? {
            None => Ok(None),
            Some(Raw::N(ms)) => Ok(Some(ms)),
            Some(Raw::S(s)) if s.trim().is_empty() => Ok(None),
            Some(Raw::S(s)) => parse_iso(&s).map(Some).map_err(serde::de::Error::custom),
        }
    }
}

/// `id` as a file or session name part: ASCII letters, digits, `-` and `_` kept, anything
/// else `_`, at most `max` characters.
pub(crate) fn safe_name(id: &str, max: usize) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(max)
        .collect()
}

/// 8 hex characters.
pub(crate) fn short_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_v1_task_gets_v2_defaults() {
        let r: Routine = serde_json::from_value(json!({
            "id": "water", "title": "Drink water", "schedule": "1h",
            "next_run_at": "2026-02-12T09:00:00+00:00", "state": "pending"
        }))
        .unwrap();
        assert_eq!(r.execution_mode, ExecutionMode::Inline);
        assert_eq!(r.source, RoutineSource::Manual);
        assert!(r.enabled);
        assert_eq!(r.timezone, None);
        assert_eq!(r.description, "");
        assert_eq!((r.timeout_seconds, r.retry, r.max_retry), (60, 0, 3));
        assert_eq!(r.next_run_at, Some(1_770_886_800_000));
    }

    #[test]
    fn unknown_fields_survive_a_round_trip_and_times_are_iso() {
        let v = json!({
            "id": "a", "title": "A", "description": "", "timezone": "UTC", "execution_mode": "isolated",
            "source": "chat", "enabled": true, "state": "pending", "last_run_at": null,
            "next_run_at": "2026-02-12T09:00:00+00:00", "timeout_seconds": 120, "retry": 0,
            "max_retry": 3, "error_message": null, "created_at": "2026-02-11T14:30:00+00:00",
            "future_field": {"x": 1}
        });
        let r: Routine = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(r.extra["future_field"], json!({"x": 1}));
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn inference_follows_the_seed() {
        assert_eq!(infer_execution_mode(61, "x"), ExecutionMode::Isolated);
        assert_eq!(infer_execution_mode(60, "x"), ExecutionMode::Inline);
        assert_eq!(infer_execution_mode(30, &"y".repeat(201)), ExecutionMode::Isolated);
        assert_eq!(infer_execution_mode(30, &"y".repeat(200)), ExecutionMode::Inline);
    }
}
