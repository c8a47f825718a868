//! # mailbox — a background result waiting for the user's conversation
//!
//! A [`MailboxEvent`] is what a heartbeat run, a routine or a continuation leaves in a
//! session's metadata for the next turn to show, with the [`DrainClaim`] of the turn
//! showing it now ([`super::drain`] claims, releases and acknowledges).
//!
//! Must never: be written but through the metadata's one write path ([`super::meta`]).

use serde::{Deserialize, Serialize};

use super::lock::pid_alive;

/// A background result deposited into a session's mailbox.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MailboxEvent {
    /// Unique; depositing the same id twice keeps one copy, and acks remove by id.
    pub event_id: String,
    /// The session (or subsystem) that produced it.
    pub source: String,
    /// One sentence, always shown.
    pub summary: String,
    #[serde(default)]
    pub detail: Option<String>,
    pub created_at: i64,
    #[serde(default)]
    pub run_id: Option<String>,
    /// `heartbeat_result`, `exec_completed`, `job_completed`… (seed 003 §4.5).
    #[serde(default)]
    pub event_type: String,
    /// 0 info, 1 important, 2 urgent.
    #[serde(default)]
    pub priority: u8,
    /// Events with the same key say the same thing; the producer uses it to skip repeats.
    #[serde(default)]
    pub dedupe_key: Option<String>,
    /// The turn showing it now, until it acknowledges or gives it back ([`super::drain`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<DrainClaim>,
}

impl MailboxEvent {
    /// The card the UI shows for it.
    pub fn card(&self) -> vigil_protocol::BackgroundUpdate {
        vigil_protocol::BackgroundUpdate {
            event_id: self.event_id.clone(),
            event_type: self.event_type.clone(),
            source: self.source.clone(),
            summary: self.summary.clone(),
            detail: self.detail.clone(),
            priority: self.priority,
            created_at: self.created_at,
        }
    }
}

/// A claim older than this is presumed abandoned even if its pid is alive: by then the
/// pid is more likely reused than a turn still running.
pub const CLAIM_LIMIT_MS: i64 = 60 * 60 * 1000;

/// Who is showing an event to a turn right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainClaim {
    pub pid: u32,
    /// The claiming [`MetaStore`](super::MetaStore): two stores in one process (tests; a restart in place)
    /// are told apart by this, not by the pid.
    pub store: String,
    /// Milliseconds since the Unix epoch.
    pub at_ms: i64,
}

impl DrainClaim {
    /// Whether the claim still keeps the event from `store` (this store's own claims are
    /// leftovers of a turn that ended without releasing: this lane runs one turn at a time).
    pub(super) fn holds_against(&self, store: &str, now_ms: i64) -> bool {
        let own = self.pid == std::process::id() && self.store == store;
        let young = now_ms.saturating_sub(self.at_ms) < CLAIM_LIMIT_MS;
        !own && young && pid_alive(self.pid)
    }
}
