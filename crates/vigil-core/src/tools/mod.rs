//! # tools
//!
//! Owns what the model can do besides talk: the [`Tool`] trait, the [`ToolRegistry`] the agent
//! loop asks for specs and runs calls through, the built-in file tools `read`, `write` and
//! `edit`, which only touch files inside the agent's workspace (see [`resolve_path`]), and the
//! `exec` and `process` tools over the process registry ([`crate::exec`]), `updates`,
//! which opens a background update by its id, `search_history`/`read_history` over the
//! history index ([`crate::history`]), and `remember`, a dated line in `MEMORY.md`.
//!
//! Every failure a tool meets — bad arguments, a missing file, a panic, cancellation — comes
//! back as a [`ToolOutput`] with `is_error: true` and a message the model can act on, because
//! the model is the one who has to recover from it.
//!
//! Must never: return `Err` or panic out of [`ToolRegistry::execute`], change a file outside
//! the workspace, or leave a half-written file behind.

mod edit;
mod exec;
pub(crate) mod files;
mod history;
mod path;
mod process;
mod read;
mod remember;
mod truncate;
mod updates;
mod write;

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::exec::RegistryHandle;
use crate::provider::ToolSpec;
pub use edit::EditTool;
pub use exec::ExecTool;
pub use history::{ReadHistoryTool, SearchHistoryTool};
pub use path::{resolve_path, PathError, ResolvedPath};
pub use process::{encode_keys, ProcessTool};
pub use read::ReadTool;
pub use remember::RememberTool;
pub use truncate::truncate_head_tail;
pub use updates::{UpdatesTool, UPDATES_TOOL};

/// The gate tools ask through is approval's: the tools depend on it, never the reverse.
pub use crate::approval::Gate;
pub use write::WriteTool;

/// The processes one run (a turn) started, so typing into them can be told apart from
/// typing into someone else's. Shared by every tool call of the turn.
pub type StartedHere = Arc<std::sync::Mutex<std::collections::HashSet<String>>>;

/// What a running tool may know about the turn it runs in. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    /// The agent's workspace folder; relative paths resolve here and file tools stay inside.
    pub workspace: PathBuf,
    /// Cancelled when the user stops the turn; a tool must stop promptly when it fires.
    pub cancel: CancellationToken,
    /// Live progress text for the UI (used by long-running tools such as `exec`).
    pub updates: Option<UnboundedSender<String>>,
    /// Whose processes the call starts and sees (`exec`, `process`): the session it runs in,
    /// except the heartbeat's, whose owner is the conversation (`runtime::process_owner`).
    pub owner: String,
    /// The kind of session the call runs in. Not derivable from `owner` (a heartbeat call's
    /// owner is `main`): it is what tells a run nobody watches from the user's conversation.
    pub session_type: crate::session::SessionType,
    /// The approval policy for commands; `None` allows everything (tests, tools that never
    /// run commands).
    pub gate: Option<Arc<dyn Gate>>,
    /// Vigil's own data folder (settings, approvals, keys, sessions…): no tool reads or
    /// writes in it, under any policy, except inside the workspace when that lies within.
    pub data_dir: Option<PathBuf>,
    /// The processes this run started (`exec` adds, `process write` asks).
    pub started: StartedHere,
    /// How `exec` sandboxes commands; `None` runs them unsandboxed (tests of other things).
    pub sandbox: Option<crate::sandbox::TurnSandbox>,
    /// The run is the daily reflection and the user did not let it add routines: what
    /// `routine_add` makes is a suggestion, off until the user turns it on.
    pub suggest_routines: bool,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("workspace", &self.workspace)
            .field("owner", &self.owner)
            .field("session_type", &self.session_type)
            .field("gate", &self.gate.is_some())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context with a fresh cancellation token, no progress channel and an empty owner.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            cancel: CancellationToken::new(),
            updates: None,
            owner: String::new(),
            session_type: crate::session::SessionType::Primary,
            gate: None,
            data_dir: None,
            started: StartedHere::default(),
            sandbox: None,
            suggest_routines: false,
        }
    }

    /// The same context for calls made in a session of `session_type`.
    pub fn with_session_type(self, session_type: crate::session::SessionType) -> Self {
        Self { session_type, ..self }
    }

    /// The same context for calls made by the agent session `owner`.
    pub fn with_owner(self, owner: impl Into<String>) -> Self {
        Self {
            owner: owner.into(),
            ..self
        }
    }
}

/// The result of one tool call, as the model will see it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    /// True when the call failed; the model sees the content as an error to recover from.
    pub is_error: bool,
    /// Pictures the call returned (a `read` of a PNG, an MCP tool's image content). The turn
    /// checks, downscales and stores each with the session, and sends it after `content`.
    pub images: Vec<crate::images::ImageBytes>,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }

    /// The same output with an image added (bytes as returned, and their MIME type).
    pub fn with_image(mut self, bytes: impl Into<Vec<u8>>, mime: impl Into<String>) -> Self {
        self.images.push(crate::images::ImageBytes::new(bytes, mime));
        self
    }
}

/// Something the model can call.
#[async_trait::async_trait]
pub trait Tool: Send + Sync + 'static {
    /// Name, description and JSON-schema parameters, as sent to the model. Must not change
    /// between calls: the registry reads it once, at registration.
    fn spec(&self) -> ToolSpec;

    /// Runs one call. Failures are outputs with `is_error: true`, never panics.
    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput;

    /// Whether this call may change something outside the conversation (a file, a
    /// process, a routine, anything a server does): then running it twice may do it twice.
    /// Yes unless the tool knows better: only reading tools say no.
    fn changes_things(&self, _input: &serde_json::Value) -> bool {
        true
    }

    /// Whether every way this call can change something first gets an `Allowed` verdict
    /// from the turn's [`ToolContext::gate`] (when it has one): then a watched run's evidence
    /// of the change is written at that verdict, and a denied call leaves none
    /// ([`crate::agent::EffectWatch`]). No unless the tool knows: the evidence is then
    /// written before the call starts.
    fn asks_gate_first(&self, _input: &serde_json::Value, _workspace: &std::path::Path) -> bool {
        false
    }
}

#[derive(Clone)]
struct Entry {
    /// Read once at registration, so the list sent to the model cannot drift mid-session.
    spec: ToolSpec,
    tool: Arc<dyn Tool>,
}

/// The tools offered to the model. Cheap to clone; clones share the tools.
///
/// Kept in registration order, not sorted or hashed, so the tool list sent with every request
/// is byte-for-byte stable and provider prompt caches keep hitting.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    /// Copy-on-write: registering after cloning leaves the other clones untouched.
    entries: Arc<Vec<Entry>>,
    /// The entries' specs, built when one is registered rather than copied for every request.
    specs: Arc<[ToolSpec]>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.spec.name))
            .finish()
    }
}

impl ToolRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// `read`, `write` and `edit`, in that order.
    pub fn with_builtins() -> Self {
        let mut registry = Self::new();
        registry.register(Arc::new(ReadTool));
        registry.register(Arc::new(WriteTool));
        registry.register(Arc::new(EditTool));
        registry
    }

    /// The built-ins, then `exec` and `process` over `processes`.
    pub fn with_builtins_and_exec(processes: RegistryHandle) -> Self {
        let mut registry = Self::with_builtins();
        registry.register_exec(processes);
        registry
    }

    /// Adds `search_history` and `read_history` over `history`, and `remember`.
    pub fn register_memory(&mut self, history: crate::history::History, clock: Arc<dyn crate::clock::Clock>) {
        self.register(Arc::new(SearchHistoryTool::new(history.clone())));
        self.register(Arc::new(ReadHistoryTool::new(history)));
        self.register(Arc::new(RememberTool::new(clock)));
    }

    /// Adds `exec` and `process`, both working through `processes`.
    pub fn register_exec(&mut self, processes: RegistryHandle) {
        self.register(Arc::new(ExecTool::new(processes.clone())));
        self.register(Arc::new(ProcessTool::new(processes)));
    }

    /// Adds a tool; one with the same name is replaced in place, keeping its position.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let spec = tool.spec();
        let entries = Arc::make_mut(&mut self.entries);
        match entries.iter_mut().find(|e| e.spec.name == spec.name) {
            Some(existing) => *existing = Entry { spec, tool },
            None => entries.push(Entry { spec, tool }),
        }
        self.specs = entries.iter().map(|e| e.spec.clone()).collect();
    }

    /// The specs to send to the model, in registration order.
    pub fn specs(&self) -> Arc<[ToolSpec]> {
        Arc::clone(&self.specs)
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.entries
            .iter()
            .find(|e| e.spec.name == name)
            .map(|e| Arc::clone(&e.tool))
    }

    /// [`Tool::changes_things`] of the call; an unknown tool changes nothing (it cannot run).
    pub fn changes_things(&self, name: &str, input: &serde_json::Value) -> bool {
        self.get(name).is_some_and(|t| t.changes_things(input))
    }

    /// [`Tool::asks_gate_first`] of the call.
    pub fn asks_gate_first(&self, name: &str, input: &serde_json::Value, workspace: &std::path::Path) -> bool {
        self.get(name).is_some_and(|t| t.asks_gate_first(input, workspace))
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.entries.iter().map(|e| e.spec.name.as_str()).collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }

    /// Runs one call to its end. Never fails: an unknown tool, bad arguments, a panic inside
    /// the tool and cancellation all become error outputs.
    pub async fn execute(&self, name: &str, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let Some(tool) = self.get(name) else {
            return ToolOutput::error(format!("Unknown tool \"{name}\". Available tools: {}.", self.names()));
        };
        if ctx.cancel.is_cancelled() {
            return cancelled();
        }
        // A task of its own, so a panic surfaces as a JoinError here instead of unwinding
        // through the agent's turn, and cancellation can drop the tool wherever it is.
        let task_ctx = ctx.clone();
        let mut handle = tokio::spawn(async move { tool.run(input, &task_ctx).await });
        tokio::select! {
            // Biased towards the result: a call that finished as the user pressed stop did
            // happen, and reporting it as cancelled would mislead the model.
            biased;
            joined = &mut handle => match joined {
                Ok(output) => output,
                Err(e) => join_error(name, e),
            },
            () = ctx.cancel.cancelled() => {
                handle.abort();
                cancelled()
            }
        }
    }
}

fn cancelled() -> ToolOutput {
    ToolOutput::error("Cancelled.")
}

/// What a panic said, for the error a user sees.
pub(crate) fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

/// Turns a failed task (a panic, or an abort from outside) into an error output.
fn join_error(tool: &str, e: tokio::task::JoinError) -> ToolOutput {
    if e.is_cancelled() {
        return cancelled();
    }
    let why = panic_text(e.into_panic().as_ref());
    tracing::error!(tool, "tool panicked: {why}");
    ToolOutput::error(format!(
        "The tool `{tool}` crashed (internal error: {why}). This is a bug in Vigil, not in \
         your call; try a different approach."
    ))
}

/// Runs blocking file work off the async threads, checking for a panic there too.
async fn blocking(tool: &str, f: impl FnOnce() -> ToolOutput + Send + 'static) -> ToolOutput {
    match tokio::task::spawn_blocking(f).await {
        Ok(output) => output,
        Err(e) => join_error(tool, e),
    }
}

/// Decodes a tool's arguments into its typed struct, or explains exactly what is wrong in
/// terms of the schema the model was given, so it can fix the call.
pub(crate) fn parse_args<T: DeserializeOwned>(spec: &ToolSpec, input: serde_json::Value) -> Result<T, ToolOutput> {
    // Some models send the arguments as a JSON string holding the object; accept that
    // rather than fail a call whose meaning is clear.
    let input = match input {
        serde_json::Value::String(s) => match serde_json::from_str(&s) {
            Ok(v @ serde_json::Value::Object(_)) => v,
            _ => serde_json::Value::String(s),
        },
        other => other,
    };
    let expected = describe_params(&spec.parameters);
    if !input.is_object() {
        return Err(ToolOutput::error(format!(
            "Invalid arguments for `{}`: expected a JSON object, got {}. Parameters: {expected}.",
            spec.name,
            json_kind(&input)
        )));
    }
    serde_path_to_error::deserialize(input).map_err(|e| {
        let field = e.path().to_string();
        let why = e.inner().to_string();
        // "unknown field `x`" already names it; a type error does not.
        let at = if field == "." || why.contains(&format!("`{field}`")) {
            String::new()
        } else {
            format!("`{field}`: ")
        };
        ToolOutput::error(format!(
            "Invalid arguments for `{}`: {at}{why}. Parameters: {expected}.",
            spec.name
        ))
    })
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// `path (string, required), offset (integer)` from a JSON schema's properties.
fn describe_params(schema: &serde_json::Value) -> String {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let Some(props) = schema["properties"].as_object() else {
        return "none".into();
    };
    // Required first, in the schema's order; serde_json sorts the properties themselves.
    let mut names: Vec<&str> = required.iter().copied().filter(|r| props.contains_key(*r)).collect();
    names.extend(props.keys().map(String::as_str).filter(|k| !required.contains(k)));
    let parts: Vec<String> = names
        .into_iter()
        .map(|name| {
            let p = &props[name];
            let ty = p["type"].as_str().unwrap_or("any");
            if required.contains(&name) {
                format!("{name} ({ty}, required)")
            } else {
                format!("{name} ({ty})")
            }
        })
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Panics;
    #[async_trait::async_trait]
    impl Tool for Panics {
        fn spec(&self) -> ToolSpec {
            spec("panics")
        }
        async fn run(&self, _: serde_json::Value, _: &ToolContext) -> ToolOutput {
            panic!("boom")
        }
    }

    /// Waits forever unless cancelled; records whether it ever started.
    struct Hangs(Arc<AtomicBool>);
    #[async_trait::async_trait]
    impl Tool for Hangs {
        fn spec(&self) -> ToolSpec {
            spec("hangs")
        }
        async fn run(&self, _: serde_json::Value, _: &ToolContext) -> ToolOutput {
            self.0.store(true, Ordering::SeqCst);
            std::future::pending().await
        }
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    fn ctx() -> ToolContext {
        ToolContext::new(std::env::temp_dir())
    }

    #[test]
    fn builtins_keep_a_stable_order_and_replacing_keeps_the_position() {
        let mut r = ToolRegistry::with_builtins();
        let names = |r: &ToolRegistry| r.specs().iter().map(|s| s.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&r), ["read", "write", "edit"]);
        let before = r.clone();
        r.register(Arc::new(ReadTool));
        r.register(Arc::new(Panics));
        assert_eq!(names(&r), ["read", "write", "edit", "panics"]);
        assert_eq!(names(&before), ["read", "write", "edit"]);
        assert!(r.get("edit").is_some() && r.get("nope").is_none());
    }

    #[tokio::test]
    async fn only_reading_calls_change_nothing() {
        let registry = RegistryHandle::start(
            crate::exec::RegistryConfig::default(),
            Arc::new(crate::clock::SystemClock),
            Arc::new(crate::exec::NoExecEvents),
        );
        let r = ToolRegistry::with_builtins_and_exec(registry);
        let changes = |name: &str, input: serde_json::Value| r.changes_things(name, &input);
        assert!(!changes("read", json!({"path": "a.txt"})));
        assert!(changes("write", json!({"path": "a.txt", "content": "x"})));
        assert!(changes("edit", json!({"path": "a.txt"})));
        assert!(changes("exec", json!({"command": "ls"})), "a command may do anything");
        for look in ["list", "poll", "log"] {
            assert!(!changes("process", json!({"action": look, "sessionId": "p"})), "{look}");
        }
        for act in ["write", "send-keys", "kill", "remove"] {
            assert!(changes("process", json!({"action": act, "sessionId": "p"})), "{act}");
        }
        assert!(!changes("nope", json!({})), "an unknown tool cannot run");
        // A tool that does not say is taken to change things.
        let mut other = ToolRegistry::new();
        other.register(Arc::new(Panics));
        assert!(other.changes_things("panics", &json!({})));
    }

    #[tokio::test]
    async fn an_unknown_tool_lists_the_available_ones() {
        let out = ToolRegistry::with_builtins().execute("grep", json!({}), &ctx()).await;
        assert_eq!(
            out,
            ToolOutput::error("Unknown tool \"grep\". Available tools: read, write, edit.")
        );
    }

    #[tokio::test]
    async fn a_panic_in_a_tool_becomes_an_error_output() {
        let mut r = ToolRegistry::new();
        r.register(Arc::new(Panics));
        let out = r.execute("panics", json!({}), &ctx()).await;
        assert!(out.is_error);
        assert!(out.content.contains("`panics` crashed"), "{}", out.content);
        assert!(out.content.contains("boom"), "{}", out.content);
    }

    #[tokio::test]
    async fn cancellation_stops_a_running_tool_and_skips_a_pending_one() {
        let started = Arc::new(AtomicBool::new(false));
        let mut r = ToolRegistry::new();
        r.register(Arc::new(Hangs(started.clone())));
        let ctx = ctx();

        let (out, ()) = tokio::join!(r.execute("hangs", json!({}), &ctx), async {
            while !started.load(Ordering::SeqCst) {
                tokio::task::yield_now().await;
            }
            ctx.cancel.cancel();
        });
        assert_eq!(out, ToolOutput::error("Cancelled."));

        started.store(false, Ordering::SeqCst);
        let out = r.execute("hangs", json!({}), &ctx).await;
        assert_eq!(out, ToolOutput::error("Cancelled."));
        assert!(!started.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn invalid_arguments_name_the_field_and_the_problem() {
        let r = ToolRegistry::with_builtins();
        let c = ctx();
        let params = "Parameters: path (string, required), limit (integer), offset (integer).";
        let cases = [
            (json!({}), format!("missing field `path`. {params}")),
            (
                json!({"path": "a", "offset": "ten"}),
                format!("`offset`: invalid type: string \"ten\", expected usize. {params}"),
            ),
            (
                json!({"file_path": "a"}),
                format!("unknown field `file_path`, expected one of `path`, `offset`, `limit`. {params}"),
            ),
            (json!(null), format!("expected a JSON object, got null. {params}")),
        ];
        for (input, want) in cases {
            let out = r.execute("read", input, &c).await;
            assert_eq!(out, ToolOutput::error(format!("Invalid arguments for `read`: {want}")));
        }
    }

    #[tokio::test]
    async fn arguments_sent_as_a_json_string_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hi\n").unwrap();
        let out = ToolRegistry::with_builtins()
            .execute("read", json!("{\"path\": \"a.txt\"}"), &ToolContext::new(dir.path()))
            .await;
        assert_eq!(out, ToolOutput::ok("     1\thi"));
    }
}
