//! "Test connection" in Settings: the given provider settings tried without saving them.

use vigil_protocol::{ConnectionVerdict, ProviderSettings};

use super::Runtime;
use crate::provider::ModelClient;
use crate::settings;

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

impl Runtime {
    /// Tries the given settings without saving them. `api_key` overrides the stored key.
    pub async fn test_connection(&self, provider: ProviderSettings, api_key: Option<String>) -> ConnectionVerdict {
        if let Err(message) = settings::validate(&provider) {
            return ConnectionVerdict { ok: false, message };
        }
        let mut resolved = settings::resolve(Some(provider), &self.inner.agent.secrets, vec![]);
        if let Some(key) = api_key.filter(|k| !k.trim().is_empty()) {
            resolved.config.api_key = Some(key.trim().to_string());
        }
        let client = match ModelClient::new(resolved.config, self.inner.base.clock.clone()) {
            Ok(c) => c,
            Err(e) => {
                return ConnectionVerdict {
                    ok: false,
                    message: e.to_string(),
                }
            }
        };
        match client.test_connection(&self.inner.life.shutdown.child_token()).await {
            Ok(message) => ConnectionVerdict { ok: true, message },
            Err(e) => ConnectionVerdict {
                ok: false,
                message: e.to_string(),
            },
        }
    }
}
