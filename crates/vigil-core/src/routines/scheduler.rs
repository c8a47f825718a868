//! The scheduler (seed 003 §4.6): one [`Scheduler::tick`] decides everything that is due,
//! and [`Scheduler::run`] is the single loop that owns all timing — the heartbeat interval
//! and the routines. This file holds the handle and its shared state, which every other
//! part of `routines` builds on; the tick and the loop, which use those parts, are in
//! `tick.rs`, so the dependencies run one way.
//!
//! A tick reads the task block (a `stat` when it did not change), and only when something
//! needs doing takes the lock and, in one write: fills v1 defaults, recovers runs left
//! `running` by a crashed or stuck run, skips runs too late to be useful, and **claims**
//! every due routine (pending → running, stamped with this instance) before anything runs,
//! so two ticks — in this process or another — never start the same run. Claimed routines
//! are then split: `inline` ones wait for one heartbeat turn (`## Due Tasks`, through the
//! wake loop's coalescing), `isolated` ones start a job each, deterministic kinds run
//! without the model. [`Scheduler::finish`] moves a run to done / back to pending with the
//! next time / into a retry with back-off.
//!
//! ## Decisions
//! - **Catch-up**: due times that passed while Vigil was not running, the machine slept or
//!   background work was paused are handled by the routine's `catch_up` policy (`once`, the
//!   default: one run if at most [`SchedulerConfig::catch_up_limit`] late; `skip`; `all`: one
//!   run told how many it stands for — see [`super::catch_up`]). Every due time that does not
//!   run is a `missed` or `skipped` record in the run log, and one notification sums up what
//!   a wake-up found.
//! - **Crash mid-run**: a `running` claim by an earlier instance of this process, or by a
//!   process that no longer exists, counts as a failed attempt (`interrupted`) at once; a
//!   claim by a live process is cleared when older than the routine's timeout plus
//!   [`SchedulerConfig::stuck_grace`]. Either way the retry rules apply; the run is never
//!   started twice at the same time — unless the attempt had already changed something (its
//!   claim records the first `exec` / `write` / `edit` before it runs): then its outcome is
//!   `unknown`, it is not retried, and the user decides (Retry / Dismiss).
//! - **Retries**: back-off 30 s, 1 min, 5 min, 15 min, 60 min (OpenClaw's cron) up to
//!   `max_retry`; then a recurring routine gives up on that slot and waits for its next
//!   one, a one-shot becomes `failed`.
//!
//! Must never: read the system clock (only the injected [`Clock`]); let one routine's
//! failure stop the loop or the others; start a run it has not claimed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::task::TaskTracker;
use vigil_protocol::{ErrorKind, Event, ExecutionMode, RunOutcome, Source, WakeMode};

use super::model::Routine;
use super::Deps;
use crate::wake::Wake;

/// Timings and limits; [`Default`] is what Vigil uses.
#[derive(Debug, Clone)]
pub struct SchedulerConfig {
    /// How late a missed run may be and still run with `catch_up: once` (see the module docs).
    pub catch_up_limit: Duration,
    /// A due time this old is late (missed while Vigil could not run it) if it came after
    /// the scheduler last looked; younger ones run as usual (a quick restart, a short nap).
    pub late_grace: Duration,
    /// A live claim older than timeout + this is cleared as stuck.
    pub stuck_grace: Duration,
    /// Retry back-off by attempt; the last value repeats.
    pub backoff: Vec<Duration>,
    /// The longest the loop sleeps without looking (a hand edit, a clock jump after sleep)
    /// where it cannot be told of those ([`super::alarm`]) …
    pub max_nap: Duration,
    /// … and where it can: only what no file change announces (a claim left by another
    /// process that died or hung) waits this long.
    pub watched_nap: Duration,
    /// The zone written into routines that have none.
    pub default_zone: String,
    /// Isolated jobs (a model session each) running at once; a due one past this waits,
    /// unclaimed, for the next tick after one finishes (seed 004 appendix B:
    /// `maxConcurrentRuns: 3`), so twenty routines due at 09:00 do not open twenty sessions
    /// against the provider's rate limit.
    pub max_concurrent_jobs: usize,
    /// Finished job sessions are kept this long …
    pub job_retention: Duration,
    /// … and at most this many.
    pub job_retention_count: usize,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        let m = |n: u64| Duration::from_secs(60 * n);
        Self {
            catch_up_limit: m(24 * 60),
            late_grace: m(2),
            stuck_grace: m(5),
            backoff: vec![Duration::from_secs(30), m(1), m(5), m(15), m(60)],
            max_nap: Duration::from_secs(30),
            watched_nap: m(5),
            default_zone: super::schedule::local_zone_name(),
            max_concurrent_jobs: 3,
            // Seed 004 appendix B: `sessionRetention: "24h"`.
            job_retention: m(24 * 60),
            job_retention_count: 50,
        }
    }
}

/// Whether a run of `r` is an isolated job: its own model session, limited by
/// [`SchedulerConfig::max_concurrent_jobs`]. A reminder (`kind`) needs no model call.
pub(super) fn is_job(r: &Routine) -> bool {
    r.kind.is_none() && r.execution_mode == ExecutionMode::Isolated
}

/// A run this instance claimed.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub routine: Routine,
    pub run_id: String,
    /// The slot (the `next_run_at` that was due).
    pub due_at: i64,
    pub started_at: i64,
    /// A watch trigger fired it (a file, a process's output, a URL, a webhook), not its
    /// schedule or the user: what it delivers is a monitor's, which the user routes apart
    /// from a routine's result ([`vigil_protocol::NotificationKind::Monitor`]).
    pub by_trigger: bool,
}

/// How a run ended, for [`Scheduler::finish`].
#[derive(Debug, Clone, PartialEq)]
pub enum RunResult {
    /// It ran and its result reached the user.
    Ok {
        summary: Option<String>,
    },
    /// It ran in a heartbeat turn whose reply was `HEARTBEAT_OK`: nothing to report.
    Acknowledged,
    Failed {
        outcome: RunOutcome,
        error: String,
    },
    /// An inline run the heartbeat could not take for a reason a retry would not fix.
    Skipped(String),
}

/// What one tick did, for tests and the benchmark.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    pub claimed: Vec<String>,
    pub recovered: Vec<String>,
    pub missed: Vec<String>,
    /// Due isolated jobs left unclaimed until one of those running finishes
    /// ([`SchedulerConfig::max_concurrent_jobs`]); not counted in `next_due`.
    pub waiting: Vec<String>,
    /// The task block is corrupted (reported; the last good routines ran, if there are any).
    pub corrupted: bool,
    /// Background activity is paused (nothing claimed).
    pub paused: bool,
    /// The earliest `next_run_at` of a pending routine after the tick.
    pub next_due: Option<i64>,
    /// The clock's time the tick decided at.
    pub looked_at: i64,
}

/// The clonable handle to the scheduler.
#[derive(Clone)]
pub struct Scheduler {
    pub(super) shared: Arc<Shared>,
}

pub(super) struct Shared {
    pub(super) deps: Deps,
    pub(super) config: SchedulerConfig,
    /// `<pid>:<random>`: written into claims; a claim with our pid but another instance is
    /// a previous incarnation's (a restart), hence interrupted.
    pub(super) instance: String,
    pub(super) host: RwLock<Option<Arc<dyn super::JobHost>>>,
    pub(super) wake: RwLock<Option<Wake>>,
    /// Jobs and deterministic runs in flight.
    pub(super) jobs: TaskTracker,
    /// `std` lock: ids this instance is running; never held across an await.
    pub(super) in_flight: Mutex<HashSet<String>>,
    /// `std` lock: the evidence of fired runs going now, by run id, for their history.
    pub(super) evidence: Mutex<HashMap<String, String>>,
    /// `std` lock: inline runs claimed, waiting for (or in) a heartbeat turn.
    pub(super) inline: Mutex<InlineQueue>,
    /// Wakes the loop (a routine changed, a run finished).
    pub(super) poke: Notify,
    /// `std` lock: problems already reported, so each is said once per change.
    pub(super) reported: Mutex<HashMap<String, String>>,
    /// `std` lock: the routines whose schedule cannot be used, per file version.
    pub(super) problems: Mutex<(usize, HashMap<String, String>)>,
    /// Job sessions started since start (seed 003 §12 Phase 2: `job_session_created`).
    pub(super) job_sessions: AtomicU64,
    /// `std` lock: when a tick last looked at the routines (not paused); `None` before the
    /// first tick of this start. Due times after it and older than the grace are late.
    pub(super) watched: Mutex<Option<i64>>,
    /// A tick found background work paused since the routines were last looked at.
    pub(super) paused_seen: std::sync::atomic::AtomicBool,
    /// The process registry, once it runs: an output trigger may name only a running
    /// process of the routine's own conversation.
    pub(super) processes: std::sync::OnceLock<crate::exec::RegistryHandle>,
}

#[derive(Default)]
pub(super) struct InlineQueue {
    pub(super) waiting: Vec<Claimed>,
    pub(super) serving: Vec<Claimed>,
}

impl Scheduler {
    pub fn new(deps: Deps, config: SchedulerConfig) -> Self {
        let uuid = uuid::Uuid::new_v4().simple().to_string();
        Self {
            shared: Arc::new(Shared {
                instance: format!("{}:{}", std::process::id(), &uuid[..8]),
                deps,
                config,
                host: RwLock::new(None),
                wake: RwLock::new(None),
                jobs: TaskTracker::new(),
                in_flight: Mutex::new(HashSet::new()),
                evidence: Mutex::new(HashMap::new()),
                inline: Mutex::new(InlineQueue::default()),
                poke: Notify::new(),
                reported: Mutex::new(HashMap::new()),
                problems: Mutex::new((0, HashMap::new())),
                job_sessions: AtomicU64::new(0),
                watched: Mutex::new(None),
                paused_seen: Default::default(),
                processes: Default::default(),
            }),
        }
    }

    pub fn deps(&self) -> &Deps {
        &self.shared.deps
    }

    pub fn config(&self) -> &SchedulerConfig {
        &self.shared.config
    }

    /// Who runs isolated jobs (the runtime).
    pub fn set_host(&self, host: Arc<dyn super::JobHost>) {
        *self.shared.host.write().unwrap_or_else(|e| e.into_inner()) = Some(host);
    }

    /// The wake loop inline runs go through.
    pub fn set_wake(&self, wake: Wake) {
        *self.shared.wake.write().unwrap_or_else(|e| e.into_inner()) = Some(wake);
    }

    /// Asks the loop to tick now (after an edit).
    pub fn poke(&self) {
        self.shared.poke.notify_one();
    }

    /// Waits until every job and deterministic run started so far has finished.
    pub async fn settle(&self) {
        self.shared.jobs.close();
        self.shared.jobs.wait().await;
        self.shared.jobs.reopen();
    }

    pub(super) fn now(&self) -> i64 {
        self.shared.deps.clock.now_ms()
    }

    pub(super) fn backoff(&self, attempt: u32) -> Duration {
        let b = &self.shared.config.backoff;
        let i = (attempt.max(1) as usize - 1).min(b.len().saturating_sub(1));
        b.get(i).copied().unwrap_or(Duration::from_secs(60))
    }

    /// Routines with a next run, runs in flight, job sessions started: for the health check.
    pub fn health(&self) -> vigil_protocol::RoutinesHealth {
        let scheduled = self.shared.deps.store.read().map_or(0, |state| {
            state
                .routines()
                .entries()
                .iter()
                .filter_map(|e| e.routine.as_ref().ok())
                .filter(|r| r.live() && r.next_run_at.is_some())
                .count()
        });
        let running = self.shared.in_flight.lock().unwrap_or_else(|e| e.into_inner()).len();
        vigil_protocol::RoutinesHealth {
            scheduled: scheduled as u32,
            running: running as u32,
            job_sessions_created: self.shared.job_sessions.load(Ordering::Relaxed),
        }
    }

    pub(super) fn report_once(&self, key: &str, message: String) {
        let mut reported = self.shared.reported.lock().unwrap_or_else(|e| e.into_inner());
        if reported.get(key) == Some(&message) {
            return;
        }
        reported.insert(key.to_string(), message.clone());
        drop(reported);
        tracing::warn!("{message}");
        self.shared.deps.emitter.emit(
            Source::Scheduler,
            Event::Error {
                kind: ErrorKind::Storage,
                message,
            },
        );
    }

    /// Hands inline runs to the next heartbeat turn. Runs that ask for it (`wake_mode:
    /// now`) wake the heartbeat through the wake loop; the others wait for the next interval
    /// heartbeat, unless none is scheduled.
    pub(super) fn queue_inline(&self, runs: Vec<Claimed>) {
        let wake_now = runs.iter().any(|c| c.routine.wake_mode == WakeMode::Now) || !self.heartbeat_scheduled();
        self.shared
            .inline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .waiting
            .extend(runs);
        if !wake_now {
            return;
        }
        match self.shared.wake.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(w) => w.request_wake(vigil_protocol::WakeReason::Cron, crate::heartbeat::AGENT),
            None => tracing::debug!("inline routines wait: no wake loop yet"),
        }
    }

    /// The heartbeat will run on its own (its interval is on): inline runs can wait for it.
    pub(super) fn heartbeat_scheduled(&self) -> bool {
        self.host().is_some_and(|h| h.heartbeat_scheduled())
    }

    /// The process registry, for the output triggers' ownership check (set by the watcher).
    pub fn set_processes(&self, registry: crate::exec::RegistryHandle) {
        let _ = self.shared.processes.set(registry);
    }

    pub(super) fn host(&self) -> Option<Arc<dyn super::JobHost>> {
        self.shared.host.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
