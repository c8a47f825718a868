//! # heartbeat
//!
//! Owns the heartbeat (seed 002, seed 003 §6): every `every` (30 minutes) within the active
//! hours (they govern this interval poll only), and whenever something asks through
//! [`crate::wake`] (a routine due, Check now, a finished command), the agent reads
//! `HEARTBEAT.md` in its own session `heartbeat_session_<agent>` and either acknowledges
//! (`HEARTBEAT_OK`, suppressed, its transcript taken back) or says something the user
//! should know: that text is deposited in the conversation's mailbox, shown as a card, and
//! raised as a notification.
//!
//! - [`config`] — settings → the values a run uses; active hours in an IANA zone.
//! - `HEARTBEAT.md` itself (the checklist, the effectively-empty rule, the template) is
//!   the workspace's: [`crate::workspace::heartbeat_file`], the file's one owner.
//! - [`prompts`] — the poll, exec-event and cron prompts, the system-prompt section.
//! - [`reply`] — `HEARTBEAT_OK` stripping and the suppress/deliver decision.
//! - [`reflection`] — the daily reflection: the user's recent words → suggested routines.
//! - [`run_lock`] — the lock a run holds, so two never overlap (across processes too).
//! - `runner` — one run: preflight, the run lock, the turn, the reply, retries, the record.
//! - `turn` — the turn in the heartbeat session under the run's deadline, and taking an
//!   uneventful one back.
//! - `deliver` — mailbox, card and notification; the 24-hour duplicate rule.
//! - [`Heartbeat`] (here) — the clonable handle: settings, status. The interval's timing is
//!   owned by the one scheduler loop ([`crate::routines::Scheduler::run`]).
//!
//! Must never: read or write the conversation's transcript (results cross over only through
//! the mailbox); run while a turn runs in any conversation; run twice at once (in this
//! process or another on the same data folder); run past its deadline (one hung run must not
//! hold back the next); stop silently (every run or skip emits a `heartbeat` event, every
//! problem a message).

pub mod config;
mod deliver;
pub mod prompts;
pub mod reflection;
pub mod reply;
pub mod run_lock;
mod runner;
mod turn;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Notify;
use tokio::time::Instant;
use vigil_protocol::{HeartbeatSkip, HeartbeatStats, HeartbeatStatus, HeartbeatView, Usage, WakeReason};

pub use config::HeartbeatConfig;
pub use reply::HEARTBEAT_TOKEN;

use crate::clock::Clock;
use crate::events::Emitter;
use crate::session::{MetaStore, SessionStore};
use crate::system_events::SystemEvents;
use crate::wake::{PendingWake, WakeHandler, WakeOutcome, WakeStats};

/// Vigil's one agent; the wake target and the heartbeat session's suffix.
pub const AGENT: &str = "main";

/// `heartbeat_session_<agent>` (seed 003 §4.3).
pub fn session_id(agent: &str) -> String {
    format!("heartbeat_session_{agent}")
}

/// The idle gate's largest stretch of the interval.
pub const MAX_IDLE_FACTOR: u32 = 8;

/// How many times a run that failed on a provider error is tried again (30 s, then 60 s
/// apart, by the wake loop) before it is recorded failed.
pub const PROVIDER_RETRIES: u32 = 3;

/// What the runtime does for the heartbeat: runs its turns (through [`crate::run::Runner`]),
/// and says whether a conversation is busy and a provider set.
pub trait HeartbeatHost: crate::run::Runner {
    /// Whether a turn runs in any conversation now (the user's turn or a continuation; not
    /// a routine's job). The heartbeat waits for all of them: they share the provider and
    /// the user's attention.
    fn conversation_busy(&self) -> bool;
    /// Whether a provider is configured (else a run is skipped with a clear reason).
    fn has_provider(&self) -> bool;
}

/// A routine due now, merged into the heartbeat turn as `## Due Tasks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueTask {
    pub id: String,
    pub title: String,
    pub description: String,
    /// The routine's `timeout_seconds`: the run that carries it ends by then.
    pub timeout: std::time::Duration,
}

/// How the heartbeat run that took due tasks ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DueOutcome {
    /// The turn ran and its reply reached the user; the summary.
    Delivered(String),
    /// The turn ran and the model acknowledged (`HEARTBEAT_OK` or nothing): no report.
    Acknowledged,
    /// The turn ran (its reply was a duplicate, or the run's end is not one of the above).
    Done(String),
    /// The turn failed; the routines' retry rules apply.
    Failed(String),
    /// The run passed its deadline and was ended; the routines' retry rules apply.
    TimedOut(String),
    /// The run was skipped for a reason a retry would not fix (quiet hours, disabled, no
    /// provider).
    Skipped(String),
}

/// The scheduler's seam ([`crate::routines`]): which inline routines are due, what became
/// of them, and what the heartbeat should know about the routines.
pub trait DueTasks: Send + Sync + 'static {
    /// Takes the inline routines due now; each is answered once through [`Self::finished`].
    fn due(&self, now_ms: i64) -> Vec<DueTask>;
    /// How the run that took `tasks` ended, and the tokens its model turn used (the whole
    /// run's: the routines' records show what carrying them cost).
    fn finished(&self, _tasks: &[DueTask], _outcome: DueOutcome, _usage: Option<Usage>) {}
    /// The run that took `tasks` failed and will be tried again: they wait for that try.
    fn give_back(&self, _tasks: &[DueTask]) {}
    /// The heartbeat will not take the routines waiting for it now (an interval run in
    /// quiet hours): they run another way (as jobs), at their time.
    fn hand_off(&self) {}
    /// Problems to put in the run's context (a corrupted task block); `Some` makes an
    /// interval run happen even when `HEARTBEAT.md` is otherwise empty (seed 003 §11.4).
    fn context(&self) -> Option<String> {
        None
    }
    /// A stable addition to the heartbeat session's system prompt.
    fn system_section(&self) -> Option<String> {
        None
    }
}

/// What the heartbeat works with, all owned elsewhere.
#[derive(Clone)]
pub struct Deps {
    pub store: SessionStore,
    pub meta: MetaStore,
    pub events: SystemEvents,
    pub emitter: Emitter,
    pub clock: Arc<dyn Clock>,
    /// The workspace folder, where `HEARTBEAT.md` is.
    pub workspace: PathBuf,
    /// The daily account of background work; its limit is these settings'.
    pub budget: crate::run::Budget,
}

impl Deps {
    /// Deps of their own over `store` (tests; the runtime shares its stores and queues).
    pub fn new(store: SessionStore, emitter: Emitter, clock: Arc<dyn Clock>, workspace: PathBuf) -> Self {
        Self {
            meta: MetaStore::new(store.clone(), clock.clone()),
            budget: crate::run::Budget::open(store.dir(), emitter.clone(), clock.clone()),
            store,
            events: SystemEvents::new(),
            emitter,
            clock,
            workspace,
        }
    }
}

/// The clonable handle to the heartbeat.
#[derive(Clone)]
pub struct Heartbeat {
    shared: Arc<Shared>,
}

struct Shared {
    deps: Deps,
    host: Arc<dyn HeartbeatHost>,
    /// `std` lock: cloned at run start, replaced when settings change.
    config: RwLock<HeartbeatConfig>,
    /// `std` lock: bookkeeping only, never held across an await.
    state: Mutex<RunState>,
    /// Wakes the scheduler loop after a settings change.
    config_changed: Notify,
    due_tasks: RwLock<Option<Arc<dyn DueTasks>>>,
    /// The user paused background activity: every run is skipped (`paused`) until resumed.
    /// The schedule keeps its rhythm, so resuming needs no rescheduling.
    paused: AtomicBool,
    /// `std` lock: the idle gate's state.
    idle: Mutex<IdleGate>,
}

/// After `idle_after` with no user message, each quiet interval run doubles the interval
/// (up to [`MAX_IDLE_FACTOR`]); a user message brings it back to 1. It trades vigilance for
/// cost exactly while nobody watches, so an interval run that found something resets it too:
/// a check that just raised an alert is watched at the normal rhythm again.
struct IdleGate {
    /// The last user message, or the last interval run that told the user something: the
    /// gate stretches only `idle_after` after it.
    awake_since_ms: i64,
    factor: u32,
}

#[derive(Default)]
struct RunState {
    last_run_at: Option<i64>,
    last_reason: Option<WakeReason>,
    last_status: Option<HeartbeatStatus>,
    last_skip: Option<HeartbeatSkip>,
    last_detail: Option<String>,
    last_usage: Option<Usage>,
    next_due: Option<Instant>,
    stats: HeartbeatStats,
    durations: RunDurations,
}

/// How long the heartbeat's turns took, for the health check.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunDurations {
    pub count: u64,
    pub total_ms: u64,
    pub max_ms: u64,
    pub last_ms: u64,
}

impl RunDurations {
    fn add(&mut self, ms: u64) {
        self.count += 1;
        self.total_ms += ms;
        self.max_ms = self.max_ms.max(ms);
        self.last_ms = ms;
    }
}

impl Heartbeat {
    pub fn new(deps: Deps, host: Arc<dyn HeartbeatHost>, config: HeartbeatConfig) -> Self {
        deps.budget.set(config.daily_token_budget, config.zone.tz());
        let idle = Mutex::new(IdleGate {
            // Starting counts as the user being there.
            awake_since_ms: deps.clock.now_ms(),
            factor: 1,
        });
        Self {
            shared: Arc::new(Shared {
                deps,
                host,
                config: RwLock::new(config),
                state: Mutex::new(RunState::default()),
                config_changed: Notify::new(),
                due_tasks: RwLock::new(None),
                paused: AtomicBool::new(false),
                idle,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.shared.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn config(&self) -> HeartbeatConfig {
        self.shared.config.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Applies new settings from the next run on; the interval schedule follows at once.
    pub fn set_config(&self, config: HeartbeatConfig) {
        for w in &config.warnings {
            tracing::warn!("{w}");
        }
        self.shared.deps.budget.set(config.daily_token_budget, config.zone.tz());
        *self.shared.config.write().unwrap_or_else(|e| e.into_inner()) = config;
        self.shared.config_changed.notify_one();
    }

    /// Pauses (or resumes) every run, event-driven ones included; returns whether it changed.
    pub fn set_paused(&self, paused: bool) -> bool {
        self.shared.paused.swap(paused, Ordering::SeqCst) != paused
    }

    pub fn is_paused(&self) -> bool {
        self.shared.paused.load(Ordering::SeqCst)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, IdleGate> {
        self.shared.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The user sent a message: the idle gate opens, the interval is back to normal (and the
    /// next interval run at most one interval away).
    pub fn user_active(&self) {
        self.reset_idle_gate();
    }

    /// Back to the normal interval, stretched again only after `idle_after` from now (a user
    /// message, an interval run that told the user something). The scheduler's timer is told,
    /// so the next interval run is at most one interval away.
    fn reset_idle_gate(&self) {
        let now = self.shared.deps.clock.now_ms();
        let reset = {
            let mut idle = self.idle();
            idle.awake_since_ms = now;
            std::mem::replace(&mut idle.factor, 1) != 1
        };
        if reset {
            self.shared.config_changed.notify_one();
        }
    }

    /// Whether the next interval run comes within the hour (the interval as the idle gate
    /// stretched it): then a run caches its prefix for an hour, so the next one reads it
    /// instead of writing it again (Anthropic's default cache lives 5 minutes).
    pub fn back_within_the_hour(&self) -> bool {
        self.interval()
            .is_some_and(|i| i * self.interval_factor() < std::time::Duration::from_secs(3600))
    }

    /// How many times the interval is stretched now (1 = normal).
    pub fn interval_factor(&self) -> u32 {
        self.idle().factor
    }

    /// An interval run ended without telling the user anything: after `idle_after` with no
    /// user message, the interval doubles (up to [`MAX_IDLE_FACTOR`]).
    fn quiet_interval_run(&self, config: &HeartbeatConfig) {
        let Some(idle_after) = config.idle_after else { return };
        let now = self.shared.deps.clock.now_ms();
        let mut idle = self.idle();
        if now.saturating_sub(idle.awake_since_ms) >= idle_after.as_millis() as i64 {
            idle.factor = (idle.factor * 2).min(MAX_IDLE_FACTOR);
        }
    }

    /// The account background runs are charged to.
    pub fn budget(&self) -> &crate::run::Budget {
        &self.shared.deps.budget
    }

    /// Registers the source of due inline routines (the scheduler, issue 6).
    pub fn set_due_tasks(&self, source: Arc<dyn DueTasks>) {
        *self.shared.due_tasks.write().unwrap_or_else(|e| e.into_inner()) = Some(source);
    }

    /// The status view; `wake` adds the wake counters.
    pub fn view(&self, wake: WakeStats) -> HeartbeatView {
        let config = self.config();
        let now_ms = self.shared.deps.clock.now_ms();
        let today = self.budget().today();
        let budget_spent = self.budget().is_spent();
        let idle_factor = self.interval_factor();
        let state = self.state();
        let mut stats = state.stats.clone();
        stats.wakes_requested = wake.requested;
        stats.wakes_coalesced = wake.coalesced;
        let next_run_at = state.next_due.map(|due| {
            let left = due.saturating_duration_since(Instant::now());
            now_ms + left.as_millis() as i64
        });
        HeartbeatView {
            interval_ms: config.interval.map(|d| d.as_millis() as u64),
            settings: config.settings,
            last_run_at: state.last_run_at,
            last_reason: state.last_reason,
            last_status: state.last_status,
            last_skip_reason: state.last_skip,
            last_detail: state.last_detail.clone(),
            last_usage: state.last_usage,
            next_run_at: next_run_at.filter(|_| config.enabled),
            warnings: config.warnings,
            stats,
            paused: self.is_paused(),
            usage_today: today.usage(),
            runs_today: today.runs,
            budget_spent,
            idle_factor,
        }
    }

    /// How long the heartbeat's turns took since start.
    pub fn durations(&self) -> RunDurations {
        self.state().durations
    }

    /// The interval in force: `None` when disabled or interval runs are off.
    pub fn interval(&self) -> Option<std::time::Duration> {
        Some(self.config()).filter(|c| c.enabled).and_then(|c| c.interval)
    }

    /// The scheduler's record of when the next interval run is due (for the status view).
    pub fn set_next_due(&self, due: Option<Instant>) {
        self.state().next_due = due;
    }

    /// Resolves when the settings change (the scheduler then recomputes the interval).
    pub async fn config_changed(&self) {
        self.shared.config_changed.notified().await
    }
}

#[async_trait::async_trait]
impl WakeHandler for Heartbeat {
    async fn on_wake(&self, wake: PendingWake) -> WakeOutcome {
        self.run_once(wake).await
    }
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod schedule_tests;

#[cfg(test)]
#[path = "budget_tests.rs"]
mod budget_tests;

#[cfg(test)]
mod timing_rig;

#[cfg(test)]
#[path = "deadline_tests.rs"]
mod deadline_tests;

#[cfg(test)]
#[path = "idle_gate_tests.rs"]
mod idle_gate_tests;
