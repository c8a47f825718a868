//! # mcp
//!
//! Owns the MCP servers the user configured in `<data dir>/mcp.json`, and offers their tools
//! to the model through the same tool registry and approval gate as the built-ins. A client
//! on `rmcp`, the protocol's official Rust SDK, for stdio and streamable HTTP servers.
//!
//! - [`config`] — `mcp.json`: reading (a broken file kept aside), entries, edits, secrets.
//! - [`client`] — one connection: start, `initialize` with a deadline, progress, list changes.
//! - [`stdio`] — a stdio server's process group and its stderr.
//! - [`server`] — one server's supervisor: states, restarts with backoff, waiting calls.
//! - [`tool`] — one tool as the agent calls it: approval, timeout, cancellation, results.
//! - [`schema`] — names and input schemas as both provider APIs accept them.
//!
//! [`McpManager`] holds them: servers start with the runtime's background work, in parallel
//! and without delaying it; Settings reads [`McpManager::view`] and edits through the manager;
//! [`McpManager::shutdown`] stops every server with no process left behind.
//!
//! Must never: block the runtime on a server, or offer a tool of a server that is not running.

pub mod client;
pub mod config;
pub mod schema;
pub mod server;
pub mod stdio;
pub mod tool;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vigil_protocol::{Event, McpSecretField, McpServerView, McpToolView, McpTransport, McpView, Source};

use crate::clock::Clock;
use crate::events::Emitter;
use crate::secrets::Secrets;
use crate::tools::Tool;
use config::{McpFile, ServerConfig, Target};
use server::{Deps, Server, Status, Timings};

/// How long shutdown waits for the servers to stop (each one's own steps take ~3 s at most).
const SHUTDOWN_WAIT: Duration = Duration::from_secs(6);

/// The MCP servers. Cheap to clone; clones share them.
#[derive(Clone)]
pub struct McpManager {
    inner: Arc<Inner>,
}

struct Inner {
    secrets: Secrets,
    clock: Arc<dyn Clock>,
    emitter: Emitter,
    timings: Mutex<Timings>,
    /// The file and the servers, changed together. A `std` lock, never held across an await.
    state: Mutex<State>,
    tasks: TaskTracker,
    /// Cancelled on shutdown; each server's stop token is its child.
    shutdown: CancellationToken,
    /// Set by [`McpManager::start`]: a server added later starts at once.
    started: AtomicBool,
}

struct State {
    file: McpFile,
    /// What is wrong with the file as a whole, for Settings.
    problem: Option<String>,
    servers: BTreeMap<String, Arc<Server>>,
}

impl McpManager {
    /// Reads `<data_dir>/mcp.json`; starts nothing yet. `emitter` tells Settings of changes.
    pub fn open(data_dir: &Path, secrets: Secrets, clock: Arc<dyn Clock>, emitter: Emitter) -> Self {
        let (file, problem) = McpFile::load(data_dir, clock.now_ms());
        let shutdown = CancellationToken::new();
        let servers = file
            .entries()
            .into_iter()
            .map(|(name, config)| {
                let server = Server::new(&name, config, shutdown.child_token());
                (name, server)
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                secrets,
                clock,
                emitter,
                timings: Mutex::new(Timings::default()),
                state: Mutex::new(State { file, problem, servers }),
                tasks: TaskTracker::new(),
                shutdown,
                started: AtomicBool::new(false),
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn timings(&self) -> Timings {
        *self.inner.timings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shorter timings (tests): for servers started after this.
    pub fn set_timings(&self, timings: Timings) {
        *self.inner.timings.lock().unwrap_or_else(|e| e.into_inner()) = timings;
    }

    /// Starts every server, each on a task of its own; returns at once. Call inside a tokio
    /// runtime; later calls do nothing.
    pub fn start(&self) {
        if self.inner.started.swap(true, Ordering::SeqCst) {
            return;
        }
        client::install_tls_provider();
        let servers: Vec<Arc<Server>> = self.state().servers.values().cloned().collect();
        for server in servers {
            self.supervise(server);
        }
    }

    fn supervise(&self, server: Arc<Server>) {
        let weak = Arc::downgrade(&self.inner);
        let deps = Deps {
            secrets: self.inner.secrets.clone(),
            clock: self.inner.clock.clone(),
            changed: Arc::new(move || {
                if let Some(inner) = weak.upgrade() {
                    McpManager { inner }.changed();
                }
            }),
            timings: self.timings(),
        };
        self.inner.tasks.spawn(server::supervise(server, deps));
    }

    /// Tells Settings.
    fn changed(&self) {
        let mcp = self.view();
        self.inner
            .emitter
            .emit(Source::System, Event::McpServersChanged { mcp });
    }

    /// The tools of every running server, by server name, in each server's order. A name two
    /// servers would both give (after cleaning) goes to the first.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        let start_wait = self.timings().start_wait;
        let servers: Vec<Arc<Server>> = self.state().servers.values().cloned().collect();
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<Arc<dyn Tool>> = Vec::new();
        for server in servers {
            let Status::Running(connection) = server.status() else {
                continue;
            };
            for offered in &connection.tools {
                if seen.insert(offered.spec.name.clone()) {
                    out.push(Arc::new(tool::McpTool::new(
                        server.clone(),
                        offered.clone(),
                        start_wait,
                    )));
                } else {
                    tracing::warn!(
                        server = server.name,
                        tool = offered.name,
                        "an MCP tool of that name is offered already"
                    );
                }
            }
        }
        out
    }

    /// Settings → Tools.
    pub fn view(&self) -> McpView {
        let state = self.state();
        McpView {
            servers: state.servers.values().map(|s| server_view(s)).collect(),
            problem: state.problem.clone(),
            path: state.file.path().display().to_string(),
        }
    }

    /// Adds the servers of a pasted config (see [`config::parse_import`]), replacing any of
    /// the same name; `secret` values go to the keyring. Saved, then started.
    pub async fn add(&self, json: &str, secret: &[McpSecretField]) -> Result<McpView, String> {
        let mut servers = config::parse_import(json)?;
        let mut stored = Vec::new();
        for field in secret {
            let entry = servers
                .get_mut(&field.server)
                .ok_or_else(|| format!("The pasted config has no server named {:?}.", field.server))?;
            let account = config::account(&field.server, field.field, &field.name);
            let value = config::take_secret(entry, field.field, &field.name, &account)
                .map_err(|why| format!("Server {:?}: {why}.", field.server))?;
            stored.push((account, value));
        }
        let secrets = self.inner.secrets.clone();
        let warnings = tokio::task::spawn_blocking(move || {
            stored
                .into_iter()
                .map(|(account, value)| secrets.set_named(&account, &value).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()
        })
        .await
        .map_err(|e| format!("Storing the secrets failed: {e}"))??;
        for w in warnings.into_iter().flatten() {
            tracing::warn!("{w}");
        }
        let (replaced, added) = {
            let mut state = self.state();
            for (name, entry) in &servers {
                state.file.insert(name, entry.clone());
            }
            state
                .file
                .save()
                .map_err(|e| format!("Could not save {}: {e}", state.file.path().display()))?;
            state.problem = None;
            let mut replaced = Vec::new();
            let mut added = Vec::new();
            for (name, entry) in servers {
                let server = Server::new(&name, config::parse_entry(&entry), self.inner.shutdown.child_token());
                if let Some(old) = state.servers.insert(name, server.clone()) {
                    replaced.push(old);
                }
                added.push(server);
            }
            (replaced, added)
        };
        for old in replaced {
            old.stop();
        }
        if self.inner.started.load(Ordering::SeqCst) {
            for server in added {
                self.supervise(server);
            }
        }
        self.changed();
        Ok(self.view())
    }

    /// Stops a server and removes it from `mcp.json`, with its values in the keyring.
    pub async fn remove(&self, name: &str) -> Result<McpView, String> {
        let (server, entry) = {
            let mut state = self.state();
            let entry = state
                .file
                .remove(name)
                .ok_or_else(|| format!("No MCP server is named {name:?}."))?;
            if let Err(e) = state.file.save() {
                state.file.insert(name, entry);
                return Err(format!("Could not save {}: {e}", state.file.path().display()));
            }
            (state.servers.remove(name), entry)
        };
        if let Some(server) = server {
            server.stop();
        }
        let accounts = keyring_accounts(&entry);
        let secrets = self.inner.secrets.clone();
        let _ = tokio::task::spawn_blocking(move || accounts.iter().for_each(|a| secrets.delete_named(a))).await;
        self.changed();
        Ok(self.view())
    }

    /// Lets a server's calls run without asking, or asks again; saved, no restart.
    pub fn set_trusted(&self, name: &str, trusted: bool) -> Result<McpView, String> {
        {
            let mut state = self.state();
            state.file.set_trusted(name, trusted)?;
            state
                .file
                .save()
                .map_err(|e| format!("Could not save {}: {e}", state.file.path().display()))?;
            if let Some(server) = state.servers.get(name) {
                server.set_trusted(trusted);
            }
        }
        self.changed();
        Ok(self.view())
    }

    /// Restarts a server (running or failed).
    pub fn restart(&self, name: &str) -> Result<McpView, String> {
        let server = self
            .state()
            .servers
            .get(name)
            .cloned()
            .ok_or_else(|| format!("No MCP server is named {name:?}."))?;
        server.request_restart();
        Ok(self.view())
    }

    /// Stops every server (close stdin, SIGTERM, SIGKILL to each process group) and waits
    /// for them, a few seconds at most.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.tasks.close();
        if tokio::time::timeout(SHUTDOWN_WAIT, self.inner.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("MCP servers still stopping after {} s", SHUTDOWN_WAIT.as_secs());
        }
    }
}

fn server_view(server: &Server) -> McpServerView {
    let status = server.status();
    let tools = match &status {
        Status::Running(c) => c
            .tools
            .iter()
            .map(|t| McpToolView {
                name: t.name.clone(),
                qualified_name: t.spec.name.clone(),
                description: t.spec.description.clone(),
                read_only: t.read_only,
            })
            .collect(),
        _ => vec![],
    };
    let (transport, target, secrets, timeout) = match &server.config {
        Ok(c @ ServerConfig { target, .. }) => (
            match target {
                Target::Stdio { .. } => McpTransport::Stdio,
                Target::Http { .. } => McpTransport::Http,
            },
            crate::shell::visible(&c.target_text()),
            c.secret_names(),
            c.timeout,
        ),
        Err(_) => (McpTransport::Stdio, String::new(), vec![], server.call_timeout()),
    };
    McpServerView {
        name: server.name.clone(),
        transport,
        target,
        state: status.view(),
        tools,
        trusted: server.trusted(),
        timeout_secs: timeout.as_secs(),
        stderr_tail: server.tail.lines(),
        secrets,
    }
}

/// The keyring accounts an entry refers to.
fn keyring_accounts(entry: &Value) -> Vec<String> {
    ["env", "headers"]
        .iter()
        .filter_map(|k| entry.get(*k).and_then(Value::as_object))
        .flat_map(|m| m.values())
        .filter_map(|v| v.get("keyring").and_then(Value::as_str).map(str::to_string))
        .collect()
}
