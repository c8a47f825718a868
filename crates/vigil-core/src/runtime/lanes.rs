//! A conversation's lane and the turns that run in it (one at a time, see [`crate::run::lane`]):
//! the user's messages and the session's notices queue while one runs and reach it at its
//! next step; what queued too late starts the next turn (the user's message, or a
//! continuation). Every run starts through `turns.rs`'s `run`, into [`crate::run::start`].
//!
//! Owns: the conversations ([`Conversations`]) and what a lane does before and after a
//! turn. Must never: start a turn in a busy lane, or lose a queued message.

use std::sync::Arc;

use vigil_protocol::{ErrorKind, Event, Message, Scope, SessionSummary, Source};

use super::{title_from, Base, Life, DEFAULT_TITLES};
use crate::agent::UserInput;
use crate::events::Emitter;
use crate::run::Lane;
use crate::session::{SessionError, SessionType, PRIMARY_SESSION};

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

impl Conversations {
    /// The conversations, most recent first.
    pub(super) fn sessions(&self) -> Result<Vec<SessionSummary>, SessionError> {
        self.meta.load(PRIMARY_SESSION)?;
        Ok(self
            .meta
            .list()?
            .sessions
            .into_iter()
            .filter(|m| m.session_type == SessionType::Primary)
            .map(|m| SessionSummary {
                id: m.id,
                title: m.title,
                created_at: m.created_at,
                updated_at: m.updated_at,
                continuations: m.continuations,
                continuation_limit: m.continuation_limit,
            })
            .collect())
    }
}

/// After a change to the catalog (`done`): the new list goes out, or what went wrong.
pub(super) fn sessions_changed(conversations: &Conversations, base: &Base, done: Result<(), SessionError>) {
    if let Err(e) = done {
        return base.report(ErrorKind::Session, e.to_string());
    }
    match conversations.sessions() {
        Ok(sessions) => base.emitter.emit(Source::System, Event::SessionsChanged { sessions }),
        Err(e) => base.report(ErrorKind::Session, e.to_string()),
    }
}

/// What starts a turn in a conversation's lane.
pub(super) enum Input {
    /// A message from the user.
    User(UserInput),
    /// Notices of background commands that ended.
    Continuation,
}

/// The user's message is in: the heartbeat's idle gate opens, a new chain of continuations
/// may begin, an unnamed conversation is named after it. Returns the lane to start a turn
/// in (marked busy) with the message, or `None` when the message queued behind the
/// running turn or could not be taken.
pub(super) fn user_message(
    conversations: &Conversations,
    base: &Base,
    life: &Life,
    heartbeat: &crate::heartbeat::Heartbeat,
    session_id: &str,
    input: UserInput,
) -> Option<(Arc<Lane>, UserInput)> {
    if life.shutdown.is_cancelled() {
        base.report(
            ErrorKind::InvalidOp,
            "Vigil is shutting down; the message was not sent.",
        );
        return None;
    }
    // The user is here: the heartbeat's idle gate opens.
    heartbeat.user_active();
    match conversations.meta.load(session_id) {
        Err(e) => {
            base.report(ErrorKind::Session, e.to_string());
            return None;
        }
        Ok(loaded) => {
            // A metadata file that fell back to its backup says so.
            for warning in loaded.warnings {
                base.report(ErrorKind::Storage, warning);
            }
            // The user spoke: a new chain of continuations may begin.
            if loaded.meta.continuations > 0 || loaded.meta.stopped_at_limit {
                let done = conversations
                    .meta
                    .update_atomic(session_id, |m| {
                        m.continuations = 0;
                        m.stopped_at_limit = false;
                    })
                    .map(|_| ());
                sessions_changed(conversations, base, done);
            }
            // A conversation is named after its first message until the user names it.
            if DEFAULT_TITLES.contains(&loaded.meta.title.as_str()) {
                let title = match input.text.trim() {
                    "" if !input.images.is_empty() => "Image".to_string(),
                    text => title_from(text),
                };
                let done = conversations.meta.rename(session_id, &title).map(|_| ());
                sessions_changed(conversations, base, done);
            }
        }
    }
    let lane = conversations.lanes.lane(session_id);
    {
        let mut state = lane.lock();
        if state.busy {
            let text = input.text.clone();
            state.queue.push(input);
            drop(state);
            let emitter = base.emitter.for_session(session_id, Scope::Primary);
            emitter.emit(Source::User, Event::MessageQueued { text });
            return None;
        }
        state.busy = true;
        state.scope = Some(Scope::Primary);
        state.cancel = life.shutdown.child_token();
    }
    Some((lane, input))
}

/// Takes `session_id`'s lane for a continuation if it is free (marked busy); `None`: the
/// running turn takes the notices in at its next step, or right after it.
pub(super) fn take_for_continuation(conversations: &Conversations, life: &Life, session_id: &str) -> Option<Arc<Lane>> {
    let lane = conversations.lanes.lane(session_id);
    {
        let mut state = lane.lock();
        if state.busy {
            return None;
        }
        state.busy = true;
        state.scope = Some(Scope::Primary);
        state.cancel = life.shutdown.child_token();
    }
    Some(lane)
}

/// A bug ended a turn by panicking: the user is told (and the window stops showing it
/// as running); every message it saved is on disk, since each is appended as it ends.
pub(super) fn turn_panicked(emitter: &Emitter, session_id: &str, run_id: &str, panic: &(dyn std::any::Any + Send)) {
    let why = crate::tools::panic_text(panic);
    tracing::error!(session = session_id, "a turn panicked: {why}");
    let emitter = emitter.for_run(session_id, Scope::Primary, run_id);
    crate::run::start::panicked(&emitter, &why);
}

/// Decides what follows a turn: messages that arrived too late for it start the next
/// turn, unless the user pressed Stop: then they are saved (never lost) but not answered.
/// Without messages, notices that arrived too late start a continuation, if the turn
/// `went_well` (a failing provider must not be retried in a loop).
pub(super) fn after_turn(
    conversations: &Conversations,
    base: &Base,
    life: &Life,
    session_id: &str,
    lane: &Lane,
    went_well: bool,
) -> Option<Input> {
    let mut state = lane.lock();
    let queued = std::mem::take(&mut state.queue);
    if queued.is_empty() {
        let notices = !conversations.system_events.peek(session_id).is_empty();
        if went_well && notices && !state.cancel.is_cancelled() && !life.shutdown.is_cancelled() {
            state.cancel = life.shutdown.child_token();
            return Some(Input::Continuation);
        }
        state.busy = false;
        return None;
    }
    if !state.cancel.is_cancelled() {
        state.cancel = life.shutdown.child_token();
        let texts: Vec<&str> = queued.iter().map(|q| q.text.as_str()).collect();
        let joined = UserInput {
            text: texts.join("\n\n"),
            images: queued.iter().flat_map(|q| q.images.clone()).collect(),
        };
        return Some(Input::User(joined));
    }
    // Saved while the lane is still busy, so no new turn can interleave with them.
    let emitter = base.emitter.for_session(session_id, Scope::Primary);
    for input in &queued {
        let mut message = Message::user_text(input.text.clone(), base.clock.now_ms());
        message.content.extend(input.images.iter().cloned());
        match conversations.store.append(session_id, &message) {
            Ok(()) => emitter.emit(Source::User, Event::MessageAppended { message }),
            Err(e) => base.report(ErrorKind::Storage, format!("Could not save a queued message: {e}")),
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
