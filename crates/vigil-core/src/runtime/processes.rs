//! The runtime's side of real terminals: starting the process registry with the background
//! machinery, turning its events into protocol events for the Processes panel, and an exit
//! notice into what the seeds ask for — a system event for the owning session, a heartbeat
//! wake (`exec-event`), and a native notification. Also the panel's own ops.
//!
//! Owns: [`Processes`] (the registry handle and the panel's view of it) and where an exit
//! goes ([`exit_route`]). Must never: announce one exit twice, or drop the exit of a command
//! the last run left (it is announced when the registry starts).

use std::sync::Arc;

use base64::Engine as _;
use tokio::sync::mpsc;
use vigil_protocol::{ErrorKind, Event, NotificationKind, ProcessSummary, Source};

use super::connection::Agent;
use super::process_table::{ProcessTable, Recording, Running};
use super::{Base, Life};
use crate::events::Emitter;
use crate::exec::{
    ChannelExecEvents, ExecError, ExecEvent, ProcessInfo, RegistryConfig, RegistryHandle, SpawnRequest, TermSize,
    KILLED_BY_USER,
};
use crate::heartbeat;
use crate::session::meta::type_from_id;
use crate::session::SessionType;
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

impl Processes {
    /// The process registry, once background work started.
    pub(super) fn registry(&self) -> Option<&RegistryHandle> {
        self.exec.get()
    }

    /// Every process, for the panel: the user's own that were running when Vigil last
    /// stopped, then this run's.
    pub(super) async fn list(&self) -> Vec<ProcessSummary> {
        let mut all = self.lost_processes.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(r) = self.registry() {
            all.extend(r.list_all().await.iter().map(summary));
        }
        all
    }

    /// The processes still running: what quitting would kill (the quit prompt, the tray).
    pub(super) async fn running(&self) -> Vec<ProcessSummary> {
        match self.registry() {
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
    pub(super) async fn output(&self, process_id: &str) -> Result<String, String> {
        let registry = self.registry().ok_or("Processes are not running yet.")?;
        let raw = registry.raw_output(process_id).await.map_err(|e| e.to_string())?;
        Ok(base64::engine::general_purpose::STANDARD.encode(raw))
    }

    /// Starts the process registry and registers `exec`/`process` (with the routine tools)
    /// for later turns. The agents' commands the last run left running go to `announce`
    /// first; returns what [`forward`] reads, `None` if it ran already.
    pub(super) fn start(
        &self,
        base: &Base,
        life: &Life,
        agent: &Agent,
        scheduler: &crate::routines::Scheduler,
        announce: impl FnOnce(Vec<Running>),
    ) -> Option<ExecEvents> {
        if self.exec.get().is_some() {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let (table, left) = ProcessTable::open(&base.data_dir);
        announce(self.keep_lost(left));
        // Emptied only now that what the last run left is queued: announced once.
        table.save();
        let recording = Arc::new(Recording::new(table, ChannelExecEvents(tx), life.shutdown.clone()));
        let registry = RegistryHandle::start_with_cancel(
            RegistryConfig::default(),
            base.clock.clone(),
            recording.clone(),
            life.shutdown.child_token(),
        );
        if self.exec.set(registry.clone()).is_err() {
            return None;
        }
        let mut tools = ToolRegistry::with_builtins_and_exec(registry);
        crate::routines::tools::register(&mut tools, scheduler);
        let _ = agent.exec_tools.set(tools);
        let recorded = Arc::downgrade(&recording);
        Some(ExecEvents {
            rx,
            recording: recorded,
        })
    }

    /// The user's own commands that were running when Vigil last stopped get a line in the
    /// panel; the others are returned, for their conversations to hear of.
    fn keep_lost(&self, left: Vec<Running>) -> Vec<Running> {
        let mut others = Vec::new();
        for r in left {
            tracing::info!(id = r.id, owner = r.owner, "a command was running when Vigil stopped");
            if r.owner == USER_OWNER {
                self.lost_processes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(lost_summary(&r));
            } else {
                others.push(r);
            }
        }
        others
    }

    fn commands_running(&self, n: usize) {
        self.running_commands.store(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The panel's ops: start, type, kill (the user's: see [`RegistryHandle::kill_by_user`]),
    /// resize; a failure is reported.
    pub(super) fn op(&self, base: &Base, life: &Life, workspace: &std::path::Path, op: ProcessOp) {
        let Some(registry) = self.registry().cloned() else {
            return base.report(ErrorKind::InvalidOp, "Processes are not running yet.");
        };
        let workspace = workspace.to_path_buf();
        let emitter = base.emitter.clone();
        life.tasks.spawn(async move {
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
                    let cwd = cwd.map(std::path::PathBuf::from).unwrap_or(workspace);
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
                emitter.emit(
                    Source::System,
                    Event::Error {
                        kind: ErrorKind::InvalidOp,
                        message,
                    },
                );
            }
        });
    }
}

/// What the registry tells of its commands, and the recording that counts them.
pub(super) struct ExecEvents {
    rx: mpsc::UnboundedReceiver<ExecEvent>,
    recording: std::sync::Weak<Recording>,
}

/// Turns the registry's events into the panel's; hands each exit notice to `exit_notice`
/// and each change in the number of running commands to `count_changed`. Ends when the
/// registry (which holds the only strong reference to the recording, and with it the
/// channel's sender) is gone.
pub(super) async fn forward(
    processes: &Processes,
    emitter: &Emitter,
    watch: &crate::watch::Watch,
    events: ExecEvents,
    count_changed: impl Fn(),
    exit_notice: impl Fn(&str, &str, &str),
) {
    let ExecEvents { mut rx, recording } = events;
    let running = || recording.upgrade().map_or(0, |r| r.running());
    let counted = |n| {
        processes.commands_running(n);
        count_changed();
    };
    while let Some(event) = rx.recv().await {
        match event {
            ExecEvent::Started(info) => {
                counted(running());
                emitter.emit(
                    Source::Exec,
                    Event::ProcessStarted {
                        process: summary(&info),
                    },
                )
            }
            ExecEvent::Output { process_id, owner, raw } => {
                // Output triggers (issue 33) read it too; they never block.
                watch.output(&process_id, &owner, &raw);
                emitter.emit(
                    Source::Exec,
                    Event::ProcessOutput {
                        process_id,
                        data_b64: base64::engine::general_purpose::STANDARD.encode(raw),
                    },
                )
            }
            ExecEvent::Exited { process_id, owner, .. } => {
                watch.process_ended(&process_id);
                counted(running());
                if let Some(Ok(info)) = match processes.registry() {
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
            } => exit_notice(&owner, &process_id, &text),
        }
    }
}

/// Where a backgrounded command's end goes.
pub(super) enum ExitRoute {
    /// The conversation (or job) whose agent started it continues with the notice (see
    /// `continuation`), and tells the user itself.
    Continue,
    /// Queued for the owner's next turn, and the heartbeat woken (its own command).
    WakeHeartbeat,
    /// Queued for the owner (when it is neither the user nor a conversation), and announced
    /// directly by a notification unless the user killed it.
    Announce { queue: bool },
}

/// A backgrounded command ended. The heartbeat's own commands go back to the heartbeat (an
/// `exec-event` wake) while it is on. Commands the user started from the panel, and any
/// when their owner cannot hear it, are announced directly — unless the user killed it:
/// nobody needs telling what they just did.
pub(super) fn exit_route(owner: &str, heartbeat_enabled: bool) -> ExitRoute {
    if owner == heartbeat::session_id(heartbeat::AGENT) {
        if heartbeat_enabled {
            return ExitRoute::WakeHeartbeat;
        }
        ExitRoute::Announce { queue: true }
    } else if owner != USER_OWNER && matches!(type_from_id(owner), SessionType::Primary | SessionType::Job) {
        ExitRoute::Continue
    } else {
        ExitRoute::Announce {
            queue: owner != USER_OWNER,
        }
    }
}

/// The notification for a command whose end no conversation tells of.
pub(super) fn announce_exit(emitter: &Emitter, process_id: &str, text: &str) {
    if text.starts_with(KILLED_BY_USER) {
        return;
    }
    let failed = !text.starts_with("Exec completed");
    let title = if failed {
        "A background command failed"
    } else {
        "A background command finished"
    };
    emitter.emit(
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The user hears of each ended command once, from whoever can tell it best: its
    /// conversation or job continues, the heartbeat's wakes the heartbeat while it is on,
    /// the panel's own are a notification and wake nobody.
    #[test]
    fn an_exit_goes_to_the_one_who_can_tell_the_user() {
        let route = |owner: &str, on| match exit_route(owner, on) {
            ExitRoute::Continue => "continue",
            ExitRoute::WakeHeartbeat => "wake",
            ExitRoute::Announce { queue: true } => "queue+announce",
            ExitRoute::Announce { queue: false } => "announce",
        };
        let heartbeat = heartbeat::session_id(heartbeat::AGENT);
        assert_eq!(route(crate::session::PRIMARY_SESSION, true), "continue");
        assert_eq!(route("job_disk-check_r1", false), "continue");
        assert_eq!(route(&heartbeat, true), "wake");
        assert_eq!(route(&heartbeat, false), "queue+announce");
        assert_eq!(route(USER_OWNER, true), "announce");
    }
}
