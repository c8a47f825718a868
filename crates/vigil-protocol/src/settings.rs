//! Provider settings as the settings pane edits them, and the views the runtime returns.
//! The API key never appears here: it lives in the OS keyring (or the environment) and the
//! UI only learns whether one is set and where it is kept.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// Which wire protocol the provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions and compatible servers (Ollama, LM Studio, vLLM, OpenRouter).
    Openai,
}

impl ProviderKind {
    /// The official SDK's default base URL for this kind.
    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "https://api.anthropic.com",
            ProviderKind::Openai => "https://api.openai.com/v1",
        }
    }

    /// The context window assumed when the user has not set one.
    pub fn default_context_window(self) -> u32 {
        match self {
            ProviderKind::Anthropic => 200_000,
            ProviderKind::Openai => 128_000,
        }
    }

    /// A sensible default model for this kind.
    pub fn default_model(self) -> &'static str {
        match self {
            ProviderKind::Anthropic => "claude-sonnet-4-5",
            ProviderKind::Openai => "gpt-4o-mini",
        }
    }
}

/// What the user configures for a provider (everything but the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ProviderSettings {
    pub kind: ProviderKind,
    /// As the official SDKs take it: `https://api.anthropic.com` (the client adds
    /// `/v1/messages`) or `https://api.openai.com/v1` (the client adds `/chat/completions`).
    pub base_url: String,
    pub model: String,
    /// Upper bound on the reply length, in tokens.
    pub max_tokens: u32,
    /// The model's context window in tokens; empty means the kind's usual size
    /// ([`ProviderKind::default_context_window`]). Set it for small local models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub context_window: Option<u32>,
}

/// The reply-length bound every model call of the loop sends unless the user sets another
/// (seed 001 §3: `max_tokens: 8192`).
pub const DEFAULT_MAX_TOKENS: u32 = 8192;

impl Default for ProviderSettings {
    fn default() -> Self {
        let kind = ProviderKind::Anthropic;
        Self {
            kind,
            base_url: kind.default_base_url().into(),
            model: kind.default_model().into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            context_window: None,
        }
    }
}

/// What the agent may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Ask before each command (and file access outside the workspace) not yet approved.
    #[default]
    Ask,
    /// Run only what was approved with "always"; deny the rest without asking.
    Allowlist,
    /// Run everything without asking.
    FullAuto,
    /// No commands, no writes outside the workspace; reading is allowed.
    ReadOnly,
}

impl ApprovalPolicy {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_lowercase().replace('_', "-").as_str() {
            "ask" => Some(Self::Ask),
            "allowlist" => Some(Self::Allowlist),
            "full-auto" | "fullauto" | "auto" => Some(Self::FullAuto),
            "read-only" | "readonly" => Some(Self::ReadOnly),
            _ => None,
        }
    }
}

/// A remembered "always" approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ApprovalRule {
    pub kind: crate::ApprovalKind,
    /// `cargo build` for commands; a folder for file access.
    pub prefix: String,
    #[ts(type = "number")]
    pub created_at: i64,
    /// For a command: the folder it applies in (and below), where it was given: the
    /// workspace, or the command's own folder outside it. Absent in rules saved before
    /// folders were recorded, which apply in the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub folder: Option<String>,
}

/// The settings pane's view of approvals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ApprovalsView {
    pub policy: ApprovalPolicy,
    /// True when `VIGIL_APPROVAL_POLICY` fixes the policy (the UI shows it read-only).
    pub policy_from_env: bool,
    pub rules: Vec<ApprovalRule>,
    pub sandbox: SandboxView,
}

/// The sandbox commands run in (bubblewrap), as Settings → Approvals shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SandboxView {
    /// bubblewrap is installed and can start here.
    pub available: bool,
    /// Why not, when it is not: unattended commands are refused then, and the user's own
    /// turns ask before each command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub problem: Option<String>,
    /// The user's own turns' commands may use the network.
    pub network: bool,
    /// Commands of runs nobody watches (heartbeat, routine jobs, continuations) may use the
    /// network. Off by default.
    pub unattended_network: bool,
    /// slirp4netns is installed: without it no command gets a network, whatever the switches
    /// say.
    pub network_available: bool,
    /// Why commands get no network here, when they do not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub network_problem: Option<String>,
    /// Paths every sandbox shows empty (`~` is the home): `~/.ssh`, `~/.aws`, … An empty list
    /// hides nothing.
    pub hidden: Vec<String>,
    /// The list "Restore defaults" puts back.
    pub default_hidden: Vec<String>,
    /// Routines (by id) whose jobs may use the network while runs nobody watches may not.
    #[serde(default)]
    pub network_routines: Vec<String>,
    /// Unix sockets the user's own turns' commands may connect to (never runs nobody
    /// watches).
    #[serde(default)]
    pub sockets: Vec<String>,
    /// Folders writable besides the workspace (added by the user in Settings).
    pub writable: Vec<String>,
}

/// Where the API key is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum KeyStorage {
    /// The OS keyring (Secret Service on Linux).
    Keyring,
    /// A file only the user can read; used when no keyring service runs.
    File,
    /// An environment variable (`VIGIL_API_KEY`, `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`).
    Environment,
    /// No key anywhere; fine for local servers such as Ollama.
    None,
}

/// The settings pane's view of the provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct SettingsView {
    pub provider: ProviderSettings,
    pub api_key_set: bool,
    pub key_storage: KeyStorage,
    /// Fields overridden by `VIGIL_*` environment variables; the UI shows them read-only.
    pub env_overrides: Vec<String>,
    /// Things the user should know (no keyring service, a settings file that was unreadable…).
    pub warnings: Vec<String>,
}

/// The answer to "Test connection".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ConnectionVerdict {
    pub ok: bool,
    pub message: String,
}
