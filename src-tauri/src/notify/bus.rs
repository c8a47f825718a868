//! The notification server on the session bus: sends Vigil's notifications and hears what
//! happens to them, acting only on what the [`Ledger`] lets through.
//!
//! Owns: one session-bus connection for notifications, and the task that listens on it for
//! who owns `org.freedesktop.Notifications` (asked once with `GetNameOwner`, then followed
//! through `NameOwnerChanged` from the bus itself) and for `ActionInvoked` and
//! `NotificationClosed`.
//!
//! Must never: act on a message without the ledger's decision on its sender, or take zbus's
//! match rules for a sender check. A rule whose sender is a well-known name matches every
//! message inside zbus (it cannot know who owns the name), and a signal sent straight to
//! Vigil's connection (a unicast signal, with a destination) reaches it whatever rules it
//! registered; the rules only spare Vigil other clients' broadcasts. Nor hold the ledger's
//! lock across an await.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use zbus::message::Type;
use zbus::{Connection, MatchRule, MessageStream};

use super::ledger::{buttons, lock, new_token, Ignored, Ledger, Outcome, Signal};
use super::{body_for_server, FocusTarget};

/// The well-known name of the notification server, and its interface.
pub const NAME: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";
/// The bus itself: the only sender whose `NameOwnerChanged` counts.
const BUS: &str = "org.freedesktop.DBus";
const BUS_PATH: &str = "/org/freedesktop/DBus";

/// What the listener does with a signal's outcome (every one, ignored ones too, so a test can
/// wait for a forgery to be turned away instead of sleeping).
pub type OnOutcome = Arc<dyn Fn(Outcome) + Send + Sync>;

/// A cheap, clonable handle to the connection and its listener. Dropping the last handle
/// stops the listener.
#[derive(Clone)]
pub struct Notifier {
    conn: Connection,
    /// Shared with the listener and with the front end, which must note an approval's
    /// notification ([`Ledger::expect`]) and its answer ([`Ledger::resolved`]) at once, in
    /// sync code, before any connection exists. A `std` mutex: never held across an await.
    ledger: Arc<Mutex<Ledger>>,
    _listener: Arc<Listener>,
}

/// Stops the listening task when the last handle goes.
struct Listener(tokio::task::JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Notifier {
    /// Starts listening on `conn` (a session-bus connection) and asks who owns the name.
    /// Call from inside a tokio runtime: the listener is spawned on it.
    pub async fn start(conn: Connection, ledger: Arc<Mutex<Ledger>>, on: OnOutcome) -> zbus::Result<Self> {
        let owners = MessageStream::for_match_rule(owner_rule()?, &conn, None).await?;
        let signals = MessageStream::for_match_rule(signal_rule()?, &conn, None).await?;
        // Asked after subscribing: a change in between is in `owners` and applied after.
        let owner = name_owner(&conn).await?;
        lock(&ledger).set_server(owner);
        let task = tokio::spawn(listen(owners, signals, ledger.clone(), on));
        Ok(Self {
            conn,
            ledger,
            _listener: Arc::new(Listener(task)),
        })
    }

    /// Shows a notification about `target` and returns the id its server gave it. An
    /// approval's notification counts only if [`Ledger::expect`] noted it when the question
    /// was asked and it was not answered since; otherwise it is closed at once.
    pub async fn show(&self, title: &str, body: &str, target: FocusTarget) -> zbus::Result<u32> {
        // Asked each time: the server may have changed. If it cannot be asked, escaped anyway
        // (at worst `&amp;` shows through; never markup read from the text).
        let markup = self
            .capabilities()
            .await
            .map(|caps| caps.iter().any(|c| c == "body-markup"))
            .unwrap_or(true);
        let buttons = buttons(&target, new_token);
        let actions: Vec<&str> = buttons.iter().flat_map(|b| [b.key.as_str(), b.label]).collect();
        let hints: HashMap<&str, zbus::Variant<'static>> = HashMap::new();
        // A question stays until it is answered (or its run stops waiting); the rest expire as
        // the server sees fit.
        let timeout: i32 = if target.approval_id.is_some() { 0 } else { -1 };
        let body = body_for_server(body, markup);
        let reply = self
            .conn
            .call_method(
                Some(NAME),
                PATH,
                Some(NAME),
                "Notify",
                &("Vigil", 0u32, "", title, &*body, actions, hints, timeout),
            )
            .await?;
        let id: u32 = reply.body().deserialize()?;
        // The server that numbered it: the reply comes from the name's owner's unique name.
        let server = reply.header().sender().map(ToString::to_string).unwrap_or_default();
        let kept = lock(&self.ledger).sent(&server, id, target, buttons);
        if !kept {
            self.close(&server, id).await;
        }
        Ok(id)
    }

    /// Closes notification `id` on `server`, which numbered it (from [`Ledger::resolved`]).
    pub async fn close(&self, server: &str, id: u32) {
        let closed = self
            .conn
            .call_method(Some(server), PATH, Some(NAME), "CloseNotification", &(id,))
            .await;
        if let Err(e) = closed {
            // Gone with its server, or already closed: nothing shows it any more either way.
            tracing::debug!("could not close notification {id} on {server}: {e}");
        }
    }

    async fn capabilities(&self) -> zbus::Result<Vec<String>> {
        let reply = self
            .conn
            .call_method(Some(NAME), PATH, Some(NAME), "GetCapabilities", &())
            .await?;
        reply.body().deserialize()
    }
}

/// `NameOwnerChanged` for the notification name, from the bus.
fn owner_rule() -> zbus::Result<MatchRule<'static>> {
    MatchRule::builder()
        .msg_type(Type::Signal)
        .sender(BUS)
        .interface(BUS)
        .member("NameOwnerChanged")
        .path(BUS_PATH)
        .arg(0, NAME)
        .build()
}

/// The notification interface's signals. The sender here only filters on the bus side.
fn signal_rule() -> zbus::Result<MatchRule<'static>> {
    MatchRule::builder()
        .msg_type(Type::Signal)
        .sender(NAME)
        .interface(NAME)
        .path(PATH)
        .build()
}

/// Who owns the notification name now; `None` when nobody does (a server the bus can start
/// on demand shows up through `NameOwnerChanged` when it takes the name).
async fn name_owner(conn: &Connection) -> zbus::Result<Option<String>> {
    match conn
        .call_method(Some(BUS), BUS_PATH, Some(BUS), "GetNameOwner", &(NAME,))
        .await
    {
        Ok(reply) => Ok(Some(reply.body().deserialize::<String>()?)),
        // zbus reports an error name the freedesktop interfaces define as `FDO`; a private
        // bus (the tests') may answer it as a plain method error.
        Err(zbus::Error::FDO(e)) if matches!(*e, zbus::fdo::Error::NameHasNoOwner(_)) => Ok(None),
        Err(zbus::Error::MethodError(name, _, _)) if name.as_str() == "org.freedesktop.DBus.Error.NameHasNoOwner" => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

async fn listen(mut owners: MessageStream, mut signals: MessageStream, ledger: Arc<Mutex<Ledger>>, on: OnOutcome) {
    loop {
        let message = tokio::select! {
            // A change of owner first: zbus queues each message for every stream it matches
            // as it reads them, so an owner change read before an answer is already queued
            // when the answer is, and the answer is judged by the owner the bus named before.
            biased;
            m = owners.next() => m,
            m = signals.next() => m,
        };
        // The connection is gone: nothing more will come.
        let Some(message) = message else { break };
        let Ok(message) = message else { continue };
        let header = message.header();
        let (Some(sender), Some(member)) = (header.sender(), header.member()) else {
            continue;
        };
        let sender = sender.as_str();
        let signal = match member.as_str() {
            "NameOwnerChanged" => {
                if sender != BUS {
                    tracing::warn!("ignored a NameOwnerChanged that {sender}, not the bus, sent");
                    continue;
                }
                if let Ok((name, _old, new)) = message.body().deserialize::<(String, String, String)>() {
                    if name == NAME {
                        lock(&ledger).set_server(Some(new).filter(|n| !n.is_empty()));
                    }
                }
                continue;
            }
            "ActionInvoked" => match message.body().deserialize::<(u32, String)>() {
                Ok((id, key)) => Signal::Action { id, key },
                Err(_) => continue,
            },
            "NotificationClosed" => match message.body().deserialize::<(u32, u32)>() {
                Ok((id, _reason)) => Signal::Closed { id },
                Err(_) => continue,
            },
            _ => continue,
        };
        let (id, action) = match &signal {
            Signal::Action { id, .. } => (*id, true),
            Signal::Closed { id } => (*id, false),
        };
        let outcome = lock(&ledger).signal(sender, signal);
        match &outcome {
            Outcome::Ignored(Ignored::NotTheServer) => tracing::warn!(
                "ignored a notification {} for id {id} from {sender}, which does not own {NAME}",
                if action { "answer" } else { "close" }
            ),
            Outcome::Ignored(Ignored::UnknownKey) => {
                tracing::warn!("ignored an answer to notification {id} with a key it was not sent with")
            }
            // Another app's notification, or one of Vigil's already answered or closed.
            Outcome::Ignored(Ignored::NotOurs) => {}
            Outcome::Open(_) | Outcome::Answer { .. } | Outcome::Closed => {}
        }
        on(outcome);
    }
}

#[cfg(test)]
#[path = "bus_tests.rs"]
mod tests;
