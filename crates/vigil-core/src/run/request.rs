//! What a run is ([`RunRequest`]), how it ended ([`RunResult`]), and the one seam through which
//! the heartbeat and the scheduler ask for one ([`Runner`]).
//!
//! Owns: the shape of a run, not its life (that is [`super::start`]). Must never: carry
//! what a run may do only implicitly: who is watching ([`Attendance`]) and the kind of work
//! ([`RunKind`]) are fields, and the gate and the sandbox are chosen from them.

use tokio_util::sync::CancellationToken;
use vigil_protocol::{ErrorKind, Message, Role, Scope, StopReason, Usage};

use crate::agent::{TurnExtras, UserInput};

/// Who can answer a run's approval questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attendance {
    /// The user, at the screen: ask and wait.
    User,
    /// Nobody watches, but the run may ask (card, tray, notification) and wait up to the
    /// approval timeout: continuations, routine jobs, woken heartbeats.
    Away,
    /// Nobody, and nobody is asked: the heartbeat's interval polls.
    Nobody,
}

/// The kind of work a run does: where it runs, who pays, and who holds its lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunKind {
    /// The user's message in a conversation.
    User,
    /// A conversation's agent carrying on after its background commands ended.
    Continuation,
    /// A heartbeat run (an interval poll, a wake, due inline routines).
    Heartbeat,
    /// The daily reflection, in the heartbeat's session.
    Reflection,
    /// A routine's isolated job.
    Job { routine_id: String },
    /// A job carrying on after its background commands ended.
    JobContinuation,
    /// A routine's inline fire: a turn in the conversation that made the routine, which
    /// it takes like a background run (nobody steers it; it waits for a free lane).
    Routine { routine_id: String },
}

impl RunKind {
    pub fn scope(&self) -> Scope {
        match self {
            RunKind::User | RunKind::Continuation | RunKind::Routine { .. } => Scope::Primary,
            RunKind::Heartbeat | RunKind::Reflection => Scope::Heartbeat,
            RunKind::Job { .. } | RunKind::JobContinuation => Scope::Job,
        }
    }

    /// A conversation's runs: the lane is taken (and what queued in it handled) by the
    /// conversation; they take in the mailbox and the notices before the turn.
    pub fn in_conversation(&self) -> bool {
        matches!(self, RunKind::User | RunKind::Continuation)
    }

    /// Charged to the daily budget of background work: everything the user did not ask for
    /// by typing.
    pub fn is_background(&self) -> bool {
        !matches!(self, RunKind::User)
    }
}

/// One run, described by whoever starts it.
#[derive(Debug, Clone)]
pub struct RunRequest {
    pub session_id: String,
    pub run_id: String,
    pub kind: RunKind,
    /// The message the turn starts with.
    pub input: UserInput,
    pub attendance: Attendance,
    /// The prompt's additions and the turn's options (evidence, system section, history limit…).
    pub extras: TurnExtras,
    /// Overrides the configured model.
    pub model: Option<String>,
    /// Fired at the run's deadline: the turn stops, its questions expire, the commands it
    /// started are killed. Stop and shutdown stop every run besides.
    pub deadline: Option<CancellationToken>,
}

impl RunRequest {
    /// A run of `kind` in `session_id` starting with `input`, with a fresh run id.
    pub fn new(
        session_id: impl Into<String>,
        kind: RunKind,
        input: impl Into<UserInput>,
        attendance: Attendance,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            run_id: uuid::Uuid::new_v4().to_string(),
            extras: TurnExtras {
                routine: match &kind {
                    RunKind::Job { routine_id } | RunKind::Routine { routine_id } => Some(routine_id.clone()),
                    _ => None,
                },
                ..TurnExtras::default()
            },
            kind,
            input: input.into(),
            attendance,
            model: None,
            deadline: None,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    pub stop_reason: StopReason,
    /// The last error the run reported.
    pub error: Option<String>,
    /// That error's kind: a provider error a later try may fix is retried.
    pub error_kind: Option<ErrorKind>,
    /// The session's lane was taken (a run already holds it): nothing ran.
    pub locked: bool,
    /// The tokens the run's model calls used.
    pub usage: Option<Usage>,
    /// The last assistant message with text the run added (not looked up for the user's
    /// turns: the window shows them).
    pub reply: Option<Message>,
}

impl RunResult {
    /// A run that ended with `stop_reason` and no error.
    pub fn ended(stop_reason: StopReason) -> Self {
        Self {
            stop_reason,
            error: None,
            error_kind: None,
            locked: false,
            usage: None,
            reply: None,
        }
    }

    /// A run that did not happen, and why.
    pub fn failed(error: impl Into<String>) -> Self {
        Self {
            error: Some(error.into()),
            ..Self::ended(StopReason::Error)
        }
    }

    /// The reply's text; empty without one.
    pub fn reply_text(&self) -> String {
        self.reply.as_ref().map(Message::text).unwrap_or_default()
    }

    /// Whether the run got to the end of its turn (not an error, not stopped).
    pub fn went_well(&self) -> bool {
        !matches!(self.stop_reason, StopReason::Error | StopReason::Cancelled)
    }
}

/// The last assistant message with text among `messages` after the first `before`.
pub fn last_reply(messages: Vec<Message>, before: usize) -> Option<Message> {
    messages
        .into_iter()
        .skip(before)
        .filter(|m| m.role == Role::Assistant)
        .rfind(|m| !m.text().trim().is_empty())
}

/// What starts runs for the heartbeat and the scheduler (the runtime; fakes in their tests).
#[async_trait::async_trait]
pub trait Runner: Send + Sync + 'static {
    async fn run(&self, req: RunRequest) -> RunResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_is_the_last_assistant_text_the_run_added() {
        let said = |text: &str| Message {
            role: Role::Assistant,
            ..Message::user_text(text, 0)
        };
        let msgs = vec![
            said("old reply"),
            Message::user_text("poll", 0),
            said("new reply"),
            said(" "),
        ];
        assert_eq!(last_reply(msgs.clone(), 1).map(|m| m.text()), Some("new reply".into()));
        assert_eq!(last_reply(msgs, 3), None, "nothing of the run's own");
    }
}
