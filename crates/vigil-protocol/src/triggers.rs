//! What wakes a routine besides the clock, what decides without a model whether anything
//! happened, and what runs then (issue 33, item 7: one shape for the routine tools, the
//! `add_routine`/`update_routine` ops and the task block of `HEARTBEAT.md`).
//!
//! - [`Trigger`] — `{"kind": "file", "paths": ["notes/*.md"]}`, `output`, `url`, `webhook`,
//!   or `schedule` (today's cron / every / once; also what no `trigger` means).
//! - [`Check`] — `{"command": "df --output=pcent / | tail -1", "when": "> 80"}`: a command
//!   run in the read-only sandbox and a condition on it (`nonzero`, a comparison, `changed`).
//! - [`Action`] — `agent` (the default: a run with the evidence) or `notify` (no model).
//!
//! Rules: data only; the runtime validates (`vigil_core::watch::shape`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One routine's trigger. No trigger is `schedule`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Trigger {
    /// The routine's `schedule` / `next_run_at`, as before triggers existed.
    Schedule,
    /// Files created, changed or removed under these paths or globs (relative to the
    /// workspace, or absolute inside a folder the user added).
    File {
        paths: Vec<String>,
        /// Changes closer together than this are one fire (default 300 ms).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        debounce_ms: Option<u32>,
    },
    /// A line matching `pattern` (a regular expression) in the output of a process: an id
    /// of a running process of the conversation, or a command the routine starts itself.
    Output { process: String, pattern: String },
    /// An HTTP(S) check every `every` (at least a minute).
    Url {
        url: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        every: Option<String>,
        /// What counts as a change: the status (default) or the body's hash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        when: Option<UrlWhen>,
        /// Fires when the response takes longer than this.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        slower_than_ms: Option<u64>,
    },
    /// A POST to this routine's own secret URL on Vigil's loopback listener.
    Webhook,
}

/// What a `url` trigger compares between two looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum UrlWhen {
    Status,
    Content,
}

/// A command run in the read-only sandbox, and the condition that makes the routine act.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Check {
    pub command: String,
    /// `nonzero` (the default: exit code ≠ 0), a comparison of the first number in the
    /// output (`> 80`, `>= 1`, `< 10`, `<= 5`, `== 0`, `!= 0`), or `changed` (output
    /// differs from the last check's).
    #[serde(default = "nonzero")]
    pub when: String,
}

fn nonzero() -> String {
    "nonzero".into()
}

/// What a fire does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A model run with the evidence in its message.
    #[default]
    Agent,
    /// A notification carrying the evidence; no model.
    Notify,
}

/// How a routine with a trigger or check is doing, for the routine pane.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct WatchStatus {
    /// "Watching `logs/`", "Checking every 5 minutes".
    pub summary: String,
    /// The check or URL is approved as written (a routine whose text changed since waits).
    pub approved: bool,
    /// What approval would allow, for the card: the command, how often, with what access.
    pub approval_text: Option<String>,
    /// Fires since local midnight.
    pub fired_today: u32,
    #[ts(type = "number | null")]
    pub last_fired_at: Option<i64>,
    /// The last fire's evidence, one line.
    pub last_evidence: Option<String>,
    /// Paused by the rate limit: why.
    pub paused: Option<String>,
}
