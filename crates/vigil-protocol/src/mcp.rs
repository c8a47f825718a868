//! MCP servers as Settings → Tools shows them, what an MCP call's approval card shows, and the
//! payloads of the ops that add, remove and switch servers. The servers themselves are
//! configured in `<data dir>/mcp.json` in the `mcpServers` shape other desktop agents use;
//! secret values never appear here, only the names of the variables and headers that have one.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The per-call timeout of a server whose entry sets none (`"timeout"`, in seconds).
pub const DEFAULT_MCP_CALL_TIMEOUT_SECS: u64 = 60;

/// How Vigil reaches a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum McpTransport {
    /// A program Vigil starts, speaking JSON-RPC on its stdin and stdout.
    Stdio,
    /// A URL speaking the streamable HTTP transport.
    Http,
}

/// What a server is doing now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpServerState {
    /// Being started and initialized (10 s at most).
    Starting,
    /// Initialized; its tools are offered to the model.
    Running,
    /// Not running: it could not start, did not initialize, exited, or its entry in
    /// `mcp.json` is wrong. `retry_at` (ms since the epoch): it is started again then;
    /// absent, not until the user restarts it or fixes its entry.
    Failed {
        error: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[ts(optional, type = "number")]
        retry_at: Option<i64>,
    },
    /// Turned off in `mcp.json` (`"disabled": true`).
    Disabled,
}

/// One tool a running server offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpToolView {
    /// The server's own name for it.
    pub name: String,
    /// The name the model calls: `mcp__<server>__<tool>`.
    pub qualified_name: String,
    pub description: String,
    /// The server says it only reads (`readOnlyHint: true`): the read-only policy allows it.
    pub read_only: bool,
}

/// One server in Settings → Tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpServerView {
    /// Its key in `mcpServers`.
    pub name: String,
    pub transport: McpTransport,
    /// The command line (stdio) or the URL (HTTP), as configured.
    pub target: String,
    pub state: McpServerState,
    /// Empty unless it runs.
    pub tools: Vec<McpToolView>,
    /// Its calls run without asking under `ask` and `allowlist` (never under `read-only`).
    pub trusted: bool,
    /// How long one call may take before it is cancelled.
    #[ts(type = "number")]
    pub timeout_secs: u64,
    /// The last lines the server wrote to stderr (stdio servers), oldest first; every line
    /// also goes to Vigil's log.
    pub stderr_tail: Vec<String>,
    /// The environment variables and headers whose values are kept in the keyring.
    pub secrets: Vec<String>,
}

/// Settings → Tools: every configured server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpView {
    /// Sorted by name.
    pub servers: Vec<McpServerView>,
    /// A problem with `mcp.json` as a whole (unreadable, kept aside), for a banner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub problem: Option<String>,
    /// Where the file is, so the user can edit it by hand.
    pub path: String,
}

/// Where a secret value of a server goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum McpField {
    /// An environment variable of a stdio server (`env`).
    Env,
    /// An HTTP header of an HTTP server (`headers`).
    Header,
}

/// A value of a pasted server that goes to the keyring instead of `mcp.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpSecretField {
    pub server: String,
    pub field: McpField,
    /// The variable's or header's name.
    pub name: String,
}

/// What an MCP call's approval card shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct McpCallCard {
    pub server: String,
    /// The server's own name for the tool.
    pub tool: String,
    /// The arguments, as indented JSON (control and invisible characters escaped).
    pub arguments: String,
    /// The server says the tool only reads (a hint: servers can be wrong).
    pub read_only: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, Op};
    use serde_json::json;

    #[test]
    fn settings_ops_and_the_view_have_their_headless_shapes() {
        let op: Op = serde_json::from_value(json!({
            "type": "add_mcp_servers",
            "json": "{\"mcpServers\": {}}",
            "secret": [{"server": "github", "field": "env", "name": "GITHUB_TOKEN"}]
        }))
        .unwrap();
        assert_eq!(
            op,
            Op::AddMcpServers {
                json: "{\"mcpServers\": {}}".into(),
                secret: vec![McpSecretField {
                    server: "github".into(),
                    field: McpField::Env,
                    name: "GITHUB_TOKEN".into()
                }],
            }
        );
        let op: Op = serde_json::from_value(json!({"type": "add_mcp_servers", "json": "{}"})).unwrap();
        assert!(matches!(op, Op::AddMcpServers { secret, .. } if secret.is_empty()));
        let event = Event::McpServersChanged {
            mcp: McpView {
                servers: vec![McpServerView {
                    name: "everything".into(),
                    transport: McpTransport::Stdio,
                    target: "npx -y @modelcontextprotocol/server-everything".into(),
                    state: McpServerState::Failed {
                        error: "exited during initialize".into(),
                        retry_at: Some(5),
                    },
                    tools: vec![],
                    trusted: false,
                    timeout_secs: DEFAULT_MCP_CALL_TIMEOUT_SECS,
                    stderr_tail: vec!["boom".into()],
                    secrets: vec![],
                }],
                problem: None,
                path: "/d/mcp.json".into(),
            },
        };
        let v = serde_json::to_value(&event).unwrap();
        assert_eq!(v["type"], "mcp_servers_changed");
        assert_eq!(
            v["mcp"]["servers"][0]["state"],
            json!({"state": "failed", "error": "exited during initialize", "retry_at": 5})
        );
    }
}
