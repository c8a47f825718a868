//! Vigil's listener on a private bus (`dbus-daemon`, started here) against a fake notification
//! server that owns `org.freedesktop.Notifications`, and a second client of the bus that
//! forges its signals. Each step waits for the listener's outcome of the last signal sent, so
//! "nothing happened" is read in order from the listener itself, never from a pause: the bus
//! delivers one sender's messages in order, and a forgery that got through would show before
//! the outcome waited for.
//!
//! Needs `dbus-daemon` (Debian `dbus-daemon`, which `make deps-test` installs); without it the
//! tests fail with what to install, never skip.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use vigil_core::protocol::ApprovalDecision;

use super::*;

/// How long anything the test waits for may take before it counts as not happening.
const BOUND: Duration = Duration::from_secs(10);

/// A throwaway bus: anyone may own any name; nothing is activated.
const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#;

/// A private bus; the daemon dies with this value, its socket with the folder.
struct Bus {
    address: String,
    _daemon: Child,
    _dir: tempfile::TempDir,
}

async fn private_bus() -> Bus {
    let dir = tempfile::tempdir().expect("temp folder");
    let config = dir.path().join("bus.conf");
    std::fs::write(&config, BUS_CONFIG).expect("write the bus config");
    let mut daemon = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", config.display()))
        .arg(format!("--address=unix:path={}", dir.path().join("bus").display()))
        .args(["--print-address", "--nofork"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start dbus-daemon ({e}): the notification tests need it for a private bus. Install \
                 the Debian package `dbus-daemon` (`make deps-test` does)."
            )
        });
    let mut lines = BufReader::new(daemon.stdout.take().expect("stdout")).lines();
    let address = tokio::time::timeout(BOUND, lines.next_line())
        .await
        .expect("dbus-daemon printed no address")
        .expect("read dbus-daemon's address")
        .expect("dbus-daemon exited before printing its address");
    Bus {
        address,
        _daemon: daemon,
        _dir: dir,
    }
}

/// A connection whose calls fail after [`BOUND`] rather than wait for ever, as the app's do
/// (`notify::notifier`): a reply that never comes fails the test instead of hanging the run.
async fn client(bus: &Bus) -> Connection {
    zbus::connection::Builder::address(bus.address.as_str())
        .method_timeout(BOUND)
        .build()
        .await
        .expect("connect to the private bus")
}

/// What the fake server was asked.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Notify {
        id: u32,
        summary: String,
        /// `(key, label)` pairs, as sent.
        actions: Vec<(String, String)>,
        timeout: i32,
    },
    Close {
        id: u32,
    },
}

/// A notification server: owns the name, numbers notifications 1, 2, 3… as dunst does, and
/// emits signals when the test clicks for the user.
struct FakeServer {
    conn: Connection,
    calls: mpsc::UnboundedReceiver<Call>,
}

impl FakeServer {
    async fn start(bus: &Bus, first_id: u32) -> Self {
        let conn = client(bus).await;
        // Listening before it owns the name: zbus hands a message only to the streams that
        // exist when it reads it, so a call that came before the serving task had made its
        // stream was dropped unanswered (and the caller waited for ever).
        let mut incoming = MessageStream::from(&conn);
        conn.request_name(NAME).await.expect("own the notification name");
        let (tx, calls) = mpsc::unbounded_channel();
        let serving = conn.clone();
        tokio::spawn(async move {
            let mut next = first_id;
            while let Some(Ok(message)) = incoming.next().await {
                let header = message.header();
                if header.message_type() != Type::MethodCall {
                    continue;
                }
                let answered = match header.member().map(|m| m.as_str()) {
                    Some("Notify") => {
                        type Args = (
                            String,
                            u32,
                            String,
                            String,
                            String,
                            Vec<String>,
                            HashMap<String, zbus::OwnedVariant>,
                            i32,
                        );
                        let (_app, _replaces, _icon, summary, _body, actions, _hints, timeout): Args =
                            message.body().deserialize().expect("Notify's arguments");
                        let actions = actions.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
                        let id = next;
                        next += 1;
                        let _ = tx.send(Call::Notify {
                            id,
                            summary,
                            actions,
                            timeout,
                        });
                        serving.reply(&header, &id).await
                    }
                    Some("GetCapabilities") => serving.reply(&header, &vec!["actions", "body"]).await,
                    Some("CloseNotification") => {
                        let (id,): (u32,) = message.body().deserialize().expect("CloseNotification's id");
                        let _ = tx.send(Call::Close { id });
                        serving.reply(&header, &()).await
                    }
                    _ => serving.reply(&header, &()).await,
                };
                answered.expect("reply");
            }
        });
        Self { conn, calls }
    }

    async fn next_call(&mut self) -> Call {
        tokio::time::timeout(BOUND, self.calls.recv())
            .await
            .expect("the server was asked nothing")
            .expect("the fake server stopped")
    }

    /// The next notification it was asked to show: its id and `label → key` for the buttons
    /// (the click, key `default`, left out).
    async fn notified(&mut self) -> (u32, HashMap<String, String>) {
        match self.next_call().await {
            Call::Notify { id, actions, .. } => (
                id,
                actions
                    .into_iter()
                    .filter(|(k, _)| k != "default")
                    .map(|(k, l)| (l, k))
                    .collect(),
            ),
            other => panic!("expected a notification, got {other:?}"),
        }
    }

    /// The user picks the action `key` of notification `id`: the server says so.
    async fn invoke(&self, id: u32, key: &str) {
        emit(&self.conn, None, "ActionInvoked", &(id, key)).await;
    }

    fn name(&self) -> String {
        self.conn.unique_name().expect("unique name").to_string()
    }
}

/// Emits a notification-interface signal from `conn`, to everyone or to `to` only.
async fn emit<B>(conn: &Connection, to: Option<&str>, member: &str, body: &B)
where
    B: serde::Serialize + zbus::DynamicType,
{
    conn.emit_signal(to, PATH, NAME, member, body)
        .await
        .expect("emit the signal");
}

/// Vigil's listener on the bus, its ledger, and the outcomes it reports in order.
struct Vigil {
    notifier: Notifier,
    ledger: Arc<Mutex<Ledger>>,
    outcomes: mpsc::UnboundedReceiver<Outcome>,
}

impl Vigil {
    async fn start(bus: &Bus) -> Self {
        let ledger = Arc::new(Mutex::new(Ledger::default()));
        let (tx, outcomes) = mpsc::unbounded_channel();
        let on: OnOutcome = Arc::new(move |outcome| {
            let _ = tx.send(outcome);
        });
        let notifier = Notifier::start(client(bus).await, ledger.clone(), on)
            .await
            .expect("start the listener");
        Self {
            notifier,
            ledger,
            outcomes,
        }
    }

    /// Asks approval `id` by a notification, as the desktop does when a run waits for it.
    async fn ask(&self, approval: &str) -> u32 {
        lock(&self.ledger).expect(approval);
        self.notifier
            .show("Vigil needs your approval", "touch marker", waiting_for(approval))
            .await
            .expect("show the notification")
    }

    async fn next(&mut self) -> Outcome {
        tokio::time::timeout(BOUND, self.outcomes.recv())
            .await
            .expect("the listener reported nothing")
            .expect("the listener stopped")
    }

    fn name(&self) -> String {
        self.notifier.conn.unique_name().expect("unique name").to_string()
    }
}

fn waiting_for(id: &str) -> FocusTarget {
    FocusTarget {
        approval_id: Some(id.into()),
        session_id: Some("s1".into()),
        ..FocusTarget::default()
    }
}

fn approve(id: &str) -> Outcome {
    Outcome::Answer {
        id: id.into(),
        decision: ApprovalDecision::Approve,
    }
}

const NOT_THE_SERVER: Outcome = Outcome::Ignored(Ignored::NotTheServer);
const NOT_OURS: Outcome = Outcome::Ignored(Ignored::NotOurs);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_answer_does_nothing_the_servers_counts_once_and_a_replay_does_nothing() {
    let bus = private_bus().await;
    let mut server = FakeServer::start(&bus, 1).await;
    let mut vigil = Vigil::start(&bus).await;
    let id = vigil.ask("approval-1").await;
    let (notified, keys) = server.notified().await;
    assert_eq!(notified, id);
    let allow = keys["Allow once"].clone();
    let forger = client(&bus).await;

    // Another program of the session knows the id (they count from 1) and even the key: sent to
    // everyone, the bus keeps it from Vigil (its match rule names the server)…
    emit(&forger, None, "ActionInvoked", &(id, &allow)).await;
    // …and sent straight to Vigil's connection, past every match rule, Vigil turns it away.
    emit(&forger, Some(&vigil.name()), "ActionInvoked", &(id, &allow)).await;
    assert_eq!(vigil.next().await, NOT_THE_SERVER);
    // Nor can it close the notification, or claim the name changed hands to it.
    emit(&forger, Some(&vigil.name()), "NotificationClosed", &(id, 2u32)).await;
    assert_eq!(vigil.next().await, NOT_THE_SERVER);
    let forged_change = (NAME, server.name(), forger.unique_name().expect("name").to_string());
    forger
        .emit_signal(
            Some(vigil.name().as_str()),
            BUS_PATH,
            BUS,
            "NameOwnerChanged",
            &forged_change,
        )
        .await
        .expect("emit");
    emit(&forger, Some(&vigil.name()), "ActionInvoked", &(id, &allow)).await;
    assert_eq!(vigil.next().await, NOT_THE_SERVER);

    // The user picks Allow once on the real server: answered, once.
    server.invoke(id, &allow).await;
    assert_eq!(vigil.next().await, approve("approval-1"));
    server.invoke(id, &allow).await;
    assert_eq!(vigil.next().await, NOT_OURS);
    server.invoke(id, &keys["Deny"]).await;
    assert_eq!(vigil.next().await, NOT_OURS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_this_approvals_fresh_keys_answer_it() {
    let bus = private_bus().await;
    let mut server = FakeServer::start(&bus, 1).await;
    let mut vigil = Vigil::start(&bus).await;
    let first = vigil.ask("approval-1").await;
    let Call::Notify { actions, timeout, .. } = server.next_call().await else {
        panic!("expected a notification")
    };
    let second = vigil.ask("approval-2").await;
    let (_, second_keys) = server.notified().await;

    // What was sent: the click, then Allow once, Deny and Open (never "always"), each under a
    // key of 32 random hex digits; the question stays until answered.
    let labels: Vec<_> = actions.iter().map(|(_, label)| label.as_str()).collect();
    assert_eq!(labels, ["Open", "Allow once", "Deny", "Open"]);
    assert_eq!(actions[0].0, "default");
    assert_eq!(timeout, 0);
    let first_keys: HashMap<String, String> = actions[1..].iter().map(|(k, l)| (l.clone(), k.clone())).collect();
    let tokens: std::collections::HashSet<&String> = first_keys.values().chain(second_keys.values()).collect();
    assert_eq!(tokens.len(), 6, "{tokens:?}");
    assert!(tokens
        .iter()
        .all(|k| k.len() == 32 && k.chars().all(|c| c.is_ascii_hexdigit())));

    // The server itself, with another approval's key or the keys Vigil used to send.
    server.invoke(first, &second_keys["Allow once"]).await;
    assert_eq!(vigil.next().await, Outcome::Ignored(Ignored::UnknownKey));
    server.invoke(first, "allow-once").await;
    assert_eq!(vigil.next().await, Outcome::Ignored(Ignored::UnknownKey));
    // A guessed id: one Vigil never sent.
    server.invoke(second + 1, &second_keys["Allow once"]).await;
    assert_eq!(vigil.next().await, NOT_OURS);

    server.invoke(second, &second_keys["Deny"]).await;
    assert_eq!(
        vigil.next().await,
        Outcome::Answer {
            id: "approval-2".into(),
            decision: ApprovalDecision::Deny
        }
    );
    server.invoke(first, &first_keys["Allow once"]).await;
    assert_eq!(vigil.next().await, approve("approval-1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_let_the_name_go_answers_nothing_nor_does_the_next_owner() {
    let bus = private_bus().await;
    let mut old = FakeServer::start(&bus, 1).await;
    let mut vigil = Vigil::start(&bus).await;
    let id = vigil.ask("approval-1").await;
    let (_, keys) = old.notified().await;
    let allow = keys["Allow once"].clone();

    // The bus says who owns the name before it answers the release, so Vigil hears the change
    // before anything the old server sends next.
    // (Sent to everyone, its signals no longer reach Vigil: the bus-side rule names the owner.
    // Sent to Vigil directly, they do, and Vigil turns them away.)
    old.conn.release_name(NAME).await.expect("let the name go");
    emit(&old.conn, Some(&vigil.name()), "ActionInvoked", &(id, &allow)).await;
    assert_eq!(vigil.next().await, NOT_THE_SERVER);
    // Another server takes the name; its ids start over, so the same number is not Vigil's.
    let new = FakeServer::start(&bus, 1).await;
    new.invoke(id, &allow).await;
    assert_eq!(vigil.next().await, NOT_OURS);
    emit(&old.conn, Some(&vigil.name()), "ActionInvoked", &(id, &allow)).await;
    assert_eq!(vigil.next().await, NOT_THE_SERVER);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answered_on_the_card_its_notification_closes_and_its_keys_do_nothing() {
    let bus = private_bus().await;
    let mut server = FakeServer::start(&bus, 1).await;
    let mut vigil = Vigil::start(&bus).await;
    let id = vigil.ask("approval-1").await;
    let (_, keys) = server.notified().await;

    let up = lock(&vigil.ledger).resolved("approval-1");
    assert_eq!(up, Some((server.name(), id)));
    vigil.notifier.close(&server.name(), id).await;
    assert_eq!(server.next_call().await, Call::Close { id });
    server.invoke(id, &keys["Allow once"]).await;
    assert_eq!(vigil.next().await, NOT_OURS);

    // Answered while its notification was on its way: closed as soon as the server numbers it.
    lock(&vigil.ledger).expect("approval-2");
    lock(&vigil.ledger).resolved("approval-2");
    let late = vigil
        .notifier
        .show("Vigil needs your approval", "touch marker", waiting_for("approval-2"))
        .await
        .expect("show");
    let (_, late_keys) = server.notified().await;
    assert_eq!(server.next_call().await, Call::Close { id: late });
    server.invoke(late, &late_keys["Allow once"]).await;
    assert_eq!(vigil.next().await, NOT_OURS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_notification_opens_its_item_on_a_click_and_expires_as_the_server_says() {
    let bus = private_bus().await;
    let mut server = FakeServer::start(&bus, 1).await;
    let mut vigil = Vigil::start(&bus).await;
    let target = FocusTarget {
        process_id: Some("p1".into()),
        ..FocusTarget::default()
    };
    let clicked = vigil
        .notifier
        .show("Done", "build finished", target.clone())
        .await
        .expect("show");
    assert_eq!(
        server.next_call().await,
        Call::Notify {
            id: clicked,
            summary: "Done".into(),
            actions: vec![("default".into(), "Open Vigil".into())],
            timeout: -1,
        }
    );
    let expired = vigil
        .notifier
        .show("Done", "again", target.clone())
        .await
        .expect("show");
    server.invoke(clicked, "default").await;
    assert_eq!(vigil.next().await, Outcome::Open(target));
    emit(&server.conn, None, "NotificationClosed", &(expired, 1u32)).await;
    assert_eq!(vigil.next().await, Outcome::Closed);
    server.invoke(expired, "default").await;
    assert_eq!(vigil.next().await, NOT_OURS);
}

/// The notification server is started on demand (dunst by D-Bus activation): when Vigil
/// connects, nobody owns the name yet. Vigil still starts, and once a server takes the name
/// its notifications are shown and its answers count. (zbus reports "no owner" as an FDO
/// error; taking it for a broken bus left the desktop app with no notification at all.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_takes_the_name_after_vigil_connected_is_used() {
    let bus = private_bus().await;
    let mut vigil = Vigil::start(&bus).await;
    let mut server = FakeServer::start(&bus, 1).await;
    let id = vigil.ask("approval-1").await;
    let (got, keys) = server.notified().await;
    assert_eq!(got, id);
    server.invoke(id, &keys["Allow once"]).await;
    assert!(
        matches!(vigil.next().await, Outcome::Answer { .. }),
        "the server that took the name later answers"
    );
}
