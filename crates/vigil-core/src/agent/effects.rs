//! Evidence of a turn's side effects: a routine's job is told about each tool call that may
//! change something just before it does, so that a crash from then on leaves the evidence
//! on disk (issue 20 item 11: such a run is `unknown`, not retried blindly).
//!
//! "Just before" means after the approval gate let the call through: a call the gate
//! denies changed nothing, and a run cut off after it must be retried like one that did
//! nothing. For a call whose every change passes the gate first
//! ([`crate::tools::Tool::asks_gate_first`]) the watch is told at the gate's `Allowed`
//! ([`Witness`]); for any other call, before it starts.
//!
//! Must never: let a call that changes something start before its watch has been told.

use std::sync::Arc;

use crate::approval::{McpAsk, Verdict};
use crate::tools::{Gate, ToolRegistry};

/// Watches a turn's tool calls that may change something ([`crate::tools::Tool::changes_things`]).
#[async_trait::async_trait]
pub trait EffectWatch: Send + Sync {
    /// Called before such a call starts (after its approval, when it needs one); the call
    /// waits for it.
    async fn before_effect(&self, tool: &str, input: &serde_json::Value);
}

/// A shared [`EffectWatch`], for [`super::TurnExtras::effects`].
#[derive(Clone)]
pub struct Effects(pub Arc<dyn EffectWatch>);

impl std::fmt::Debug for Effects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Effects")
    }
}

/// The gate one call runs with: the turn's own, or — when the turn's effects are watched
/// and the call asks the gate before it changes anything — a [`Witness`] around it. For a
/// watched call that does not ask first, the watch is told here, before the call starts.
pub(super) async fn gate_for_call(
    effects: Option<&Effects>,
    tools: &ToolRegistry,
    gate: Option<Arc<dyn Gate>>,
    workspace: &std::path::Path,
    name: &str,
    input: &serde_json::Value,
) -> Option<Arc<dyn Gate>> {
    let Some(Effects(watch)) = effects else {
        return gate;
    };
    if !tools.changes_things(name, input) {
        return gate;
    }
    match gate {
        Some(inner) if tools.asks_gate_first(name, input, workspace) => Some(Arc::new(Witness {
            inner,
            watch: watch.clone(),
            tool: name.to_string(),
            input: input.clone(),
        })),
        gate => {
            watch.before_effect(name, input).await;
            gate
        }
    }
}

/// The turn's gate for one watched call: an `Allowed` verdict tells the watch (and waits
/// for it) before the call hears it, so the evidence is written after the decision and
/// before the change; a `Denied` one tells nobody.
struct Witness {
    inner: Arc<dyn Gate>,
    watch: Arc<dyn EffectWatch>,
    tool: String,
    input: serde_json::Value,
}

impl Witness {
    async fn seen(&self, verdict: Verdict) -> Verdict {
        if verdict.allows() {
            self.watch.before_effect(&self.tool, &self.input).await;
        }
        verdict
    }
}

#[async_trait::async_trait]
impl Gate for Witness {
    async fn check(
        &self,
        kind: vigil_protocol::ApprovalKind,
        subject: &str,
        cwd: Option<&str>,
        env: &[String],
        outside_sandbox: bool,
        exec_run: Option<vigil_protocol::ExecRun>,
    ) -> Verdict {
        let verdict = self
            .inner
            .check(kind, subject, cwd, env, outside_sandbox, exec_run)
            .await;
        self.seen(verdict).await
    }

    async fn check_input(&self, command: &str, cwd: &str, started_here: bool) -> Verdict {
        let verdict = self.inner.check_input(command, cwd, started_here).await;
        self.seen(verdict).await
    }

    async fn check_mcp(&self, qualified_name: &str, call: &McpAsk) -> Verdict {
        let verdict = self.inner.check_mcp(qualified_name, call).await;
        self.seen(verdict).await
    }
}
