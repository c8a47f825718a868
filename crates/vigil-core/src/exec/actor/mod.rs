//! The registry actor: the one owner of every process entry.
//!
//! It takes commands from handles (unbounded: they are few and small) and output from the
//! children's threads (bounded: backpressure on floods), and never blocks on either: reads,
//! writes and waits happen on the threads in `spawn`, timers are small tasks that send a
//! message back. A process is finished once it has been reaped *and* its output has ended
//! (or `drain_grace` has passed since the exit: a grandchild may hold the terminal open).
//!
//! Owns: every process entry and its state. Must never: block on a handle or a child,
//! report one exit twice, or keep more output than the entry's bound whatever a child prints.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::events::exit_notice_text;
use super::output::{CappedBytes, CappedText};
use super::spawn::{signal_group, Pump, Sig, WriteJob};
use super::{ExecError, ExecEvents, ExitStatus, Outcome, ProcessInfo, ProcessState, RegistryConfig};
use crate::clock::Clock;

mod commands;
mod messages;

pub(in crate::exec) use messages::{Killer, Msg, Reply};

/// Output chunks taken in one go before the actor looks at its other inputs again.
const PUMP_BATCH: usize = 64;

pub(super) struct Actor {
    config: RegistryConfig,
    clock: Arc<dyn Clock>,
    events: Arc<dyn ExecEvents>,
    procs: HashMap<Arc<str>, Proc>,
    /// Cloned into each child's threads.
    pump_tx: mpsc::Sender<Pump>,
    /// For timers. Weak, so the mailbox closes when the last handle goes.
    self_tx: mpsc::WeakUnboundedSender<Msg>,
    /// Processes with raw output for the UI waiting for the next flush.
    ui_dirty: Vec<Arc<str>>,
    flush_at: Option<Instant>,
    /// When finished processes may be past their TTL; `None` while none is finished, so an
    /// idle registry never wakes.
    sweep_at: Option<Instant>,
    shutting_down: bool,
}

struct Proc {
    info: ProcessInfo,
    /// Stripped text for `log`, the tail and the final result.
    aggregated: CappedText,
    /// Stripped text not yet polled.
    pending: CappedText,
    /// Raw bytes for a terminal view opened later.
    raw: CappedBytes,
    /// Raw bytes not yet sent to the UI.
    ui: CappedBytes,
    ui_dirty: bool,
    /// Kept for resizing; dropped when the process finishes.
    master: Option<Box<dyn portable_pty::MasterPty + Send>>,
    stdin: Option<std::sync::mpsc::Sender<WriteJob>>,
    stdin_closed: bool,
    /// Set when the waiter thread reaped the child.
    reaped: Option<ExitStatus>,
    eof: bool,
    drain_expired: bool,
    term_sent: bool,
    kill_requested: bool,
    timed_out: bool,
    /// The request's timeout, which an exit notice names when it expired.
    timeout: Option<std::time::Duration>,
    /// No exit notice (the owner killed it, or the app is quitting).
    quiet: bool,
    /// The user killed it from the panel: its exit status and notice say so.
    killed_by_user: bool,
    notified: bool,
    /// Finished without its output ending: something in its group may still run.
    lingering: bool,
    finish_waiters: Vec<Reply<Outcome>>,
    remove_waiters: Vec<Reply<ProcessInfo>>,
    change_waiters: Vec<Reply<()>>,
    empty_polls: u32,
    /// Cancels this process's timers when it finishes.
    timers: CancellationToken,
}

impl Proc {
    fn outcome(&mut self) -> Outcome {
        Outcome {
            info: self.info.clone(),
            output: self.aggregated.text().to_string(),
            dropped_chars: self.aggregated.dropped(),
        }
    }
}

fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

impl Actor {
    pub fn new(
        config: RegistryConfig,
        clock: Arc<dyn Clock>,
        events: Arc<dyn ExecEvents>,
        pump_tx: mpsc::Sender<Pump>,
        self_tx: mpsc::WeakUnboundedSender<Msg>,
    ) -> Self {
        Self {
            config,
            clock,
            events,
            procs: HashMap::new(),
            pump_tx,
            self_tx,
            ui_dirty: Vec::new(),
            flush_at: None,
            sweep_at: None,
            shutting_down: false,
        }
    }

    pub async fn run(
        mut self,
        mut rx: mpsc::UnboundedReceiver<Msg>,
        mut pump_rx: mpsc::Receiver<Pump>,
        cancel: CancellationToken,
    ) {
        let mut waiters = Vec::new();
        // Made once and moved when their deadline changes: a flood of output passes through
        // this loop once per chunk, and a timer built and dropped on each pass cost more than
        // the chunk's own work.
        let cancelled = cancel.cancelled();
        let (flush, sweep) = (sleep_until(Instant::now()), sleep_until(Instant::now()));
        tokio::pin!(cancelled, flush, sweep);
        let (mut flush_armed, mut sweep_armed) = (None, None);
        loop {
            rearm(flush.as_mut(), &mut flush_armed, self.flush_at);
            rearm(sweep.as_mut(), &mut sweep_armed, self.sweep_at);
            // Biased so timers come before a flood of output can starve them.
            tokio::select! {
                biased;
                () = &mut cancelled => break,
                () = &mut flush, if flush_armed.is_some() => self.flush_ui(),
                () = &mut sweep, if sweep_armed.is_some() => {
                    self.sweep();
                }
                msg = rx.recv() => match msg {
                    Some(Msg::Shutdown { reply }) => {
                        waiters.push(reply);
                        break;
                    }
                    Some(msg) => self.handle(msg),
                    None => break,
                },
                Some(pump) = pump_rx.recv() => {
                    self.pump(pump);
                    for _ in 0..PUMP_BATCH {
                        match pump_rx.try_recv() {
                            Ok(pump) => self.pump(pump),
                            Err(_) => break,
                        }
                    }
                }
            }
        }
        self.shutdown(rx, pump_rx, waiters).await;
    }

    /// Kills everything still running, waits for it to finish (SIGKILL after the grace
    /// period, giving up a little later), then answers the shutdown callers.
    async fn shutdown(
        &mut self,
        mut rx: mpsc::UnboundedReceiver<Msg>,
        mut pump_rx: mpsc::Receiver<Pump>,
        mut waiters: Vec<oneshot::Sender<()>>,
    ) {
        self.shutting_down = true;
        let running: Vec<Arc<str>> = self.running_ids();
        for id in &running {
            if let Some(p) = self.procs.get_mut(id) {
                p.quiet = true;
            }
            self.kill_group(id, false);
        }
        let grace_end = Instant::now() + self.config.kill_grace;
        let give_up = grace_end + self.config.drain_grace + std::time::Duration::from_secs(1);
        let mut hard_killed = false;
        let mut rx_open = true;
        while !self.running_ids().is_empty() {
            tokio::select! {
                Some(pump) = pump_rx.recv() => self.pump(pump),
                msg = rx.recv(), if rx_open => match msg {
                    Some(Msg::Shutdown { reply }) => waiters.push(reply),
                    Some(msg) => self.handle(msg),
                    None => rx_open = false,
                },
                () = sleep_until(grace_end), if !hard_killed => {
                    hard_killed = true;
                    self.kill_all_groups();
                }
                () = sleep_until(give_up) => {
                    for id in self.running_ids() {
                        tracing::warn!(id = &*id, "an exec process did not finish after SIGKILL");
                        if let Some(p) = self.procs.get_mut(&id) {
                            p.reaped.get_or_insert_with(ExitStatus::default);
                            p.drain_expired = true;
                        }
                        self.maybe_finish(&id);
                    }
                }
            }
        }
        self.kill_all_groups();
        self.flush_ui();
        for w in waiters {
            let _ = w.send(());
        }
    }

    fn running_ids(&self) -> Vec<Arc<str>> {
        self.procs
            .iter()
            .filter(|(_, p)| p.info.state == ProcessState::Running)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// SIGKILL to every group that may still have members; lingering ones only once.
    fn kill_all_groups(&mut self) {
        for p in self.procs.values_mut() {
            if p.info.state == ProcessState::Running || p.lingering {
                p.lingering = false;
                if let Some(pid) = p.info.pid {
                    signal_group(pid, Sig::Kill);
                }
            }
        }
    }

    /// The process `id`, if it exists and `owner` (when given) owns it.
    fn get(&mut self, owner: Option<&str>, id: &str) -> Result<&mut Proc, ExecError> {
        match self.procs.get_mut(id) {
            Some(p) if owner.is_none_or(|o| o == p.info.owner) => Ok(p),
            _ => Err(ExecError::NotFound { id: id.into() }),
        }
    }

    /// Sends `msg()` to the actor after `delay`, unless `token` is cancelled first.
    fn after(&self, token: &CancellationToken, delay: std::time::Duration, msg: impl FnOnce() -> Msg + Send + 'static) {
        let tx = self.self_tx.clone();
        let token = token.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = token.cancelled() => {}
                () = tokio::time::sleep(delay) => {
                    if let Some(tx) = tx.upgrade() {
                        let _ = tx.send(msg());
                    }
                }
            }
        });
    }

    /// SIGTERM to the group now and SIGKILL after the grace period. The escalation does not
    /// depend on the entry: a grandchild ignoring SIGTERM must not outlive a finished leader.
    /// (While any member lives the group id cannot be reused; once all are gone, the id would
    /// have to be handed out again as a new group's within the grace period to be hit.)
    fn kill_group(&mut self, id: &str, timed_out: bool) {
        let grace = self.config.kill_grace;
        let Some(p) = self.procs.get_mut(id) else { return };
        p.kill_requested = true;
        p.timed_out |= timed_out;
        if p.term_sent {
            return;
        }
        p.term_sent = true;
        let Some(pid) = p.info.pid else { return };
        signal_group(pid, Sig::Term);
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            signal_group(pid, Sig::Kill);
        });
    }

    fn pump(&mut self, pump: Pump) {
        match pump {
            Pump::Output { id, raw, text, chars } => {
                let Some(p) = self.procs.get_mut(&id) else { return };
                if !p.info.is_running() {
                    return; // finished output is final; a lingering grandchild's goes nowhere
                }
                p.aggregated.push_counted(&text, chars);
                p.pending.push_counted(&text, chars);
                p.raw.push(&raw);
                p.ui.push(&raw);
                if !text.is_empty() {
                    for w in p.change_waiters.drain(..) {
                        let _ = w.send(Ok(()));
                    }
                }
                if !p.ui_dirty {
                    p.ui_dirty = true;
                    self.ui_dirty.push(id);
                    self.flush_at
                        .get_or_insert_with(|| Instant::now() + self.config.ui_interval);
                }
            }
            Pump::Eof { id } => {
                let Some(p) = self.procs.get_mut(&id) else { return };
                p.eof = true;
                p.lingering = false;
                self.maybe_finish(&id);
            }
            Pump::Exited { id, status } => {
                let drain = self.config.drain_grace;
                let Some(p) = self.procs.get_mut(&id) else { return };
                p.reaped = Some(status);
                if !p.eof {
                    let timers = p.timers.clone();
                    let id2 = id.clone();
                    self.after(&timers, drain, move || Msg::Drained { id: id2 });
                }
                self.maybe_finish(&id);
            }
        }
    }

    fn maybe_finish(&mut self, id: &Arc<str>) {
        let Some(p) = self.procs.get_mut(id) else { return };
        if !p.info.is_running() || p.reaped.is_none() || !(p.eof || p.drain_expired) {
            return;
        }
        let mut exit = p.reaped.take().unwrap_or_default();
        exit.timed_out = p.timed_out;
        exit.killed_by_user = p.killed_by_user;
        p.info.state = if p.kill_requested {
            ProcessState::Killed
        } else {
            ProcessState::Exited
        };
        p.info.exit = Some(exit.clone());
        p.info.ended_at = Some(self.clock.now_ms());
        let due = Instant::now() + self.config.finished_ttl;
        self.sweep_at = Some(self.sweep_at.map_or(due, |at| at.min(due)));
        p.lingering = !p.eof;
        p.timers.cancel();
        p.master = None;
        p.stdin = None;
        let owner = p.info.owner.clone();
        // The terminal view gets the last bytes before it hears of the exit.
        if !p.ui.is_empty() {
            self.events.output(id, &owner, &p.ui.take());
        }
        self.events
            .exited(id, &owner, &exit, p.aggregated.tail(self.config.tail_chars));
        if p.info.backgrounded && !p.quiet && !p.notified {
            p.notified = true;
            let tail = p.aggregated.tail(self.config.notice_tail_chars);
            let text = exit_notice_text(id, &exit, p.timeout, tail);
            self.events.exit_notice(&owner, id, &text);
        }
        let outcome = p.outcome();
        for w in p.finish_waiters.drain(..) {
            let _ = w.send(Ok(outcome.clone()));
        }
        for w in p.change_waiters.drain(..) {
            let _ = w.send(Ok(()));
        }
        if !p.remove_waiters.is_empty() {
            for w in std::mem::take(&mut p.remove_waiters) {
                let _ = w.send(Ok(outcome.info.clone()));
            }
            self.procs.remove(id);
        }
    }

    fn flush_ui(&mut self) {
        self.flush_at = None;
        for id in std::mem::take(&mut self.ui_dirty) {
            let Some(p) = self.procs.get_mut(&id) else { continue };
            p.ui_dirty = false;
            if !p.ui.is_empty() {
                self.events.output(&id, &p.info.owner, &p.ui.take());
            }
        }
    }

    /// Forgets finished processes whose TTL has passed, and sets when to look again: at the
    /// next one's end of TTL (no sooner than `sweep_every`), or never while none is left.
    /// Returns how many it forgot.
    fn sweep(&mut self) -> usize {
        let now = self.clock.now_ms();
        let ttl = self.config.finished_ttl.as_millis() as i64;
        let before = self.procs.len();
        self.procs
            .retain(|_, p| p.info.ended_at.is_none_or(|ended| now.saturating_sub(ended) < ttl));
        let next = self
            .procs
            .values()
            .filter_map(|p| p.info.ended_at)
            .map(|ended| std::time::Duration::from_millis((ended + ttl).saturating_sub(now).max(0) as u64))
            .min();
        self.sweep_at = next.map(|left| Instant::now() + left.max(self.config.sweep_every));
        before - self.procs.len()
    }
}

/// Points `timer` at `wanted` when that differs from where it is `armed`.
fn rearm(timer: std::pin::Pin<&mut tokio::time::Sleep>, armed: &mut Option<Instant>, wanted: Option<Instant>) {
    if *armed != wanted {
        if let Some(at) = wanted {
            timer.reset(at);
        }
        *armed = wanted;
    }
}

impl Drop for Actor {
    /// The last line of defence against orphans: if the actor is dropped without a
    /// shutdown (the runtime went away), every group that may still run gets SIGKILL.
    fn drop(&mut self) {
        self.kill_all_groups();
    }
}
