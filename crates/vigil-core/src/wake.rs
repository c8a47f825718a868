//! # wake
//!
//! Owns heartbeat wake requests (seed 004 §3): anyone holding a [`Wake`] handle may call
//! [`Wake::request_wake`]; requests within [`WakeConfig::coalesce`] (250 ms) merge into one
//! run; each target keeps one pending wake, the higher priority winning (retry > interval >
//! default > action) and the latest winning at equal priority; one run at a time; a run that
//! finds the conversation busy ([`WakeOutcome::Busy`]) is retried after 1 s, then 2 s, 4 s …
//! up to 60 s while it stays busy, and a run that failed in a way a later try may fix
//! ([`WakeOutcome::Failed`]) after 30 s, then 60 s (the handler decides how often). Event-driven
//! wakes (`exec-event`, `manual`) keep a minimum spacing per target so a burst of command
//! exits cannot flood the model (OpenClaw #17797): they wait, they are never dropped.
//!
//! Pending wakes, and the ones being run, are written to a file (atomically) whenever they
//! change, so a restart picks them up again (seed 004 §7.2).
//!
//! A single task owns the timer; callers only touch the shared state under a `std` mutex
//! and poke the task. Durations use `tokio::time`, so tests pause and advance time.
//!
//! Must never: run two handler calls at once; let a released (stale) handler registration
//! remove a newer one; decide what a run does (that is the handler's business).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vigil_protocol::WakeReason;

use crate::clock::Clock;

/// Timings and the file pending wakes are kept in.
#[derive(Debug, Clone)]
pub struct WakeConfig {
    /// Requests closer together than this become one run.
    pub coalesce: Duration,
    /// How long a run that found the conversation busy waits before trying again; doubled
    /// for each busy run in a row, up to [`Self::max_retry_delay`].
    pub retry_delay: Duration,
    /// The longest wait before a retry.
    pub max_retry_delay: Duration,
    /// How long a failed run waits before its first retry; doubled for each further one, up
    /// to [`Self::max_retry_delay`]. Longer than the busy wait: the provider client has
    /// already retried quickly inside the run.
    pub failure_retry_delay: Duration,
    /// Least time between two event-driven runs (`exec-event`, `manual`) of one target.
    pub min_event_spacing: Duration,
    /// Where pending wakes survive a restart; `None` keeps them in memory only.
    pub persist_path: Option<PathBuf>,
}

impl Default for WakeConfig {
    fn default() -> Self {
        Self {
            coalesce: Duration::from_millis(250),
            retry_delay: Duration::from_secs(1),
            max_retry_delay: Duration::from_secs(60),
            failure_retry_delay: Duration::from_secs(30),
            min_event_spacing: Duration::from_secs(30),
            persist_path: None,
        }
    }
}

/// A wake waiting to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingWake {
    pub reason: WakeReason,
    /// For a `retry`: the reason of the run being retried (decides its prompt and whether
    /// an empty `HEARTBEAT.md` skips it).
    #[serde(default)]
    pub retry_of: Option<WakeReason>,
    /// Whose heartbeat (the agent; Vigil has one, `main`).
    pub target: String,
    /// Wall-clock milliseconds, from the injected clock.
    pub requested_at: i64,
    /// Busy runs in a row before this retry; sets how long it waited.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub busy_retries: u32,
    /// Failed tries before this retry ([`WakeOutcome::Failed`]); the handler gives up after
    /// as many as it allows.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PendingWake {
    /// A new request (not a retry).
    pub fn new(reason: WakeReason, target: &str, requested_at: i64) -> Self {
        Self {
            reason,
            retry_of: None,
            target: target.to_string(),
            requested_at,
            busy_retries: 0,
            failures: 0,
        }
    }

    /// The reason the run is really for: a retry stands for what it retries.
    pub fn effective_reason(&self) -> WakeReason {
        self.retry_of.unwrap_or(self.reason)
    }
}

/// What a handler tells the wake loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeOutcome {
    /// The run happened, or was skipped for a reason a retry would not fix.
    Done,
    /// The conversation is busy (`requests-in-flight`) or the run's lock was taken: try
    /// again after the retry delay, longer each time in a row.
    Busy,
    /// The run failed in a way a later try may fix (a provider error): try again after the
    /// failure delay. The handler returns it only while it wants more tries
    /// ([`PendingWake::failures`] counts them).
    Failed,
}

/// Runs one wake. Called by one task, one call at a time.
#[async_trait::async_trait]
pub trait WakeHandler: Send + Sync + 'static {
    async fn on_wake(&self, wake: PendingWake) -> WakeOutcome;
}

/// Counters since start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WakeStats {
    pub requested: u64,
    /// Requests by reason.
    pub by_reason: BTreeMap<WakeReason, u64>,
    /// Requests merged into a wake already pending for the same target.
    pub coalesced: u64,
    /// Handler calls.
    pub handled: u64,
    /// Busy (or panicked) runs queued again as `retry`.
    pub retried: u64,
    /// Failed runs queued again as `retry`.
    pub retried_failed: u64,
}

/// OpenClaw's order: lower runs first and replaces higher.
fn priority(reason: WakeReason) -> u8 {
    match reason {
        WakeReason::Retry => 0,
        WakeReason::Interval => 1,
        WakeReason::ExecEvent | WakeReason::Cron | WakeReason::Wake => 2,
        WakeReason::Manual | WakeReason::Hook => 3,
        // Not a wake (the runner starts it itself); ranked with the interval it follows.
        WakeReason::Reflection => 1,
    }
}

/// Event-driven reasons that keep [`WakeConfig::min_event_spacing`].
fn spaced(reason: WakeReason) -> bool {
    matches!(reason, WakeReason::ExecEvent | WakeReason::Manual)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimerKind {
    Normal,
    /// A retry timer is not pulled earlier by new requests: the busy lane needs its second.
    Retry,
}

#[derive(Debug, Clone, Copy)]
struct Timer {
    due: Instant,
    kind: TimerKind,
}

#[derive(Default)]
struct State {
    /// Target → its one pending wake.
    pending: BTreeMap<String, PendingWake>,
    /// Taken for the current run; persisted with `pending` until the run ends.
    in_flight: Vec<PendingWake>,
    /// The handler and the generation it was registered with.
    handler: Option<(u64, Arc<dyn WakeHandler>)>,
    generation: u64,
    timer: Option<Timer>,
    /// When each target last ran an event-driven wake.
    last_event_run: HashMap<String, Instant>,
    /// The persisted file is behind the state.
    dirty: bool,
    /// A batch is being run.
    firing: bool,
    stats: WakeStats,
    /// Per target: requests not yet served by a run that ended (merged ones included), so a
    /// heartbeat held back for long shows as a backlog although one wake is pending.
    unserved: HashMap<String, u32>,
}

impl State {
    /// OpenClaw's `schedule`: keep an earlier timer, never move a retry timer.
    fn schedule_at(&mut self, due: Instant, kind: TimerKind) {
        if let Some(t) = self.timer {
            if t.due <= due || t.kind == TimerKind::Retry {
                return;
            }
        }
        self.timer = Some(Timer { due, kind });
    }

    fn queue(&mut self, next: PendingWake) -> bool {
        match self.pending.get(&next.target) {
            Some(prev) => {
                let (p, n) = (priority(prev.reason), priority(next.reason));
                let replace = n < p || (n == p && next.requested_at >= prev.requested_at);
                if replace {
                    self.dirty |= prev.reason != next.reason || prev.retry_of != next.retry_of;
                    self.pending.insert(next.target.clone(), next);
                }
                false
            }
            None => {
                self.dirty = true;
                self.pending.insert(next.target.clone(), next);
                true
            }
        }
    }

    fn snapshot(&self) -> Vec<PendingWake> {
        self.in_flight.iter().chain(self.pending.values()).cloned().collect()
    }

    /// Queues `wake` again as a `retry` due after `delay`.
    fn retry(&mut self, wake: &PendingWake, now_ms: i64, delay: Duration, busy: bool) {
        self.queue(PendingWake {
            reason: WakeReason::Retry,
            retry_of: Some(wake.effective_reason()),
            target: wake.target.clone(),
            requested_at: now_ms,
            busy_retries: if busy { wake.busy_retries + 1 } else { 0 },
            failures: wake.failures + u32::from(!busy),
        });
        self.schedule_at(Instant::now() + delay, TimerKind::Retry);
    }
}

/// `base` doubled `n` times, at most `max`.
fn doubled(base: Duration, n: u32, max: Duration) -> Duration {
    base.saturating_mul(1u32 << n.min(16)).min(max)
}

struct Shared {
    /// `std` lock: held for bookkeeping only, never across an await or a file write.
    state: Mutex<State>,
    /// Pokes the timer task after a change; a stored permit means no poke is lost.
    poke: Notify,
    /// Told when a batch finished, for [`Wake::settled`].
    settled: Notify,
    config: WakeConfig,
    clock: Arc<dyn Clock>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The clonable handle to the wake loop.
#[derive(Clone)]
pub struct Wake {
    shared: Arc<Shared>,
}

/// Keeps a handler registered; dropping it (or [`HandlerRegistration::release`]) removes
/// the handler only if no newer one was registered since.
pub struct HandlerRegistration {
    shared: Weak<Shared>,
    generation: u64,
}

impl HandlerRegistration {
    pub fn release(self) {}
}

impl Drop for HandlerRegistration {
    fn drop(&mut self) {
        let Some(shared) = self.shared.upgrade() else { return };
        let mut state = shared.lock();
        if state.handler.as_ref().is_some_and(|(g, _)| *g == self.generation) {
            state.handler = None;
            state.generation += 1;
        }
    }
}

#[derive(Serialize, Deserialize)]
struct PersistedFile {
    version: u32,
    pending: Vec<PendingWake>,
}

impl Wake {
    /// Restores pending wakes from the file (if any) and starts the timer task on `tasks`;
    /// it stops when `shutdown` is cancelled, after saving what is pending.
    pub fn start(config: WakeConfig, clock: Arc<dyn Clock>, shutdown: CancellationToken, tasks: &TaskTracker) -> Self {
        let mut state = State::default();
        for wake in restore(config.persist_path.as_ref()) {
            *state.unserved.entry(wake.target.clone()).or_default() += 1;
            state.queue(wake);
        }
        state.dirty = false;
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            poke: Notify::new(),
            settled: Notify::new(),
            config,
            clock,
        });
        tasks.spawn(run(shared.clone(), shutdown));
        Self { shared }
    }

    /// Asks for a heartbeat run of `target`. Cheap and non-blocking; call it from anywhere.
    pub fn request_wake(&self, reason: WakeReason, target: &str) {
        let now = Instant::now();
        let next = PendingWake::new(reason, target, self.shared.clock.now_ms());
        let mut state = self.shared.lock();
        state.stats.requested += 1;
        *state.stats.by_reason.entry(reason).or_default() += 1;
        *state.unserved.entry(target.to_string()).or_default() += 1;
        if !state.queue(next) {
            state.stats.coalesced += 1;
        }
        state.schedule_at(now + self.shared.config.coalesce, TimerKind::Normal);
        drop(state);
        self.shared.poke.notify_one();
    }

    /// Registers the handler that runs wakes, replacing any other. Pending wakes (e.g.
    /// restored from disk) are scheduled now.
    pub fn set_handler(&self, handler: Arc<dyn WakeHandler>) -> HandlerRegistration {
        let mut state = self.shared.lock();
        state.generation += 1;
        let generation = state.generation;
        state.handler = Some((generation, handler));
        state.timer = None;
        if !state.pending.is_empty() {
            state.schedule_at(Instant::now() + self.shared.config.coalesce, TimerKind::Normal);
        }
        drop(state);
        self.shared.poke.notify_one();
        HandlerRegistration {
            shared: Arc::downgrade(&self.shared),
            generation,
        }
    }

    /// Whether a handler is registered.
    pub fn has_handler(&self) -> bool {
        self.shared.lock().handler.is_some()
    }

    /// The wakes waiting (not the one running), by target.
    pub fn pending(&self) -> Vec<PendingWake> {
        self.shared.lock().pending.values().cloned().collect()
    }

    pub fn stats(&self) -> WakeStats {
        self.shared.lock().stats.clone()
    }

    /// Requests that no finished run has served yet, merged ones included: what the
    /// "heartbeat falling behind" health alert counts (one wake per target is pending at
    /// most, so pending wakes alone could never show a backlog).
    pub fn requests_waiting(&self) -> u32 {
        self.shared.lock().unserved.values().sum()
    }

    /// Waits until nothing is pending or running (wakes with no handler to run them do not
    /// count). Returns whether there was anything to wait for. For scripts reaching EOF.
    pub async fn settled(&self) -> bool {
        let mut waited = false;
        loop {
            let notified = self.shared.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.shared.lock();
                let idle = (state.pending.is_empty() || state.handler.is_none()) && !state.firing;
                if idle {
                    return waited;
                }
            }
            waited = true;
            notified.await;
        }
    }
}

/// The timer task: sleeps until the timer, runs the batch, saves changes.
async fn run(shared: Arc<Shared>, shutdown: CancellationToken) {
    loop {
        persist(&shared);
        let due = shared.lock().timer.map(|t| t.due);
        tokio::select! {
            biased;
            _ = shutdown.cancelled() => break,
            _ = shared.poke.notified() => {}
            _ = sleep_until(due) => {
                // Shutdown cuts a run short; the wake stays saved as in flight and runs
                // again after the restart.
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = fire(&shared) => {}
                }
            }
        }
    }
    persist(&shared);
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

async fn fire(shared: &Arc<Shared>) {
    let config = &shared.config;
    let (batch, handler) = {
        let mut state = shared.lock();
        state.timer = None;
        let Some((_, handler)) = state.handler.clone() else {
            // Kept pending; registering a handler schedules them.
            return;
        };
        let now = Instant::now();
        let mut ready = Vec::new();
        let mut wait_until: Option<Instant> = None;
        let targets: Vec<String> = state.pending.keys().cloned().collect();
        for target in targets {
            let allowed = match (spaced(state.pending[&target].reason), state.last_event_run.get(&target)) {
                (true, Some(last)) => *last + config.min_event_spacing,
                _ => now,
            };
            if allowed > now {
                wait_until = Some(wait_until.map_or(allowed, |w| w.min(allowed)));
            } else if let Some(w) = state.pending.remove(&target) {
                ready.push(w);
            }
        }
        if let Some(at) = wait_until {
            state.schedule_at(at, TimerKind::Normal);
        }
        state.in_flight = ready.clone();
        state.dirty |= !ready.is_empty();
        state.firing = !ready.is_empty();
        (ready, handler)
    };
    if batch.is_empty() {
        return;
    }
    persist(shared);
    for wake in batch {
        let started = Instant::now();
        // What this run serves: the requests so far; later ones wait for the next run.
        let serving = shared.lock().unserved.get(&wake.target).copied().unwrap_or(0);
        let outcome = tokio::spawn({
            let handler = handler.clone();
            let wake = wake.clone();
            async move { handler.on_wake(wake).await }
        })
        .await;
        let mut state = shared.lock();
        state.stats.handled += 1;
        let outcome = outcome.unwrap_or_else(|e| {
            tracing::error!("a heartbeat run panicked: {e}; retrying");
            WakeOutcome::Busy
        });
        let now_ms = shared.clock.now_ms();
        match outcome {
            WakeOutcome::Busy => {
                state.stats.retried += 1;
                let delay = doubled(config.retry_delay, wake.busy_retries, config.max_retry_delay);
                state.retry(&wake, now_ms, delay, true);
            }
            WakeOutcome::Failed => {
                state.stats.retried_failed += 1;
                let delay = doubled(config.failure_retry_delay, wake.failures, config.max_retry_delay);
                state.retry(&wake, now_ms, delay, false);
            }
            WakeOutcome::Done => {
                if spaced(wake.effective_reason()) {
                    state.last_event_run.insert(wake.target.clone(), started);
                }
                if let Some(n) = state.unserved.get_mut(&wake.target) {
                    *n = n.saturating_sub(serving);
                }
            }
        }
    }
    let mut state = shared.lock();
    state.in_flight.clear();
    state.dirty = true;
    state.firing = false;
    if !state.pending.is_empty() {
        let due = Instant::now() + config.coalesce;
        state.schedule_at(due, TimerKind::Normal);
    }
    drop(state);
    shared.settled.notify_waiters();
}

/// Writes pending + in-flight wakes if they changed. A failure is logged and retried at the
/// next change: losing the file loses only what a crash would have lost anyway.
fn persist(shared: &Shared) {
    let Some(path) = shared.config.persist_path.as_ref() else {
        return;
    };
    let snapshot = {
        let mut state = shared.lock();
        if !state.dirty {
            return;
        }
        state.dirty = false;
        state.snapshot()
    };
    let file = PersistedFile {
        version: 1,
        pending: snapshot,
    };
    let write = || -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            crate::durable::create_private_dir_all(dir)?;
        }
        let bytes = serde_json::to_vec(&file)?;
        crate::durable::write_atomic(path, &bytes).map(|_| ())
    };
    if let Err(e) = write() {
        tracing::warn!("could not save pending wakes to {}: {e}", path.display());
        shared.lock().dirty = true;
    }
}

fn restore(path: Option<&PathBuf>) -> Vec<PendingWake> {
    let Some(path) = path else { return vec![] };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return vec![],
        Err(e) => {
            tracing::warn!("could not read pending wakes from {}: {e}", path.display());
            return vec![];
        }
    };
    match serde_json::from_slice::<PersistedFile>(&bytes) {
        Ok(f) => f.pending,
        Err(e) => {
            tracing::warn!(
                "pending wakes in {} are unreadable ({e}); starting without them",
                path.display()
            );
            vec![]
        }
    }
}

#[cfg(test)]
#[path = "wake_tests.rs"]
mod tests;
