//! Commands into the runtime: one [`Op`] per thing a front end asks for, tagged by `"type"`.
//!
//! Owns: the names and fields of every op, as scripts and the window send them.
//! Must never: rename or drop an op or a field scripts rely on (add optional fields instead);
//! carry logic beyond serde defaults.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::{ApprovalDecision, Attachment, ChannelOp, McpSecretField, RoutineDraft, WakeReason};

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
    /// Approve a routine's check or URL as it is written now (the card showed what runs,
    /// how often, with what access); answered by `routines_changed`.
    ApproveRoutine { id: String },
    /// Trust `HEARTBEAT.md` as it is now, after it was held (replaced while a sandboxed
    /// command ran: `RoutinesView::held`); its routines run again. Answered by
    /// `routines_changed`.
    TrustHeartbeatFile,
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
    /// Search every conversation, job and heartbeat run for messages with all these words
    /// (each a word's start); answered by `history_results` with the same `query`.
    SearchHistory { query: String },
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
