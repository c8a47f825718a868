//! The gate a turn's tools ask through: the [`Gate`] trait the tools hold, the [`Verdict`]
//! they get back, and [`TurnGate`], one turn's gate over [`Approvals`]. Here, not in
//! `tools`, so the tools depend on the approval types and nothing here on the tools.
//!
//! Must never: decide anything itself ([`Approvals::check_away`] does).

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use vigil_protocol::ApprovalKind;

use super::{Approvals, Request};
use crate::events::Emitter;

/// Asks whether the agent may do something (the approval policy of this turn).
#[async_trait::async_trait]
pub trait Gate: Send + Sync {
    async fn check(
        &self,
        kind: vigil_protocol::ApprovalKind,
        subject: &str,
        cwd: Option<&str>,
        env: &[String],
        outside_sandbox: bool,
        exec_run: Option<vigil_protocol::ExecRun>,
    ) -> Verdict;

    /// Whether the agent may type into a running process whose command is `command`;
    /// `started_here` says whether this same run started it.
    async fn check_input(&self, command: &str, cwd: &str, started_here: bool) -> Verdict;

    /// Whether the agent may call the MCP tool the model knows as `qualified_name`.
    async fn check_mcp(&self, qualified_name: &str, call: &McpAsk) -> Verdict;
}

/// An MCP tool call, as the gate judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAsk {
    pub server: String,
    /// The server's own name for the tool.
    pub tool: String,
    pub arguments: serde_json::Value,
    /// The server marks the tool `readOnlyHint: true` (a hint; only `read-only` relies on it).
    pub read_only: bool,
    /// The user marked the server trusted: its calls pass under `ask` and `allowlist`.
    pub trusted: bool,
}

/// The answer, with the reason the agent is told when it is a no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Allowed without asking only because every part is on the read-only list: the command
    /// runs in the read-only sandbox (nothing writable, no network), so a program that runs
    /// code from its configuration (`git`'s hooks and pagers, `sort --compress-program`)
    /// can change and reach nothing.
    ReadOnly,
    Denied(String),
}

impl Verdict {
    /// It may go ahead (in whichever sandbox the verdict says).
    pub fn allows(&self) -> bool {
        !matches!(self, Verdict::Denied(_))
    }
}

/// The gate of one turn: this policy, this turn's emitter and Stop, and whether someone is
/// there to ask.
pub struct TurnGate {
    pub approvals: Approvals,
    pub workspace: PathBuf,
    pub emitter: Emitter,
    pub cancel: CancellationToken,
    pub interactive: bool,
    /// Nobody at the screen, but the run may ask and wait this long (see
    /// [`Approvals::check_away`]); `None` with `interactive: false` denies at once.
    pub away: Option<Duration>,
    pub now_ms: i64,
}

#[async_trait::async_trait]
impl Gate for TurnGate {
    async fn check(
        &self,
        kind: ApprovalKind,
        subject: &str,
        cwd: Option<&str>,
        env: &[String],
        outside_sandbox: bool,
        exec_run: Option<vigil_protocol::ExecRun>,
    ) -> Verdict {
        let request = Request {
            kind,
            subject: subject.to_string(),
            cwd: cwd.map(str::to_string),
            env: env.to_vec(),
            workspace: Some(self.workspace.clone()),
            interactive: self.interactive,
            started_here: false,
            outside_sandbox,
            exec_run,
            mcp: None,
        };
        self.approvals
            .check_away(request, &self.emitter, self.now_ms, &self.cancel, self.away)
            .await
    }

    async fn check_mcp(&self, qualified_name: &str, call: &McpAsk) -> Verdict {
        let request = Request {
            kind: ApprovalKind::McpCall,
            subject: qualified_name.to_string(),
            cwd: None,
            env: vec![],
            workspace: Some(self.workspace.clone()),
            interactive: self.interactive,
            started_here: false,
            outside_sandbox: false,
            exec_run: None,
            mcp: Some(call.clone()),
        };
        self.approvals
            .check_away(request, &self.emitter, self.now_ms, &self.cancel, self.away)
            .await
    }

    async fn check_input(&self, command: &str, cwd: &str, started_here: bool) -> Verdict {
        let request = Request {
            kind: ApprovalKind::ProcessInput,
            subject: command.to_string(),
            cwd: Some(cwd.to_string()),
            env: vec![],
            workspace: Some(self.workspace.clone()),
            interactive: self.interactive,
            started_here,
            outside_sandbox: false,
            exec_run: None,
            mcp: None,
        };
        self.approvals
            .check_away(request, &self.emitter, self.now_ms, &self.cancel, self.away)
            .await
    }
}
