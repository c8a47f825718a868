//! "Test connection" in Settings: the given provider settings tried without saving them.

use vigil_protocol::{ConnectionVerdict, ProviderSettings};

use super::Runtime;
use crate::provider::ModelClient;
use crate::settings;

impl Runtime {
    /// Tries the given settings without saving them. `api_key` overrides the stored key.
    pub async fn test_connection(&self, provider: ProviderSettings, api_key: Option<String>) -> ConnectionVerdict {
        if let Err(message) = settings::validate(&provider) {
            return ConnectionVerdict { ok: false, message };
        }
        let mut resolved = settings::resolve(Some(provider), &self.inner.secrets, vec![]);
        if let Some(key) = api_key.filter(|k| !k.trim().is_empty()) {
            resolved.config.api_key = Some(key.trim().to_string());
        }
        let client = match ModelClient::new(resolved.config, self.inner.clock.clone()) {
            Ok(c) => c,
            Err(e) => {
                return ConnectionVerdict {
                    ok: false,
                    message: e.to_string(),
                }
            }
        };
        match client.test_connection(&self.inner.shutdown.child_token()).await {
            Ok(message) => ConnectionVerdict { ok: true, message },
            Err(e) => ConnectionVerdict {
                ok: false,
                message: e.to_string(),
            },
        }
    }
}
