//! The runtime's side of the MCP servers: their tools added to each turn's registry, the
//! protocol's ops for Settings → Tools (answered by `mcp_servers_changed`, or an `error`), and
//! the same calls for the desktop shell's commands.

use vigil_protocol::{ErrorKind, Event, McpSecretField, McpView, Source};

use super::Runtime;
use crate::tools::ToolRegistry;

/// The protocol's MCP ops.
pub(super) enum McpOp {
    List,
    Add(String, Vec<McpSecretField>),
    Remove(String),
    Trust(String, bool),
    Restart(String),
}

impl Runtime {
    /// `tools` plus the tools of every MCP server running now. Read once per turn, so the
    /// list a turn sends stays the same from its first request to its last.
    pub(super) fn with_mcp_tools(&self, mut tools: ToolRegistry) -> ToolRegistry {
        for tool in self.inner.mcp.tools() {
            tools.register(tool);
        }
        tools
    }

    /// The MCP servers (their config and supervisors).
    pub fn mcp(&self) -> &crate::mcp::McpManager {
        &self.inner.mcp
    }

    /// Settings → Tools.
    pub fn mcp_view(&self) -> McpView {
        self.inner.mcp.view()
    }

    pub(super) fn mcp_op(&self, op: McpOp) {
        let this = self.clone();
        self.inner.life.tasks.spawn(async move {
            let mcp = &this.inner.mcp;
            let done = match op {
                McpOp::List => Ok(mcp.view()),
                McpOp::Add(json, secret) => mcp.add(&json, &secret).await,
                McpOp::Remove(name) => mcp.remove(&name).await,
                McpOp::Trust(name, trusted) => mcp.set_trusted(&name, trusted),
                McpOp::Restart(name) => mcp.restart(&name),
            };
            match done {
                Ok(mcp) => this
                    .inner
                    .base
                    .emitter
                    .emit(Source::System, Event::McpServersChanged { mcp }),
                Err(message) => this.report(ErrorKind::Config, message),
            }
        });
    }
}
