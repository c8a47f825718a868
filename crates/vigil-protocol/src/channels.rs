//! Channels on the wire: the settings (the same shape as the headless runner's config file's
//! `"channels"` entry), the ops of Settings → Away, and the view it shows. Tokens never
//! appear here: they go in with [`ChannelOp::SetToken`] and only whether one is stored
//! comes back.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// When a kind of event goes to the phone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChannelWhen {
    /// Only while the user is away from the computer (where presence cannot be read: always).
    #[default]
    Away,
    Always,
    /// The desktop only.
    Never,
}

/// Per-kind overrides of [`ChannelsSettings::when`]; absent: the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct ChannelKinds {
    /// An approval waiting.
    #[ts(optional)]
    pub approval: Option<ChannelWhen>,
    /// A conversation's answer given on its own (a continuation), a background command's end.
    #[ts(optional)]
    pub continuation: Option<ChannelWhen>,
    /// A routine's result (a run its schedule or the user started).
    #[ts(optional)]
    pub routine: Option<ChannelWhen>,
    /// A monitor fired (a routine a watch trigger ran), or the heartbeat found something.
    #[ts(optional)]
    pub monitor: Option<ChannelWhen>,
    /// A failure, or anything else.
    #[ts(optional)]
    pub failure: Option<ChannelWhen>,
    /// The daily budget is spent.
    #[ts(optional)]
    pub budget: Option<ChannelWhen>,
}

/// A self-hosted or public ntfy server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct NtfySettings {
    /// `https://ntfy.example.org`
    pub server: String,
    /// The topic pushes go to; absent: Vigil generates one (128 random bits) and keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub topic: Option<String>,
    /// The topic answers come back on; absent: generated like `topic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub reply_topic: Option<String>,
}

/// The user's own Telegram bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct TelegramSettings {
    #[serde(default = "telegram_api")]
    pub api_base: String,
    /// The paired chat; absent: pair by code in Settings → Away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub chat_id: Option<i64>,
    /// The conversation messages to the bot go to; absent: the main one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub session_id: Option<String>,
}

fn telegram_api() -> String {
    "https://api.telegram.org".into()
}

/// `"channels": {"ntfy": {…}, "telegram": {…}, "when": "away", "kinds": {…}}`
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct ChannelsSettings {
    #[ts(optional)]
    pub ntfy: Option<NtfySettings>,
    #[ts(optional)]
    pub telegram: Option<TelegramSettings>,
    pub when: ChannelWhen,
    pub kinds: ChannelKinds,
}

/// Which channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChannelName {
    Ntfy,
    Telegram,
}

/// Settings → Away's ops; each is answered by `channels_changed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ChannelOp {
    /// Ask for the view.
    Get,
    /// Replace the settings (saved in the data folder; tokens are not part of them).
    Set { settings: ChannelsSettings },
    /// Store a channel's token in the keyring; empty forgets it.
    SetToken { channel: ChannelName, token: String },
    /// Show a new Telegram pairing code (10 minutes, 5 tries).
    Pair,
    /// Forget the paired Telegram chat.
    Unpair,
}

/// Where a channel is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum ChannelStatus {
    /// Not configured.
    Off,
    /// Configured, but no token is stored (Telegram), or it waits for pairing.
    NeedsSetup,
    Connecting,
    /// The last request went through, and the answer stream or long poll is open.
    Connected,
    /// The last attempt failed; it is retried with backoff.
    Retrying,
}

/// One channel in Settings → Away and in Health.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ChannelView {
    pub channel: ChannelName,
    pub status: ChannelStatus,
    /// A token is stored (keyring or environment).
    pub has_token: bool,
    /// Pushes waiting to go out.
    pub queued: u32,
    #[ts(type = "number")]
    pub sent: u64,
    /// The last error, with any URL and token removed.
    #[ts(optional)]
    pub last_error: Option<String>,
    /// Approvals can be answered from this channel (ntfy: only when its topics refuse
    /// anonymous readers).
    pub answers: bool,
    /// What this channel sends, in one sentence.
    pub sends: String,
}

/// A Telegram pairing code on screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct PairingView {
    pub code: String,
    #[ts(type = "number")]
    pub expires_at: i64,
    pub tries_left: u32,
}

/// Settings → Away, and the Health rows of the channels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ChannelsView {
    pub settings: ChannelsSettings,
    pub channels: Vec<ChannelView>,
    #[ts(optional)]
    pub pairing: Option<PairingView>,
    #[ts(optional, type = "number")]
    pub paired_chat: Option<i64>,
    /// The ntfy topics in use (named, or generated): the phone subscribes to `ntfy_topic`.
    #[ts(optional)]
    pub ntfy_topic: Option<String>,
    #[ts(optional)]
    pub ntfy_reply_topic: Option<String>,
    /// Whether presence can be read; when not, "when away" means always.
    pub presence_known: bool,
    /// Answers refused: a forged, replayed or expired token, a wrong pairing code.
    #[ts(type = "number")]
    pub refused_answers: u64,
    /// Messages from chats other than the paired one, ignored.
    #[ts(type = "number")]
    pub ignored_chats: u64,
}
