//! # agent
//!
//! Owns one turn: the user's message goes into the transcript first (so it survives
//! whatever follows; it is synced while the first request is out, and shown as saved, with
//! anything of the reply, only once it is on disk: see [`saving`]), then the loop runs
//! model → tool calls → results → model until the model stops, the turn policy ends it, or
//! the user presses Stop. Every message — partial
//! replies of a stopped or failed round included — is saved before the next step, and the
//! history is repaired before each request so the provider never sees a broken chain.
//!
//! The tool calls of one response run in the model's order, except that calls which only
//! read may overlap: each call that may change something (every `exec` included) runs
//! alone, after the calls before it have finished, and the calls after it wait for it
//! (see [`calls`]). A turn makes at most `max_tool_rounds` model requests; the calls of the
//! last allowed response are answered "not run" instead of run ([`policy`]), so a tool
//! runs only when a request will carry its result to the model, and the transcript's chain
//! of tool uses and results stays whole. A request the model's context window cannot hold
//! is made smaller and sent again as long as it can be — older messages summarised, then
//! the largest tool results cut — and otherwise ends the turn with an error that says so
//! ([`overflow`]).
//!
//! Must never: lose a message the user sent, or show the UI a reply that is not saved.

mod calls;
mod compact;
mod context;
mod effects;
mod images;
mod overflow;
mod policy;
mod saving;
mod updates;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use vigil_protocol::{ContentBlock, ErrorKind, Event, Message, MessageKind, Role, Source, StopReason, Usage};

use crate::clock::Clock;
use crate::events::Emitter;
use crate::provider::{CacheLife, ChatRequest, Completion, ModelClient, ProviderError, StreamEvent};
use crate::session::SessionStore;
use crate::tools::ToolRegistry;
use crate::workspace::Workspace;

pub use compact::{estimate_view, request_view, SUMMARY_HEADING};
pub use effects::{EffectWatch, Effects};
use overflow::Overflow;
pub use policy::AgentConfig;
use policy::Policy;
use saving::Saving;
pub use updates::{background_updates, BACKGROUND_UPDATES_HEADING};

/// What the user sent: the text, and the images sent with it (already stored with the
/// session, so each is an [`ContentBlock::Image`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UserInput {
    pub text: String,
    pub images: Vec<ContentBlock>,
}

impl From<String> for UserInput {
    fn from(text: String) -> Self {
        Self {
            text,
            images: Vec::new(),
        }
    }
}

impl From<&str> for UserInput {
    fn from(text: &str) -> Self {
        text.to_string().into()
    }
}

/// Where a running turn picks up messages the user sent while it works.
pub trait SteerQueue: Send + Sync {
    /// Takes every queued message, oldest first.
    fn drain(&self) -> Vec<UserInput>;

    /// Takes the notices of what happened meanwhile (a background command of this
    /// conversation ended), oldest first; they reach the model at the next step.
    fn drain_notices(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The text a steer message is sent as (seed 000 §8).
pub fn interrupt_text(text: &str) -> String {
    format!("[INTERRUPT] New message from user: {text}")
}

/// Everything one turn needs.
pub struct Turn<'a> {
    pub session_id: &'a str,
    /// Whose processes this turn's `exec` starts and its `process` tool sees, and so whose
    /// queue a backgrounded command's exit notice joins: the session itself, except for the
    /// heartbeat, which works for the primary conversation (see `runtime::process_owner`).
    pub process_owner: &'a str,
    pub store: &'a SessionStore,
    pub client: Option<ModelClient>,
    pub tools: ToolRegistry,
    pub workspace: Workspace,
    pub emitter: Emitter,
    pub clock: Arc<dyn Clock>,
    pub cancel: CancellationToken,
    pub steer: &'a dyn SteerQueue,
    pub config: AgentConfig,
    /// What the session type adds (its context strategy).
    pub extras: TurnExtras,
    /// The approval policy tools ask before running commands.
    pub gate: Option<Arc<dyn crate::tools::Gate>>,
    /// Vigil's data folder, which tools never touch (see `ToolContext::data_dir`).
    pub data_dir: Option<std::path::PathBuf>,
    /// The processes this turn's `exec` calls started (see `ToolContext::started`).
    pub started: crate::tools::StartedHere,
    /// How this turn's commands are sandboxed (see `ToolContext::sandbox`).
    pub sandbox: Option<crate::sandbox::TurnSandbox>,
}

/// The per-session-type part of a turn's context (seed 003 §4.4): stable additions go into
/// the system prompt, volatile ones into the user message's context block.
#[derive(Debug, Clone, Default)]
pub struct TurnExtras {
    /// Appended to the system prompt. Must be the same bytes turn after turn (the
    /// heartbeat section), or the provider's prompt cache is lost.
    pub system_section: Option<String>,
    /// Sections placed at the top of the user message's context block, in order
    /// (`## Background Updates`, `## System Events`, `HEARTBEAT.md`…).
    pub context_sections: Vec<String>,
    /// Send only about this many of the latest messages (the heartbeat's short history).
    pub history_limit: Option<usize>,
    /// The kind of the message that starts the turn (`SystemEvent` for a continuation).
    pub message_kind: MessageKind,
    /// The source of `turn_started`/`turn_finished` when it is not the user's turn
    /// (`background` for a continuation).
    pub source: Option<Source>,
    /// Told, and awaited, before each tool call that may change something, once its
    /// approval is given (a routine's job writes the first one into its claim, so a crash
    /// leaves the evidence): see [`effects`].
    pub effects: Option<Effects>,
    /// The daily reflection, not allowed to add routines: `routine_add` suggests
    /// ([`crate::tools::ToolContext::suggest_routines`]).
    pub suggest_routines: bool,
    /// A background run that comes back within the hour: its stable prefix is cached for an
    /// hour ([`crate::provider::CacheLife::Hour`]).
    pub cache_hour: bool,
    /// The routine whose job this turn is: its network grant applies to the turn's commands.
    pub routine: Option<String>,
}

/// How a turn ended, for the event and the runtime.
struct Finish {
    stop_reason: StopReason,
    detail: Option<String>,
}

impl Finish {
    fn because(stop_reason: StopReason) -> Self {
        Self {
            stop_reason,
            detail: None,
        }
    }
}

impl Turn<'_> {
    async fn append(&self, message: Message) -> bool {
        match self.store.append_async(self.session_id, &message).await {
            Ok(()) => {
                self.emitter.emit(Source::System, Event::MessageAppended { message });
                true
            }
            Err(e) => {
                self.not_saved(e);
                false
            }
        }
    }

    fn not_saved(&self, e: impl std::fmt::Display) {
        tracing::error!("{e}");
        self.error(ErrorKind::Storage, format!("Could not save the conversation: {e}"));
    }

    /// Waits for the user's message to be on disk (see [`saving`]) if it is still on its
    /// way; the turn ends if it could not be saved.
    async fn settle(&self, saving: &mut Option<Saving>) -> Result<(), Finish> {
        match saving.take() {
            Some(s) => s.finish().await.map_err(|e| {
                self.not_saved(e);
                Finish::because(StopReason::Error)
            }),
            None => Ok(()),
        }
    }

    fn error(&self, kind: ErrorKind, message: String) {
        self.emitter.emit(Source::System, Event::Error { kind, message });
    }

    fn assistant_message(&self, c: Completion, model: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: c.content,
            ts: self.clock.now_ms(),
            model: Some(c.model.unwrap_or_else(|| model.to_string())),
            usage: Some(c.usage),
            stop_reason: Some(c.stop_reason),
            kind: MessageKind::Plain,
        }
    }

    /// Runs the turn to its end; every outcome ends with `turn_finished`. Returns why it
    /// ended (`error` and `cancelled` mean the model did not finish).
    pub async fn run(self, input: impl Into<UserInput>) -> StopReason {
        let mut usage = Usage::default();
        let finish = self.run_inner(input.into(), &mut usage).await;
        self.emitter.emit(
            self.extras.source.unwrap_or(Source::Agent),
            Event::TurnFinished {
                stop_reason: finish.stop_reason,
                usage,
                detail: finish.detail,
            },
        );
        finish.stop_reason
    }

    async fn run_inner(&self, input: UserInput, usage: &mut Usage) -> Finish {
        let UserInput {
            text: user_text,
            images,
        } = input;
        let mut user = Message::user_text(user_text.clone(), self.clock.now_ms());
        user.content.extend(images);
        user.kind = self.extras.message_kind;
        user.content.insert(
            0,
            ContentBlock::Context {
                text: context::volatile_context(self.clock.now_ms(), &self.extras.context_sections),
            },
        );
        let started = self.extras.source.unwrap_or(Source::User);
        let Some(client) = self.client.clone() else {
            if !self.append(user).await {
                return Finish::because(StopReason::Error);
            }
            self.emitter.emit(started, Event::TurnStarted { user_text });
            self.error(
                ErrorKind::Config,
                "No provider is configured. Open Settings and choose a provider, model and API key.".into(),
            );
            return Finish::because(StopReason::Error);
        };
        // The first request goes out while the message is synced; it is reported saved, and
        // the turn started, once it is on disk.
        let mut saving = match self.store.append_unsynced(self.session_id, &user).await {
            Ok(unsynced) => Some(Saving::start(
                unsynced,
                self.emitter.clone(),
                vec![
                    (Source::System, Event::MessageAppended { message: user }),
                    (started, Event::TurnStarted { user_text }),
                ],
            )),
            Err(e) => {
                self.not_saved(e);
                return Finish::because(StopReason::Error);
            }
        };
        let mut policy = Policy::new(&self.config);
        let mut overflow = Overflow::default();
        loop {
            if let Some(detail) = policy.before_round() {
                if let Err(finish) = self.settle(&mut saving).await {
                    return finish;
                }
                return Finish {
                    stop_reason: StopReason::Policy,
                    detail: Some(detail),
                };
            }
            let completion = match self.request(&client, &mut overflow, &mut saving).await {
                Ok(c) => c,
                Err(finish) => return finish,
            };
            let calls: Vec<calls::Call> = completion
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
                    _ => None,
                })
                .collect();
            add_usage(usage, completion.usage);
            let stop = completion.stop_reason;
            if !self
                .append(self.assistant_message(completion, &client.config().model))
                .await
            {
                return Finish::because(StopReason::Error);
            }
            if !calls.is_empty() {
                // No request would carry these results: answer the calls without running them.
                let out_of_rounds = policy.last_round();
                let results = if out_of_rounds {
                    self.not_run(&calls)
                } else {
                    self.run_tools(&calls).await
                };
                let results: Vec<ContentBlock> = results.into_iter().flatten().collect();
                let failed: Vec<bool> = results
                    .iter()
                    .map(|r| matches!(r, ContentBlock::ToolResult { is_error: true, .. }))
                    .collect();
                let message = Message {
                    role: Role::ToolResult,
                    content: results,
                    ..Message::user_text("", self.clock.now_ms())
                };
                if !self.append(message).await {
                    return Finish::because(StopReason::Error);
                }
                if self.cancel.is_cancelled() {
                    return Finish::because(StopReason::Cancelled);
                }
                if out_of_rounds {
                    return Finish {
                        stop_reason: StopReason::Policy,
                        detail: Some(policy.limit_reason()),
                    };
                }
                if let Some(detail) = policy.after_tools(&calls, &failed) {
                    return Finish {
                        stop_reason: StopReason::Policy,
                        detail: Some(detail),
                    };
                }
            }
            // Messages the user sent meanwhile reach the model now, even after a final answer.
            let injected = self.inject_steer().await;
            if calls.is_empty() && !injected {
                return Finish::because(stop);
            }
        }
    }

    /// Appends notices that arrived meanwhile (one message) and queued user messages as
    /// `[INTERRUPT] …`; true if there were any.
    async fn inject_steer(&self) -> bool {
        let notices = self.steer.drain_notices();
        if !notices.is_empty() {
            let text = notices
                .iter()
                .map(|n| format!("System: {n}"))
                .collect::<Vec<_>>()
                .join("\n");
            let mut m = Message::user_text(text, self.clock.now_ms());
            m.kind = MessageKind::SystemEvent;
            self.append(m).await;
        }
        let queued = self.steer.drain();
        if queued.is_empty() {
            return !notices.is_empty();
        }
        let count = queued.len() as u32;
        for input in queued {
            let mut m = Message::user_text(interrupt_text(&input.text), self.clock.now_ms());
            m.content.extend(input.images);
            m.kind = MessageKind::Interrupt;
            self.append(m).await;
        }
        self.emitter.emit(Source::User, Event::QueueConsumed { count });
        true
    }

    /// One model request over the repaired, compacted history, made smaller and sent again
    /// while the model's window cannot hold it and it can be (see [`overflow`]). Whatever the
    /// outcome, the user's message is saved (or the turn failed) when it returns.
    async fn request(
        &self,
        client: &ModelClient,
        overflow: &mut Overflow,
        saving: &mut Option<Saving>,
    ) -> Result<Completion, Finish> {
        let mut system = context::system_prompt(
            &self.workspace.prompt_files(),
            &self.workspace.root().display().to_string(),
        );
        if let Some(section) = &self.extras.system_section {
            system.push_str("\n\n");
            system.push_str(section);
        }
        let window = self.config.context_window;
        let loaded = self.store.load_shared(self.session_id);
        let mut transcript = match loaded {
            Ok(t) => t,
            Err(e) => {
                self.settle(saving).await?;
                self.error(ErrorKind::Storage, e.to_string());
                return Err(Finish::because(StopReason::Error));
            }
        };
        if estimate_view(&system, &transcript) as f64 > window as f64 * self.config.compact_threshold {
            self.settle(saving).await?;
            transcript = self.compact(client, &system, transcript, false).await?;
        }
        loop {
            let mut view = request_view(&transcript);
            if let Some(limit) = self.extras.history_limit {
                view = context::latest(view, limit);
            }
            let (view, notes) = crate::session::repair_tool_chain(view);
            for note in notes {
                tracing::warn!(session = self.session_id, "repaired history: {note}");
            }
            let view = overflow.apply(view);
            let request = ChatRequest {
                system: system.clone(),
                images: images::request_images(self.store, self.session_id, &view).await,
                messages: view,
                tools: self.tools.specs(),
                cache: if self.extras.cache_hour {
                    CacheLife::Hour
                } else {
                    CacheLife::Minutes
                },
            };
            let emitter = self.emitter.clone();
            let gate = saving.as_ref().map(Saving::gate);
            let mut on_event = move |ev: StreamEvent| {
                let event = match ev {
                    StreamEvent::TextDelta(text) => Event::TextDelta { text },
                    StreamEvent::ReasoningDelta(text) => Event::ReasoningDelta { text },
                    StreamEvent::Retrying { attempt, delay, error } => Event::Retrying {
                        attempt,
                        delay_ms: delay.as_millis() as u64,
                        reason: error.to_string(),
                    },
                };
                match &gate {
                    Some(gate) => gate.emit(Source::Provider, event),
                    None => emitter.emit(Source::Provider, event),
                }
            };
            let streamed = match saving.as_ref() {
                // A message the disk refused ends the turn now, not after the whole reply.
                Some(s) => tokio::select! {
                    streamed = client.stream(&request, &self.cancel, &mut on_event) => Some(streamed),
                    () = s.failed() => None,
                },
                None => Some(client.stream(&request, &self.cancel, &mut on_event).await),
            };
            self.settle(saving).await?;
            let Some(streamed) = streamed else {
                return Err(Finish::because(StopReason::Error));
            };
            match streamed {
                Ok(done) => {
                    overflow.tries = 0;
                    return Ok(done);
                }
                Err(f) if matches!(f.error, ProviderError::ContextTooLong { .. }) => {
                    transcript = self
                        .recover(client, &system, transcript, &request.messages, overflow, f)
                        .await?;
                }
                Err(failure) => {
                    let stop = failure.partial.stop_reason;
                    if !failure.partial.content.is_empty() {
                        self.append(self.assistant_message(failure.partial, &client.config().model))
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
                    return Err(Finish::because(stop));
                }
            }
        }
    }

    fn load(&self) -> Result<Arc<Vec<Message>>, Finish> {
        self.store.load_shared(self.session_id).map_err(|e| {
            self.error(ErrorKind::Storage, e.to_string());
            Finish::because(StopReason::Error)
        })
    }

    /// Summarises older messages and appends the summary; returns the new transcript.
    async fn compact(
        &self,
        client: &ModelClient,
        system: &str,
        transcript: Arc<Vec<Message>>,
        force: bool,
    ) -> Result<Arc<Vec<Message>>, Finish> {
        let window = self.config.context_window;
        let mut keep = (window as f64 * self.config.keep_ratio) as u64;
        if force {
            keep /= 2;
        }
        let Some(cut) = compact::choose_cut(&transcript, keep) else {
            return Ok(transcript);
        };
        let before = estimate_view(system, &transcript);
        let old: Vec<Message> = compact::view_indices(&transcript)
            .into_iter()
            .filter(|&i| i < cut || matches!(transcript[i].kind, MessageKind::Summary { .. }))
            .map(|i| transcript[i].clone())
            .collect();
        let max_chars = (window as usize).saturating_mul(2).max(8_000);
        match compact::summarise(client, &old, cut, max_chars, self.clock.now_ms(), &self.cancel).await {
            Ok(summary) => {
                if !self.append(summary).await {
                    return Err(Finish::because(StopReason::Error));
                }
                let transcript = self.load()?;
                let after = estimate_view(system, &transcript);
                self.emitter.emit(
                    Source::Agent,
                    Event::Compacted {
                        summarized_messages: old.len() as u32,
                        tokens_before: before,
                        tokens_after: after,
                    },
                );
                Ok(transcript)
            }
            Err(ProviderError::Cancelled) => Err(Finish::because(StopReason::Cancelled)),
            Err(e) => {
                // Without a summary the request may still fit; the provider has the last word.
                tracing::warn!("compaction failed: {e}");
                self.error(e.kind(), format!("Could not summarise older messages: {e}"));
                Ok(transcript)
            }
        }
    }
}

fn add_usage(total: &mut Usage, add: Usage) {
    *total += add;
}
