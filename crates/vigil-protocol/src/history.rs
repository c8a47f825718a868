//! The user's search over every past conversation, job and heartbeat run (`search_history`
//! op, `history_results` event).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// One message found by a search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct HistoryHit {
    /// The conversation (or job / heartbeat session) it is in.
    pub session_id: String,
    /// The session's title now; empty if it has none.
    pub title: String,
    /// `conversation`, `job` or `heartbeat`.
    pub kind: String,
    /// The message's stable id: where the window opens the conversation, at the loaded
    /// message with this [`crate::SavedMessage::id`].
    pub message_id: String,
    /// `user`, `assistant`, `tool_result` or `event`.
    pub role: String,
    #[ts(type = "number")]
    pub ts: i64,
    /// Words around the match, in order; the matched words are parts of their own.
    pub snippet: Vec<SnippetPart>,
}

/// A run of snippet text, matched by the query or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SnippetPart {
    pub text: String,
    pub matched: bool,
}
