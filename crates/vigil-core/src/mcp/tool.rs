//! # mcp::tool
//!
//! Owns one MCP tool as the agent sees it: a [`Tool`] named `mcp__<server>__<tool>` that asks
//! the approval gate (its own kind, [`vigil_protocol::ApprovalKind::McpCall`]), calls the
//! server with the server's per-call timeout, forwards progress as live updates, and turns the
//! result into what the model reads: text as text, `isError` as a tool error, a call that ran
//! out of time or was stopped cancelled with `notifications/cancelled`.
//!
//! Images in a result go to the model as images (the turn checks, downscales and stores
//! them like a `read` of a picture); audio and binary resources as a line naming them.
//!
//! Must never: leave a call running on the server after the agent stopped waiting for it.

use std::sync::Arc;

use base64::Engine as _;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientRequest,
    RequestId, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient, ServiceError};
use serde_json::{Map, Value};

use super::server::{OfferedTool, Server};
use crate::approval::{McpAsk, Verdict};
use crate::provider::ToolSpec;
use crate::tools::{Tool, ToolContext, ToolOutput};

/// A tool of an MCP server, offered through the tool registry.
pub struct McpTool {
    server: Arc<Server>,
    tool: OfferedTool,
    /// How long a call waits for a server that is (re)starting.
    start_wait: std::time::Duration,
}

impl McpTool {
    pub fn new(server: Arc<Server>, tool: OfferedTool, start_wait: std::time::Duration) -> Self {
        Self {
            server,
            tool,
            start_wait,
        }
    }
}

#[async_trait::async_trait]
impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.tool.spec.clone()
    }

    /// What the server says (`readOnlyHint`), as the approval gate takes it.
    fn changes_things(&self, _input: &Value) -> bool {
        !self.tool.read_only
    }

    /// Every call goes to the gate before it reaches the server.
    fn asks_gate_first(&self, _input: &Value, _workspace: &std::path::Path) -> bool {
        true
    }

    async fn run(&self, input: Value, ctx: &ToolContext) -> ToolOutput {
        let arguments = match arguments(input) {
            Ok(a) => a,
            Err(out) => return out,
        };
        if let Some(gate) = &ctx.gate {
            let ask = McpAsk {
                server: self.server.name.clone(),
                tool: self.tool.name.clone(),
                arguments: Value::Object(arguments.clone()),
                read_only: self.tool.read_only,
                trusted: self.server.trusted(),
            };
            if let Verdict::Denied(why) = gate.check_mcp(&self.tool.spec.name, &ask).await {
                return ToolOutput::error(why);
            }
        }
        let wait = self.start_wait.min(self.server.call_timeout());
        let connection = match self.server.connection(wait).await {
            Ok(c) => c,
            Err(why) => return ToolOutput::error(why),
        };
        call(&self.server, &connection, &self.tool.name, arguments, ctx).await
    }
}

/// The arguments as the object MCP wants; the model sometimes sends the object as a string.
fn arguments(input: Value) -> Result<Map<String, Value>, ToolOutput> {
    match input {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        Value::String(s) => match serde_json::from_str(&s) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(ToolOutput::error(
                "The arguments must be a JSON object matching the tool's schema.",
            )),
        },
        _ => Err(ToolOutput::error(
            "The arguments must be a JSON object matching the tool's schema.",
        )),
    }
}

/// Sends `notifications/cancelled` for a call the agent stopped waiting for: dropped with
/// the call (the user pressed Stop, the turn ended), unless disarmed because it finished.
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl CancelOnDrop {
    async fn cancel_now(mut self, reason: String) {
        if let Some(id) = self.id.take() {
            let _ = self.peer.send_notification(cancelled(id, reason).into()).await;
        }
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(id), Ok(rt)) = (self.id.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let peer = self.peer.clone();
        rt.spawn(async move {
            let _ = peer
                .send_notification(cancelled(id, "stopped by the user".into()).into())
                .await;
        });
    }
}

fn cancelled(id: RequestId, reason: String) -> CancelledNotification {
    CancelledNotification::new(CancelledNotificationParam::new(Some(id), Some(reason)))
}

async fn call(
    server: &Server,
    connection: &super::server::Connection,
    tool: &str,
    arguments: Map<String, Value>,
    ctx: &ToolContext,
) -> ToolOutput {
    let name = &server.name;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new(tool.to_string()).with_arguments(arguments),
    ));
    // No timeout here: this call keeps its own, so it can say what happened in its words.
    let handle = match connection
        .peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(h) => h,
        Err(e) => return ToolOutput::error(format!("The MCP server `{name}` could not take the call: {e}.")),
    };
    let (mut progress, _route) = connection.progress.subscribe(handle.progress_token.clone());
    let guard = CancelOnDrop {
        peer: connection.peer.clone(),
        id: Some(handle.id.clone()),
    };
    let timeout = server.call_timeout();
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut response = handle.rx;
    let answer = loop {
        tokio::select! {
            biased;
            answer = &mut response => break answer,
            Some(text) = progress.recv() => {
                if let Some(updates) = &ctx.updates {
                    let _ = updates.send(text);
                }
            }
            () = &mut deadline => {
                let secs = timeout.as_secs();
                guard.cancel_now(format!("timed out after {secs} s")).await;
                return ToolOutput::error(format!(
                    "`{tool}` on the MCP server `{name}` did not finish within {secs} s, so it was cancelled. Try again with less to do, or tell the user it timed out."
                ));
            }
        }
    };
    let mut guard = guard;
    guard.id = None;
    match answer {
        Ok(Ok(ServerResult::CallToolResult(result))) => output(serde_json::to_value(result).unwrap_or_default()),
        Ok(Ok(other)) => ToolOutput::error(format!(
            "The MCP server `{name}` answered the call with something else than a tool result ({}).",
            serde_json::to_value(other)
                .ok()
                .and_then(|v| v.get("resultType").cloned())
                .unwrap_or(Value::Null)
        )),
        Ok(Err(ServiceError::McpError(e))) => {
            ToolOutput::error(format!("The MCP server `{name}` refused the call: {}.", e.message))
        }
        Ok(Err(e)) => ToolOutput::error(format!("The call to the MCP server `{name}` failed: {e}.")),
        // The connection ended with the call in it: the server exited or was killed.
        Err(_) => ToolOutput::error(format!(
            "The MCP server `{name}` stopped during the call; Vigil is restarting it. The call may or may not have happened: check before trying again."
        )),
    }
}

/// A `tools/call` result (as JSON, so new content types the SDK adds cannot break it) as the
/// model reads it.
pub fn output(result: Value) -> ToolOutput {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in result["content"].as_array().into_iter().flatten() {
        match image(block) {
            Some(picture) => images.push(picture),
            None => parts.push(content_text(block)),
        }
    }
    if parts.is_empty() {
        if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
            parts.push(structured.to_string());
        }
    }
    let text = parts.join("\n");
    let mut out = match result["isError"].as_bool().unwrap_or(false) {
        true if text.is_empty() => ToolOutput::error("The tool reported an error without saying what."),
        true => ToolOutput::error(text),
        false => ToolOutput::ok(text),
    };
    out.images = images;
    out
}

/// An `image` block's bytes; `None` for anything else, or data that is not base64 (then it
/// is named in the text instead).
fn image(block: &Value) -> Option<crate::images::ImageBytes> {
    if block["type"] != "image" {
        return None;
    }
    let data = block["data"].as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.as_bytes()).ok()?;
    let mime = block["mimeType"].as_str().unwrap_or("application/octet-stream");
    Some(crate::images::ImageBytes::new(bytes, mime))
}

/// The size of base64 data once decoded, without decoding it.
fn decoded_len(data: &str) -> usize {
    base64::engine::general_purpose::STANDARD
        .decode(data.as_bytes())
        .map(|b| b.len())
        .unwrap_or(data.len() / 4 * 3)
}

fn content_text(block: &Value) -> String {
    let str_of = |v: &Value, key: &str| v[key].as_str().unwrap_or("").to_string();
    match block["type"].as_str().unwrap_or("") {
        "text" => str_of(block, "text"),
        kind @ ("image" | "audio") => format!(
            "[{kind}: {}, {} bytes]",
            str_of(block, "mimeType"),
            decoded_len(block["data"].as_str().unwrap_or(""))
        ),
        "resource" => {
            let r = &block["resource"];
            match r["text"].as_str() {
                Some(text) => format!("[resource {}]\n{text}", str_of(r, "uri")),
                None => format!(
                    "[resource {}: {}, {} bytes]",
                    str_of(r, "uri"),
                    r["mimeType"].as_str().unwrap_or("binary"),
                    decoded_len(r["blob"].as_str().unwrap_or(""))
                ),
            }
        }
        "resource_link" => format!("[resource link: {} ({})]", str_of(block, "uri"), str_of(block, "name")),
        other => format!("[{other} content]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_result_reads_as_text_and_is_error_makes_a_tool_error() {
        let ok = output(json!({"content": [
            {"type": "text", "text": "Echo: hi"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello"}},
            {"type": "resource_link", "uri": "file:///b", "name": "b"}
        ]}));
        assert_eq!(
            ok,
            ToolOutput::ok("Echo: hi\n[resource file:///a.txt]\nhello\n[resource link: file:///b (b)]")
                .with_image(b"\x89PNG\r\n\x1a\n".to_vec(), "image/png")
        );
        // Data that is not base64 is named, not lost.
        assert_eq!(
            output(json!({"content": [{"type": "image", "data": "%%", "mimeType": "image/png"}]})),
            ToolOutput::ok("[image: image/png, 0 bytes]")
        );
        assert_eq!(
            output(json!({"content": [{"type": "text", "text": "no such file"}], "isError": true})),
            ToolOutput::error("no such file")
        );
        assert_eq!(
            output(json!({"content": [], "structuredContent": {"sum": 3}})),
            ToolOutput::ok("{\"sum\":3}")
        );
    }
}
