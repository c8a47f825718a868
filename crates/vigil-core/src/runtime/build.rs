//! Building the runtime: the data directory opened, every owner made and wired to the
//! others (the heartbeat and the scheduler reach runs through [`background::Host`]).
//!
//! Owns: the order things open in. Must never: start a task (that is
//! [`Runtime::start_background`]'s, inside a tokio runtime).
//!
//! [`Runtime::start_background`]: super::Runtime::start_background

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vigil_protocol::ApprovalPolicy;

use super::{away, background, connection, continuation, lanes, processes, watching, Base, Inner, Life};
use crate::agent::AgentConfig;
use crate::approval::Approvals;
use crate::clock::Clock;
use crate::events::{Emitter, EventSink};
use crate::heartbeat::{Heartbeat, HeartbeatConfig};
use crate::secrets::Secrets;
use crate::session::{LockOptions, MetaStore, SessionError, SessionStore};
use crate::system_events::SystemEvents;
use crate::tools::ToolRegistry;
use crate::workspace::Workspace;

/// Opens the data directory (creating it) and builds every owner, wired to each other; the
/// workspace folder is taken from `desktop`.
pub(super) fn inner(
    data_dir: &Path,
    clock: Arc<dyn Clock>,
    sink: Arc<dyn EventSink>,
    desktop: &vigil_protocol::DesktopSettings,
) -> Result<Arc<Inner>, SessionError> {
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
    Ok(inner)
}
