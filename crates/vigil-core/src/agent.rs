//! # agent
//!
//! Owns one turn: the user's message goes into the transcript first (so it survives
//! whatever follows), the model's reply streams out as events, and the reply — whole, or the
//! partial text of a stopped or failed reply — goes into the transcript.
//!
//! The tool loop, steering and compaction build on [`run_turn`]; it is the seam for them.
//!
//! Must never: lose a message the user sent, or send a reply to the UI that is not saved.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use vigil_protocol::{ErrorKind, Event, Message, Role, Source, StopReason, Usage};

use crate::clock::Clock;
use crate::events::Emitter;
use crate::provider::{ChatRequest, Completion, ModelClient, StreamEvent};
use crate::session::{repair_tool_chain, SessionStore};

/// The stable part of the system prompt; volatile context goes into messages, not here,
/// so provider prompt caches keep hitting.
pub const SYSTEM_PROMPT: &str =
    "You are Vigil, a desktop AI agent working for one user on their own computer. \
Answer clearly and concisely; use Markdown where it helps.";

/// Everything one turn needs.
pub struct Turn<'a> {
    pub session_id: &'a str,
    pub store: &'a SessionStore,
    pub client: Option<ModelClient>,
    pub emitter: Emitter,
    pub clock: Arc<dyn Clock>,
    pub cancel: CancellationToken,
}

impl Turn<'_> {
    async fn append(&self, message: Message) -> bool {
        match self.store.append_async(self.session_id, &message).await {
            Ok(()) => {
                self.emitter
                    .emit(Source::System, Event::MessageAppended { message });
                true
            }
            Err(e) => {
                tracing::error!("{e}");
                self.emitter.emit(
                    Source::System,
                    Event::Error {
                        kind: ErrorKind::Storage,
                        message: format!("Could not save the conversation: {e}"),
                    },
                );
                false
            }
        }
    }

    fn finish(&self, stop_reason: StopReason, usage: Usage) {
        self.emitter
            .emit(Source::Agent, Event::TurnFinished { stop_reason, usage });
    }

    fn assistant_message(&self, c: Completion, model: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: c.content,
            ts: self.clock.now_ms(),
            model: Some(c.model.unwrap_or_else(|| model.to_string())),
            usage: Some(c.usage),
            stop_reason: Some(c.stop_reason),
        }
    }

    /// Runs the turn to its end; every outcome ends with `turn_finished`.
    pub async fn run(self, user_text: String) {
        let user = Message::user_text(user_text.clone(), self.clock.now_ms());
        if !self.append(user).await {
            return self.finish(StopReason::Error, Usage::default());
        }
        self.emitter
            .emit(Source::User, Event::TurnStarted { user_text });

        let Some(client) = self.client.clone() else {
            self.emitter.emit(
                Source::System,
                Event::Error {
                    kind: ErrorKind::Config,
                    message: "No provider is configured. Open Settings and choose a provider, model and API key.".into(),
                },
            );
            return self.finish(StopReason::Error, Usage::default());
        };
        let history = match self.store.load(self.session_id) {
            Ok(loaded) => {
                // A crash or Stop mid tool call leaves calls without results; the API would
                // reject the whole request.
                let (messages, notes) = repair_tool_chain(&loaded.messages);
                for note in notes {
                    tracing::warn!("session {}: {note}", self.session_id);
                }
                messages
            }
            Err(e) => {
                self.emitter.emit(
                    Source::System,
                    Event::Error {
                        kind: ErrorKind::Storage,
                        message: e.to_string(),
                    },
                );
                return self.finish(StopReason::Error, Usage::default());
            }
        };
        let request = ChatRequest {
            system: SYSTEM_PROMPT.to_string(),
            messages: history,
            tools: vec![],
        };
        let emitter = self.emitter.clone();
        let mut on_event = move |ev: StreamEvent| {
            let event = match ev {
                StreamEvent::TextDelta(text) => Event::TextDelta { text },
                StreamEvent::ReasoningDelta(text) => Event::ReasoningDelta { text },
                StreamEvent::Retrying {
                    attempt,
                    delay,
                    error,
                } => Event::Retrying {
                    attempt,
                    delay_ms: delay.as_millis() as u64,
                    reason: error.to_string(),
                },
            };
            emitter.emit(Source::Provider, event);
        };
        let model = client.config().model.clone();
        match client.stream(&request, &self.cancel, &mut on_event).await {
            Ok(done) => {
                let (stop, usage) = (done.stop_reason, done.usage);
                self.append(self.assistant_message(done, &model)).await;
                self.finish(stop, usage);
            }
            Err(failure) => {
                let stop = failure.partial.stop_reason;
                let usage = failure.partial.usage;
                if !failure.partial.content.is_empty() {
                    self.append(self.assistant_message(failure.partial, &model))
                        .await;
                }
                if stop != StopReason::Cancelled {
                    self.emitter.emit(
                        Source::Provider,
                        Event::Error {
                            kind: failure.error.kind(),
                            message: failure.error.to_string(),
                        },
                    );
                }
                self.finish(stop, usage);
            }
        }
    }
}
