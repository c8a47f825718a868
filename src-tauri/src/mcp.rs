//! Tauri commands for Settings → Tools: the MCP servers of `mcp.json`. Thin adapters over the
//! core's [`vigil_core::mcp::McpManager`]; its errors (a paste that is not a config, a server
//! that does not exist) come back as `invalid_mcp`, on the `json` field for a paste.

use tauri::State;
use vigil_core::protocol::{CommandError, McpSecretField, McpView};

use crate::AppState;

fn invalid(message: String, field: Option<&str>) -> CommandError {
    CommandError {
        code: "invalid_mcp".into(),
        message,
        field: field.map(str::to_string),
    }
}

/// Every server, its state and its tools.
#[tauri::command]
pub async fn get_mcp(state: State<'_, AppState>) -> Result<McpView, CommandError> {
    Ok(state.runtime.mcp_view())
}

/// Adds the servers of a pasted Claude-Desktop-style config; `secret` values go to the keyring.
#[tauri::command]
pub async fn add_mcp_servers(
    state: State<'_, AppState>,
    json: String,
    secret: Vec<McpSecretField>,
) -> Result<McpView, CommandError> {
    state
        .runtime
        .mcp()
        .add(&json, &secret)
        .await
        .map_err(|e| invalid(e, Some("json")))
}

#[tauri::command]
pub async fn remove_mcp_server(state: State<'_, AppState>, name: String) -> Result<McpView, CommandError> {
    state.runtime.mcp().remove(&name).await.map_err(|e| invalid(e, None))
}

#[tauri::command]
pub async fn set_mcp_server_trusted(
    state: State<'_, AppState>,
    name: String,
    trusted: bool,
) -> Result<McpView, CommandError> {
    state
        .runtime
        .mcp()
        .set_trusted(&name, trusted)
        .map_err(|e| invalid(e, None))
}

#[tauri::command]
pub async fn restart_mcp_server(state: State<'_, AppState>, name: String) -> Result<McpView, CommandError> {
    state.runtime.mcp().restart(&name).map_err(|e| invalid(e, None))
}
