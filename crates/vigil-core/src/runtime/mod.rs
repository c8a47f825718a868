//! # runtime
//!
//! Owns the running system: one clonable [`Runtime`] handle that takes [`Op`]s, runs turns
//! (one at a time per session lane, sessions concurrently), and sends events to the sink.
//! Front ends (the Tauri shell, `vigil-headless`) hold a handle and nothing else.
//!
//! Background work — the wake loop, the heartbeat and its schedule — starts with
//! [`Runtime::start_background`] and lives in [`background`].
//!
//! Must never: block the caller of [`Runtime::submit`]; turns run on spawned tasks.

mod activity;
mod attachments;
mod away;
mod background;
mod channels;
mod connection;
mod continuation;
mod health;
mod lanes;
mod mcp;
mod ops;
mod process_table;
mod processes;
mod routines;
mod watching;

pub use crate::run::deliver::is_silent;
pub use attachments::{stage_attachment, STAGING_DIR};
pub use continuation::{CONTINUATION_PROMPT, MERGE_WINDOW};
pub use processes::USER_OWNER;

use lanes::Input;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vigil_protocol::{
    ApprovalPolicy, ErrorKind, Event, Message, NotificationKind, ProviderSettings, SessionSummary, SettingsView, Source,
};

use crate::agent::AgentConfig;
use crate::approval::Approvals;
use crate::clock::Clock;
use crate::events::{Emitter, EventSink};
use crate::heartbeat::{Heartbeat, HeartbeatConfig};
use crate::provider::ModelClient;
use crate::secrets::Secrets;
use crate::session::{Loaded, LockOptions, MetaStore, SessionError, SessionStore, SessionType, PRIMARY_SESSION};
use crate::settings;
use crate::system_events::SystemEvents;
use crate::tools::ToolRegistry;
use crate::workspace::Workspace;

/// Titles a conversation has before its first message names it.
const DEFAULT_TITLES: [&str; 2] = ["Conversation", "New conversation"];

/// How long shutdown waits for cancelled turns and background work to finish (seed 004
/// §7.3: `waitForActiveTasks(30000)`).
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The first line of a message, shortened for the sidebar.
fn title_from(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("Conversation");
    let mut title: String = line.chars().take(48).collect();
    if title.len() < line.len() {
        title.push('…');
    }
    title
}

/// A cheap, clonable handle to the runtime.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

/// The runtime's state: a handful of owners, each holding its own part (and defined in the
/// module of its concept), so a method's home is found in one guess from its owner.
struct Inner {
    base: Base,
    life: Life,
    /// Transcripts, their catalog, the lanes that run their turns, the search index.
    conversations: lanes::Conversations,
    /// What a turn is made of: provider, tools, approvals, workspace.
    agent: connection::Agent,
    /// The process registry and the panel's lines.
    processes: processes::Processes,
    /// The MCP servers of `mcp.json`; they start with the background work.
    mcp: crate::mcp::McpManager,
    /// Work nobody asked for just now: heartbeat, routines, triggers, continuations, budget.
    unattended: background::Unattended,
    /// The user's presence and the ways Vigil reaches them while away.
    away: away::Away,
}

/// What every part reads: where the data lives, the clock, the event emitter.
struct Base {
    pub(super) data_dir: PathBuf,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) emitter: Emitter,
    /// When this runtime opened (its clock's milliseconds), for the health check's uptime.
    pub(super) started_at: i64,
    /// Problems found while opening (an unreadable approvals file…), shown in Settings.
    pub(super) startup_warnings: Vec<String>,
}

/// The runtime's tasks and its one shutdown.
struct Life {
    pub(super) tasks: TaskTracker,
    /// Long-lived loops (wake, heartbeat schedule): not waited for by [`Runtime::idle`].
    pub(super) background: TaskTracker,
    /// Cancelled on shutdown; every turn's token is a child of it.
    pub(super) shutdown: CancellationToken,
    /// Set when [`Runtime::shutdown`] has finished: a later call returns at once, a
    /// concurrent one waits for the first.
    pub(super) shut_down: tokio::sync::OnceCell<()>,
}

impl Runtime {
    /// Opens the data directory (creating it) and starts with no provider configured;
    /// call [`Runtime::apply_settings`] next. Reads the workspace folder from the
    /// preferences in `settings.json`; a start that has read them already uses
    /// [`Runtime::open`].
    pub fn new(data_dir: &Path, clock: Arc<dyn Clock>, sink: Arc<dyn EventSink>) -> Result<Self, SessionError> {
        let desktop = crate::settings::desktop::load(data_dir).settings;
        Self::open(data_dir, clock, sink, &desktop)
    }

    /// [`Runtime::new`] with the preferences given (the workspace folder is taken from them).
    pub fn open(
        data_dir: &Path,
        clock: Arc<dyn Clock>,
        sink: Arc<dyn EventSink>,
        desktop: &vigil_protocol::DesktopSettings,
    ) -> Result<Self, SessionError> {
        // Transcripts, settings and approvals are the user's alone: 0700, narrowed if it was open.
        crate::durable::make_private_dir(data_dir).map_err(crate::session::io("create", data_dir))?;
        let store = SessionStore::open_with(data_dir, clock.clone(), LockOptions::default())?;
        let meta = MetaStore::new(store.clone(), clock.clone());
        // VIGIL_APPROVAL_POLICY overrides the stored policy, for scripts.
        let policy = std::env::var("VIGIL_APPROVAL_POLICY")
            .ok()
            .and_then(|p| ApprovalPolicy::parse(&p))
            .unwrap_or_default();
        let (approvals, approval_warnings) = Approvals::open(data_dir, policy);
        for w in &approval_warnings {
            tracing::warn!("{w}");
        }
        let mut startup_warnings = approval_warnings;
        let (workspace_dir, workspace_warning) = crate::settings::desktop::workspace_dir(data_dir, desktop);
        if let Some(w) = workspace_warning {
            tracing::warn!("{w}");
            startup_warnings.push(w);
        }
        let workspace = Workspace::open(&workspace_dir).map_err(|source| SessionError::Io {
            action: "create",
            path: workspace_dir,
            source,
        })?;
        crate::leftovers::sweep_in_background(data_dir, workspace.root());
        if let Err(e) = crate::workspace::heartbeat_file::write_template_once(workspace.root(), data_dir) {
            tracing::warn!("could not write the HEARTBEAT.md template: {e}");
        }
        let channels = crate::channels::Channels::open(data_dir, clock.clone(), crate::channels::Keys::system());
        let sink = channels.tap(sink);
        let journal = crate::away::Journal::default();
        let sink = Arc::new(crate::away::Tap {
            journal: journal.clone(),
            inner: sink,
        });
        let emitter = Emitter::new(sink, clock.clone());
        let system_events = SystemEvents::new();
        let budget = crate::run::Budget::open(store.dir(), emitter.clone(), clock.clone());
        let routines = crate::routines::Scheduler::new(
            crate::routines::Deps {
                store: crate::routines::RoutineStore::new(workspace.root(), store.locks().clone(), clock.clone()),
                runlog: crate::routines::RunLog::new(data_dir),
                meta: meta.clone(),
                emitter: emitter.clone(),
                clock: clock.clone(),
            },
            crate::routines::SchedulerConfig::default(),
        );
        let mut tools = ToolRegistry::with_builtins();
        let history = crate::history::History::open_or_warn(data_dir, &store, clock.clone());
        if let Some(h) = &history {
            tools.register_memory(h.clone(), clock.clone());
        }
        crate::routines::tools::register(&mut tools, &routines);
        tools.register(Arc::new(crate::tools::UpdatesTool::new(meta.clone())));
        let started_at = clock.now_ms();
        let mcp = crate::mcp::McpManager::open(data_dir, Secrets::new(data_dir), clock.clone(), emitter.clone());
        let watch = watching::watch(&routines, data_dir, workspace.root(), &approvals);
        let inner = Arc::new_cyclic(|weak| {
            let deps = crate::heartbeat::Deps {
                store: store.clone(),
                meta: meta.clone(),
                events: system_events.clone(),
                emitter: emitter.clone(),
                clock: clock.clone(),
                workspace: workspace.root().to_path_buf(),
                budget: budget.clone(),
            };
            let host = Arc::new(background::Host(weak.clone()));
            let heartbeat = Heartbeat::new(deps, host, HeartbeatConfig::default());
            heartbeat.set_due_tasks(Arc::new(routines.clone()));
            routines.set_host(Arc::new(background::Host(weak.clone())));
            Inner {
                base: Base {
                    data_dir: data_dir.to_path_buf(),
                    emitter,
                    clock,
                    started_at,
                    startup_warnings,
                },
                life: Life {
                    tasks: TaskTracker::new(),
                    background: TaskTracker::new(),
                    shutdown: CancellationToken::new(),
                    shut_down: tokio::sync::OnceCell::new(),
                },
                conversations: lanes::Conversations {
                    store,
                    meta,
                    lanes: crate::run::Lanes::new(system_events.clone()),
                    system_events,
                    history,
                },
                agent: connection::Agent {
                    secrets: Secrets::new(data_dir),
                    tools,
                    exec_tools: OnceLock::new(),
                    approvals,
                    workspace,
                    agent_config: RwLock::new(AgentConfig::default()),
                    client: RwLock::new(None),
                },
                processes: processes::Processes {
                    exec: OnceLock::new(),
                    running_commands: Default::default(),
                    lost_processes: Mutex::default(),
                },
                mcp,
                unattended: background::Unattended {
                    budget,
                    heartbeat,
                    routines,
                    watch,
                    wake: OnceLock::new(),
                    autonomy: continuation::Autonomy::default(),
                },
                away: away::Away {
                    keep_awake: std::sync::atomic::AtomicBool::new(true),
                    inhibitor: OnceLock::new(),
                    logind_bus: Mutex::default(),
                    presence: OnceLock::new(),
                    away_after_ms: Default::default(),
                    journal,
                    channels,
                },
            }
        });
        let rt = Self { inner };
        rt.apply_desktop(desktop);
        Ok(rt)
    }

    /// Applies what the desktop preferences say about working alone: the continuation
    /// limit, the unattended approval timeout, keeping the computer awake, the absence before
    /// the "While you were away" card. At once; the
    /// desktop shell calls it again when they are saved.
    pub fn apply_desktop(&self, desktop: &vigil_protocol::DesktopSettings) {
        self.set_autonomy(
            desktop.continuation_limit,
            std::time::Duration::from_secs(desktop.approval_timeout_secs.max(1)),
        );
        self.set_keep_awake(desktop.keep_awake);
        self.set_away_after(desktop.away_after_minutes);
        if let Some(h) = &self.inner.conversations.history {
            h.set_agent_skips_heartbeats(desktop.search_skips_heartbeats);
        }
        self.watch().set_webhook_bind(desktop.webhook_bind.as_deref());
    }

    pub fn data_dir(&self) -> &Path {
        &self.inner.base.data_dir
    }

    pub fn clock(&self) -> Arc<dyn Clock> {
        self.inner.base.clock.clone()
    }

    /// Reports a problem that is not part of any turn (an unreadable op, a settings file…).
    pub fn report(&self, kind: ErrorKind, message: impl Into<String>) {
        self.inner.base.emitter.emit(
            Source::System,
            Event::Error {
                kind,
                message: message.into(),
            },
        );
    }

    /// Asks the front end to raise a native notification.
    pub fn notify(&self, title: impl Into<String>, body: impl Into<String>) {
        self.inner.base.emitter.emit(
            Source::System,
            Event::Notification {
                kind: NotificationKind::Other,
                title: title.into(),
                body: body.into(),
                event_id: None,
                process_id: None,
                approval_id: None,
                target_session_id: None,
                message_ts: None,
            },
        );
    }

    /// The conversations, most recent first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, SessionError> {
        self.inner.conversations.meta.load(PRIMARY_SESSION)?;
        Ok(self
            .inner
            .conversations
            .meta
            .list()?
            .sessions
            .into_iter()
            .filter(|m| m.session_type == SessionType::Primary)
            .map(|m| SessionSummary {
                id: m.id,
                title: m.title,
                created_at: m.created_at,
                updated_at: m.updated_at,
                continuations: m.continuations,
                continuation_limit: m.continuation_limit,
            })
            .collect())
    }

    fn sessions_changed(&self, done: Result<(), SessionError>) {
        if let Err(e) = done {
            return self.report(ErrorKind::Session, e.to_string());
        }
        match self.sessions() {
            Ok(sessions) => self
                .inner
                .base
                .emitter
                .emit(Source::System, Event::SessionsChanged { sessions }),
            Err(e) => self.report(ErrorKind::Session, e.to_string()),
        }
    }

    /// The phone channels (Settings → Away).
    pub fn channels(&self) -> &crate::channels::Channels {
        &self.inner.away.channels
    }

    /// The approval gate shared by the tools.
    pub fn approvals(&self) -> &Approvals {
        &self.inner.agent.approvals
    }

    /// The agent's workspace folder.
    pub fn workspace(&self) -> &Path {
        self.inner.agent.workspace.root()
    }

    /// The client a turn starting now uses (`None`: no provider is set).
    fn client(&self) -> Option<ModelClient> {
        self.inner
            .agent
            .client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The limits a turn starting now uses.
    fn agent_config(&self) -> AgentConfig {
        self.inner
            .agent
            .agent_config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the limits used by the next turn.
    pub fn set_agent_config(&self, config: AgentConfig) {
        *self.inner.agent.agent_config.write().unwrap_or_else(|e| e.into_inner()) = config;
    }

    /// The saved conversation of a session, with any load warnings.
    pub fn history(&self, session_id: Option<&str>) -> Result<Loaded, SessionError> {
        self.inner
            .conversations
            .store
            .load(session_id.unwrap_or(PRIMARY_SESSION))
    }

    /// Convenience for tests and the headless runner.
    pub fn messages(&self, session_id: Option<&str>) -> Vec<Message> {
        self.history(session_id).map(|l| l.messages).unwrap_or_default()
    }

    /// Resolves settings (stored + environment + key) and swaps the client used by the next
    /// turn. Running turns keep the client they started with.
    pub fn apply_settings(&self, stored: Option<ProviderSettings>, warnings: Vec<String>) -> SettingsView {
        let mut warnings = warnings;
        warnings.extend(self.inner.base.startup_warnings.iter().cloned());
        let mut resolved = settings::resolve(stored, &self.inner.agent.secrets, warnings);
        let p = &resolved.view.provider;
        let window = p.context_window.unwrap_or_else(|| p.kind.default_context_window());
        self.inner
            .agent
            .agent_config
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .context_window = window as u64;
        let client = match settings::validate(&resolved.view.provider) {
            Err(e) => {
                resolved.view.warnings.push(e);
                None
            }
            Ok(()) => match ModelClient::new(resolved.config, self.inner.base.clock.clone()) {
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

    /// Replaces the client the next turn uses (`None`: turns report that no provider is set).
    pub fn set_client(&self, client: Option<ModelClient>) {
        *self.inner.agent.client.write().unwrap_or_else(|e| e.into_inner()) = client;
    }

    /// Stores (or with an empty key, forgets) the API key for a provider kind.
    pub fn set_api_key(&self, kind: vigil_protocol::ProviderKind, key: &str) -> Result<Option<String>, String> {
        if key.trim().is_empty() {
            self.inner.agent.secrets.delete(kind);
            return Ok(None);
        }
        self.inner
            .agent
            .secrets
            .set(kind, key)
            .map(|f| f.warning)
            .map_err(|e| e.to_string())
    }

    /// Cancels running turns and background work and waits until each has saved what it had.
    /// Done once: the desktop shell calls it on its way out and again as the event loop
    /// exits (for exits that did not go its way), and the second call returns at once.
    pub async fn shutdown(&self) {
        let inner = &self.inner;
        inner
            .life
            .shut_down
            .get_or_init(|| async {
                inner.life.shutdown.cancel();
                // Child process groups go first, so no command outlives the app.
                if let Some(registry) = inner.processes.exec.get() {
                    registry.shutdown().await;
                }
                // So do the MCP servers' (stdin closed, then SIGTERM, then SIGKILL).
                inner.mcp.shutdown().await;
                inner.life.tasks.close();
                inner.life.background.close();
                let drained = async {
                    inner.life.tasks.wait().await;
                    inner.life.background.wait().await;
                };
                // Each step saves as it goes, so a turn or wake stuck past the grace period
                // loses nothing by being left behind (seed 004 §7.3).
                if tokio::time::timeout(SHUTDOWN_GRACE, drained).await.is_err() {
                    tracing::warn!(
                        turns = inner.life.tasks.len(),
                        background = inner.life.background.len(),
                        "still running {} s after shutdown began; exiting without them",
                        SHUTDOWN_GRACE.as_secs()
                    );
                }
            })
            .await;
    }

    /// Nobody will answer questions any more (a script's input ended): approvals waiting
    /// are denied, later ones denied at once, so [`Self::idle`] can return.
    pub fn stop_asking(&self) {
        self.inner.agent.approvals.stop_asking();
    }

    /// Waits until every turn submitted so far, and every wake requested so far, has
    /// finished (for scripts reaching EOF).
    pub async fn idle(&self) {
        loop {
            self.inner.life.tasks.close();
            self.inner.life.tasks.wait().await;
            self.inner.life.tasks.reopen();
            if !self.settle_wakes().await {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
