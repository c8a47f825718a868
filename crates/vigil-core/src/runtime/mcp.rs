//! The runtime's side of the MCP servers: their tools added to each turn's registry, the
//! protocol's ops for Settings → Tools (answered by `mcp_servers_changed`, or an `error`), and
//! the same calls for the desktop shell's commands.
//!
//! Must never: hold the MCP servers' state (the manager in [`crate::mcp`] does), or block
//! the op's caller on a server (each op runs on the runtime's tasks).

use vigil_protocol::{ErrorKind, Event, McpSecretField, Source};

use super::{Base, Life};
use crate::mcp::McpManager;
use crate::tools::ToolRegistry;

/// The protocol's MCP ops.
pub(super) enum McpOp {
    List,
    Add(String, Vec<McpSecretField>),
    Remove(String),
    Trust(String, bool),
    Restart(String),
}

/// `tools` plus the tools of every MCP server running now. Read once per turn, so the
/// list a turn sends stays the same from its first request to its last.
pub(super) fn with_tools(mcp: &McpManager, mut tools: ToolRegistry) -> ToolRegistry {
    for tool in mcp.tools() {
        tools.register(tool);
    }
    tools
}

/// Answers one of the protocol's MCP ops, from a task of its own.
pub(super) fn op(mcp: &McpManager, base: &Base, life: &Life, op: McpOp) {
    let mcp = mcp.clone();
    let emitter = base.emitter.clone();
    life.tasks.spawn(async move {
        let done = match op {
            McpOp::List => Ok(mcp.view()),
            McpOp::Add(json, secret) => mcp.add(&json, &secret).await,
            McpOp::Remove(name) => mcp.remove(&name).await,
            McpOp::Trust(name, trusted) => mcp.set_trusted(&name, trusted),
            McpOp::Restart(name) => mcp.restart(&name),
        };
        let event = match done {
            Ok(mcp) => Event::McpServersChanged { mcp },
            Err(message) => Event::Error {
                kind: ErrorKind::Config,
                message,
            },
        };
        emitter.emit(Source::System, event);
    });
}
