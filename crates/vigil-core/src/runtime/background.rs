//! The runtime's background side: starting the wake loop and the scheduler loop, the
//! heartbeat's access to lanes and clients ([`Host`]), and how a conversation turn takes in
//! what happened meanwhile — the mailbox snapshot and queued system events go into its
//! context block, and the mailbox is acknowledged only after the turn succeeded.

use std::sync::{Arc, Mutex, Weak};

use futures_util::FutureExt as _;
use vigil_protocol::{
    ErrorKind, Event, EventEnvelope, HeartbeatSettings, HeartbeatStats, HeartbeatView, Scope, Source, StopReason,
    Usage, WakeReason,
};

use super::{Attendance, Inner, Runtime};
use crate::agent::{background_updates, TurnExtras};
use crate::events::EventSink;
use crate::heartbeat::{self, HeartbeatConfig, HeartbeatHost, HeartbeatTurn, TurnResult};
use crate::provider::ModelClient;
use crate::routines::{IntervalTimer, JobHost, JobOutcome, JobTurn};
use crate::system_events::{self, SystemEvent, SystemEventKind};
use crate::wake::{HandlerRegistration, PendingWake, Wake, WakeConfig, WakeOutcome};

/// The running wake loop and the heartbeat's registration with it.
pub(super) struct Started {
    pub(super) wake: Wake,
    /// Dropping it would unregister the heartbeat; kept for the runtime's lifetime.
    _registration: HandlerRegistration,
}

/// What a conversation turn took in before it ran, to acknowledge or give back after.
pub(super) struct TakenContext {
    mailbox_ids: Vec<String>,
    events: Vec<SystemEvent>,
    sections: Vec<String>,
}

impl TakenContext {
    pub(super) fn extras(&self) -> TurnExtras {
        TurnExtras {
            context_sections: self.sections.clone(),
            ..TurnExtras::default()
        }
    }
}

impl Runtime {
    /// Starts the wake loop (restoring wakes saved before a restart) and the heartbeat's
    /// interval schedule. Call once, from inside a tokio runtime (in the desktop shell:
    /// through `tauri::async_runtime`); later calls do nothing. Returns false, with an
    /// error in the log, when there is no tokio runtime to run on.
    pub fn start_background(&self) -> bool {
        self.start_background_with(WakeConfig {
            persist_path: Some(self.inner.data_dir.join("wake").join("pending.json")),
            ..WakeConfig::default()
        })
    }

    /// [`Self::start_background`] with explicit wake timings (tests).
    pub fn start_background_with(&self, config: WakeConfig) -> bool {
        if self.inner.wake.get().is_some() {
            return true;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::error!("the heartbeat cannot start outside a tokio runtime");
            return false;
        }
        let wake = Wake::start(
            config,
            self.inner.clock.clone(),
            self.inner.shutdown.clone(),
            &self.inner.background,
        );
        let registration = wake.set_handler(Arc::new(self.inner.heartbeat.clone()));
        let started = Started {
            wake: wake.clone(),
            _registration: registration,
        };
        if self.inner.wake.set(started).is_err() {
            return true;
        }
        self.start_processes();
        // Each MCP server on a task of its own: none delays the rest of the start.
        self.inner.mcp.start();
        self.start_inhibitor();
        self.start_presence();
        let host = Arc::new(self.clone());
        self.inner.channels.start(host, self.inner.shutdown.child_token());
        // One loop owns all timing: the heartbeat interval and the routines.
        let scheduler = self.inner.routines.clone();
        scheduler.set_wake(wake.clone());
        let timer = IntervalTimer::new(self.inner.heartbeat.clone(), wake);
        self.inner
            .background
            .spawn(scheduler.run(timer, self.inner.shutdown.clone()));
        true
    }

    /// Runs one heartbeat now, outside the wake loop (no coalescing, no retry), and says what
    /// the wake loop would do next (`Busy`: a conversation or the lock was taken; `Failed`: a
    /// provider error it would try again): for tests and diagnostics. It still emits the
    /// `heartbeat` event and counts.
    pub async fn heartbeat_once(&self, reason: WakeReason) -> WakeOutcome {
        let wake = PendingWake::new(reason, heartbeat::AGENT, self.inner.clock.now_ms());
        self.inner.heartbeat.run_once(wake).await
    }

    /// Asks for a heartbeat run (coalesced with others). Before
    /// [`Self::start_background`] there is nothing to run it, and the request is dropped.
    pub fn request_wake(&self, reason: WakeReason) {
        match self.inner.wake.get() {
            Some(started) => started.wake.request_wake(reason, heartbeat::AGENT),
            None => tracing::warn!("a {} wake before the heartbeat started was dropped", reason.as_str()),
        }
    }

    /// Queues a line for `session_id`'s next turn (and the heartbeat's, for the primary
    /// session). Pair it with [`Self::request_wake`] to have it relayed promptly.
    pub fn enqueue_system_event(&self, session_id: &str, text: &str, kind: SystemEventKind) -> bool {
        self.inner
            .system_events
            .enqueue(session_id, text, kind, self.inner.clock.now_ms())
    }

    /// The queues, for producers that hold on to them (the process registry).
    pub fn system_events(&self) -> &system_events::SystemEvents {
        &self.inner.system_events
    }

    /// Applies heartbeat settings at once (no restart); returns the problems found, which
    /// also show in [`Self::heartbeat_view`].
    pub fn set_heartbeat_settings(&self, settings: &HeartbeatSettings) -> Vec<String> {
        let config = HeartbeatConfig::resolve(settings);
        let warnings = config.warnings.clone();
        let turned_off = !config.enabled && self.inner.heartbeat.config().enabled;
        self.inner.heartbeat.set_config(config);
        if turned_off {
            self.inner.routines.heartbeat_turned_off();
        }
        warnings
    }

    /// Pauses or resumes background activity: while paused every heartbeat run (interval,
    /// exec exits, manual wakes) is skipped with the reason `paused`, and what it would have
    /// read (queued system events, the mailbox) stays for later. Running processes and
    /// conversation turns are not touched. Emits `background_paused` when it changes.
    /// Routines check it too: nothing is claimed while paused (see `JobHost::paused`).
    pub fn set_paused(&self, paused: bool) {
        if self.inner.heartbeat.set_paused(paused) {
            tracing::info!(paused, "background activity paused or resumed");
            self.inner
                .emitter
                .emit(Source::System, Event::BackgroundPaused { paused });
            if !paused {
                // What fell due meanwhile runs now, not at the scheduler's next wake-up.
                self.inner.routines.poke();
            }
        }
    }

    /// Whether background activity is paused (see [`Self::set_paused`]).
    pub fn is_paused(&self) -> bool {
        self.inner.heartbeat.is_paused()
    }

    /// The status view: last run, next run, settings problems, counters.
    pub fn heartbeat_view(&self) -> HeartbeatView {
        let stats = self.inner.wake.get().map(|s| s.wake.stats()).unwrap_or_default();
        self.inner.heartbeat.view(stats)
    }

    /// Counters since start (runs, sent, suppressed, skipped by reason, wakes coalesced).
    pub fn heartbeat_stats(&self) -> HeartbeatStats {
        self.heartbeat_view().stats
    }

    /// Waits for requested wakes to run; true if there were any.
    pub(super) async fn settle_wakes(&self) -> bool {
        match self.inner.wake.get() {
            Some(started) => started.wake.settled().await,
            None => false,
        }
    }

    /// Claims the mailbox's updates for this turn (seed 003 §4.5 `prepare_drain`: left in
    /// place, but not shown to another process's turn meanwhile) and takes the queued
    /// system events.
    pub(super) async fn take_background_context(&self, session_id: &str) -> TakenContext {
        let mailbox = match self.inner.meta.prepare_drain(session_id).await {
            Ok(mailbox) => mailbox,
            Err(e) => {
                tracing::warn!("could not read the mailbox of {session_id}: {e}");
                vec![]
            }
        };
        let events = self.inner.system_events.drain(session_id);
        let sections = background_updates(&mailbox)
            .into_iter()
            .chain(system_events::context_section(&events))
            .collect();
        TakenContext {
            mailbox_ids: mailbox.into_iter().map(|e| e.event_id).collect(),
            events,
            sections,
        }
    }

    /// After a turn: success acknowledges exactly the mailbox events it was shown (seed 003
    /// §4.5 `ack_drain`); failure leaves them and puts the system events back.
    pub(super) async fn finish_background_context(&self, session_id: &str, stop: StopReason, taken: TakenContext) {
        let succeeded = !matches!(stop, StopReason::Error | StopReason::Cancelled);
        if !succeeded {
            self.inner.system_events.restore(session_id, taken.events);
        }
        let updated = if succeeded && !taken.mailbox_ids.is_empty() {
            self.inner
                .meta
                .ack_drain(session_id, &taken.mailbox_ids)
                .await
                .map(|_| true)
        } else if !taken.mailbox_ids.is_empty() {
            self.inner
                .meta
                .release_drain(session_id, &taken.mailbox_ids)
                .await
                .map(|_| false)
        } else {
            self.inner
                .meta
                .update_atomic_async(session_id, |_| ())
                .await
                .map(|_| false)
        };
        match updated {
            Ok(true) => self.inner.emitter.for_session(session_id, Scope::Primary).emit(
                Source::System,
                Event::BackgroundUpdatesRead {
                    event_ids: taken.mailbox_ids,
                },
            ),
            Ok(false) => {}
            Err(e) => tracing::warn!("could not update the metadata of {session_id}: {e}"),
        }
    }

    /// One heartbeat turn in its own lane, with the heartbeat's model if one is set; its
    /// `cancel` is the run's deadline.
    async fn run_heartbeat_turn(&self, t: HeartbeatTurn) -> TurnResult {
        let cancel = t.cancel;
        self.run_background_turn(
            &t.session_id,
            &t.run_id,
            t.text,
            t.extras,
            t.model,
            Scope::Heartbeat,
            cancel,
            if t.may_ask {
                Attendance::Away
            } else {
                Attendance::Nobody
            },
        )
        .await
    }

    /// A turn nobody watches (heartbeat, job) in its own lane; `attendance` says whether it
    /// may ask for an approval and wait (see [`Attendance`]); `cancel` (or shutdown) stops it.
    /// Stopped by `cancel` (its deadline or timeout), it ends whole: the commands it started
    /// that still run, in the background too, are killed, since nothing will read them.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run_background_turn(
        &self,
        session_id: &str,
        run_id: &str,
        text: String,
        extras: TurnExtras,
        model: Option<String>,
        scope: Scope,
        cancel: tokio_util::sync::CancellationToken,
        attendance: Attendance,
    ) -> TurnResult {
        // A routine's job needs the model: it waits for tomorrow (or a higher budget) once today's
        // budget for background work is spent; its run says why.
        if scope == Scope::Job && self.inner.heartbeat.background_budget_spent() {
            return TurnResult {
                error: Some(
                    "budget: today's token budget for background work is spent; the routine did not run (it resumes tomorrow or when the budget is raised)"
                        .into(),
                ),
                ..TurnResult::ended(StopReason::Error)
            };
        }
        let lane = self.lane(session_id);
        let cancel = {
            let mut state = lane.lock();
            if state.busy {
                return TurnResult {
                    error: Some(format!("a turn already runs in {session_id}")),
                    locked: true,
                    ..TurnResult::ended(StopReason::Error)
                };
            }
            state.busy = true;
            state.scope = Some(scope);
            // Stopped by its own token or by shutdown, whichever comes first.
            let token = self.inner.shutdown.child_token();
            let (outer, inner) = (cancel, token.clone());
            tokio::spawn(async move {
                tokio::select! {
                    _ = outer.cancelled() => inner.cancel(),
                    _ = inner.cancelled() => {}
                }
            });
            state.cancel = token;
            state.cancel.clone()
        };
        self.activity_changed();
        let base = self.client();
        let client = match (base, model) {
            (Some(c), Some(model)) => {
                let mut config = c.config().clone();
                config.model = model;
                ModelClient::new(config, self.inner.clock.clone()).ok()
            }
            (c, None) => c,
            (None, Some(_)) => None,
        };
        let tap = Arc::new(ErrorTap {
            inner: self.inner.emitter.sink(),
            last: Mutex::new(None),
            last_kind: Mutex::new(None),
            usage: Mutex::new(None),
        });
        let emitter = self
            .inner
            .emitter
            .with_sink(tap.clone())
            .for_run(session_id, scope, run_id);
        let config = self.agent_config();
        let deadline = cancel.clone();
        let turn = self.turn(
            session_id,
            lane.as_ref(),
            client,
            emitter,
            cancel,
            config,
            extras,
            attendance,
        );
        let started = turn.started.clone();
        // A panic ends the run as an error; the lane must be freed all the same, or every
        // later heartbeat or job in it would fail as "busy".
        let stop_reason = match std::panic::AssertUnwindSafe(turn.run(text)).catch_unwind().await {
            Ok(stop) => stop,
            Err(panic) => {
                let why = crate::tools::panic_text(panic.as_ref());
                tracing::error!(session = session_id, "a background turn panicked: {why}");
                *tap.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!("internal error: {why}"));
                StopReason::Error
            }
        };
        if deadline.is_cancelled() && !self.inner.shutdown.is_cancelled() {
            self.kill_started(session_id, &started).await;
        }
        {
            let mut state = lane.lock();
            state.busy = false;
            state.queue.clear();
        }
        self.activity_changed();
        // A job's command that ended after its turn's last step: the job continues.
        if scope == Scope::Job && !self.inner.system_events.peek(session_id).is_empty() {
            self.continue_after_merge(session_id);
        }
        let error = tap.last.lock().unwrap_or_else(|e| e.into_inner()).take();
        let error_kind = *tap.last_kind.lock().unwrap_or_else(|e| e.into_inner());
        let usage = tap.usage.lock().unwrap_or_else(|e| e.into_inner()).take();
        // The heartbeat adds its own (and carries them on its event); a job's are added here.
        if let (Some(used), true) = (usage, scope != Scope::Heartbeat) {
            self.inner.heartbeat.record_background_usage(used);
        }
        TurnResult {
            error,
            error_kind,
            usage,
            ..TurnResult::ended(stop_reason)
        }
    }

    /// Kills what a turn ended by its deadline started and left running. Quietly: the run
    /// that would hear of it is over, and its record says it was ended.
    async fn kill_started(&self, session_id: &str, started: &crate::tools::StartedHere) {
        let Some(registry) = self.processes() else { return };
        let ids: Vec<String> = started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        let owner = super::processes::process_owner(session_id);
        for id in ids {
            if let Err(e) = registry.kill(owner, &id).await {
                tracing::warn!(
                    session = session_id,
                    "could not stop process {id} of a run past its deadline: {e}"
                );
            }
        }
    }

    /// Whether a turn runs in any conversation (the user's or a continuation; jobs and the
    /// heartbeat's own turns are not conversations).
    fn conversation_busy(&self) -> bool {
        let lanes = self.inner.lanes.lock().unwrap_or_else(|e| e.into_inner());
        lanes.values().any(|lane| {
            let state = lane.lock();
            state.busy && state.scope == Some(Scope::Primary)
        })
    }
}

/// Forwards every event and remembers the last error (for the heartbeat event, and whether
/// the heartbeat tries again).
struct ErrorTap {
    inner: Arc<dyn EventSink>,
    /// `std` lock: set from inside `emit`, read after the turn.
    last: Mutex<Option<String>>,
    /// `std` lock: the kind of that error.
    last_kind: Mutex<Option<ErrorKind>>,
    /// `std` lock: the tokens of the turn (`turn_finished`).
    usage: Mutex<Option<Usage>>,
}

impl EventSink for ErrorTap {
    fn emit(&self, event: EventEnvelope) {
        if let Event::Error { message, kind } = &event.event {
            *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(message.clone());
            *self.last_kind.lock().unwrap_or_else(|e| e.into_inner()) = Some(*kind);
        }
        if let Event::TurnFinished { usage, .. } = &event.event {
            *self.usage.lock().unwrap_or_else(|e| e.into_inner()) = Some(*usage);
        }
        self.inner.emit(event);
    }
}

/// The heartbeat's view of the runtime. Weak, so the heartbeat held inside the runtime does
/// not keep it alive.
pub(super) struct Host(pub(super) Weak<Inner>);

impl Host {
    fn runtime(&self) -> Option<Runtime> {
        self.0.upgrade().map(|inner| Runtime { inner })
    }
}

#[async_trait::async_trait]
impl HeartbeatHost for Host {
    fn conversation_busy(&self) -> bool {
        self.runtime().is_some_and(|rt| rt.conversation_busy())
    }

    fn has_provider(&self) -> bool {
        self.runtime()
            .is_some_and(|rt| rt.inner.client.read().unwrap_or_else(|e| e.into_inner()).is_some())
    }

    async fn run_turn(&self, turn: HeartbeatTurn) -> TurnResult {
        match self.runtime() {
            Some(rt) => rt.run_heartbeat_turn(turn).await,
            None => TurnResult {
                error: Some("Vigil is shutting down".into()),
                ..TurnResult::ended(StopReason::Cancelled)
            },
        }
    }
}

#[async_trait::async_trait]
impl JobHost for Host {
    async fn run_job(&self, job: JobTurn) -> JobOutcome {
        match self.runtime() {
            Some(rt) => rt.run_job_turn(job).await,
            None => JobOutcome {
                stop_reason: StopReason::Cancelled,
                reply: String::new(),
                error: Some("Vigil is shutting down".into()),
                usage: None,
            },
        }
    }

    fn notifications(&self) -> bool {
        self.runtime()
            .is_none_or(|rt| rt.inner.heartbeat.config().notifications)
    }

    fn paused(&self) -> bool {
        self.runtime().is_some_and(|rt| rt.is_paused())
    }

    fn heartbeat_scheduled(&self) -> bool {
        self.runtime().is_some_and(|rt| rt.inner.heartbeat.interval().is_some())
    }

    fn heartbeat_enabled(&self) -> bool {
        self.runtime().is_none_or(|rt| rt.inner.heartbeat.config().enabled)
    }

    fn heartbeat_active(&self, now_ms: i64) -> bool {
        self.runtime()
            .is_none_or(|rt| rt.inner.heartbeat.config().is_active_at(now_ms))
    }
}
