//! What a turn is made of ([`Agent`]): the provider and its client, the limits, the tools,
//! the approval gate, the workspace; applying the provider settings, and "Test connection"
//! in Settings (the given settings tried without saving them).
//!
//! Owns: the client and the limits the next turn takes. Must never: change a running
//! turn's client (each turn clones it at its start).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use vigil_protocol::{ConnectionVerdict, ProviderSettings, SettingsView};

use crate::agent::AgentConfig;
use crate::clock::Clock;
use crate::mcp::McpManager;
use crate::provider::ModelClient;
use crate::settings;
use crate::tools::ToolRegistry;

/// What a turn is made of: the provider and its settings, the tools, the approval gate, the
/// workspace and the secrets.
pub(super) struct Agent {
    pub(super) secrets: crate::secrets::Secrets,
    pub(super) tools: crate::tools::ToolRegistry,
    /// `tools` plus `exec`/`process`, once the registry runs.
    pub(super) exec_tools: std::sync::OnceLock<crate::tools::ToolRegistry>,
    pub(super) approvals: crate::approval::Approvals,
    pub(super) workspace: crate::workspace::Workspace,
    /// `std` lock: cloned at turn start, replaced when settings change.
    pub(super) agent_config: std::sync::RwLock<crate::agent::AgentConfig>,
    /// `std` lock: read for a clone at turn start, written when settings change; never held
    /// across an await.
    pub(super) client: std::sync::RwLock<Option<ModelClient>>,
}

impl Agent {
    /// The client a turn starting now uses (`None`: no provider is set).
    pub(super) fn client(&self) -> Option<ModelClient> {
        self.client.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the client the next turn uses (`None`: turns report that no provider is set).
    pub(super) fn set_client(&self, client: Option<ModelClient>) {
        *self.client.write().unwrap_or_else(|e| e.into_inner()) = client;
    }

    /// The limits a turn starting now uses.
    pub(super) fn config(&self) -> AgentConfig {
        self.agent_config.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the limits used by the next turn.
    pub(super) fn set_config(&self, config: AgentConfig) {
        *self.agent_config.write().unwrap_or_else(|e| e.into_inner()) = config;
    }

    /// The tools a turn gets: with `exec`/`process` once the registry runs, then the tools
    /// of the MCP servers running now.
    pub(super) fn tools(&self, mcp: &McpManager) -> ToolRegistry {
        let tools = self.exec_tools.get().cloned().unwrap_or_else(|| self.tools.clone());
        super::mcp::with_tools(mcp, tools)
    }

    /// Resolves settings (stored + environment + key) and swaps the client used by the next
    /// turn. Running turns keep the client they started with.
    pub(super) fn apply_settings(
        &self,
        clock: &Arc<dyn Clock>,
        stored: Option<ProviderSettings>,
        warnings: Vec<String>,
    ) -> SettingsView {
        let mut resolved = settings::resolve(stored, &self.secrets, warnings);
        let p = &resolved.view.provider;
        let window = p.context_window.unwrap_or_else(|| p.kind.default_context_window());
        self.agent_config
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .context_window = window as u64;
        let client = match settings::validate(&resolved.view.provider) {
            Err(e) => {
                resolved.view.warnings.push(e);
                None
            }
            Ok(()) => match ModelClient::new(resolved.config, clock.clone()) {
                Ok(c) => Some(c),
                Err(e) => {
                    resolved.view.warnings.push(e.to_string());
                    None
                }
            },
        };
        self.set_client(client);
        resolved.view
    }

    /// Stores (or with an empty key, forgets) the API key for a provider kind.
    pub(super) fn set_api_key(&self, kind: vigil_protocol::ProviderKind, key: &str) -> Result<Option<String>, String> {
        if key.trim().is_empty() {
            self.secrets.delete(kind);
            return Ok(None);
        }
        self.secrets
            .set(kind, key)
            .map(|f| f.warning)
            .map_err(|e| e.to_string())
    }

    /// Tries the given settings without saving them. `api_key` overrides the stored key.
    pub(super) async fn test_connection(
        &self,
        clock: &Arc<dyn Clock>,
        cancel: &CancellationToken,
        provider: ProviderSettings,
        api_key: Option<String>,
    ) -> ConnectionVerdict {
        if let Err(message) = settings::validate(&provider) {
            return ConnectionVerdict { ok: false, message };
        }
        let mut resolved = settings::resolve(Some(provider), &self.secrets, vec![]);
        if let Some(key) = api_key.filter(|k| !k.trim().is_empty()) {
            resolved.config.api_key = Some(key.trim().to_string());
        }
        let client = match ModelClient::new(resolved.config, clock.clone()) {
            Ok(c) => c,
            Err(e) => {
                return ConnectionVerdict {
                    ok: false,
                    message: e.to_string(),
                }
            }
        };
        match client.test_connection(cancel).await {
            Ok(message) => ConnectionVerdict { ok: true, message },
            Err(e) => ConnectionVerdict {
                ok: false,
                message: e.to_string(),
            },
        }
    }
}
