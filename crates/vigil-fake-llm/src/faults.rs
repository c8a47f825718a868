//! Streaming options and wire faults: the part of a script step that says how the bytes
//! travel rather than what they say. Flattened into the step's JSON.
//!
//! Data only; `sse` is what carries the faults out.

use serde::{Deserialize, Serialize};

/// How a streaming step is cut up and timed, flattened into the step's JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamOptions {
    /// Characters per text/thinking/arguments delta (minimum 1).
    #[serde(default = "default_chunk_chars")]
    pub chunk_chars: usize,
    /// Milliseconds between SSE events.
    #[serde(default)]
    pub delay_ms: u64,
    #[serde(flatten)]
    pub faults: Faults,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            chunk_chars: default_chunk_chars(),
            delay_ms: 0,
            faults: Faults::default(),
        }
    }
}

/// Wire faults for streaming steps. Event counts include every SSE event (`ping` too) but
/// never comments or the injected invalid event. They apply to streamed replies only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    /// `\r\n` line endings in the SSE framing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub crlf: bool,
    /// A `: keep-alive` comment between events.
    #[serde(default, skip_serializing_if = "is_false")]
    pub comments: bool,
    /// Re-cut the body into chunks of this many bytes, each flushed separately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_bytes: Option<usize>,
    /// Send this many events, then abort the connection (no terminator, no final chunk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drop_after_events: Option<usize>,
    /// Send this many events, then go silent for `stall_ms`, then go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_after_events: Option<usize>,
    /// Length of the stall; default one hour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_ms: Option<u64>,
    /// Send this many events, then the protocol's in-stream error event, then end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_after_events: Option<usize>,
    /// Error type of the in-stream error; default `overloaded_error`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    /// Message of the in-stream error; default `Overloaded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Send this many events, then one event whose data is not JSON, then go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_json_after_events: Option<usize>,
    /// Leave out `message_stop` / `data: [DONE]` and end the body cleanly.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_terminator: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn default_chunk_chars() -> usize {
    4
}
