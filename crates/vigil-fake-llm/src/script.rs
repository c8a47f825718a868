//! The script: the serde types that say what the fake server answers, step by step.
//!
//! This module owns the JSON format (the script file, `POST /_script`) and the Rust
//! constructors tests use to build the same values. It holds data only: how a step is turned
//! into bytes on the wire belongs to `reply`, `anthropic`, `openai` and `sse`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

pub use crate::faults::{Faults, StreamOptions};

/// What the server answers: one [`Step`] per chat request, then the fallback.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Script {
    /// When set, chat and model requests must carry this key (`x-api-key` for Anthropic,
    /// `Authorization: Bearer` for OpenAI) or get the protocol's real 401.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// When set, a request naming another model gets the protocol's real 404; also what
    /// `GET /v1/models` lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<String>>,
    /// Consumed one per chat request, in order, whichever protocol the request speaks.
    #[serde(default)]
    pub steps: Vec<Step>,
    /// Answers every chat request once `steps` are used up; `None` means [`Step::echo`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<Step>,
    /// Answers for a client's side requests (a summariser, a title writer), told apart by
    /// their system prompt: a request whose system prompt contains a reply's text gets its
    /// step, and uses up none of `steps`, so the scripted conversation goes on in order
    /// however many side requests come between.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub side_replies: Vec<SideReply>,
    /// The model's context window, in tokens. When set, a chat request longer than this
    /// (counted as the usage estimate counts: about 4 characters a token, an image 1,600)
    /// gets the protocol's real "too long" error, as a real service refuses it before the
    /// model runs: no step is used up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
}

/// Why a script could not be loaded. Both are fixed by correcting the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// The file could not be read (missing, unreadable): check the path.
    #[error("cannot read script {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    /// The text is not a valid script; the message names the line and column.
    #[error("invalid script{}: {source}", .path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Parse {
        path: Option<PathBuf>,
        source: serde_json::Error,
    },
}

impl Script {
    /// A script that plays `steps` in order, then echoes.
    pub fn steps(steps: Vec<Step>) -> Self {
        Script {
            steps,
            ..Script::default()
        }
    }

    /// Require this API key on every chat and model request.
    pub fn with_api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Accept only these models (and list them on `GET /v1/models`).
    pub fn with_models<S: Into<String>>(mut self, models: impl IntoIterator<Item = S>) -> Self {
        self.models = Some(models.into_iter().map(Into::into).collect());
        self
    }

    /// Answer requests whose system prompt contains `system_contains` with `step`, apart
    /// from the steps.
    pub fn with_side_reply(mut self, system_contains: impl Into<String>, step: Step) -> Self {
        self.side_replies.push(SideReply {
            system_contains: system_contains.into(),
            step,
        });
        self
    }

    /// Refuse requests longer than `tokens` with the protocol's context-overflow error.
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Answer with `step` once the steps are used up, instead of echoing.
    pub fn with_fallback(mut self, step: Step) -> Self {
        self.fallback = Some(step);
        self
    }

    /// Parse a script from JSON text.
    pub fn from_json(text: &str) -> Result<Self, ScriptError> {
        serde_json::from_str(text).map_err(|source| ScriptError::Parse { path: None, source })
    }

    /// Read and parse a script file.
    pub fn from_file(path: &Path) -> Result<Self, ScriptError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
            path: Some(path.to_path_buf()),
            source,
        })
    }
}

/// `{"system_contains": "...", "step": {...}}`: see [`Script::side_replies`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideReply {
    pub system_contains: String,
    pub step: Step,
}

/// One scripted answer, rendered in the protocol of the request that consumes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Step {
    /// Stream fixed text (and optional reasoning).
    Text(TextStep),
    /// Stream `prefix` + the text of the request's last user message.
    Echo(EchoStep),
    /// Stream tool calls, arguments split across several deltas.
    ToolCalls(ToolCallsStep),
    /// Answer with a non-200 status and the protocol's real error body.
    Error(ErrorStep),
    /// Write these exact bytes, ignoring the protocol.
    Raw(RawStep),
}

impl Step {
    /// Stream `text`, ending with `end_turn` / `stop`.
    pub fn text(text: impl Into<String>) -> Self {
        Step::Text(TextStep {
            text: text.into(),
            thinking: None,
            stop_reason: StopReason::EndTurn,
            usage: None,
            stream: StreamOptions::default(),
        })
    }

    /// Echo the last user message with the default prefix `"echo: "`.
    pub fn echo() -> Self {
        Step::Echo(EchoStep {
            prefix: default_echo_prefix(),
            numbered: false,
            stream: StreamOptions::default(),
        })
    }

    /// [`Step::echo`] ending in ` #<request number>`: every reply distinct.
    pub fn echo_numbered() -> Self {
        Step::Echo(EchoStep {
            prefix: default_echo_prefix(),
            numbered: true,
            stream: StreamOptions::default(),
        })
    }

    /// One tool call, no leading text.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        Step::tool_calls(vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }])
    }

    /// Several tool calls in one reply, no leading text.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Step::ToolCalls(ToolCallsStep {
            text: None,
            thinking: None,
            calls,
            usage: None,
            stream: StreamOptions::default(),
        })
    }

    /// A non-200 answer; `error_type` uses Anthropic's names (`rate_limit_error`, …) and is
    /// mapped to OpenAI's type and code for OpenAI requests.
    pub fn error(status: u16, error_type: impl Into<String>, message: impl Into<String>) -> Self {
        Step::Error(ErrorStep {
            status,
            error_type: Some(error_type.into()),
            message: message.into(),
            code: None,
            retry_after: None,
        })
    }

    /// Write each chunk as its own body chunk, status 200, `text/event-stream`.
    pub fn raw<C: Into<RawChunk>>(chunks: impl IntoIterator<Item = C>) -> Self {
        Step::Raw(RawStep {
            status: 200,
            content_type: default_content_type(),
            chunks: chunks.into_iter().map(Into::into).collect(),
            delay_ms: 0,
        })
    }

    /// Set the reasoning text (text and tool-call steps; ignored otherwise).
    pub fn with_thinking(mut self, thinking: impl Into<String>) -> Self {
        match &mut self {
            Step::Text(s) => s.thinking = Some(thinking.into()),
            Step::ToolCalls(s) => s.thinking = Some(thinking.into()),
            _ => {}
        }
        self
    }

    /// Set the text (the leading text of a tool-call step; ignored for other kinds).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        match &mut self {
            Step::Text(s) => s.text = text.into(),
            Step::ToolCalls(s) => s.text = Some(text.into()),
            _ => {}
        }
        self
    }

    /// Set how a text step ends (`max_tokens` to test truncation; ignored otherwise).
    pub fn with_stop_reason(mut self, stop_reason: StopReason) -> Self {
        if let Step::Text(s) = &mut self {
            s.stop_reason = stop_reason;
        }
        self
    }

    /// Set the `Retry-After` header of an error step (ignored otherwise).
    pub fn with_retry_after(mut self, retry_after: impl Into<String>) -> Self {
        if let Step::Error(s) = &mut self {
            s.retry_after = Some(retry_after.into());
        }
        self
    }

    /// Set the token counts reported (text and tool-call steps; ignored otherwise).
    pub fn with_usage(self, input_tokens: u64, output_tokens: u64) -> Self {
        self.with_usage_of(Usage::new(input_tokens, output_tokens))
    }

    /// Set the whole usage reported (cached tokens and cost too).
    pub fn with_usage_of(mut self, usage: Usage) -> Self {
        match &mut self {
            Step::Text(s) => s.usage = Some(usage),
            Step::ToolCalls(s) => s.usage = Some(usage),
            _ => {}
        }
        self
    }

    /// Replace the streaming options (chunking, delay, faults) of a streaming step.
    pub fn with_stream(mut self, options: StreamOptions) -> Self {
        if let Some(s) = self.stream_mut() {
            *s = options;
        }
        self
    }

    /// Replace only the faults of a streaming step.
    pub fn with_faults(mut self, faults: Faults) -> Self {
        if let Some(s) = self.stream_mut() {
            s.faults = faults;
        }
        self
    }

    /// Characters per text/arguments delta (minimum 1).
    pub fn with_chunk_chars(mut self, chunk_chars: usize) -> Self {
        if let Some(s) = self.stream_mut() {
            s.chunk_chars = chunk_chars;
        }
        self
    }

    /// Milliseconds between SSE events (or raw chunks).
    pub fn with_delay_ms(mut self, delay_ms: u64) -> Self {
        match &mut self {
            Step::Raw(s) => s.delay_ms = delay_ms,
            other => {
                if let Some(s) = other.stream_mut() {
                    s.delay_ms = delay_ms;
                }
            }
        }
        self
    }

    fn stream_mut(&mut self) -> Option<&mut StreamOptions> {
        match self {
            Step::Text(s) => Some(&mut s.stream),
            Step::Echo(s) => Some(&mut s.stream),
            Step::ToolCalls(s) => Some(&mut s.stream),
            Step::Error(_) | Step::Raw(_) => None,
        }
    }
}

/// `{"kind":"text", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextStep {
    #[serde(default)]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    #[serde(default)]
    pub stop_reason: StopReason,
    /// Missing counts are estimated from the request and reply sizes (about 4 chars a token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(flatten)]
    pub stream: StreamOptions,
}

/// `{"kind":"echo", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EchoStep {
    #[serde(default = "default_echo_prefix")]
    pub prefix: String,
    /// Ends the echo with ` #<n>`, the server's request number, so no two replies are the
    /// same (a heartbeat would drop a repeated alert as a duplicate).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub numbered: bool,
    #[serde(flatten)]
    pub stream: StreamOptions,
}

/// `{"kind":"tool_calls", ...}`; always ends with `tool_use` / `tool_calls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallsStep {
    /// Text streamed before the calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    pub calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(flatten)]
    pub stream: StreamOptions,
}

/// One tool call; `arguments` is sent as compact JSON split into several deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

/// `{"kind":"error", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorStep {
    #[serde(default = "default_error_status")]
    pub status: u16,
    /// Anthropic's error type; default derived from `status` (429 → `rate_limit_error`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_type: Option<String>,
    #[serde(default = "default_error_message")]
    pub message: String,
    /// OpenAI's `error.code`; default derived from the error type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `Retry-After` header value; a JSON number or string.
    #[serde(
        default,
        deserialize_with = "string_or_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry_after: Option<String>,
}

/// `{"kind":"raw", ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawStep {
    #[serde(default = "default_raw_status")]
    pub status: u16,
    #[serde(default = "default_content_type")]
    pub content_type: String,
    pub chunks: Vec<RawChunk>,
    /// Milliseconds between chunks.
    #[serde(default)]
    pub delay_ms: u64,
}

/// One raw body chunk: a JSON string (UTF-8) or an array of byte values, so a test can send
/// bytes that are not valid UTF-8.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RawChunk {
    Text(String),
    Bytes(Vec<u8>),
}

impl RawChunk {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            RawChunk::Text(s) => s.as_bytes(),
            RawChunk::Bytes(b) => b,
        }
    }
}

impl From<&str> for RawChunk {
    fn from(s: &str) -> Self {
        RawChunk::Text(s.to_owned())
    }
}

impl From<String> for RawChunk {
    fn from(s: String) -> Self {
        RawChunk::Text(s)
    }
}

impl From<Vec<u8>> for RawChunk {
    fn from(b: Vec<u8>) -> Self {
        RawChunk::Bytes(b)
    }
}

/// Why the reply ended. OpenAI: `end_turn`/`stop_sequence` → `stop`, `max_tokens` →
/// `length`, `tool_use` → `tool_calls`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    #[default]
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
}

/// Reported token counts; a missing one is estimated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// OpenAI-compatible replies: `prompt_tokens_details.cached_tokens`. (Anthropic's cache
    /// counts come from the fake's own prompt cache.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// OpenAI-compatible replies: OpenRouter's `usage.cost`, in dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl Usage {
    /// Both counts given.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Usage {
            input_tokens: Some(input_tokens),
            output_tokens: Some(output_tokens),
            ..Usage::default()
        }
    }
}

fn default_echo_prefix() -> String {
    "echo: ".to_owned()
}

fn default_error_status() -> u16 {
    500
}

fn default_error_message() -> String {
    "fake error".to_owned()
}

fn default_raw_status() -> u16 {
    200
}

fn default_content_type() -> String {
    "text/event-stream".to_owned()
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// `Retry-After` is a string on the wire, but scripts naturally write `"retry_after": 2`.
fn string_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}
