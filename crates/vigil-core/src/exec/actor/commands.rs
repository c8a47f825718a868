//! The actor's answers to handle messages: one arm per [`Msg`], spawning, and input.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::{new_id, Actor, Proc};
use super::{Killer, Msg, Reply};
use crate::exec::output::{CappedBytes, CappedText};
use crate::exec::spawn::{self, WriteJob};
use crate::exec::{ExecError, LogView, Polled, ProcessInfo, ProcessState, SpawnRequest, Yielded};

impl Actor {
    pub(super) fn handle(&mut self, msg: Msg) {
        match msg {
            Msg::Spawn { req, reply } => {
                let _ = reply.send(self.spawn(req));
            }
            Msg::Info { owner, id, reply } => {
                let _ = reply.send(self.get(Some(&owner), &id).map(|p| p.info.clone()));
            }
            Msg::List { owner, reply } => {
                self.sweep();
                let mut list: Vec<ProcessInfo> = self
                    .procs
                    .values()
                    .filter(|p| owner.as_ref().is_none_or(|o| *o == p.info.owner))
                    .map(|p| p.info.clone())
                    .collect();
                list.sort_by(|a, b| (a.started_at, &a.id).cmp(&(b.started_at, &b.id)));
                let _ = reply.send(list);
            }
            Msg::Yield { owner, id, reply } => {
                let _ = reply.send(self.get(Some(&owner), &id).map(|p| {
                    if p.info.is_running() {
                        p.info.backgrounded = true;
                        Yielded::Running(p.info.clone())
                    } else {
                        Yielded::Finished(p.outcome())
                    }
                }));
            }
            Msg::Wait { owner, id, reply } => match self.get(Some(&owner), &id) {
                Ok(p) if p.info.is_running() => p.finish_waiters.push(reply),
                done => {
                    let _ = reply.send(done.map(|p| p.outcome()));
                }
            },
            Msg::Changed { owner, id, reply } => match self.get(Some(&owner), &id) {
                Ok(p) if p.info.is_running() && p.pending.is_empty() => p.change_waiters.push(reply),
                done => {
                    let _ = reply.send(done.map(|_| ()));
                }
            },
            Msg::Tail { owner, id, reply } => {
                let n = self.config.tail_chars;
                let _ = reply.send(
                    self.get(Some(&owner), &id)
                        .map(|p| (p.info.clone(), p.aggregated.tail(n).to_string())),
                );
            }
            Msg::Poll { owner, id, reply } => {
                let _ = reply.send(self.get(Some(&owner), &id).map(|p| {
                    let (output, dropped_chars) = p.pending.take();
                    p.empty_polls = if output.is_empty() { p.empty_polls + 1 } else { 0 };
                    Polled {
                        info: p.info.clone(),
                        output,
                        dropped_chars,
                        empty_polls: p.empty_polls,
                    }
                }));
            }
            Msg::Log { owner, id, reply } => {
                let _ = reply.send(self.get(Some(&owner), &id).map(|p| LogView {
                    info: p.info.clone(),
                    text: p.aggregated.text().to_string(),
                    dropped_chars: p.aggregated.dropped(),
                }));
            }
            Msg::Write {
                owner,
                id,
                data,
                eof,
                reply,
            } => self.write(&owner, &id, data, eof, reply),
            Msg::Kill { owner, id, by, reply } => match self.get(owner.as_deref(), &id) {
                Ok(p) if p.info.is_running() => {
                    match by {
                        Killer::Owner => p.quiet = true,
                        Killer::User => p.killed_by_user = true,
                    }
                    p.finish_waiters.extend(reply);
                    self.kill_group(&id, false);
                }
                done => {
                    let done = done.map(|p| p.outcome());
                    if let Some(reply) = reply {
                        let _ = reply.send(done);
                    }
                }
            },
            Msg::Clear { owner, id, reply } => {
                let done = match self.get(Some(&owner), &id) {
                    Ok(p) if p.info.is_running() => Err(ExecError::StillRunning { id: id.clone() }),
                    Ok(_) => Ok(self.procs.remove(id.as_str()).map(|p| p.info)),
                    Err(e) => Err(e),
                };
                let _ = reply.send(done.map(|info| info.expect("present: just looked up")));
            }
            Msg::Remove { owner, id, reply } => match self.get(Some(&owner), &id) {
                Ok(p) if p.info.is_running() => {
                    p.quiet = true;
                    p.remove_waiters.push(reply);
                    self.kill_group(&id, false);
                }
                Ok(_) => {
                    let info = self.procs.remove(id.as_str()).map(|p| p.info);
                    let _ = reply.send(Ok(info.expect("present: just looked up")));
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            Msg::Resize { id, size, reply } => {
                let done = self.get(None, &id).and_then(|p| match &p.master {
                    _ if !p.info.is_running() => Err(ended(p)),
                    None => Err(ExecError::NoTerminal { id: id.clone() }),
                    Some(master) => master
                        .resize(portable_pty::PtySize {
                            rows: size.rows,
                            cols: size.cols,
                            pixel_width: 0,
                            pixel_height: 0,
                        })
                        .map_err(|e| ExecError::Resize {
                            id: id.clone(),
                            reason: format!("{e:#}"),
                        }),
                });
                let _ = reply.send(done);
            }
            Msg::Raw { id, reply } => {
                let _ = reply.send(self.get(None, &id).map(|p| p.raw.bytes().to_vec()));
            }
            Msg::Sweep { reply } => {
                let _ = reply.send(self.sweep());
            }
            Msg::Shutdown { reply } => {
                let _ = reply.send(());
            }
            Msg::TimedOut { id } => {
                if self.procs.get(&id).is_some_and(|p| p.info.is_running()) {
                    self.kill_group(&id, true);
                }
            }
            Msg::Drained { id } => {
                if let Some(p) = self.procs.get_mut(&id) {
                    p.drain_expired = true;
                }
                self.maybe_finish(&id);
            }
        }
    }

    fn spawn(&mut self, req: SpawnRequest) -> Result<ProcessInfo, ExecError> {
        if self.shutting_down {
            return Err(ExecError::ShutDown);
        }
        // Refused, not recorded: nothing started, so there is no process to list.
        let running = self.procs.values().filter(|p| p.info.is_running()).count();
        if running >= self.config.max_running {
            return Err(ExecError::TooMany { running });
        }
        let id: Arc<str> = loop {
            let id = new_id();
            if !self.procs.contains_key(id.as_str()) {
                break id.into();
            }
        };
        let size = req.size.unwrap_or(self.config.size);
        let started = spawn::spawn(&id, &req, size, &self.pump_tx);
        let mut info = ProcessInfo {
            id: id.to_string(),
            owner: req.owner.clone(),
            command: req.command.clone(),
            cwd: req.cwd.clone(),
            pid: None,
            pty: false,
            pty_fallback: None,
            started_at: self.clock.now_ms(),
            ended_at: None,
            state: ProcessState::Running,
            exit: None,
            backgrounded: req.background,
            error: None,
        };
        let (master, stdin) = match started {
            Ok(s) => {
                info.pid = Some(s.pid);
                info.pty = s.master.is_some();
                info.pty_fallback = s.pty_fallback;
                (s.master, Some(s.stdin))
            }
            Err(reason) => {
                info.state = ProcessState::FailedToStart;
                info.ended_at = Some(info.started_at);
                info.error = Some(reason.clone());
                (None, None)
            }
        };
        let cap = self.config.max_output_chars;
        let proc = Proc {
            info: info.clone(),
            aggregated: CappedText::new(cap),
            pending: CappedText::new(cap),
            raw: CappedBytes::new(self.config.max_raw_bytes),
            ui: CappedBytes::new(self.config.max_raw_bytes / 2),
            ui_dirty: false,
            master,
            stdin,
            stdin_closed: false,
            reaped: None,
            eof: false,
            drain_expired: false,
            term_sent: false,
            kill_requested: false,
            timed_out: false,
            timeout: req.timeout,
            quiet: false,
            killed_by_user: false,
            notified: false,
            lingering: false,
            finish_waiters: Vec::new(),
            remove_waiters: Vec::new(),
            change_waiters: Vec::new(),
            empty_polls: 0,
            timers: CancellationToken::new(),
        };
        if let (Some(timeout), true) = (req.timeout, info.is_running()) {
            let id = id.clone();
            self.after(&proc.timers, timeout, move || Msg::TimedOut { id });
        }
        self.procs.insert(id, proc);
        match info.error.clone() {
            Some(reason) => Err(ExecError::Spawn {
                command: req.command,
                reason,
            }),
            None => {
                self.events.started(&info);
                Ok(info)
            }
        }
    }

    fn write(&mut self, owner: &str, id: &str, data: Vec<u8>, eof: bool, reply: Reply<()>) {
        let p = match self.get(Some(owner), id) {
            Ok(p) => p,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        if !p.info.is_running() {
            let _ = reply.send(Err(ended(p)));
            return;
        }
        if p.stdin_closed {
            let _ = reply.send(Err(ExecError::StdinClosed { id: id.into() }));
            return;
        }
        // A terminal stays open after ^D; a pipe is closed for good.
        if eof && !p.info.pty {
            p.stdin_closed = true;
        }
        let Some(stdin) = &p.stdin else {
            let _ = reply.send(Err(ended(p)));
            return;
        };
        if let Err(std::sync::mpsc::SendError(job)) = stdin.send(WriteJob { data, eof, reply }) {
            let _ = job.reply.send(Err(ExecError::Write {
                id: id.into(),
                reason: "its input is gone".into(),
            }));
        }
    }
}

/// The error for acting on a finished process.
fn ended(p: &Proc) -> ExecError {
    let status = match (&p.info.exit, &p.info.error) {
        (Some(exit), _) => exit.label(),
        (None, Some(_)) => "it failed to start".into(),
        (None, None) => "unknown status".into(),
    };
    ExecError::Ended {
        id: p.info.id.clone(),
        status,
    }
}
