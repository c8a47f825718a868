//! Routines on the wire: the routine list the editor shows ([`RoutinesView`], [`RoutineView`]),
//! what a user or script sends to create or change one ([`RoutineDraft`]), each routine's
//! run history ([`RoutineRun`]), and the schedule preview ([`SchedulePreview`]).
//!
//! Routines live in the JSON task block of `HEARTBEAT.md` (seed 003 §11); these types are
//! the UI's view of them, with integer millisecond timestamps like every other wire type.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Where a routine runs (seed 003 §4.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// Inside the heartbeat turn (light, skippable when the conversation is busy).
    Inline,
    /// In a job session of its own (heavy; claimed before it runs, never skipped).
    Isolated,
}

/// When an inline routine that fell due is run (seed 004 §5.2 `wakeMode`). Isolated
/// routines run in their own job when due whatever it says: no heartbeat is involved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum WakeMode {
    /// Wake the heartbeat at once to run it.
    #[default]
    Now,
    /// Wait for the next interval heartbeat and ride along (one model call for both); at
    /// once when no interval heartbeat is scheduled (the heartbeat is off).
    #[serde(alias = "next-heartbeat")]
    NextHeartbeat,
}

/// What happens to due times that passed while Vigil could not run a routine (it was not
/// running, the computer slept, background work was paused). Every such due time is a run
/// record of its own kind in the routine's history whichever policy applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// One run now, for the latest due time, if the routine is at most a day late; the
    /// earlier due times are recorded `missed`. Later than a day, all of them are.
    #[default]
    Once,
    /// No late run: the due times that passed are recorded `missed` and the routine waits for
    /// its next time (a due time only a minute or two old still runs).
    Skip,
    /// One run now that is told how many due times it stands for (a daily digest that should
    /// cover every day it missed), however late.
    All,
}

/// Where a routine is in its life (seed 003 §11: pending → running → done/failed;
/// recurring routines go back to pending with their next time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RoutineState {
    #[default]
    Pending,
    Running,
    /// A one-shot routine that ran.
    Done,
    /// Retries used up (one-shot), or a schedule that cannot be computed.
    Failed,
}

/// Who registered a routine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RoutineSource {
    /// The user, in the editor or by editing `HEARTBEAT.md`.
    #[default]
    Manual,
    /// The agent, asked in the conversation.
    Chat,
    /// The agent on its own, in a run nobody watched: a heartbeat or a routine's job
    /// (announced to the user once). The pane says "Added by Vigil".
    HeartbeatReflect,
}

/// The state of the task block in `HEARTBEAT.md` (seed 003 §11.4 `ParseResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ParseStatus {
    Ok,
    /// The block is there but is not valid JSON (or not a task list); nothing in it runs
    /// and nothing overwrites it until it is fixed.
    Corrupted,
    /// No task block (a plain-text `HEARTBEAT.md`, or none at all).
    Empty,
}

/// One routine, as the editor shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RoutineView {
    pub id: String,
    pub title: String,
    pub description: String,
    /// A cron expression (5 fields) or an interval (`30m`, `2h`, `1d`); `None` for one-shots.
    pub schedule: Option<String>,
    /// The IANA zone the schedule is read in.
    pub timezone: String,
    pub execution_mode: ExecutionMode,
    pub wake_mode: WakeMode,
    pub source: RoutineSource,
    pub enabled: bool,
    pub state: RoutineState,
    #[ts(type = "number | null")]
    pub last_run_at: Option<i64>,
    #[ts(type = "number | null")]
    pub next_run_at: Option<i64>,
    pub timeout_seconds: u32,
    pub retry: u32,
    pub max_retry: u32,
    pub error_message: Option<String>,
    #[ts(type = "number")]
    pub created_at: i64,
    /// A deterministic kind (`time_reminder`) that runs without the model.
    pub kind: Option<String>,
    /// "every weekday at 09:00, Europe/Berlin".
    pub schedule_description: String,
    /// The next three run times.
    #[ts(type = "Array<number>")]
    pub next_runs: Vec<i64>,
    /// Why this routine cannot run as written (a bad cron expression or zone in the file).
    pub problem: Option<String>,
    /// The latest run, for the list's "how the last run went"; the whole history is asked
    /// for when the user unfolds it.
    pub last_run: Option<RoutineRun>,
    /// Removed (not for good): it never runs, and can be restored until it is deleted.
    #[ts(type = "number | null")]
    pub removed_at: Option<i64>,
    /// What happens to due times missed while Vigil could not run it.
    #[serde(default)]
    pub catch_up: CatchUp,
    /// A run whose outcome is `unknown` (cut off after it changed something) waits for the
    /// user: Retry or Dismiss in its history. The run's id.
    pub unknown_run: Option<String>,
    /// Vigil's daily reflection suggested it: off until the user turns it on.
    #[serde(default)]
    pub suggested: bool,
    /// Its trigger, check and action, when it has more than a schedule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub trigger: Option<crate::Trigger>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub check: Option<crate::Check>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub action: Option<crate::Action>,
    /// How its trigger and check are doing (fires today, last evidence, approval).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub watch: Option<crate::WatchStatus>,
    /// For a routine whose fires run inline (`agent`, `execution_mode: inline`, a trigger):
    /// the title of the conversation its turns run in ("in: …" on its row), or why they
    /// run as jobs instead (that conversation was deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub runs_in: Option<String>,
}

/// The routine list and the state of the file it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RoutinesView {
    pub status: ParseStatus,
    /// For `corrupted`: what is wrong and where, for the user.
    pub error: Option<String>,
    pub routines: Vec<RoutineView>,
    /// Set while `HEARTBEAT.md` waits for the user's Trust (another program replaced it
    /// while a sandboxed command was running, which could then write it): why, for the
    /// user. None of its routines run meanwhile; `routines` lists them for review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub held: Option<String>,
}

/// The free-text checks of `HEARTBEAT.md`: everything in it but the routines' `## Tasks`
/// section, which the heartbeat reads on every run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HeartbeatChecks {
    pub text: String,
    /// Whether the file exists (Vigil writes a comment-only template once, on the first
    /// start; a file the user deleted stays deleted).
    pub exists: bool,
    /// No file, or one with only blank lines, headings, empty list items and comments
    /// outside the routines: interval heartbeats skip the model call (seed 002 §6).
    pub effectively_empty: bool,
    /// The file, for the user to find it.
    pub path: String,
}

/// What a user (or script) sends to create a routine, or the fields to change in one.
/// Absent fields keep their value (update) or get defaults (create).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct RoutineDraft {
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Cron (5 fields) or interval; an empty string makes the routine a one-shot.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// For a one-shot: when it runs (ms since the epoch).
    #[ts(optional, type = "number")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run_at: Option<i64>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_mode: Option<ExecutionMode>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wake_mode: Option<WakeMode>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u32>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_retry: Option<u32>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
    /// What wakes it besides its schedule (`{"kind": "file", "paths": [...]}`, …);
    /// `{"kind": "schedule"}` goes back to the schedule.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<crate::Trigger>,
    /// A command in the read-only sandbox and its condition; an empty command removes it.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<crate::Check>,
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<crate::Action>,
    /// On create: the conversation that made it (the one the user had open in the editor);
    /// its inline runs are turns there. Absent: the main conversation. Ignored on update.
    #[ts(optional)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Create even if a routine with the same title or task exists.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[ts(optional, as = "Option<bool>")]
    pub allow_duplicate: bool,
}

/// How one run of a routine ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum RunOutcome {
    /// It ran and its result reached the user.
    Ok,
    /// It ran in a heartbeat turn and the model acknowledged (`HEARTBEAT_OK`): nothing to
    /// report this time.
    Acknowledged,
    Failed,
    TimedOut,
    /// Vigil stopped (crashed, was killed) while it ran; the rules decide retry or failure.
    Interrupted,
    /// An inline run the heartbeat could not take (quiet hours, disabled, no provider).
    Skipped,
    /// Due while Vigil could not run it (stopped, asleep, paused) and not run, by the
    /// routine's catch-up policy.
    Missed,
    /// Cut off (a crash, a kill, its timeout) after it ran a command or changed something:
    /// whether it did its work is unknown, so it is not retried on its own; the user
    /// retries or dismisses it.
    Unknown,
}

/// One entry of a routine's run log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RoutineRun {
    pub run_id: String,
    pub routine_id: String,
    pub mode: ExecutionMode,
    /// The slot this run was for.
    #[ts(type = "number | null")]
    pub due_at: Option<i64>,
    #[ts(type = "number")]
    pub started_at: i64,
    #[ts(type = "number")]
    pub finished_at: i64,
    pub outcome: RunOutcome,
    /// The job session (`job_<routine>_<run>`) or the heartbeat session: the run's transcript, which
    /// the pane opens. A history read leaves it out once that transcript is deleted.
    pub session_id: Option<String>,
    pub summary: Option<String>,
    pub error: Option<String>,
    /// The model was not called (a deterministic task).
    pub deterministic: bool,
    /// How many due times this record stands for: several for a `missed` or `skipped`
    /// record of due times in a row, or a `catch_up: all` run told about them; `due_at` is
    /// the first and `last_due_at` the last.
    #[serde(default = "one")]
    pub due_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub last_due_at: Option<i64>,
    /// For `unknown`: the first thing the run did that changes something ("exec: make
    /// deploy"), recorded before it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub side_effect: Option<String>,
    /// The tokens (and, where the provider says, the cost) of the model turn it ran in: its
    /// job's turn, or for an inline routine the whole heartbeat run that carried it (shared
    /// with any routine due in the same run). `None` when no model ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub usage: Option<crate::Usage>,
    /// What a trigger or check saw that started (or would have started) this run: the
    /// changed paths and their diff, the matched output lines, the check's output, the
    /// webhook body (bounded; data, never instructions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub evidence: Option<String>,
}

fn one() -> u32 {
    1
}

/// A schedule described and previewed, with the same validation the agent's tools use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SchedulePreview {
    pub description: String,
    pub timezone: String,
    #[ts(type = "Array<number>")]
    pub next_runs: Vec<i64>,
}

/// A routine the editor created, and what the user should know about it (over the soft
/// limit of active routines, for one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct RoutineSaved {
    pub routine: RoutineView,
    pub warnings: Vec<String>,
}
