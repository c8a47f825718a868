//! Events out of the runtime: one [`EventEnvelope`] for every event, with the tagged
//! [`Event`] payload flattened into it, and who and what kind of work caused it.
//!
//! Owns: the envelope's fields, every event's name and payload, [`Scope`], [`Source`],
//! [`StopReason`].
//! Must never: let a payload field share an envelope field's name (`envelope_tests.rs`); rename
//! an event scripts rely on.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{
    ApprovalDecision, ApprovalKind, AwaySummary, BackgroundUpdate, ChannelsView, CommandPart, ErrorKind, ExecRun,
    HealthView, HeartbeatSkip, HeartbeatStatus, HistoryHit, McpCallCard, McpView, Message, NotificationKind,
    ProcessSummary, RoutinesView, SessionSummary, Usage, WakeReason,
};

/// Which kind of work an event belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The conversation the user has with Vigil.
    Primary,
    /// A heartbeat run.
    Heartbeat,
    /// An isolated routine job.
    Job,
    /// The runtime itself (settings, start-up, shutdown).
    App,
}

/// Who caused an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    User,
    Agent,
    Provider,
    Heartbeat,
    Scheduler,
    Exec,
    System,
    /// A turn Vigil started on its own in a conversation: a background command the
    /// conversation's agent started has ended (a continuation).
    Background,
}

/// Every event leaves the runtime in this envelope; the payload's `type` tag sits beside
/// the envelope fields on the wire (`{"id":…,"type":"text_delta","text":"…"}`), so no
/// payload field may share an envelope field's name (`envelope_tests.rs` checks those that
/// name an id or a session).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct EventEnvelope {
    /// Unique per event; lets the UI drop duplicates after a reconnect.
    pub id: String,
    /// Milliseconds since the Unix epoch.
    #[ts(type = "number")]
    pub ts: i64,
    pub session_id: Option<String>,
    pub scope: Scope,
    pub source: Source,
    /// The turn (run) this event belongs to, if any.
    pub run_id: Option<String>,
    #[serde(flatten)]
    pub event: Event,
}

/// The payload of an [`EventEnvelope`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A turn began; the user's message is already in the transcript.
    TurnStarted { user_text: String },
    /// Assistant text, in stream order.
    TextDelta { text: String },
    /// Reasoning/thinking text, in stream order; kept apart from the answer.
    ReasoningDelta { text: String },
    /// The provider failed transiently; the request is retried after `delay_ms`.
    Retrying {
        attempt: u32,
        #[ts(type = "number")]
        delay_ms: u64,
        reason: String,
    },
    /// The turn ended. `stop_reason` says why (`cancelled` after a Stop, `error` after an
    /// error); `detail` explains a stop by the turn policy. `usage` sums every round.
    TurnFinished {
        stop_reason: StopReason,
        usage: Usage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        detail: Option<String>,
    },
    /// The model called a tool; it is running now.
    ToolCallStarted {
        call_id: String,
        name: String,
        input: serde_json::Value,
    },
    /// Live output of a running tool (the current tail, throttled).
    ToolCallUpdate { call_id: String, output: String },
    /// A tool finished; `content` is what the model sees (an edit's is its diff).
    ToolCallFinished {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
    /// A message sent while a turn runs; it reaches the model at the turn's next step.
    MessageQueued { text: String },
    /// Queued messages were handed to the model (as `[INTERRUPT] …`).
    QueueConsumed { count: u32 },
    /// Older messages were summarised to fit the model's context window.
    Compacted {
        summarized_messages: u32,
        #[ts(type = "number")]
        tokens_before: u64,
        #[ts(type = "number")]
        tokens_after: u64,
    },
    /// The list of conversations changed.
    SessionsChanged { sessions: Vec<SessionSummary> },
    /// The answer to `search_history`: the best matches first (at most 50).
    HistoryResults { query: String, hits: Vec<HistoryHit> },
    /// The agent wants to do something the approval policy asks the user about.
    /// Answer with the `approval` op; the tool waits (Stop cancels it). Not `id`: the
    /// envelope's own `id` sits beside the payload's fields (see [`EventEnvelope`]).
    ApprovalRequested {
        approval_id: String,
        kind: ApprovalKind,
        /// The command, or the path for file access.
        command: String,
        /// What "always" would remember (e.g. `cargo build`); empty when "always" is not
        /// offered (a compound line, a shell or interpreter, a command with `env`).
        prefix: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        cwd: Option<String>,
        /// The command would run outside the sandbox (the agent asked to, or bubblewrap is
        /// not available): asked each time, never remembered.
        #[serde(default)]
        outside_sandbox: bool,
        /// The variables the agent sets for the command, as `NAME=value` (control and
        /// invisible characters escaped): part of what runs, so part of what is approved.
        #[serde(default)]
        env: Vec<String>,
        /// The simple commands the line runs, each marked covered or not (by a rule or the
        /// read-only list); empty when the line could not be read into simple commands.
        #[serde(default)]
        parts: Vec<CommandPart>,
        /// Why the line cannot be proven harmless (`it uses a command substitution`…).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        unprovable: Option<String>,
        /// For a command: whether it starts in the background and when it is stopped, so the
        /// user knows how long what they approve may run. Absent for file access and input.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        exec_run: Option<ExecRun>,
        /// For an MCP call: the server, the tool and the arguments.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        mcp: Option<McpCallCard>,
        /// An unattended run asks (a continuation, a routine, a woken heartbeat): unanswered
        /// by this time (ms since the epoch), the request is denied and the run goes on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional, type = "number")]
        expires_at: Option<i64>,
    },
    /// An approval request was answered (by the user, a remembered rule, or a denial
    /// because nobody was there to ask).
    ApprovalResolved {
        approval_id: String,
        decision: ApprovalDecision,
        /// Asked by a run nobody watches and never answered: its `expires_at` passed, or the
        /// run that asked ended first (its deadline, a timeout, shutdown). `decision` is then
        /// `deny`; the card says it expired rather than that someone denied it.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        #[ts(optional, as = "Option<bool>")]
        expired: bool,
    },
    /// Something failed; `message` is written for the user.
    Error { kind: ErrorKind, message: String },
    /// A native notification was requested. `event_id` names the background update it
    /// announces and `process_id` the process, so a click can open the item; `kind` is
    /// what the user's notification switches filter on.
    Notification {
        kind: NotificationKind,
        title: String,
        body: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        event_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        process_id: Option<String>,
        /// An approval an unattended run waits for: the notification offers Allow once,
        /// Deny and Open, and an answer goes back as `Op::Approval` with this id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        approval_id: Option<String>,
        /// The conversation (and its message, by timestamp) a click opens; not
        /// `session_id`, which is the envelope's: the session the event came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        target_session_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional, type = "number")]
        message_ts: Option<i64>,
    },
    /// One heartbeat run ended (or was skipped before it began), with why.
    Heartbeat {
        reason: WakeReason,
        status: HeartbeatStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        skip_reason: Option<HeartbeatSkip>,
        /// What went wrong, for a `failed` run or a problem the user should fix.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        detail: Option<String>,
        /// The run will be tried again (a busy conversation, a taken lock, a provider error
        /// with tries left): this is not its final word.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        #[ts(optional, as = "Option<bool>")]
        retrying: bool,
        /// The tokens the run's model call used (absent when nothing was asked of the model).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        usage: Option<Usage>,
    },
    /// A background result reached a session's mailbox: the chat shows it as a card and
    /// counts it as unread until a turn has read it.
    BackgroundUpdate { update: BackgroundUpdate, unread: u32 },
    /// A turn read these background updates (they left the mailbox): clear their badge.
    BackgroundUpdatesRead { event_ids: Vec<String> },
    /// Background activity was paused or resumed (heartbeat runs skip while paused).
    BackgroundPaused { paused: bool },
    /// A message was durably appended to the session transcript.
    MessageAppended { message: Message },
    /// A process started (by the agent's `exec` or from the panel).
    ProcessStarted { process: ProcessSummary },
    /// Raw terminal output, base64 (bytes may split UTF-8 characters), coalesced to about
    /// 60 updates a second per process.
    ProcessOutput { process_id: String, data_b64: String },
    /// A process ended.
    ProcessExited { process: ProcessSummary },
    /// The routines changed (a run, an edit, the agent's tools, the file edited by hand).
    RoutinesChanged { routines: RoutinesView },
    /// The answer to a `health` op: what runs now and the counters since start.
    Health { health: HealthView },
    /// The MCP servers changed (one started, failed, listed new tools; one was added,
    /// removed or switched), or a `list_mcp_servers` op asked.
    McpServersChanged { mcp: McpView },
    /// The user came back after an absence of at least `away_after_minutes`, and something
    /// happened meanwhile: the window shows it as one card.
    WhileAway { summary: AwaySummary },
    /// The phone channels changed state (connected, retrying, paired…), or a `channels`
    /// op asked.
    ChannelsChanged { channels: ChannelsView },
}

impl Event {
    /// A notification that links to nothing in particular (no update, process, approval or
    /// message to open): a warning or a summary.
    pub fn notice(kind: NotificationKind, title: impl Into<String>, body: impl Into<String>) -> Self {
        Event::Notification {
            kind,
            title: title.into(),
            body: body.into(),
            event_id: None,
            process_id: None,
            approval_id: None,
            target_session_id: None,
            message_ts: None,
        }
    }
}

/// Why the model (or the runtime) ended a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    Refusal,
    /// The user pressed Stop.
    Cancelled,
    /// The turn policy ended a runaway turn (rounds, tool-call cap, repeated failures).
    Policy,
    /// The provider failed; see the preceding `error` event.
    Error,
}
