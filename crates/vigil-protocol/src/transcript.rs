//! The transcript: what is stored on disk, line by line, and shown as history.
//!
//! Owns: [`Message`], its [`Role`], [`MessageKind`] and [`ContentBlock`]s, and the [`History`]
//! the window loads on start (each message with its stable id, [`SavedMessage`]).
//! Must never: hold an image's bytes (only its hash, see [`ContentBlock::Image`]); change a
//! field's meaning for lines already on disk.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{StopReason, Usage};

/// Who wrote a transcript message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
    ToolResult,
}

/// One line of a session transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
    /// Milliseconds since the Unix epoch.
    #[ts(type = "number")]
    pub ts: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub stop_reason: Option<StopReason>,
    /// What the message is beyond its role (a steer, a summary); plain messages omit it.
    #[serde(default, skip_serializing_if = "MessageKind::is_plain")]
    #[ts(as = "Option<MessageKind>", optional)]
    pub kind: MessageKind,
}

/// Special kinds of transcript message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageKind {
    #[default]
    Plain,
    /// A user message that reached a running turn (sent as `[INTERRUPT] …`).
    Interrupt,
    /// A summary standing in for every message before index `replaces_before` of the
    /// transcript (the summary's own line comes later: transcripts are append-only).
    Summary {
        #[ts(type = "number")]
        replaces_before: u64,
    },
    /// What happened while nobody typed (a background command's exit notice), which started
    /// a turn on its own, or Vigil's word on why it stopped continuing. Sent to the model as
    /// a user message; shown as a line of its own, not as the user's.
    SystemEvent,
}

impl MessageKind {
    pub fn is_plain(&self) -> bool {
        *self == MessageKind::Plain
    }
}

impl Message {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>, ts: i64) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
            ts,
            model: None,
            usage: None,
            stop_reason: None,
            kind: MessageKind::Plain,
        }
    }

    /// All text blocks joined, for display and tests.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A block of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    /// Model reasoning; Anthropic's signature is kept so it can be sent back verbatim.
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        signature: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
    /// Volatile context (current time, background updates) sent with a user message and
    /// kept out of the system prompt so its bytes stay cacheable; the UI does not show it.
    Context {
        text: String,
    },
    /// An image, stored once per conversation as `sessions/<id>.blobs/<sha256>.<ext>` and
    /// named here by its hash: a transcript never holds the image itself. In a `tool_result`
    /// message it belongs to the `tool_result` block before it.
    Image {
        /// Lowercase hex SHA-256 of the stored bytes.
        sha256: String,
        /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
        mime: String,
    },
}

/// A session's saved conversation, as the UI loads it on start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct History {
    pub session_id: String,
    pub messages: Vec<SavedMessage>,
    /// Lines that could not be loaded (they stay on disk), for a banner.
    pub warnings: Vec<String>,
}

/// A transcript message with its stable id: the id [`crate::HistoryHit::message_id`] names
/// it by (written with the line, or derived from an old line at load), so a search result
/// opens at this very message however the transcript's places moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct SavedMessage {
    pub id: String,
    #[serde(flatten)]
    pub message: Message,
}
