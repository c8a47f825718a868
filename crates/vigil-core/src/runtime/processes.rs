//! The runtime's side of real terminals: starting the process registry with the background
//! machinery, turning its events into protocol events for the Processes panel, and an exit
//! notice into what the seeds ask for — a system event for the owning session, a heartbeat
//! wake (`exec-event`), and a native notification. Also the panel's own ops.

use std::sync::Arc;

use base64::Engine as _;
use tokio::sync::mpsc;
use vigil_protocol::{ErrorKind, Event, NotificationKind, ProcessSummary, Source, WakeReason};

use super::process_table::{stopped_notice, ProcessTable, Recording, Running};
use super::Runtime;
use crate::exec::{
    ChannelExecEvents, ExecError, ExecEvent, ProcessInfo, RegistryConfig, RegistryHandle, SpawnRequest, TermSize,
    KILLED_BY_USER,
};
use crate::heartbeat;
use crate::session::meta::type_from_id;
use crate::session::SessionType;
use crate::system_events::SystemEventKind;
use crate::tools::ToolRegistry;

/// The owner of commands the user starts from the panel: no agent session is woken for them.
pub const USER_OWNER: &str = "user";

/// The commands: the process registry once it runs, how many run, and the user's commands
/// that were running when Vigil last stopped.
pub(super) struct Processes {
    /// The process registry, started with the background work (it needs a tokio runtime).
    pub(super) exec: std::sync::OnceLock<RegistryHandle>,
    /// Commands running now (the process table's size).
    pub(super) running_commands: std::sync::atomic::AtomicUsize,
    /// The user's own commands that were running when Vigil last stopped (the panel's lines).
    pub(super) lost_processes: std::sync::Mutex<Vec<vigil_protocol::ProcessSummary>>,
}

pub(super) fn summary(info: &ProcessInfo) -> ProcessSummary {
    let exit = info.exit.clone().unwrap_or_default();
    ProcessSummary {
        id: info.id.clone(),
        owner: info.owner.clone(),
        command: info.command.clone(),
        cwd: info.cwd.display().to_string(),
        pid: info.pid,
        state: info.state.as_str().to_string(),
        started_at: info.started_at,
        ended_at: info.ended_at,
        exit_code: exit.code,
        signal: exit.signal,
        background: info.backgrounded,
        pty: info.pty,
    }
}

impl Runtime {
    /// Starts the process registry and registers `exec`/`process` for later turns. Called by
    /// [`Runtime::start_background`], inside a tokio runtime.
    pub(super) fn start_processes(&self) {
        if self.inner.processes.exec.get().is_some() {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (table, left) = ProcessTable::open(&self.inner.base.data_dir);
        self.announce_left(left);
        // Emptied only now that what the last run left is queued: announced once.
        table.save();
        let recording = Arc::new(Recording::new(
            table,
            ChannelExecEvents(tx),
            self.inner.life.shutdown.clone(),
        ));
        let registry = RegistryHandle::start_with_cancel(
            RegistryConfig::default(),
            self.inner.base.clock.clone(),
            recording.clone(),
            self.inner.life.shutdown.child_token(),
        );
        if self.inner.processes.exec.set(registry.clone()).is_err() {
            return;
        }
        let mut tools = ToolRegistry::with_builtins_and_exec(registry);
        crate::routines::tools::register(&mut tools, &self.inner.unattended.routines);
        let _ = self.inner.agent.exec_tools.set(tools);
        let this = self.clone();
        let recorded = Arc::downgrade(&recording);
        drop(recording);
        self.inner
            .life
            .background
            .spawn(async move { this.forward_exec_events(rx, recorded).await });
    }

    /// Commands the last run did not see end (a quit, a crash): each conversation hears of
    /// its own and may continue; the heartbeat's wait for its next run; the user's own get a
    /// line in the panel.
    fn announce_left(&self, left: Vec<Running>) {
        for r in left {
            tracing::info!(id = r.id, owner = r.owner, "a command was running when Vigil stopped");
            if r.owner == USER_OWNER {
                self.inner
                    .processes
                    .lost_processes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(lost_summary(&r));
                continue;
            }
            let notice = stopped_notice(&r);
            if type_from_id(&r.owner) == SessionType::Primary {
                match self.inner.conversations.meta.load(&r.owner) {
                    Ok(_) => self.continue_after_exit(&r.owner, &notice),
                    Err(e) => tracing::info!("not announced: {e}"),
                }
            } else {
                self.enqueue_system_event(&r.owner, &notice, SystemEventKind::ExecFinished);
            }
        }
    }

    /// The tools a turn gets: with `exec`/`process` once the registry runs, then the tools
    /// of the MCP servers running now.
    pub(super) fn tools(&self) -> ToolRegistry {
        let tools = self
            .inner
            .agent
            .exec_tools
            .get()
            .cloned()
            .unwrap_or_else(|| self.inner.agent.tools.clone());
        self.with_mcp_tools(tools)
    }

    /// The process registry, once background work started.
    pub fn processes(&self) -> Option<&RegistryHandle> {
        self.inner.processes.exec.get()
    }

    /// Every process, for the panel: the user's own that were running when Vigil last
    /// stopped, then this run's.
    pub async fn list_processes(&self) -> Vec<ProcessSummary> {
        let mut all = self
            .inner
            .processes
            .lost_processes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(r) = self.processes() {
            all.extend(r.list_all().await.iter().map(summary));
        }
        all
    }

    /// The processes still running: what quitting would kill (the quit prompt, the tray).
    pub async fn running_processes(&self) -> Vec<ProcessSummary> {
        match self.processes() {
            Some(r) => r
                .list_all()
                .await
                .iter()
                .filter(|p| p.state == crate::exec::ProcessState::Running)
                .map(summary)
                .collect(),
            None => vec![],
        }
    }

    /// The raw terminal bytes kept for a process (base64), so the panel can replay it.
    pub async fn process_output(&self, process_id: &str) -> Result<String, String> {
        let registry = self.processes().ok_or("Processes are not running yet.")?;
        let raw = registry.raw_output(process_id).await.map_err(|e| e.to_string())?;
        Ok(base64::engine::general_purpose::STANDARD.encode(raw))
    }

    /// Ends when the registry (which holds the only strong reference to `recording`, and
    /// with it the channel's sender) is gone.
    async fn forward_exec_events(
        &self,
        mut rx: mpsc::UnboundedReceiver<ExecEvent>,
        recording: std::sync::Weak<Recording>,
    ) {
        let running = || recording.upgrade().map_or(0, |r| r.running());
        let emitter = self.inner.base.emitter.clone();
        while let Some(event) = rx.recv().await {
            match event {
                ExecEvent::Started(info) => {
                    self.commands_running(running());
                    emitter.emit(
                        Source::Exec,
                        Event::ProcessStarted {
                            process: summary(&info),
                        },
                    )
                }
                ExecEvent::Output { process_id, owner, raw } => {
                    // Output triggers (issue 33) read it too; they never block.
                    self.inner.unattended.watch.output(&process_id, &owner, &raw);
                    emitter.emit(
                        Source::Exec,
                        Event::ProcessOutput {
                            process_id,
                            data_b64: base64::engine::general_purpose::STANDARD.encode(raw),
                        },
                    )
                }
                ExecEvent::Exited { process_id, owner, .. } => {
                    self.inner.unattended.watch.process_ended(&process_id);
                    self.commands_running(running());
                    if let Some(Ok(info)) = match self.processes() {
                        Some(r) => Some(r.info(&owner, &process_id).await),
                        None => None,
                    } {
                        emitter.emit(
                            Source::Exec,
                            Event::ProcessExited {
                                process: summary(&info),
                            },
                        );
                    }
                }
                ExecEvent::ExitNotice {
                    owner,
                    process_id,
                    text,
                } => self.on_exit_notice(&owner, &process_id, &text),
            }
        }
    }

    /// A backgrounded command ended. The conversation (or job) whose agent started it
    /// continues with the notice (see `continuation`), and tells the user itself. The
    /// heartbeat's own commands go back to the heartbeat (an `exec-event` wake). Commands the
    /// user started from the panel, and any when their owner cannot hear it, are announced
    /// directly — unless the user killed it: nobody needs telling what they just did.
    fn on_exit_notice(&self, owner: &str, process_id: &str, text: &str) {
        let heartbeat = heartbeat::session_id(heartbeat::AGENT);
        if owner == heartbeat {
            self.enqueue_system_event(owner, text, SystemEventKind::ExecFinished);
            if self.heartbeat_view().settings.enabled {
                tracing::info!(process_id, "the heartbeat's command ended: waking the heartbeat");
                self.request_wake(WakeReason::ExecEvent);
                return;
            }
        } else if owner != USER_OWNER && matches!(type_from_id(owner), SessionType::Primary | SessionType::Job) {
            return self.continue_after_exit(owner, text);
        } else if owner != USER_OWNER {
            self.enqueue_system_event(owner, text, SystemEventKind::ExecFinished);
        }
        if text.starts_with(KILLED_BY_USER) {
            return;
        }
        let failed = !text.starts_with("Exec completed");
        let title = if failed {
            "A background command failed"
        } else {
            "A background command finished"
        };
        self.inner.base.emitter.emit(
            Source::Exec,
            Event::Notification {
                kind: NotificationKind::Process,
                title: title.into(),
                body: text.chars().take(300).collect(),
                event_id: None,
                process_id: Some(process_id.to_string()),
                approval_id: None,
                target_session_id: None,
                message_ts: None,
            },
        );
    }

    fn commands_running(&self, n: usize) {
        self.inner
            .processes
            .running_commands
            .store(n, std::sync::atomic::Ordering::Relaxed);
        self.activity_changed();
    }

    /// The panel's ops: start, type, kill (the user's: see [`RegistryHandle::kill_by_user`]),
    /// resize.
    pub(super) fn process_op(&self, op: ProcessOp) {
        let Some(registry) = self.processes().cloned() else {
            return self.report(ErrorKind::InvalidOp, "Processes are not running yet.");
        };
        let this = self.clone();
        self.inner.life.tasks.spawn(async move {
            let owner_of = |id: String| {
                let registry = registry.clone();
                async move {
                    registry
                        .list_all()
                        .await
                        .into_iter()
                        .find(|p| p.id == id)
                        .map(|p| p.owner)
                }
            };
            let result: Result<(), String> = match op {
                ProcessOp::Start { command, cwd } => {
                    let cwd = cwd
                        .map(std::path::PathBuf::from)
                        .unwrap_or_else(|| this.workspace().to_path_buf());
                    let mut req = SpawnRequest::new(USER_OWNER, command, cwd);
                    req.background = true;
                    registry.spawn(req).await.map(|_| ()).map_err(|e| e.to_string())
                }
                ProcessOp::Input { id, data } => match owner_of(id.clone()).await {
                    Some(owner) => registry
                        .write(&owner, &id, data.into_bytes(), false)
                        .await
                        .map_err(|e| e.to_string()),
                    None => Err(format!("No process {id}.")),
                },
                // The user's kill, not the owner's: an agent's command is news to its agent.
                ProcessOp::Kill { id } => match registry.kill_by_user(&id).await {
                    Ok(_) => Ok(()),
                    Err(ExecError::NotFound { .. }) => Err(format!("No process {id}.")),
                    Err(e) => Err(e.to_string()),
                },
                ProcessOp::Resize { id, cols, rows } => registry
                    .resize(&id, TermSize { cols, rows })
                    .await
                    .map_err(|e| e.to_string()),
            };
            if let Err(message) = result {
                this.report(ErrorKind::InvalidOp, message);
            }
        });
    }
}

/// The panel's line for a command of the user's that was running when Vigil stopped.
fn lost_summary(r: &Running) -> ProcessSummary {
    ProcessSummary {
        id: r.id.clone(),
        owner: r.owner.clone(),
        command: r.command.clone(),
        cwd: r.cwd.clone(),
        pid: r.pid,
        state: crate::exec::ProcessState::Killed.as_str().to_string(),
        started_at: r.started_at,
        ended_at: None,
        exit_code: None,
        signal: Some("was running when Vigil stopped".into()),
        background: true,
        pty: true,
    }
}

/// The panel's requests, out of their `Op`s.
pub(super) enum ProcessOp {
    Start { command: String, cwd: Option<String> },
    Input { id: String, data: String },
    Kill { id: String },
    Resize { id: String, cols: u16, rows: u16 },
}
