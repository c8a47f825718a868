//! # channels
//!
//! Owns reaching the user's phone: pushes of events (an approval waiting, a conversation's
//! answer, a routine's result…) to the user's own ntfy server and Telegram bot, answers to
//! approvals from them, and a two-way chat with a conversation over Telegram. Nothing
//! listens on a port: ntfy answers come over its JSON stream, Telegram's over a long poll.
//!
//! The rest of Vigil sees a narrow interface: [`Channels::tap`] wraps the event sink (the
//! channels read the events on their way out), [`Channels::start`] takes a [`ChannelHost`]
//! (answer an approval, send a user message, say whether the user is away), and
//! [`Channels::op`] takes Settings → Away's ops. The desktop card stays the truth: an answer
//! from a phone goes through the same [`crate::approval::Approvals::answer`] as the card's
//! (so the card disappears), and an approval answered anywhere revokes its phone token (so
//! the phone's buttons say "already answered").
//!
//! ## Layout
//!
//! - [`push`] — the push an event makes, and whether its kind goes now.
//! - [`outbox`] — each channel's persisted, bounded, coalescing queue.
//! - [`tokens`] — one-time approval tokens, Telegram pairing codes.
//! - [`keys`] — the channel tokens (environment or keyring, never a file), redaction.
//! - [`ntfy`] / [`telegram`] — the two HTTP clients.
//! - [`chat`] — a reply streamed to a chat as edits.
//! - `run` — the loops: routing events, sending, listening for answers, flushing chats.
//! - `host` — [`ChannelHost`] for the [`crate::Runtime`].
//!
//! Must never: let a phone do more than Allow once or Deny one approval it was asked about,
//! take an answer without its one-time token from the paired chat or the reply topic, or
//! put a channel token in a file, a log, an error shown, or a child's environment.

pub mod chat;
pub mod keys;
pub mod ntfy;
pub mod outbox;
pub mod push;
mod run;
pub mod telegram;
pub mod tokens;

pub use crate::children::CHANNEL_TOKEN_VARS as TOKEN_VARS;
pub use keys::Keys;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch, Notify};
use tokio_util::sync::CancellationToken;
use vigil_protocol::{
    ApprovalDecision, ChannelName, ChannelOp, ChannelStatus, ChannelView, ChannelsSettings, ChannelsView, Event,
    EventEnvelope, PairingView, Scope, Source,
};

use crate::clock::Clock;
use crate::events::EventSink;

/// What the channels ask of the rest of Vigil.
pub trait ChannelHost: Send + Sync + 'static {
    /// Answers a waiting approval as the desktop card would; false if nothing waits.
    fn answer(&self, approval_id: &str, decision: ApprovalDecision) -> bool;
    /// A message from the phone, as if typed in `session_id`: a user turn, the same gate.
    fn user_message(&self, session_id: &str, text: String);
    /// Whether the user is away; `None`: it cannot be read.
    fn away(&self) -> Option<bool>;
}

/// What Settings → Away says each channel sends.
const NTFY_SENDS: &str = "A title and one short line per event (the command an approval asks about, the first line of an answer), and Allow once / Deny buttons only when both topics refuse readers without the access token. Never file contents or keys.";
const TELEGRAM_SENDS: &str = "The same pushes with Allow once / Deny buttons, and the replies of the conversation you write to from the paired chat.";

/// Non-secret state kept in `<data dir>/channels/state.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Stored {
    settings: Option<ChannelsSettings>,
    /// Generated ntfy topics (128 random bits each) when the settings name none.
    topic: Option<String>,
    reply_topic: Option<String>,
    /// The chat paired by code.
    paired_chat: Option<i64>,
    /// The next Telegram update to read, so a restart does not read a message twice.
    offset: i64,
}

/// One channel's connection, for the view.
#[derive(Debug, Clone)]
struct Link {
    status: ChannelStatus,
    sent: u64,
    last_error: Option<String>,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            status: ChannelStatus::Connecting,
            sent: 0,
            last_error: None,
        }
    }
}

#[derive(Default)]
struct State {
    settings: ChannelsSettings,
    stored: Stored,
    tokens: tokens::Tokens,
    pairing: Option<tokens::Pairing>,
    links: [Link; 2],
    /// The ntfy topics refuse anonymous readers: its pushes may carry buttons (`None`: not
    /// asked since the settings last changed).
    ntfy_answers: Option<bool>,
    refused: u64,
    ignored: u64,
    /// Conversation → the chat whose message the turn running in it answers.
    phone_turns: HashMap<String, i64>,
    /// Conversation → the chat whose message waits for a turn to take it: the next turn
    /// that starts, or the running one when the message steers it.
    phone_sent: HashMap<String, i64>,
    /// Conversation → the reply streaming to its chat (an older one still being flushed
    /// when a new one starts: under `<conversation>\0<n>`).
    streams: HashMap<String, chat::Stream>,
    stream_seq: u64,
    /// Approval → its Telegram message `(chat, message id, text)`, to edit when it ends.
    asked: HashMap<String, (i64, i64, String)>,
    /// Tests and runners without presence: `Some` overrides the host.
    away_override: Option<bool>,
    /// `https://t.me/<bot>`, the click of ntfy pushes while a bot is paired; asked once
    /// per settings change.
    bot_link: Option<String>,
    bot_link_asked: bool,
}

/// An event for the router, with the user's presence when it happened (`None`: not known).
pub(super) type Happened = (EventEnvelope, Option<bool>);

struct Inner {
    dir: PathBuf,
    clock: Arc<dyn Clock>,
    /// `std` lock: replaced by tests, read per request.
    keys: Mutex<Keys>,
    http: reqwest::Client,
    /// `std` lock: never held across an await.
    state: Mutex<State>,
    /// `[ntfy, telegram]`; `std` locks, a save under them is one small atomic write.
    boxes: [Mutex<outbox::Outbox>; 2],
    wake: [Notify; 2],
    /// A channel's server answers again after failing (its stream or long poll reopened):
    /// the sender retries now instead of waiting out its backoff.
    back: [Notify; 2],
    /// Bumped when settings or tokens change: the loops reconnect.
    generation: watch::Sender<u64>,
    /// Events for the router, with the user's presence when each happened.
    events: mpsc::UnboundedSender<Happened>,
    events_rx: Mutex<Option<mpsc::UnboundedReceiver<Happened>>>,
    /// Cleared when the channels stop, which ends the host ↔ sink cycle.
    host: Mutex<Option<Arc<dyn ChannelHost>>>,
    /// Where `channels_changed` goes: the sink the tap wraps.
    out: OnceLock<Arc<dyn EventSink>>,
    stop: CancellationToken,
    /// Between two edits of a streamed reply (Telegram allows about one a second per chat).
    edit_every: Duration,
}

/// The channels; cheap to clone.
#[derive(Clone)]
pub struct Channels {
    inner: Arc<Inner>,
}

fn slot(c: ChannelName) -> usize {
    match c {
        ChannelName::Ntfy => 0,
        ChannelName::Telegram => 1,
    }
}

impl Channels {
    /// Opens the channels' state in `data_dir`; nothing is sent before [`Self::start`].
    pub fn open(data_dir: &Path, clock: Arc<dyn Clock>, keys: Keys) -> Self {
        let dir = data_dir.join("channels");
        let stored: Stored = std::fs::read(dir.join("state.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let (events, rx) = mpsc::unbounded_channel();
        let state = State {
            settings: stored.settings.clone().unwrap_or_default(),
            stored,
            ..Default::default()
        };
        let inner = Inner {
            boxes: [
                Mutex::new(outbox::Outbox::open(dir.join("outbox-ntfy.json"))),
                Mutex::new(outbox::Outbox::open(dir.join("outbox-telegram.json"))),
            ],
            dir,
            clock,
            keys: Mutex::new(keys),
            http: reqwest::Client::new(),
            state: Mutex::new(state),
            wake: [Notify::new(), Notify::new()],
            back: [Notify::new(), Notify::new()],
            generation: watch::channel(0).0,
            events,
            events_rx: Mutex::new(Some(rx)),
            host: Mutex::default(),
            out: OnceLock::new(),
            stop: CancellationToken::new(),
            edit_every: Duration::from_secs(1),
        };
        Channels { inner: Arc::new(inner) }
    }

    /// `sink` with the channels reading every event on its way through.
    pub fn tap(&self, sink: Arc<dyn EventSink>) -> Arc<dyn EventSink> {
        let _ = self.inner.out.set(sink.clone());
        Arc::new(Tap {
            channels: self.clone(),
            inner: sink,
        })
    }

    /// Starts sending and listening; stops when `stop` is cancelled.
    pub fn start(&self, host: Arc<dyn ChannelHost>, stop: CancellationToken) {
        let Some(rx) = self.inner.events_rx.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        *self.inner.host.lock().unwrap_or_else(|e| e.into_inner()) = Some(host);
        let inner = self.inner.clone();
        tokio::spawn(async move {
            stop.cancelled().await;
            inner.stop.cancel();
            inner.host.lock().unwrap_or_else(|e| e.into_inner()).take();
        });
        run::spawn_all(self.inner.clone(), rx);
    }

    /// Replaces where tokens come from (tests; a runner that has them otherwise).
    pub fn use_keys(&self, keys: Keys) {
        *self.inner.keys.lock().unwrap_or_else(|e| e.into_inner()) = keys;
        self.inner.changed();
    }

    /// `Some(away)`: take this as the user's presence instead of the host's (tests, and
    /// runners with no desktop session).
    pub fn set_away(&self, away: Option<bool>) {
        self.inner.state().away_override = away;
    }

    /// Replaces the settings (the headless runner's config file; Settings → Away's `set`).
    pub fn set_settings(&self, settings: ChannelsSettings) {
        {
            let mut state = self.inner.state();
            state.settings = settings.clone();
            state.stored.settings = Some(settings);
        }
        self.inner.save();
        self.inner.changed();
        self.inner.emit_view();
    }

    /// Takes one of Settings → Away's ops; answers with `channels_changed`.
    pub fn op(&self, op: ChannelOp) {
        match op {
            ChannelOp::Get => {}
            ChannelOp::Set { settings } => return self.set_settings(settings),
            ChannelOp::SetToken { channel, token } => {
                let keys = self.inner.keys();
                let done = keys.set(channel, &token);
                let mut state = self.inner.state();
                state.links[slot(channel)].last_error = done.err();
                drop(state);
                self.inner.changed();
            }
            ChannelOp::Pair => {
                let now = self.inner.clock.now_ms();
                self.inner.state().pairing = Some(tokens::Pairing::new(now));
            }
            ChannelOp::Unpair => {
                {
                    let mut state = self.inner.state();
                    state.stored.paired_chat = None;
                    if let Some(t) = state.settings.telegram.as_mut() {
                        t.chat_id = None;
                    }
                    state.stored.settings = Some(state.settings.clone());
                }
                self.inner.save();
                self.inner.changed();
            }
        }
        self.inner.emit_view();
    }

    /// Settings → Away and the Health rows.
    pub fn view(&self) -> ChannelsView {
        self.inner.view()
    }
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn keys(&self) -> Keys {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn host(&self) -> Option<Arc<dyn ChannelHost>> {
        self.host.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn changed(&self) {
        {
            let mut state = self.state();
            state.ntfy_answers = None;
            state.bot_link_asked = false;
        }
        self.generation.send_modify(|g| *g += 1);
        for w in &self.wake {
            w.notify_one();
        }
    }

    fn save(&self) {
        let stored = self.state().stored.clone();
        let Ok(bytes) = serde_json::to_vec_pretty(&stored) else {
            return;
        };
        let _ = crate::durable::create_private_dir_all(&self.dir);
        if let Err(e) = crate::durable::write_atomic(&self.dir.join("state.json"), &bytes) {
            tracing::warn!("could not save the channels' state: {e}");
        }
    }

    /// The user is away: the override, else the host; `None`: cannot tell.
    fn away(&self) -> Option<bool> {
        if let Some(a) = self.state().away_override {
            return Some(a);
        }
        self.host().and_then(|h| h.away())
    }

    /// The chat answers and pushes go to: named in the settings, else paired by code.
    fn paired_chat(state: &State) -> Option<i64> {
        state
            .settings
            .telegram
            .as_ref()
            .and_then(|t| t.chat_id)
            .or(state.stored.paired_chat)
    }

    /// The ntfy client, generating the topics the settings leave out (saved, 128 bits each).
    fn ntfy(&self) -> Option<ntfy::Ntfy> {
        let (n, topic, reply_topic, generated) = {
            let mut state = self.state();
            let n = state.settings.ntfy.clone()?;
            let mut generated = false;
            let mut pick = |named: &Option<String>, kept: &mut Option<String>| -> String {
                if let Some(t) = named.clone().filter(|t| !t.trim().is_empty()) {
                    return t;
                }
                kept.get_or_insert_with(|| {
                    generated = true;
                    format!("vigil-{}", tokens::random_hex(tokens::TOKEN_BITS / 8))
                })
                .clone()
            };
            let stored = &mut state.stored;
            let topic = pick(&n.topic, &mut stored.topic);
            let reply_topic = pick(&n.reply_topic, &mut stored.reply_topic);
            (n, topic, reply_topic, generated)
        };
        if generated {
            self.save();
        }
        Some(ntfy::Ntfy {
            http: self.http.clone(),
            server: n.server.trim_end_matches('/').to_string(),
            topic,
            reply_topic,
            token: self.keys().get(ChannelName::Ntfy),
        })
    }

    /// Whether ntfy answers count: a token is set and both topics refuse anonymous readers
    /// (asked once per settings change).
    async fn ntfy_private(&self, n: &ntfy::Ntfy) -> bool {
        if let Some(known) = self.state().ntfy_answers {
            return known;
        }
        let private = n.token.is_some() && n.private_topics().await;
        self.state().ntfy_answers = Some(private);
        private
    }

    fn telegram(&self) -> Option<telegram::Telegram> {
        let api_base = self.state().settings.telegram.as_ref()?.api_base.clone();
        Some(telegram::Telegram {
            http: self.http.clone(),
            api_base: api_base.trim_end_matches('/').to_string(),
            token: self.keys().get(ChannelName::Telegram)?,
        })
    }

    /// Records a channel's state and tells the window.
    fn link(&self, channel: ChannelName, status: ChannelStatus, error: Option<String>) {
        let secrets = self.keys().all();
        {
            let mut state = self.state();
            let link = &mut state.links[slot(channel)];
            let error = error.map(|e| keys::redact(&e, &secrets));
            let same = link.status == status && (error.is_none() || link.last_error == error);
            link.status = status;
            if error.is_some() {
                link.last_error = error;
            }
            if same {
                return;
            }
        }
        self.emit_view();
    }

    fn view(&self) -> ChannelsView {
        let topics = self.ntfy().map(|n| (n.topic, n.reply_topic));
        let keys = self.keys();
        let now = self.clock.now_ms();
        let presence_known = self.away().is_some();
        let queued = |c: ChannelName| self.boxes[slot(c)].lock().unwrap_or_else(|e| e.into_inner()).len() as u32;
        let state = self.state();
        let paired = Self::paired_chat(&state);
        let channel = |c: ChannelName, configured: bool, ready: bool, answers: bool, sends: &str| {
            let link = &state.links[slot(c)];
            ChannelView {
                channel: c,
                status: match (configured, ready) {
                    (false, _) => ChannelStatus::Off,
                    (true, false) => ChannelStatus::NeedsSetup,
                    (true, true) => link.status,
                },
                has_token: keys.get(c).is_some(),
                queued: queued(c),
                sent: link.sent,
                last_error: link.last_error.clone(),
                answers,
                sends: sends.to_string(),
            }
        };
        let tg_token = keys.get(ChannelName::Telegram).is_some();
        ChannelsView {
            settings: state.settings.clone(),
            channels: vec![
                channel(
                    ChannelName::Ntfy,
                    state.settings.ntfy.is_some(),
                    true,
                    state.ntfy_answers == Some(true),
                    NTFY_SENDS,
                ),
                channel(
                    ChannelName::Telegram,
                    state.settings.telegram.is_some(),
                    tg_token && paired.is_some(),
                    tg_token && paired.is_some(),
                    TELEGRAM_SENDS,
                ),
            ],
            pairing: state.pairing.as_ref().filter(|p| p.is_open(now)).map(|p| PairingView {
                code: p.code.clone(),
                expires_at: p.expires_at,
                tries_left: p.tries_left,
            }),
            paired_chat: paired,
            ntfy_topic: topics.as_ref().map(|t| t.0.clone()),
            ntfy_reply_topic: topics.map(|t| t.1),
            presence_known,
            refused_answers: state.refused,
            ignored_chats: state.ignored,
        }
    }

    fn emit_view(&self) {
        let Some(out) = self.out.get() else {
            return;
        };
        out.emit(EventEnvelope {
            id: uuid::Uuid::new_v4().to_string(),
            ts: self.clock.now_ms(),
            session_id: None,
            scope: Scope::App,
            source: Source::System,
            run_id: None,
            event: Event::ChannelsChanged { channels: self.view() },
        });
    }
}

/// The sink wrapper: events go on unchanged, and the few the channels act on are copied to
/// their router (an unbounded channel send: never blocks a turn).
struct Tap {
    channels: Channels,
    inner: Arc<dyn EventSink>,
}

impl EventSink for Tap {
    fn emit(&self, event: EventEnvelope) {
        if matches!(
            event.event,
            Event::ApprovalRequested { .. }
                | Event::ApprovalResolved { .. }
                | Event::Notification { .. }
                | Event::TurnStarted { .. }
                | Event::QueueConsumed { .. }
                | Event::TextDelta { .. }
                | Event::TurnFinished { .. }
        ) {
            // Presence as the event happened, not as the router gets to it.
            let away = match event.event {
                Event::ApprovalRequested { .. } | Event::Notification { .. } => self.channels.inner.away(),
                _ => None,
            };
            let _ = self.channels.inner.events.send((event.clone(), away));
        }
        self.inner.emit(event);
    }
}
