//! An approval card on the wire: what is asked about, how the user answered, and the parts
//! of a command line the card lists.
//!
//! Owns: [`ApprovalKind`], [`ApprovalDecision`], [`CommandPart`], [`ExecRun`].
//! Must never: decide anything (the gate in vigil-core does); the event that carries a card is
//! [`crate::Event::ApprovalRequested`].

use serde::{Deserialize, Serialize};
use ts_rs::TS;

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
