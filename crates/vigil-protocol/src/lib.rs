//! # vigil-protocol
//!
//! The wire types every Vigil front end speaks: [`Op`]s go in, [`EventEnvelope`]s come out.
//! The Tauri shell carries them over IPC, `vigil-headless` over JSON lines on stdin/stdout;
//! both use exactly these serde shapes, so a script written against one works with the other.
//!
//! ## Layout
//!
//! - [`Op`] — commands into the runtime, tagged by `"type"` (`user_message`, `interrupt`, …).
//! - [`EventEnvelope`] — one envelope for every event (`id`, `ts`, `session_id`, `scope`,
//!   `source`, `run_id`) with the tagged [`Event`] payload flattened into it.
//! - [`Message`] / [`ContentBlock`] — the transcript: what is stored on disk and shown as history.
//! - [`settings`] — provider settings and the views the settings pane shows.
//! - [`heartbeat`] — wake reasons, heartbeat statuses and settings, the background-update card.
//! - [`routines`] — the routine list, drafts, run history and schedule previews.
//! - [`away`] — the "While you were away" card: what ran, failed, waits and was missed.
//! - [`health`] — the health check: what runs now, lock waits, mailbox and delivery counters.
//! - [`preferences`] — the desktop app's own preferences (close to tray, start at login, theme).
//! - [`mcp`] — MCP servers as Settings → Tools shows them, and an MCP call's approval card.
//! - [`images`] — images sent with a message: the attachment op field and the limits.
//!
//! Rules: plain string ids, integer millisecond `ts`/`*_at` timestamps, no logic. TypeScript
//! types are generated from these with ts-rs into `ui/src/lib/protocol.ts`; the test in
//! `tests/bindings.rs` fails when the checked-in file drifts from the Rust types.

pub mod away;
pub mod channels;
pub mod health;
pub mod heartbeat;
pub mod images;
pub mod mcp;
pub mod preferences;
pub mod routines;
pub mod settings;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

pub use away::{AwayKind, AwayLine, AwaySummary, AwayTarget};
pub use channels::{
    ChannelKinds, ChannelName, ChannelOp, ChannelStatus, ChannelView, ChannelWhen, ChannelsSettings, ChannelsView,
    NtfySettings, PairingView, TelegramSettings,
};
pub use health::{HealthStatus, HealthView, HeartbeatHealth, LaneHealth, LockHealth, MailboxHealth, RoutinesHealth};
pub use heartbeat::{
    ActiveHours, BackgroundUpdate, HeartbeatSettings, HeartbeatSkip, HeartbeatStats, HeartbeatStatus, HeartbeatView,
    WakeReason,
};
pub use images::{image_extension, Attachment, IMAGE_MIME_TYPES, MAX_ATTACHMENT_BYTES, MAX_IMAGE_SIDE};
pub use mcp::{
    McpCallCard, McpField, McpSecretField, McpServerState, McpServerView, McpToolView, McpTransport, McpView,
    DEFAULT_MCP_CALL_TIMEOUT_SECS,
};
pub use preferences::{
    DesktopSettings, DesktopSettingsView, NotificationKind, NotificationKinds, Theme, DEFAULT_APPROVAL_TIMEOUT_SECS,
    DEFAULT_AWAY_AFTER_MINUTES, DEFAULT_CONTINUATION_LIMIT,
};
pub use routines::{
    CatchUp, ExecutionMode, HeartbeatChecks, ParseStatus, RoutineDraft, RoutineRun, RoutineSaved, RoutineSource,
    RoutineState, RoutineView, RoutinesView, RunOutcome, SchedulePreview, WakeMode,
};
pub use settings::{
    ApprovalPolicy, ApprovalRule, ApprovalsView, ConnectionVerdict, KeyStorage, ProviderKind, ProviderSettings,
    SandboxView, SettingsView, DEFAULT_MAX_TOKENS,
};

/// A command into the runtime. Scripts depend on these names: keep them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// Send a user message; starts a turn in `session_id` (default: the primary session).
    UserMessage {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        session_id: Option<String>,
        /// Images sent with the text (`[{"path": "/abs/shot.png"}]`): each is read, checked,
        /// downscaled and stored with the conversation before the message is saved; one that
        /// cannot be read is an error and nothing is sent.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[ts(as = "Option<Vec<Attachment>>", optional)]
        attachments: Vec<Attachment>,
    },
    /// Stop the running turn of `session_id` (default: the primary session), keeping what was said.
    Interrupt {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        session_id: Option<String>,
    },
    /// Start a new conversation; answered by `sessions_changed`.
    CreateSession {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        title: Option<String>,
    },
    /// Rename a conversation.
    RenameSession { session_id: String, title: String },
    /// Delete a conversation and its transcript (not the primary one).
    DeleteSession { session_id: String },
    /// Answer an `approval_requested` event; `id` is its `approval_id`.
    Approval { id: String, decision: ApprovalDecision },
    /// Start a command from the Processes panel (the user's own, no approval needed).
    StartProcess {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional)]
        cwd: Option<String>,
    },
    /// Type into a process's terminal (text as UTF-8; control keys as their bytes).
    ProcessInput { process_id: String, data: String },
    /// Kill a process and its whole group (SIGTERM, then SIGKILL after a grace period).
    ProcessKill { process_id: String },
    /// The panel's terminal changed size.
    ProcessResize { process_id: String, cols: u16, rows: u16 },
    /// Finish or cancel running turns and stop the runtime.
    Shutdown,
    /// Ask for a heartbeat run now (`{"type":"wake","reason":"manual"}`); coalesced with
    /// other wakes, answered by a `heartbeat` event.
    Wake {
        #[serde(default = "WakeReason::manual")]
        #[ts(as = "Option<WakeReason>", optional)]
        reason: WakeReason,
    },
    /// Ask for the routine list; answered by `routines_changed`.
    ListRoutines,
    /// Create a routine (the user's: `source: manual`); answered by `routines_changed`.
    AddRoutine { routine: RoutineDraft },
    /// Change fields of a routine; answered by `routines_changed`.
    UpdateRoutine { id: String, changes: RoutineDraft },
    /// Remove a routine: it stops and is listed as removed, with its run history, until
    /// restored; `hard: true` deletes it and its history for good (seed 003 §8.2 `--hard`).
    RemoveRoutine {
        id: String,
        #[serde(default)]
        #[ts(optional)]
        hard: Option<bool>,
    },
    /// Bring a removed routine back as it was.
    RestoreRoutine { id: String },
    /// Run a routine now, outside its schedule (its schedule is unchanged).
    RunRoutine { id: String },
    /// Pause (`enabled: false`) or resume a routine.
    SetRoutineEnabled { id: String, enabled: bool },
    /// Run again a routine whose run `run_id` ended `unknown` (now, outside its schedule).
    RetryRoutineRun { id: String, run_id: String },
    /// Leave a routine's `unknown` run as it is: the user checked, nothing to redo.
    DismissRoutineRun { id: String, run_id: String },
    /// Ask how the runtime is doing; answered by `health`.
    Health,
    /// This conversation's limit on continuing on its own (`0`: never); `None` goes back to
    /// the global setting. Answered by `sessions_changed`.
    SetContinuationLimit {
        session_id: String,
        #[serde(default)]
        #[ts(optional)]
        limit: Option<u32>,
    },
    /// Ask for the MCP servers and their states; answered by `mcp_servers_changed`.
    ListMcpServers,
    /// Add servers from a pasted config: `{"mcpServers": {"name": {"command", "args", "env"} |
    /// {"url", "headers"}}}` as Claude Desktop and Cursor write it, or the inner map alone. A
    /// server with a name already configured is replaced. The values `secret` names go to the
    /// keyring, never into `mcp.json`. Answered by `mcp_servers_changed`, or an `error`.
    AddMcpServers {
        json: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[ts(as = "Option<Vec<McpSecretField>>", optional)]
        secret: Vec<McpSecretField>,
    },
    /// Stop a server and remove it from `mcp.json` (its keyring values too).
    RemoveMcpServer { name: String },
    /// Let a server's calls run without asking (`trusted`), or ask again.
    SetMcpServerTrusted { name: String, trusted: bool },
    /// Stop a server if it runs and start it again (after a failure that gave up, say).
    RestartMcpServer { name: String },
    /// The window saw the user's input (keys, pointer), sent a few times a minute at most:
    /// where the desktop session cannot say whether the user is there, this does.
    WindowInput,
    /// Settings → Away: the phone channels (ntfy, Telegram). Answered by `channels_changed`.
    Channels { op: ChannelOp },
}

/// How the user answered an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run it this once.
    Approve,
    /// Run it, and anything with the same command prefix from now on.
    Always,
    /// Don't run it; the agent is told so.
    Deny,
}

/// One simple command of a command line on an approval card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CommandPart {
    /// Its words joined by spaces, invisible characters escaped.
    pub text: String,
    /// Already allowed: a remembered rule or the built-in read-only list covers it.
    pub covered: bool,
}

/// How a command asked about on an approval card would run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ExecRun {
    /// Started in the background (`background: true`): the turn goes on while it runs.
    pub background: bool,
    /// It is killed, with everything it started, after this many milliseconds; `null`: it
    /// runs until it ends or is killed.
    #[ts(type = "number | null")]
    pub timeout_ms: Option<u64>,
}

/// What an approval request is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalKind {
    /// A shell command.
    Exec,
    /// Reading a file outside the workspace.
    ReadOutside,
    /// Creating or changing a file outside the workspace.
    WriteOutside,
    /// Typing into a running process (`process write` / `send-keys`); `command` names the
    /// process's own command.
    ProcessInput,
    /// Calling a tool of an MCP server; `command` names it (`mcp__<server>__<tool>`) and
    /// `mcp` says what it is called with.
    McpCall,
    /// Changing a file that steers every future run (`AGENTS.md`, `SKILLS.md`, `USER.md`,
    /// `MEMORY.md`, `HEARTBEAT.md` in the workspace); `command` names it. Asked each time
    /// under `ask` ("always" is not offered), refused under `read-only` and `allowlist`.
    SteerFile,
}

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

/// Token counts, wherever the service reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Usage {
    /// Every input token, the cached ones included.
    #[ts(type = "number")]
    pub input_tokens: u64,
    #[ts(type = "number")]
    pub output_tokens: u64,
    /// Of `input_tokens`, read from the provider's prompt cache (cheaper).
    #[serde(default, skip_serializing_if = "is_zero")]
    #[ts(optional, type = "number")]
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, written to the provider's prompt cache (dearer, once).
    #[serde(default, skip_serializing_if = "is_zero")]
    #[ts(optional, type = "number")]
    pub cache_write_tokens: u64,
    /// What the provider says the call cost, in millionths of a US dollar (OpenRouter's
    /// `usage.cost`); 0 when it says nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[ts(optional, type = "number")]
    pub cost_micro_usd: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, add: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(add.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(add.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(add.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(add.cache_write_tokens);
        self.cost_micro_usd = self.cost_micro_usd.saturating_add(add.cost_micro_usd);
    }
}

impl Usage {
    /// Input and output tokens: what the daily budget counts.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Classes of failure; each tells the user what to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The API key was rejected: fix it in Settings.
    Auth,
    /// The server does not know the model: pick another.
    ModelNotFound,
    /// The request was refused as malformed.
    BadRequest,
    /// Still rate limited after the retries.
    RateLimited,
    /// The provider is overloaded or failing (5xx/529) after the retries.
    Server,
    /// The base URL could not be reached.
    Network,
    /// Connect or idle timeout.
    Timeout,
    /// The stream broke or carried something unreadable.
    Stream,
    /// Settings are missing or invalid.
    Config,
    /// A file could not be read or written.
    Storage,
    /// An op could not be understood.
    InvalidOp,
    /// An image sent with a message could not be used (unreadable, too big, not an image);
    /// nothing was sent: pick another file or send without it.
    Attachment,
    /// A conversation could not be found, created, renamed or deleted.
    Session,
    /// The desktop could not do something for Vigil (show a notification); Vigil goes on
    /// without it.
    Desktop,
    /// A bug in Vigil stopped a turn; what was saved is kept and the conversation goes on.
    Internal,
}

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

/// A session's saved conversation, as the UI loads it on start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct History {
    pub session_id: String,
    pub messages: Vec<Message>,
    /// Lines that could not be loaded (they stay on disk), for a banner.
    pub warnings: Vec<String>,
}

/// The one error shape every desktop command returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct CommandError {
    /// Stable, machine-readable: `invalid_settings`, `storage`, `secrets`, `not_ready`.
    pub code: String,
    /// For the user.
    pub message: String,
    /// The form field the error is about (`schedule`, `timezone`, `title`…), so a form can
    /// show it at that field; absent for errors about the whole request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub field: Option<String>,
}

/// Every type the UI needs, in dependency order, for the generated bindings.
pub fn typescript_bindings() -> String {
    let cfg = ts_rs::Config::default();
    let decls = [
        Op::decl(&cfg),
        Attachment::decl(&cfg),
        Scope::decl(&cfg),
        Source::decl(&cfg),
        EventEnvelope::decl(&cfg),
        Event::decl(&cfg),
        StopReason::decl(&cfg),
        Usage::decl(&cfg),
        ErrorKind::decl(&cfg),
        Role::decl(&cfg),
        Message::decl(&cfg),
        ContentBlock::decl(&cfg),
        MessageKind::decl(&cfg),
        ApprovalDecision::decl(&cfg),
        ApprovalKind::decl(&cfg),
        CommandPart::decl(&cfg),
        ExecRun::decl(&cfg),
        ApprovalPolicy::decl(&cfg),
        ApprovalRule::decl(&cfg),
        SandboxView::decl(&cfg),
        ApprovalsView::decl(&cfg),
        SessionSummary::decl(&cfg),
        ProcessSummary::decl(&cfg),
        History::decl(&cfg),
        CommandError::decl(&cfg),
        ProviderKind::decl(&cfg),
        ProviderSettings::decl(&cfg),
        KeyStorage::decl(&cfg),
        SettingsView::decl(&cfg),
        ConnectionVerdict::decl(&cfg),
        WakeReason::decl(&cfg),
        HeartbeatStatus::decl(&cfg),
        HeartbeatSkip::decl(&cfg),
        BackgroundUpdate::decl(&cfg),
        ActiveHours::decl(&cfg),
        HeartbeatSettings::decl(&cfg),
        HeartbeatStats::decl(&cfg),
        HeartbeatView::decl(&cfg),
        ExecutionMode::decl(&cfg),
        WakeMode::decl(&cfg),
        CatchUp::decl(&cfg),
        RoutineState::decl(&cfg),
        RoutineSource::decl(&cfg),
        ParseStatus::decl(&cfg),
        RoutineView::decl(&cfg),
        RoutinesView::decl(&cfg),
        RoutineDraft::decl(&cfg),
        RunOutcome::decl(&cfg),
        RoutineRun::decl(&cfg),
        SchedulePreview::decl(&cfg),
        RoutineSaved::decl(&cfg),
        HeartbeatChecks::decl(&cfg),
        Theme::decl(&cfg),
        NotificationKind::decl(&cfg),
        NotificationKinds::decl(&cfg),
        DesktopSettings::decl(&cfg),
        DesktopSettingsView::decl(&cfg),
        HealthStatus::decl(&cfg),
        LaneHealth::decl(&cfg),
        LockHealth::decl(&cfg),
        HeartbeatHealth::decl(&cfg),
        MailboxHealth::decl(&cfg),
        RoutinesHealth::decl(&cfg),
        HealthView::decl(&cfg),
        McpTransport::decl(&cfg),
        McpServerState::decl(&cfg),
        McpToolView::decl(&cfg),
        McpServerView::decl(&cfg),
        McpView::decl(&cfg),
        McpField::decl(&cfg),
        McpSecretField::decl(&cfg),
        McpCallCard::decl(&cfg),
        AwaySummary::decl(&cfg),
        AwayLine::decl(&cfg),
        AwayKind::decl(&cfg),
        AwayTarget::decl(&cfg),
        ChannelWhen::decl(&cfg),
        ChannelKinds::decl(&cfg),
        NtfySettings::decl(&cfg),
        TelegramSettings::decl(&cfg),
        ChannelsSettings::decl(&cfg),
        ChannelName::decl(&cfg),
        ChannelOp::decl(&cfg),
        ChannelStatus::decl(&cfg),
        ChannelView::decl(&cfg),
        PairingView::decl(&cfg),
        ChannelsView::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from crates/vigil-protocol by `UPDATE_BINDINGS=1 cargo test -p vigil-protocol`.\n// Do not edit by hand.\n\nexport type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]?: JsonValue } | null;\n",
    );
    for decl in decls {
        out.push_str("\nexport ");
        out.push_str(&decl);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod envelope_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headless_names_are_stable() {
        let op: Op = serde_json::from_value(json!({"type": "user_message", "text": "hi"})).unwrap();
        assert_eq!(
            op,
            Op::UserMessage {
                text: "hi".into(),
                session_id: None,
                attachments: vec![],
            }
        );
        let env = EventEnvelope {
            id: "e1".into(),
            ts: 5,
            session_id: Some("s".into()),
            scope: Scope::Primary,
            source: Source::Provider,
            run_id: Some("r".into()),
            event: Event::TextDelta { text: "x".into() },
        };
        assert_eq!(
            serde_json::to_value(&env).unwrap(),
            json!({"id":"e1","ts":5,"session_id":"s","scope":"primary","source":"provider","run_id":"r","type":"text_delta","text":"x"})
        );
        let back: EventEnvelope = serde_json::from_value(serde_json::to_value(&env).unwrap()).unwrap();
        assert_eq!(back, env);
    }

    #[test]
    fn wake_ops_and_heartbeat_events_have_their_headless_shapes() {
        let op: Op = serde_json::from_value(json!({"type": "wake", "reason": "manual"})).unwrap();
        assert_eq!(
            op,
            Op::Wake {
                reason: WakeReason::Manual
            }
        );
        let op: Op = serde_json::from_value(json!({"type": "wake"})).unwrap();
        assert_eq!(
            op,
            Op::Wake {
                reason: WakeReason::Manual
            }
        );
        let op: Op = serde_json::from_value(json!({"type": "wake", "reason": "exec-event"})).unwrap();
        assert_eq!(
            op,
            Op::Wake {
                reason: WakeReason::ExecEvent
            }
        );
        let event = Event::Heartbeat {
            reason: WakeReason::Interval,
            status: HeartbeatStatus::Skipped,
            skip_reason: Some(HeartbeatSkip::RequestsInFlight),
            detail: None,
            retrying: false,
            usage: None,
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type":"heartbeat","reason":"interval","status":"skipped","skip_reason":"requests-in-flight"})
        );
        let ok = Event::Heartbeat {
            reason: WakeReason::Retry,
            status: HeartbeatStatus::OkToken,
            skip_reason: None,
            detail: None,
            retrying: false,
            usage: None,
        };
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"type":"heartbeat","reason":"retry","status":"ok-token"})
        );
    }
}
