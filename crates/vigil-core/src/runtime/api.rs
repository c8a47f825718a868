//! The public `impl Runtime`: the surface the desktop shell, `vigil-headless`, the ops
//! dispatcher and the tests call. Each method picks the owners it needs and hands over to
//! the owner (or the concept function) that holds the logic; the owners are listed in
//! [`super::Inner`] and docs/architecture.md says where each one's methods live.
//!
//! Must never: hold logic of its own beyond picking owners, spawning onto the runtime's
//! tasks (which needs the handle), and the shutdown order.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use vigil_protocol::{
    AwaySummary, ConnectionVerdict, ErrorKind, Event, HealthView, HeartbeatChecks, HeartbeatSettings, HeartbeatStats,
    HeartbeatView, McpView, Message, Op, ProcessSummary, ProviderSettings, RoutineDraft, RoutineRun, RoutineView,
    RoutinesView, SchedulePreview, SessionSummary, SettingsView, Source, WakeReason,
};

use super::{activity, away, build, health, processes, routines, turns, watching, Runtime, SHUTDOWN_GRACE};
use crate::agent::AgentConfig;
use crate::approval::Approvals;
use crate::clock::Clock;
use crate::events::EventSink;
use crate::exec::RegistryHandle;
use crate::inhibit::InhibitorStatus;
use crate::presence::{Presence, PresenceSource};
use crate::provider::ModelClient;
use crate::routines::{Scheduler, StoreError};
use crate::session::{Loaded, SessionError, PRIMARY_SESSION};
use crate::system_events::{SystemEventKind, SystemEvents};
use crate::wake::{WakeConfig, WakeOutcome};
use crate::watch::Watch;

impl Runtime {
    // Opening, settings, shutdown.

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
        let rt = Self {
            inner: build::inner(data_dir, clock, sink, desktop)?,
        };
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
            Duration::from_secs(desktop.approval_timeout_secs.max(1)),
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
        self.inner.base.report(kind, message);
    }

    /// Asks the front end to raise a native notification.
    pub fn notify(&self, title: impl Into<String>, body: impl Into<String>) {
        self.inner.base.notify(title, body);
    }

    /// Resolves settings (stored + environment + key) and swaps the client used by the next
    /// turn. Running turns keep the client they started with.
    pub fn apply_settings(&self, stored: Option<ProviderSettings>, warnings: Vec<String>) -> SettingsView {
        let mut warnings = warnings;
        warnings.extend(self.inner.base.startup_warnings.iter().cloned());
        self.inner
            .agent
            .apply_settings(&self.inner.base.clock, stored, warnings)
    }

    /// Replaces the client the next turn uses (`None`: turns report that no provider is set).
    pub fn set_client(&self, client: Option<ModelClient>) {
        self.inner.agent.set_client(client);
    }

    /// Replaces the limits used by the next turn.
    pub fn set_agent_config(&self, config: AgentConfig) {
        self.inner.agent.set_config(config);
    }

    /// Stores (or with an empty key, forgets) the API key for a provider kind.
    pub fn set_api_key(&self, kind: vigil_protocol::ProviderKind, key: &str) -> Result<Option<String>, String> {
        self.inner.agent.set_api_key(kind, key)
    }

    /// Tries the given settings without saving them. `api_key` overrides the stored key.
    pub async fn test_connection(&self, provider: ProviderSettings, api_key: Option<String>) -> ConnectionVerdict {
        let cancel = self.inner.life.shutdown.child_token();
        let clock = &self.inner.base.clock;
        self.inner
            .agent
            .test_connection(clock, &cancel, provider, api_key)
            .await
    }

    /// The approval gate shared by the tools.
    pub fn approvals(&self) -> &Approvals {
        &self.inner.agent.approvals
    }

    /// The agent's workspace folder.
    pub fn workspace(&self) -> &Path {
        self.inner.agent.workspace.root()
    }

    /// Applies the limits of acting alone at once: continuations in a row (0: never) and how
    /// long an unattended approval waits.
    pub fn set_autonomy(&self, continuation_limit: u32, approval_timeout: Duration) {
        self.inner.unattended.autonomy.set(continuation_limit, approval_timeout);
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
            if !self.inner.unattended.settle_wakes().await {
                return;
            }
        }
    }

    // Conversations and turns.

    /// Takes one op; returns at once (see [`super::ops`]).
    pub fn submit(&self, op: Op) {
        super::ops::submit(self, op);
    }

    /// The conversations, most recent first.
    pub fn sessions(&self) -> Result<Vec<SessionSummary>, SessionError> {
        self.inner.conversations.sessions()
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

    /// The bytes of an image stored with `session_id` (for the window's thumbnails); `None`
    /// when its file is gone.
    pub fn image(&self, session_id: &str, sha256: &str, mime: &str) -> Result<Option<Vec<u8>>, SessionError> {
        self.inner.conversations.store.read_image(session_id, sha256, mime)
    }

    /// Whether a turn is running in `session_id` (the heartbeat waits for a free lane).
    pub fn is_busy(&self, session_id: &str) -> bool {
        self.inner.conversations.lanes.is_busy(session_id)
    }

    /// Queues a line for `session_id`'s next turn (and the heartbeat's, for the primary
    /// session). Pair it with [`Self::request_wake`] to have it relayed promptly.
    pub fn enqueue_system_event(&self, session_id: &str, text: &str, kind: SystemEventKind) -> bool {
        let now = self.inner.base.clock.now_ms();
        self.inner
            .conversations
            .system_events
            .enqueue(session_id, text, kind, now)
    }

    /// The queues, for producers that hold on to them (the process registry).
    pub fn system_events(&self) -> &SystemEvents {
        &self.inner.conversations.system_events
    }

    /// How the runtime is doing now.
    pub async fn health(&self) -> HealthView {
        let i = &self.inner;
        health::view(&i.base, &i.life, &i.conversations, &i.unattended, &i.processes, &i.away).await
    }

    /// Answers the `health` op with a `health` event (for `vigil-headless` and scripts).
    pub(super) fn report_health(&self) {
        let this = self.clone();
        self.inner.life.tasks.spawn(async move {
            let health = this.health().await;
            this.inner.base.emitter.emit(Source::System, Event::Health { health });
        });
    }

    // Background work: the wake loop, the heartbeat, processes, MCP, presence.

    /// Starts the wake loop (restoring wakes saved before a restart) and the heartbeat's
    /// interval schedule. Call once, from inside a tokio runtime (in the desktop shell:
    /// through `tauri::async_runtime`); later calls do nothing. Returns false, with an
    /// error in the log, when there is no tokio runtime to run on.
    pub fn start_background(&self) -> bool {
        self.start_background_with(WakeConfig {
            persist_path: Some(self.inner.base.data_dir.join("wake").join("pending.json")),
            ..WakeConfig::default()
        })
    }

    /// [`Self::start_background`] with explicit wake timings (tests).
    pub fn start_background_with(&self, config: WakeConfig) -> bool {
        let i = &self.inner;
        if i.unattended.wake.get().is_some() {
            return true;
        }
        if tokio::runtime::Handle::try_current().is_err() {
            tracing::error!("the heartbeat cannot start outside a tokio runtime");
            return false;
        }
        let Some(wake) = i.unattended.start_wake(config, &i.base, &i.life) else {
            return true;
        };
        self.start_processes();
        // Each MCP server on a task of its own: none delays the rest of the start.
        i.mcp.start();
        if i.away.start_inhibitor() {
            turns::activity_changed(self);
        }
        let weak = Arc::downgrade(&self.inner);
        i.away.start_presence(&i.base, &i.life, move |since_ms| {
            if let Some(i) = weak.upgrade() {
                away::came_back(&i.away, &i.base, &i.unattended.routines, &i.conversations, since_ms);
            }
        });
        i.away
            .channels
            .start(Arc::new(self.clone()), i.life.shutdown.child_token());
        i.unattended.start_schedule(wake, &i.life);
        watching::start(&i.unattended.watch, &i.processes, &i.unattended.heartbeat, &i.life);
        true
    }

    /// Starts the process registry; the commands the last run left are announced, and its
    /// events forwarded (exit notices routed by [`processes::exit_route`]).
    fn start_processes(&self) {
        let i = &self.inner;
        let announce = |left: Vec<super::process_table::Running>| {
            for r in left {
                turns::command_left(self, &r);
            }
        };
        let Some(events) = i
            .processes
            .start(&i.base, &i.life, &i.agent, &i.unattended.routines, announce)
        else {
            return;
        };
        let this = self.clone();
        i.life.background.spawn(async move {
            let i = &this.inner;
            let count_changed = || turns::activity_changed(&this);
            let exit_notice = |owner: &str, id: &str, text: &str| turns::exit_notice(&this, owner, id, text);
            let watch = &i.unattended.watch;
            processes::forward(&i.processes, &i.base.emitter, watch, events, count_changed, exit_notice).await
        });
    }

    /// Runs one heartbeat now, outside the wake loop (no coalescing, no retry), and says what
    /// the wake loop would do next (`Busy`: a conversation or the lock was taken; `Failed`: a
    /// provider error it would try again): for tests and diagnostics. It still emits the
    /// `heartbeat` event and counts.
    pub async fn heartbeat_once(&self, reason: WakeReason) -> WakeOutcome {
        self.inner
            .unattended
            .heartbeat_once(&*self.inner.base.clock, reason)
            .await
    }

    /// Asks for a heartbeat run (coalesced with others). Before
    /// [`Self::start_background`] there is nothing to run it, and the request is dropped.
    pub fn request_wake(&self, reason: WakeReason) {
        self.inner.unattended.request_wake(reason);
    }

    /// Applies heartbeat settings at once (no restart); returns the problems found, which
    /// also show in [`Self::heartbeat_view`].
    pub fn set_heartbeat_settings(&self, settings: &HeartbeatSettings) -> Vec<String> {
        self.inner.unattended.set_heartbeat_settings(settings)
    }

    /// Pauses or resumes background activity: while paused every heartbeat run (interval,
    /// exec exits, manual wakes) is skipped with the reason `paused`, and what it would have
    /// read (queued system events, the mailbox) stays for later. Running processes and
    /// conversation turns are not touched. Emits `background_paused` when it changes.
    /// Routines check it too: nothing is claimed while paused (see `JobHost::paused`).
    pub fn set_paused(&self, paused: bool) {
        self.inner.unattended.set_paused(&self.inner.base.emitter, paused);
    }

    /// Whether background activity is paused (see [`Self::set_paused`]).
    pub fn is_paused(&self) -> bool {
        self.inner.unattended.heartbeat.is_paused()
    }

    /// The status view: last run, next run, settings problems, counters.
    pub fn heartbeat_view(&self) -> HeartbeatView {
        self.inner.unattended.heartbeat_view()
    }

    /// Counters since start (runs, sent, suppressed, skipped by reason, wakes coalesced).
    pub fn heartbeat_stats(&self) -> HeartbeatStats {
        self.heartbeat_view().stats
    }

    /// The process registry, once background work started.
    pub fn processes(&self) -> Option<&RegistryHandle> {
        self.inner.processes.registry()
    }

    /// Every process, for the panel: the user's own that were running when Vigil last
    /// stopped, then this run's.
    pub async fn list_processes(&self) -> Vec<ProcessSummary> {
        self.inner.processes.list().await
    }

    /// The processes still running: what quitting would kill (the quit prompt, the tray).
    pub async fn running_processes(&self) -> Vec<ProcessSummary> {
        self.inner.processes.running().await
    }

    /// The raw terminal bytes kept for a process (base64), so the panel can replay it.
    pub async fn process_output(&self, process_id: &str) -> Result<String, String> {
        self.inner.processes.output(process_id).await
    }

    /// The MCP servers (their config and supervisors).
    pub fn mcp(&self) -> &crate::mcp::McpManager {
        &self.inner.mcp
    }

    /// Settings → Tools.
    pub fn mcp_view(&self) -> McpView {
        self.inner.mcp.view()
    }

    /// Turns keeping the computer awake on or off at once (the `keep_awake` setting).
    pub fn set_keep_awake(&self, on: bool) {
        self.inner.away.set_keep_awake(on);
    }

    /// What Settings shows: off, unavailable (and why), idle, or holding a lock.
    pub fn keep_awake_status(&self) -> InhibitorStatus {
        self.inner.away.keep_awake_status()
    }

    /// The bus logind is asked on instead of the system bus (tests); call before
    /// [`Runtime::start_background`].
    pub fn set_logind_bus(&self, address: &str) {
        self.inner.away.set_logind_bus(address);
    }

    /// How many things run now: busy lanes plus running commands.
    pub fn running_tasks(&self) -> usize {
        activity::running_tasks(&self.inner.conversations.lanes, &self.inner.processes)
    }

    /// What happened from `since_ms` to `back_ms`: the card's content, or `None` when
    /// nothing did and nothing waits.
    pub fn away_summary(&self, since_ms: i64, back_ms: i64) -> Option<AwaySummary> {
        let i = &self.inner;
        away::summary(&i.away, &i.unattended.routines, &i.conversations, since_ms, back_ms)
    }

    /// How long an absence must last for its card (the `away_after_minutes` setting).
    pub fn set_away_after(&self, minutes: u32) {
        self.inner.away.set_away_after(minutes);
    }

    /// The window saw the user's input; counts where the desktop session cannot say.
    pub fn window_input(&self) {
        self.inner.away.window_input();
    }

    /// Whether the user is at the computer (here until background work started).
    pub fn presence(&self) -> Presence {
        self.inner.away.presence()
    }

    /// Where the presence comes from: logind's session, or the window.
    pub fn presence_source(&self) -> PresenceSource {
        self.inner.away.presence_source()
    }

    /// The phone channels (Settings → Away).
    pub fn channels(&self) -> &crate::channels::Channels {
        &self.inner.away.channels
    }

    // Routines and their triggers (the scheduler's own calls are on `Scheduler`).

    /// The scheduler (routines, claims, the timing loop).
    pub fn scheduler(&self) -> &Scheduler {
        &self.inner.unattended.routines
    }

    /// The routine triggers' watcher.
    pub fn watch(&self) -> &Watch {
        &self.inner.unattended.watch
    }

    /// The routine list and the state of `HEARTBEAT.md`'s task block.
    pub fn routines(&self) -> RoutinesView {
        self.scheduler().view()
    }

    /// The user's Trust of a held `HEARTBEAT.md`; the routines as they are then.
    pub async fn trust_heartbeat_file(&self) -> Result<RoutinesView, StoreError> {
        routines::trust_file(self.scheduler()).await?;
        Ok(self.routines())
    }

    fn routine_view(&self, r: &crate::routines::Routine) -> RoutineView {
        routines::view_of(self.scheduler(), &*self.inner.base.clock, r)
    }

    /// Creates a routine as the user's (`source: manual`). Over the soft limit it is still
    /// created, with a warning.
    pub async fn add_routine(&self, draft: RoutineDraft) -> Result<(RoutineView, Vec<String>), StoreError> {
        routines::add(self.scheduler(), &*self.inner.base.clock, draft).await
    }

    pub async fn update_routine(&self, id: &str, changes: RoutineDraft) -> Result<RoutineView, StoreError> {
        let r = self.scheduler().update_routine(id, changes).await?;
        Ok(self.routine_view(&r))
    }

    /// Removes a routine so it can be restored; `hard` deletes it and its history for good.
    pub async fn remove_routine(&self, id: &str, hard: bool) -> Result<(), StoreError> {
        self.scheduler().remove(id, hard).await.map(|_| ())
    }

    /// Brings a removed routine back.
    pub async fn restore_routine(&self, id: &str) -> Result<RoutineView, StoreError> {
        let r = self.scheduler().restore(id).await?;
        Ok(self.routine_view(&r))
    }

    /// Runs a routine now; its schedule is unchanged.
    pub async fn run_routine_now(&self, id: &str) -> Result<(), StoreError> {
        self.scheduler().run_now(id).await
    }

    /// The user's answer to a run whose outcome is unknown: run the routine again now
    /// (`retry`), or leave it (dismiss).
    pub async fn resolve_routine_run(&self, id: &str, run_id: &str, retry: bool) -> Result<(), StoreError> {
        self.scheduler().resolve_unknown(id, run_id, retry).await
    }

    /// Pauses (`false`) or resumes (`true`).
    pub async fn set_routine_enabled(&self, id: &str, enabled: bool) -> Result<RoutineView, StoreError> {
        let r = self.scheduler().set_enabled(id, enabled).await?;
        Ok(self.routine_view(&r))
    }

    /// The routine's latest runs (bounded), oldest first.
    pub fn routine_history(&self, id: &str) -> Vec<RoutineRun> {
        self.scheduler().history(id)
    }

    /// The tray's line about what runs next: "Next: Disk check at 09:15", in the user's zone.
    pub fn next_routine_line(&self) -> String {
        routines::next_line(self.scheduler(), &*self.inner.base.clock)
    }

    /// "every weekday at 09:00, Europe/Berlin" and the next three runs, or why the schedule
    /// cannot be used (the same validation as the agent's tools).
    pub fn preview_schedule(
        &self,
        schedule: Option<&str>,
        next_run_at: Option<i64>,
        timezone: Option<&str>,
    ) -> Result<SchedulePreview, crate::routines::Refusal> {
        self.scheduler().preview(schedule, next_run_at, timezone)
    }

    /// The free-text checks of `HEARTBEAT.md` (everything but the routines' section).
    pub fn heartbeat_checks(&self) -> Result<HeartbeatChecks, StoreError> {
        routines::checks(self.scheduler())
    }

    /// Replaces the checks (see [`crate::routines::RoutineStore::save_checks`]).
    pub async fn save_heartbeat_checks(&self, expected: &str, text: &str) -> Result<HeartbeatChecks, StoreError> {
        routines::save_checks(self.scheduler(), expected, text).await
    }

    /// Replaces a corrupted task block with `.heartbeat_snapshot.json` (the broken file is
    /// kept as `HEARTBEAT.md.corrupt`); returns how many routines came back.
    pub async fn restore_routines_from_snapshot(&self) -> Result<usize, StoreError> {
        routines::restore_from_snapshot(self.scheduler()).await
    }

    /// The user approved routine `id`'s check or URL as it is written now (the card showed
    /// what runs, how often, with what access); a pause by the rate limit ends with it.
    pub fn approve_routine(&self, id: &str) -> Result<RoutinesView, String> {
        watching::approve(&self.inner.unattended.watch, self.scheduler(), id)
    }
}
