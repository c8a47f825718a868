//! Token counts and cost, as the provider reported them, per call and summed per turn.
//!
//! Owns: [`Usage`] and how two of them add up (saturating, never wrapping).
//! Must never: estimate what the provider did not report (absent counts are 0).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Token counts, wherever the service reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Usage {
    /// Every input token, the cached ones included.
    #[ts(type = "number")]
    pub input_tokens: u64,
    #[ts(type = "number")]
    pub output_tokens: u64,
    /// Of `input_tokens`, read from the provider's prompt cache (cheaper).
    #[serde(default, skip_serializing_if = "is_zero")]
    #[ts(optional, type = "number")]
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, written to the provider's prompt cache (dearer, once).
    #[serde(default, skip_serializing_if = "is_zero")]
    #[ts(optional, type = "number")]
    pub cache_write_tokens: u64,
    /// What the provider says the call cost, in millionths of a US dollar (OpenRouter's
    /// `usage.cost`); 0 when it says nothing.
    #[serde(default, skip_serializing_if = "is_zero")]
    #[ts(optional, type = "number")]
    pub cost_micro_usd: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, add: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(add.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(add.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(add.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(add.cache_write_tokens);
        self.cost_micro_usd = self.cost_micro_usd.saturating_add(add.cost_micro_usd);
    }
}

impl Usage {
    /// Input and output tokens: what the daily budget counts.
    pub fn total(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
