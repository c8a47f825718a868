//! What happened while the user was away: the "While you were away" card the window shows
//! when they come back after an absence of at least the `away_after_minutes` setting.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The card's content, from when the user left to when they came back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AwaySummary {
    /// When the desktop session went idle or locked (ms since the epoch).
    #[ts(type = "number")]
    pub away_since: i64,
    #[ts(type = "number")]
    pub back_at: i64,
    /// In the card's order: what ran, what failed or is unknown, what waits for the user,
    /// what was missed; within each, the latest first.
    pub lines: Vec<AwayLine>,
}

/// One line of the card; a click opens `target`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct AwayLine {
    pub kind: AwayKind,
    /// What it is about: a routine's or a conversation's title, or "Heartbeat".
    pub title: String,
    /// What happened, as a clause: "ran 3 times", "failed: connection refused".
    pub text: String,
    /// When it last happened (ms since the epoch).
    #[ts(type = "number")]
    pub at: i64,
    pub target: AwayTarget,
}

/// Which section of the card a line is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum AwayKind {
    Ran,
    Failed,
    /// Cut off after it changed something: whether it did its work is not known.
    Unknown,
    /// Waits for the user's approval.
    Waiting,
    /// Due while it could not run, and not run.
    Missed,
}

/// What a click on a line opens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AwayTarget {
    /// A conversation, at the message with this timestamp when there is one; at the
    /// approval card when `approval_id` names one.
    Conversation {
        session_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional, type = "number")]
        message_ts: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        approval_id: Option<String>,
    },
    /// A routine in the Routines pane.
    Routine { routine_id: String },
}
