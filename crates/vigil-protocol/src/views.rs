//! The sidebar's and the Processes panel's views: a conversation and a process as the window
//! lists them.
//!
//! Owns: [`SessionSummary`] and [`ProcessSummary`].
//! Must never: carry a transcript or a process's output (those come as their own events).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The Processes panel's view of one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProcessSummary {
    /// 8 hex characters.
    pub id: String,
    /// The session that owns it (`user` for commands started from the panel).
    pub owner: String,
    pub command: String,
    pub cwd: String,
    pub pid: Option<u32>,
    /// `running`, `exited`, `killed` or `failed`.
    pub state: String,
    #[ts(type = "number")]
    pub started_at: i64,
    #[ts(type = "number | null")]
    pub ended_at: Option<i64>,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// Running in the background (its exit is announced).
    pub background: bool,
    /// Whether it has a terminal (else plain pipes).
    pub pty: bool,
}

/// The sidebar's view of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SessionSummary {
    pub id: String,
    pub title: String,
    #[ts(type = "number")]
    pub created_at: i64,
    #[ts(type = "number")]
    pub updated_at: i64,
    /// Turns Vigil ran on its own here since the user's last message.
    #[serde(default)]
    pub continuations: u32,
    /// This conversation's own limit on continuations in a row (`0`: never continues on its
    /// own); absent, the global setting applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub continuation_limit: Option<u32>,
}
