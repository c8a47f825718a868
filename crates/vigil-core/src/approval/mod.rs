//! # approval
//!
//! Owns the question "may the agent do this?" for shell commands and file access outside
//! the workspace. The policy (`ask`, `allowlist`, `full-auto`, `read-only`) decides; under
//! `ask` the user is asked through an `approval_requested` event and answers with the
//! `approval` op. A command line is first read by [`crate::shell`] into the simple commands
//! it runs: it passes without asking only when every one of them is on the built-in
//! read-only list (with its files in the workspace) or covered by a remembered rule, and no
//! `env` is set. "Always" remembers one simple command's program and subcommand in
//! `approvals.json` (written atomically), never a shell, interpreter or wrapper. A run with
//! nobody at the screen (heartbeat, routines) never waits on a prompt: what is not already
//! approved is denied, with a notification saying so.
//!
//! An MCP tool call is its own kind ([`ApprovalKind::McpCall`]): asked per call under `ask`,
//! "always" remembers that tool of that server, a server the user marked trusted passes, and
//! `read-only` allows only tools their server marks `readOnlyHint: true`.
//!
//! - `gate` — the [`Gate`] a turn's tools ask through, its [`Verdict`], and [`TurnGate`], one
//!   turn's gate over [`Approvals`].
//! - `rules` — what a remembered "always" covers, what it would remember, and which
//!   commands pass without asking.
//! - `ask` — deciding a request, asking the user and waiting for the answer.
//! - `sandbox_settings` — the sandbox settings in Settings → Approvals.
//!
//! Must never: run anything itself, or block a turn on a question nobody can answer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use vigil_protocol::{ApprovalDecision, ApprovalKind, ApprovalPolicy};

use crate::sandbox::{Sandbox, SandboxSettings};

mod ask;
mod gate;
mod rules;
mod sandbox_settings;

pub use ask::spoken_duration;
pub use gate::{Gate, McpAsk, TurnGate, Verdict};
pub use rules::{prefix_of, remembered_prefix};
pub use sandbox_settings::SettingError;

/// One thing the agent wants to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub kind: ApprovalKind,
    /// The command, or the path.
    pub subject: String,
    pub cwd: Option<String>,
    /// The variables the agent sets for a command (`exec`'s `env`), as `NAME=value`: a command
    /// with any is never passed by a rule or the read-only list.
    pub env: Vec<String>,
    /// The agent's workspace, where read-only commands may read without asking.
    pub workspace: Option<PathBuf>,
    /// Whether someone can be asked (a user turn) or not (heartbeat, routine).
    pub interactive: bool,
    /// For [`ApprovalKind::ProcessInput`]: whether this same run started the process.
    pub started_here: bool,
    /// For [`ApprovalKind::Exec`]: the command would run outside the sandbox. No rule and no
    /// read-only listing covers that; only the user (or full-auto) allows it, each time.
    pub outside_sandbox: bool,
    /// For [`ApprovalKind::Exec`]: in the background or not, and its timeout, for the card.
    pub exec_run: Option<vigil_protocol::ExecRun>,
    /// For [`ApprovalKind::McpCall`]: the server, the tool and the arguments (`subject` is
    /// the tool's name as the model calls it, which "always" remembers).
    pub mcp: Option<McpAsk>,
}

/// A remembered "always" (the wire type, so the settings pane shows exactly what is stored).
pub type Rule = vigil_protocol::ApprovalRule;

#[derive(Debug, Default, Serialize, Deserialize)]
struct RuleFile {
    rules: Vec<Rule>,
    /// Kept here, in the data folder no tool reaches, so the agent cannot widen its sandbox.
    #[serde(default)]
    sandbox: SandboxSettings,
}

/// The approval gate: cheap to clone, shared by every tool.
#[derive(Clone)]
pub struct Approvals {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// `std` locks: never held across an await.
    policy: Mutex<ApprovalPolicy>,
    rules: Mutex<Vec<Rule>>,
    sandbox_settings: Mutex<SandboxSettings>,
    /// Replaceable for tests and platforms without bubblewrap.
    sandbox: Mutex<Sandbox>,
    pending: Mutex<HashMap<String, oneshot::Sender<ApprovalDecision>>>,
    /// Nobody can answer any more (the headless runner's input ended): what waits is denied
    /// and what would ask is denied at once.
    unanswerable: std::sync::atomic::AtomicBool,
}

impl Approvals {
    /// Loads remembered rules from `<data_dir>/approvals.json`; an unreadable file is kept
    /// aside and reported, and no rule is assumed.
    pub fn open(data_dir: &Path, policy: ApprovalPolicy) -> (Self, Vec<String>) {
        let path = data_dir.join("approvals.json");
        let mut warnings = Vec::new();
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => match serde_json::from_str::<RuleFile>(&text) {
                Ok(f) => f,
                Err(e) => {
                    let aside = crate::settings::set_aside(&path, 0);
                    warnings.push(format!(
                        "Remembered approvals in {} could not be read ({e}); kept as {} and none are assumed.",
                        path.display(),
                        aside.display()
                    ));
                    RuleFile::default()
                }
            },
            Err(_) => RuleFile::default(),
        };
        let inner = Inner {
            path,
            policy: Mutex::new(policy),
            rules: Mutex::new(file.rules),
            sandbox_settings: Mutex::new(file.sandbox),
            sandbox: Mutex::new(Sandbox::new()),
            pending: Mutex::new(HashMap::new()),
            unanswerable: Default::default(),
        };
        (Self { inner: Arc::new(inner) }, warnings)
    }

    /// The sandbox commands run in.
    pub fn sandbox(&self) -> Sandbox {
        self.inner.sandbox.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the sandbox (a test's unavailable one, say).
    pub fn set_sandbox(&self, sandbox: Sandbox) {
        *self.inner.sandbox.lock().unwrap_or_else(|e| e.into_inner()) = sandbox;
    }

    pub fn sandbox_settings(&self) -> SandboxSettings {
        self.inner
            .sandbox_settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The settings pane's view.
    pub fn view(&self) -> vigil_protocol::ApprovalsView {
        vigil_protocol::ApprovalsView {
            policy: self.policy(),
            policy_from_env: std::env::var("VIGIL_APPROVAL_POLICY")
                .ok()
                .and_then(|p| ApprovalPolicy::parse(&p))
                .is_some(),
            rules: self.rules(),
            sandbox: self.sandbox_view(),
        }
    }

    pub fn policy(&self) -> ApprovalPolicy {
        *self.inner.policy.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_policy(&self, policy: ApprovalPolicy) {
        *self.inner.policy.lock().unwrap_or_else(|e| e.into_inner()) = policy;
    }

    pub fn rules(&self) -> Vec<Rule> {
        self.inner.rules.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Forgets a remembered rule.
    pub fn forget(&self, kind: ApprovalKind, prefix: &str) -> std::io::Result<()> {
        self.inner
            .rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|r| !(r.kind == kind && r.prefix == prefix));
        self.save()
    }

    fn save(&self) -> std::io::Result<()> {
        self.write(self.rules(), self.sandbox_settings())
    }

    /// Replaces `approvals.json` with these rules and sandbox settings.
    fn write(&self, rules: Vec<Rule>, sandbox: SandboxSettings) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(&RuleFile { rules, sandbox }).map_err(std::io::Error::other)?;
        crate::durable::write_atomic(&self.inner.path, &json).map(|_| ())
    }
}

#[cfg(test)]
mod tests;
