//! A conversation's lane and the turns that run in it (one at a time, see [`crate::run::lane`]):
//! the user's messages and the session's notices queue while one runs and reach it at its
//! next step; what queued too late starts the next turn (the user's message, or a
//! continuation). Every run starts through [`Runtime::run`].

use std::sync::Arc;

use futures_util::FutureExt as _;
use vigil_protocol::{ErrorKind, Event, Message, Scope, Source, StopReason};

use super::{title_from, Runtime, DEFAULT_TITLES};
use crate::agent::UserInput;
use crate::run::start::Context;
use crate::run::{Attendance, Lane, RunKind, RunRequest, RunResult};

/// The conversations: their transcripts and catalog, the lanes that run their turns, the
/// notices waiting for their next turn, and the search index over them.
pub(super) struct Conversations {
    pub(super) store: crate::session::SessionStore,
    pub(super) meta: crate::session::MetaStore,
    /// Session id → its lane.
    pub(super) lanes: crate::run::Lanes,
    /// "What happened" lines waiting for each session's next turn.
    pub(super) system_events: crate::system_events::SystemEvents,
    /// The search index over every transcript; `None` if it could not be opened (then no
    /// history tools, and the user's searches find nothing).
    pub(super) history: Option<crate::history::History>,
}

/// What starts a turn in a conversation's lane.
pub(super) enum Input {
    /// A message from the user.
    User(UserInput),
    /// Notices of background commands that ended.
    Continuation,
}

impl Runtime {
    pub(super) fn lane_if_exists(&self, session_id: &str) -> Option<Arc<Lane>> {
        self.inner.conversations.lanes.get(session_id)
    }

    pub(super) fn lane(&self, session_id: &str) -> Arc<Lane> {
        self.inner.conversations.lanes.lane(session_id)
    }

    /// Whether a turn is running in `session_id` (the heartbeat waits for a free lane).
    pub fn is_busy(&self, session_id: &str) -> bool {
        self.inner.conversations.lanes.is_busy(session_id)
    }

    /// Starts `req` (see [`crate::run::start`]) with what this runtime has now. A job whose
    /// command ended after its turn's last step continues.
    pub(super) async fn run(&self, req: RunRequest) -> RunResult {
        let activity = || self.activity_changed();
        let ctx = Context {
            store: &self.inner.conversations.store,
            meta: &self.inner.conversations.meta,
            emitter: &self.inner.base.emitter,
            clock: &self.inner.base.clock,
            approvals: &self.inner.agent.approvals,
            workspace: &self.inner.agent.workspace,
            data_dir: &self.inner.base.data_dir,
            notices: &self.inner.conversations.system_events,
            lanes: &self.inner.conversations.lanes,
            budget: &self.inner.unattended.budget,
            shutdown: &self.inner.life.shutdown,
            tools: self.tools(),
            client: self.client(),
            config: self.agent_config(),
            approval_timeout: self.approval_timeout(),
            processes: self.processes(),
            activity: &activity,
        };
        let job = req.kind.scope() == Scope::Job;
        let routine = matches!(req.kind, RunKind::Routine { .. });
        let session_id = req.session_id.clone();
        let result = crate::run::start::run(&ctx, req).await;
        if job && !result.locked && !self.inner.conversations.system_events.peek(&session_id).is_empty() {
            self.continue_after_merge(&session_id);
        }
        if routine && !result.locked {
            self.answer_queued(&session_id);
        }
        result
    }

    /// After a routine's turn in a conversation: the user's messages that came too late to
    /// steer it start their own turn.
    fn answer_queued(&self, session_id: &str) {
        let lane = self.lane(session_id);
        {
            let mut state = lane.lock();
            if state.busy || state.queue.is_empty() {
                return;
            }
            state.busy = true;
            state.scope = Some(Scope::Primary);
            state.cancel = self.inner.life.shutdown.child_token();
        }
        self.activity_changed();
        if let Some(next) = self.after_turn(session_id, &lane, true) {
            self.spawn_lane(session_id.to_string(), lane, next);
        }
    }

    pub(super) fn start_turn(&self, session_id: String, input: UserInput) {
        if self.inner.life.shutdown.is_cancelled() {
            return self.report(
                ErrorKind::InvalidOp,
                "Vigil is shutting down; the message was not sent.",
            );
        }
        // The user is here: the heartbeat's idle gate opens.
        self.inner.unattended.heartbeat.user_active();
        match self.inner.conversations.meta.load(&session_id) {
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
                        .conversations
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
                    let done = self.inner.conversations.meta.rename(&session_id, &title).map(|_| ());
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
                let emitter = self.inner.base.emitter.for_session(&session_id, Scope::Primary);
                return emitter.emit(Source::User, Event::MessageQueued { text });
            }
            state.busy = true;
            state.scope = Some(Scope::Primary);
            state.cancel = self.inner.life.shutdown.child_token();
        }
        self.activity_changed();
        self.spawn_lane(session_id, lane, Input::User(input));
    }

    /// Runs `first` in `lane` (already marked busy), then whatever queued meanwhile: the
    /// user's messages, or a continuation when notices wait.
    pub(super) fn spawn_lane(&self, session_id: String, lane: Arc<Lane>, first: Input) {
        let this = self.clone();
        self.inner.life.tasks.spawn(async move {
            let mut next = Some(first);
            while let Some(input) = next.take() {
                let run_id = uuid::Uuid::new_v4().to_string();
                let turn = async {
                    match input {
                        Input::User(input) => {
                            let stop = this.run_turn(&session_id, &run_id, input).await;
                            !matches!(stop, StopReason::Error | StopReason::Cancelled)
                        }
                        Input::Continuation => this.run_continuation(&session_id, &run_id).await,
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
        let emitter = self.inner.base.emitter.for_run(session_id, Scope::Primary, run_id);
        crate::run::start::panicked(&emitter, &why);
    }

    pub(super) async fn run_turn(&self, session_id: &str, run_id: &str, input: UserInput) -> StopReason {
        #[cfg(test)]
        if input.text == super::tests::PLANTED_BUG {
            panic!("a planted bug");
        }
        let req = RunRequest {
            run_id: run_id.to_string(),
            ..RunRequest::new(session_id, RunKind::User, input, Attendance::User)
        };
        self.run(req).await.stop_reason
    }

    /// Decides what follows a turn: messages that arrived too late for it start the next
    /// turn, unless the user pressed Stop: then they are saved (never lost) but not answered.
    /// Without messages, notices that arrived too late start a continuation, if the turn
    /// `went_well` (a failing provider must not be retried in a loop).
    pub(super) fn after_turn(&self, session_id: &str, lane: &Lane, went_well: bool) -> Option<Input> {
        let mut state = lane.lock();
        let queued = std::mem::take(&mut state.queue);
        if queued.is_empty() {
            let notices = !self.inner.conversations.system_events.peek(session_id).is_empty();
            if went_well && notices && !state.cancel.is_cancelled() && !self.inner.life.shutdown.is_cancelled() {
                state.cancel = self.inner.life.shutdown.child_token();
                return Some(Input::Continuation);
            }
            state.busy = false;
            return None;
        }
        if !state.cancel.is_cancelled() {
            state.cancel = self.inner.life.shutdown.child_token();
            let texts: Vec<&str> = queued.iter().map(|q| q.text.as_str()).collect();
            let joined = UserInput {
                text: texts.join("\n\n"),
                images: queued.iter().flat_map(|q| q.images.clone()).collect(),
            };
            return Some(Input::User(joined));
        }
        // Saved while the lane is still busy, so no new turn can interleave with them.
        let emitter = self.inner.base.emitter.for_session(session_id, Scope::Primary);
        for input in &queued {
            let mut message = Message::user_text(input.text.clone(), self.inner.base.clock.now_ms());
            message.content.extend(input.images.iter().cloned());
            match self.inner.conversations.store.append(session_id, &message) {
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
