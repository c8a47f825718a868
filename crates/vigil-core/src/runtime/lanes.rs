//! Lanes and the turns that run in them: one turn at a time per session; the user's
//! messages and the session's notices queue while it runs and reach it at its next step;
//! what queued too late starts the next turn (the user's message, or a continuation).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt as _;
use tokio_util::sync::CancellationToken;
use vigil_protocol::{ErrorKind, Event, Message, Scope, Source, StopReason};

use super::{processes, title_from, Runtime, DEFAULT_TITLES};
use crate::agent::{AgentConfig, SteerQueue, Turn, UserInput};
use crate::events::Emitter;
use crate::provider::ModelClient;
use crate::session::{SessionType, PRIMARY_SESSION};
use crate::system_events::SystemEvents;

/// One session's lane: at most one turn runs; messages sent meanwhile queue here and
/// reach the running turn at its next step (steering), as do the session's notices (a
/// background command ended).
pub(super) struct Lane {
    /// `std` lock: held only to flip `busy` or move the queue, never across an await.
    state: Mutex<LaneState>,
    session_id: String,
    notices: SystemEvents,
}

/// Who can answer a turn's approval questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attendance {
    /// The user, at the screen: ask and wait.
    User,
    /// Nobody watches, but the run may ask (card, tray, notification) and wait up to the
    /// approval timeout: continuations, routine jobs, woken heartbeats.
    Away,
    /// Nobody, and nobody is asked: the heartbeat's interval polls.
    Nobody,
}

/// What starts a turn in a conversation's lane.
pub(super) enum Input {
    /// A message from the user.
    User(UserInput),
    /// Notices of background commands that ended.
    Continuation,
}

#[derive(Default)]
pub(super) struct LaneState {
    pub(super) busy: bool,
    /// What kind of session runs the turn, for the health check; set with `busy`.
    pub(super) scope: Option<Scope>,
    pub(super) queue: Vec<UserInput>,
    /// The running turn's token, for Stop.
    pub(super) cancel: CancellationToken,
}

impl Lane {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl SteerQueue for Lane {
    fn drain(&self) -> Vec<UserInput> {
        std::mem::take(&mut self.lock().queue)
    }

    fn drain_notices(&self) -> Vec<String> {
        self.notices
            .drain(&self.session_id)
            .into_iter()
            .map(|e| e.text)
            .collect()
    }
}

impl Runtime {
    pub(super) fn lane_if_exists(&self, session_id: &str) -> Option<Arc<Lane>> {
        self.inner
            .lanes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session_id)
            .cloned()
    }

    pub(super) fn lane(&self, session_id: &str) -> Arc<Lane> {
        self.inner
            .lanes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(session_id.to_string())
            .or_insert_with(|| {
                Arc::new(Lane {
                    state: Mutex::default(),
                    session_id: session_id.to_string(),
                    notices: self.inner.system_events.clone(),
                })
            })
            .clone()
    }

    /// Whether a turn is running in `session_id` (the heartbeat waits for a free lane).
    pub fn is_busy(&self, session_id: &str) -> bool {
        self.lane_if_exists(session_id).is_some_and(|l| l.lock().busy)
    }

    pub(super) fn start_turn(&self, session_id: String, input: UserInput) {
        if self.inner.shutdown.is_cancelled() {
            return self.report(
                ErrorKind::InvalidOp,
                "Vigil is shutting down; the message was not sent.",
            );
        }
        // The user is here: the heartbeat's idle gate opens.
        self.inner.heartbeat.user_active();
        match self.inner.meta.load(&session_id) {
            Err(e) => return self.report(ErrorKind::Session, e.to_string()),
            Ok(loaded) => {
                // A metadata file that fell back to its backup says so.
                for warning in loaded.warnings {
                    self.report(ErrorKind::Storage, warning);
                }
                // The user spoke: a new chain of continuations may begin.
                if loaded.meta.continuations > 0 || loaded.meta.stopped_at_limit {
                    let done = self
                        .inner
                        .meta
                        .update_atomic(&session_id, |m| {
                            m.continuations = 0;
                            m.stopped_at_limit = false;
                        })
                        .map(|_| ());
                    self.sessions_changed(done);
                }
                // A conversation is named after its first message until the user names it.
                if DEFAULT_TITLES.contains(&loaded.meta.title.as_str()) {
                    let title = match input.text.trim() {
                        "" if !input.images.is_empty() => "Image".to_string(),
                        text => title_from(text),
                    };
                    let done = self.inner.meta.rename(&session_id, &title).map(|_| ());
                    self.sessions_changed(done);
                }
            }
        }
        let lane = self.lane(&session_id);
        {
            let mut state = lane.lock();
            if state.busy {
                let text = input.text.clone();
                state.queue.push(input);
                drop(state);
                let emitter = self.inner.emitter.for_session(&session_id, Scope::Primary);
                return emitter.emit(Source::User, Event::MessageQueued { text });
            }
            state.busy = true;
            state.scope = Some(Scope::Primary);
            state.cancel = self.inner.shutdown.child_token();
        }
        self.activity_changed();
        self.spawn_lane(session_id, lane, Input::User(input));
    }

    /// Runs `first` in `lane` (already marked busy), then whatever queued meanwhile: the
    /// user's messages, or a continuation when notices wait.
    pub(super) fn spawn_lane(&self, session_id: String, lane: Arc<Lane>, first: Input) {
        let this = self.clone();
        self.inner.tasks.spawn(async move {
            let mut next = Some(first);
            while let Some(input) = next.take() {
                let run_id = uuid::Uuid::new_v4().to_string();
                let turn = async {
                    match input {
                        Input::User(input) => {
                            let stop = this.run_turn(&session_id, &lane, &run_id, input).await;
                            !matches!(stop, StopReason::Error | StopReason::Cancelled)
                        }
                        Input::Continuation => this.run_continuation(&session_id, &lane, &run_id).await,
                    }
                };
                let went_well = match std::panic::AssertUnwindSafe(turn).catch_unwind().await {
                    Ok(went_well) => went_well,
                    Err(panic) => {
                        this.turn_panicked(&session_id, &run_id, panic.as_ref());
                        false
                    }
                };
                // Also after a panic: the lane is freed, so the conversation is not stuck
                // "working" with every later message queued behind a turn that is gone.
                next = this.after_turn(&session_id, &lane, went_well);
            }
            this.activity_changed();
        });
    }

    /// A bug ended a turn by panicking: the user is told (and the window stops showing it
    /// as running); every message it saved is on disk, since each is appended as it ends.
    pub(super) fn turn_panicked(&self, session_id: &str, run_id: &str, panic: &(dyn std::any::Any + Send)) {
        let why = crate::tools::panic_text(panic);
        tracing::error!(session = session_id, "a turn panicked: {why}");
        let emitter = self.inner.emitter.for_run(session_id, Scope::Primary, run_id);
        emitter.emit(
            Source::System,
            Event::Error {
                kind: ErrorKind::Internal,
                message: format!(
                    "Vigil hit an internal error and stopped this reply ({why}). What was said so far is kept; send your message again to carry on."
                ),
            },
        );
        emitter.emit(
            Source::Agent,
            Event::TurnFinished {
                stop_reason: StopReason::Error,
                usage: Default::default(),
                detail: None,
            },
        );
    }

    pub(super) async fn run_turn(
        &self,
        session_id: &str,
        lane: &Arc<Lane>,
        run_id: &str,
        input: UserInput,
    ) -> StopReason {
        #[cfg(test)]
        if input.text == super::tests::PLANTED_BUG {
            panic!("a planted bug");
        }
        let cancel = lane.lock().cancel.clone();
        let (client, config) = (self.client(), self.agent_config());
        let background = self.take_background_context(session_id).await;
        let emitter = self.inner.emitter.for_run(session_id, Scope::Primary, run_id);
        let turn = self.turn(
            session_id,
            lane.as_ref(),
            client,
            emitter,
            cancel,
            config,
            background.extras(),
            Attendance::User,
        );
        let stop = turn.run(input).await;
        self.finish_background_context(session_id, stop, background).await;
        stop
    }

    /// A turn of `session_id` with this runtime's stores, tools, workspace and approval
    /// policy; `attendance` says who can answer its questions.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn turn<'a>(
        &'a self,
        session_id: &'a str,
        steer: &'a dyn SteerQueue,
        client: Option<ModelClient>,
        emitter: Emitter,
        cancel: CancellationToken,
        config: AgentConfig,
        extras: crate::agent::TurnExtras,
        attendance: Attendance,
    ) -> Turn<'a> {
        let interactive = attendance == Attendance::User;
        // The heartbeat's and the jobs' sessions have no place in the window: their questions
        // go to the main conversation, which the routines and the heartbeat report to.
        let asks_in = match crate::session::meta::type_from_id(session_id) {
            SessionType::Primary => emitter.clone(),
            _ => emitter.for_session(PRIMARY_SESSION, Scope::Primary),
        };
        let gate = crate::approval::TurnGate {
            approvals: self.inner.approvals.clone(),
            workspace: self.workspace().to_path_buf(),
            emitter: asks_in,
            cancel: cancel.clone(),
            interactive,
            away: (attendance == Attendance::Away).then(|| self.approval_timeout()),
            now_ms: self.inner.clock.now_ms(),
        };
        Turn {
            session_id,
            process_owner: processes::process_owner(session_id),
            store: &self.inner.store,
            client,
            tools: self.tools(),
            gate: Some(Arc::new(gate)),
            data_dir: Some(self.inner.data_dir.clone()),
            started: Default::default(),
            sandbox: Some(crate::sandbox::TurnSandbox {
                sandbox: self.inner.approvals.sandbox(),
                settings: self
                    .inner
                    .approvals
                    .sandbox_settings()
                    .for_routine(extras.routine.as_deref()),
                data_dir: self.inner.data_dir.clone(),
                attended: interactive,
                home: std::env::var_os("HOME").map(PathBuf::from),
            }),
            workspace: self.inner.workspace.clone(),
            emitter,
            clock: self.inner.clock.clone(),
            cancel,
            steer,
            config,
            extras,
        }
    }

    /// Decides what follows a turn: messages that arrived too late for it start the next
    /// turn, unless the user pressed Stop: then they are saved (never lost) but not answered.
    /// Without messages, notices that arrived too late start a continuation, if the turn
    /// `went_well` (a failing provider must not be retried in a loop).
    pub(super) fn after_turn(&self, session_id: &str, lane: &Lane, went_well: bool) -> Option<Input> {
        let mut state = lane.lock();
        let queued = std::mem::take(&mut state.queue);
        if queued.is_empty() {
            let notices = !self.inner.system_events.peek(session_id).is_empty();
            if went_well && notices && !state.cancel.is_cancelled() && !self.inner.shutdown.is_cancelled() {
                state.cancel = self.inner.shutdown.child_token();
                return Some(Input::Continuation);
            }
            state.busy = false;
            return None;
        }
        if !state.cancel.is_cancelled() {
            state.cancel = self.inner.shutdown.child_token();
            let texts: Vec<&str> = queued.iter().map(|q| q.text.as_str()).collect();
            let joined = UserInput {
                text: texts.join("\n\n"),
                images: queued.iter().flat_map(|q| q.images.clone()).collect(),
            };
            return Some(Input::User(joined));
        }
        // Saved while the lane is still busy, so no new turn can interleave with them.
        let emitter = self.inner.emitter.for_session(session_id, Scope::Primary);
        for input in &queued {
            let mut message = Message::user_text(input.text.clone(), self.inner.clock.now_ms());
            message.content.extend(input.images.iter().cloned());
            match self.inner.store.append(session_id, &message) {
                Ok(()) => emitter.emit(Source::User, Event::MessageAppended { message }),
                Err(e) => self.report(ErrorKind::Storage, format!("Could not save a queued message: {e}")),
            }
        }
        state.busy = false;
        drop(state);
        emitter.emit(
            Source::User,
            Event::QueueConsumed {
                count: queued.len() as u32,
            },
        );
        None
    }
}
