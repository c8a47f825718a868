//! Which notification answers count: the decision, with no bus in it.
//!
//! Owns: who owns `org.freedesktop.Notifications` now (as the bus last said), the
//! notifications Vigil sent that are still up (by the id their server gave them, and which
//! server that was), the one-time keys of their buttons, and the approvals whose notification
//! is on its way.
//!
//! Must never: act on a signal whose sender is not the name's current owner, on an id Vigil did
//! not send or already let go of, on a key that notification was not sent with, or on anything
//! twice. Any session-bus client can emit `ActionInvoked` (broadcast, or straight to Vigil's
//! connection past every match rule), and the server numbers notifications 1, 2, 3…: the
//! sender is the wall, the one-time key the second one.
//!
//! A button that answers an approval (Allow once, Deny, and Open beside them) is sent with a
//! random key of 128 bits (a v4 UUID: 122 random), and the key's meaning stays here. The
//! first answer the server reports for a notification uses up all of its keys, so a replay,
//! the other button, or a key of another approval does nothing. Only the click on the
//! notification itself keeps the key `default`: servers treat that key as the click, and it
//! only opens the window.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};

use vigil_core::protocol::ApprovalDecision;

use super::FocusTarget;

/// The action key servers send for a click on the notification itself.
pub const ACTION_DEFAULT: &str = "default";

/// At most this many notifications are remembered; past it the oldest that asks nothing is
/// forgotten (a server that never reports closing must not grow the map without end). A
/// question is never forgotten this way: it stays until answered, here or on its card.
const MAX_LIVE: usize = 256;

/// The ledger behind its mutex, whatever a panic elsewhere left in it (its state is whole
/// after every method).
pub fn lock(ledger: &Mutex<Ledger>) -> MutexGuard<'_, Ledger> {
    ledger.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a button does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// Bring the window forward at the notification's item.
    Open,
    /// Answer the approval the notification is about.
    Answer(ApprovalDecision),
}

/// One action of a notification: the key the server gets, its label, what it does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub key: String,
    pub label: &'static str,
    pub choice: Choice,
}

/// The buttons of a notification about `target`: for an approval that waits, Open (the click),
/// Allow once, Deny and Open, each but the click under a key from `token` (no "always": that
/// is remembered, and only the card shows what); otherwise only the click.
pub fn buttons(target: &FocusTarget, mut token: impl FnMut() -> String) -> Vec<Button> {
    let click = |label| Button {
        key: ACTION_DEFAULT.into(),
        label,
        choice: Choice::Open,
    };
    if target.approval_id.is_none() {
        return vec![click("Open Vigil")];
    }
    let mut button = |label, choice| Button {
        key: token(),
        label,
        choice,
    };
    vec![
        click("Open"),
        button("Allow once", Choice::Answer(ApprovalDecision::Approve)),
        button("Deny", Choice::Answer(ApprovalDecision::Deny)),
        button("Open", Choice::Open),
    ]
}

/// A fresh one-time key: 32 hex digits from the OS's random source.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A signal from the notification interface, as the bus delivered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signal {
    /// `ActionInvoked(id, action_key)`.
    Action { id: u32, key: String },
    /// `NotificationClosed(id, reason)`.
    Closed { id: u32 },
}

/// What a signal leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Bring the window forward at this item.
    Open(FocusTarget),
    /// Answer the approval request `id`.
    Answer { id: String, decision: ApprovalDecision },
    /// The server closed one of Vigil's notifications: it is forgotten, nothing to do.
    Closed,
    /// Nothing: the signal does not count.
    Ignored(Ignored),
}

/// Why a signal does not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// Its sender does not own `org.freedesktop.Notifications` (or nobody does): another
    /// client of the session bus, or a server that has since let the name go.
    NotTheServer,
    /// No notification Vigil sent to this server is up under that id: another app's, one
    /// already answered or closed (a replay), or a guess.
    NotOurs,
    /// The notification is Vigil's, but it was not sent with that key (another approval's,
    /// or a guessed one). The notification stays up and its keys stay good.
    UnknownKey,
}

/// A notification Vigil sent that is still up.
#[derive(Debug)]
struct Sent {
    target: FocusTarget,
    buttons: Vec<Button>,
    /// Order of sending, to forget the oldest first.
    seq: u64,
}

/// The decision's state. Plain data: the bus side ([`super::bus`]) holds it under a `std`
/// mutex, never across an await.
#[derive(Debug, Default)]
pub struct Ledger {
    /// The unique name that owns `org.freedesktop.Notifications`, as `GetNameOwner` and then
    /// each `NameOwnerChanged` from the bus said; `None` while nobody does.
    server: Option<String>,
    /// By the unique name of the server that numbered each (the reply to `Notify` came from
    /// it) and the id it gave: ids are the server's, and two servers count from 1 alike.
    live: HashMap<(String, u32), Sent>,
    /// Approvals whose notification is being sent: answered before the server replies, the
    /// notification is closed as soon as it is known.
    expected: HashSet<String>,
    seq: u64,
}

impl Ledger {
    /// The bus said who owns the name now. Notifications numbered by another server are
    /// forgotten: their ids mean nothing to the new one (their approvals still wait on the
    /// card).
    pub fn set_server(&mut self, owner: Option<String>) {
        if let Some(owner) = &owner {
            self.live.retain(|(server, _), _| server == owner);
        } else {
            self.live.clear();
        }
        self.server = owner;
    }

    /// A notification about approval `id` is about to be sent.
    pub fn expect(&mut self, approval_id: &str) {
        self.expected.insert(approval_id.to_string());
    }

    /// `server` numbered a notification `id` sent with `buttons` about `target`. Returns
    /// `false` when it asks an approval that was answered meanwhile: then it is not
    /// remembered, and the caller closes it.
    pub fn sent(&mut self, server: &str, id: u32, target: FocusTarget, buttons: Vec<Button>) -> bool {
        if let Some(approval) = &target.approval_id {
            if !self.expected.remove(approval) {
                return false;
            }
        }
        if self.live.len() >= MAX_LIVE {
            let oldest = self
                .live
                .iter()
                .filter(|(_, sent)| sent.target.approval_id.is_none())
                .min_by_key(|(_, sent)| sent.seq)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                self.live.remove(&oldest);
            }
        }
        self.seq += 1;
        let sent = Sent {
            target,
            buttons,
            seq: self.seq,
        };
        self.live.insert((server.to_string(), id), sent);
        true
    }

    /// The approval `id` was answered (anywhere) or its run stopped waiting: its keys are
    /// used up. Returns its notification, `(server, id)`, if one is up, for the caller to
    /// close.
    pub fn resolved(&mut self, approval_id: &str) -> Option<(String, u32)> {
        self.expected.remove(approval_id);
        let key = self
            .live
            .iter()
            .find(|(_, sent)| sent.target.approval_id.as_deref() == Some(approval_id))
            .map(|(key, _)| key.clone())?;
        self.live.remove(&key);
        Some(key)
    }

    /// What `signal` from the bus name `sender` leads to.
    pub fn signal(&mut self, sender: &str, signal: Signal) -> Outcome {
        if self.server.as_deref() != Some(sender) {
            return Outcome::Ignored(Ignored::NotTheServer);
        }
        let (id, key) = match signal {
            Signal::Action { id, key } => (id, Some(key)),
            Signal::Closed { id } => (id, None),
        };
        let live = (sender.to_string(), id);
        let Some(sent) = self.live.get(&live) else {
            return Outcome::Ignored(Ignored::NotOurs);
        };
        let choice = match key {
            Some(key) => sent.buttons.iter().find(|b| b.key == key).map(|b| b.choice),
            None => {
                self.live.remove(&live);
                return Outcome::Closed;
            }
        };
        let Some(choice) = choice else {
            return Outcome::Ignored(Ignored::UnknownKey);
        };
        // The first answer uses up every key of the notification.
        let Some(sent) = self.live.remove(&live) else {
            return Outcome::Ignored(Ignored::NotOurs);
        };
        match (choice, sent.target.approval_id.clone()) {
            (Choice::Open, _) => Outcome::Open(sent.target),
            (Choice::Answer(decision), Some(id)) => Outcome::Answer { id, decision },
            // Not built by `buttons`: only a notification about an approval answers one.
            (Choice::Answer(_), None) => Outcome::Ignored(Ignored::UnknownKey),
        }
    }
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
