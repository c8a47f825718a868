//! Is the user at the computer? The desktop session knows: systemd-logind's session object
//! on the system bus says whether the session is idle (`IdleHint`, with `IdleSinceHint`) or
//! locked (`LockedHint`), and tells when that changes. Where logind cannot say (no system
//! bus, no logind, Vigil not in a login session), the window's own input stands in: no
//! input for [`WINDOW_IDLE`] is away since the last input.
//!
//! This is the user's *presence*, for what is shown when they come back (the "While you were
//! away" card) and for reaching them elsewhere while they are gone. It is not a run's
//! attendance (whether a run may ask: `runtime::lanes::Attendance`).
//!
//! Owns: one task per watch that does all D-Bus work and publishes [`Presence`] on a
//! `watch` channel.
//!
//! Must never: fail or block its caller, retry a dead bus in a loop, or say "here" or "away"
//! on a guess: before the first answer it says [`Presence::Here`], as a window just opened is.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::sync::{watch, Notify};
use tokio_util::sync::{CancellationToken, DropGuard};
use zbus::{Connection, OwnedObjectPath, OwnedVariant};

use crate::clock::Clock;

const LOGIND: &str = "org.freedesktop.login1";
const LOGIND_PATH: &str = "/org/freedesktop/login1";
const MANAGER: &str = "org.freedesktop.login1.Manager";
const SESSION: &str = "org.freedesktop.login1.Session";
const PROPERTIES: &str = "org.freedesktop.DBus.Properties";

/// Without logind: this long without input in the window is away (since the last input).
pub const WINDOW_IDLE: Duration = Duration::from_secs(5 * 60);

/// How long connecting to the bus, or one call on it, may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether the user is at the computer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    Here,
    /// Idle or locked since `since_ms` (ms since the epoch, by the desktop's clock when
    /// logind says, else by Vigil's).
    Away {
        since_ms: i64,
    },
}

/// Where the answer comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PresenceSource {
    /// Still looking for the desktop session.
    Starting,
    /// logind's session object at this path.
    Logind(String),
    /// Input in Vigil's window; `why`: what kept logind from answering.
    Window { why: String },
}

/// A cheap, clonable handle; dropping the last one stops the task.
#[derive(Clone)]
pub struct PresenceWatch {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    _stop: DropGuard,
}

struct Shared {
    presence: watch::Sender<Presence>,
    /// `std` lock: written by the task, read by `source`; no await while held.
    source: Mutex<PresenceSource>,
    /// The last input the window reported, by the clock (ms); read in window mode only.
    last_input_ms: AtomicI64,
    input: Notify,
    clock: Arc<dyn Clock>,
}

impl PresenceWatch {
    /// Starts watching on the current Tokio runtime. `bus`: `None` is the system bus
    /// (`DBUS_SYSTEM_BUS_ADDRESS` when set), `Some(address)` another bus to find logind on.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, as `tokio::spawn` does.
    pub fn start(clock: Arc<dyn Clock>, bus: Option<String>) -> Self {
        let (presence, _) = watch::channel(Presence::Here);
        let shared = Arc::new(Shared {
            presence,
            source: Mutex::new(PresenceSource::Starting),
            last_input_ms: AtomicI64::new(clock.now_ms()),
            input: Notify::new(),
            clock,
        });
        let stop = CancellationToken::new();
        tokio::spawn(run(shared.clone(), bus, stop.clone()));
        PresenceWatch {
            inner: Arc::new(Inner {
                shared,
                _stop: stop.drop_guard(),
            }),
        }
    }

    /// Changes of presence, from the current one on.
    pub fn subscribe(&self) -> watch::Receiver<Presence> {
        self.inner.shared.presence.subscribe()
    }

    pub fn now(&self) -> Presence {
        *self.inner.shared.presence.borrow()
    }

    pub fn source(&self) -> PresenceSource {
        self.inner
            .shared
            .source
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The window saw the user's input (a key, a click, the pointer). Counts only where
    /// logind cannot say; cheap enough for every event, but the window sends a few a minute.
    pub fn input_seen(&self) {
        let shared = &self.inner.shared;
        shared.last_input_ms.store(shared.clock.now_ms(), Ordering::Relaxed);
        shared.input.notify_one();
    }
}

impl Shared {
    fn publish(&self, presence: Presence) {
        self.presence.send_if_modified(|now| {
            let changed = match (*now, presence) {
                // Still away: keep when it began (a lock after idling does not restart it).
                (Presence::Away { .. }, Presence::Away { .. }) => false,
                (a, b) => a != b,
            };
            if changed {
                *now = presence;
            }
            changed
        });
    }

    fn set_source(&self, source: PresenceSource) {
        *self.source.lock().unwrap_or_else(|e| e.into_inner()) = source;
    }
}

async fn run(shared: Arc<Shared>, bus: Option<String>, stop: CancellationToken) {
    let why = tokio::select! {
        _ = stop.cancelled() => return,
        why = watch_logind(&shared, bus) => why,
    };
    tracing::info!("presence from the window's input: {why}");
    shared.set_source(PresenceSource::Window { why });
    tokio::select! {
        _ = stop.cancelled() => {}
        () = watch_window(&shared) => {}
    }
}

/// Follows logind's session until that fails; returns why, for the log and Settings.
async fn watch_logind(shared: &Shared, bus: Option<String>) -> String {
    let conn = match connect(bus).await {
        Ok(conn) => conn,
        Err(why) => return why,
    };
    let path = match own_session(&conn).await {
        Ok(path) => path,
        Err(why) => return why,
    };
    let rule = zbus::MatchRule::builder()
        .msg_type(zbus::message::Type::Signal)
        .interface(PROPERTIES)
        .member("PropertiesChanged")
        .path(path.as_str())
        .build();
    let stream = match rule {
        Ok(rule) => zbus::MessageStream::for_match_rule(rule, &conn, None).await,
        Err(e) => Err(e),
    };
    let mut stream = match stream {
        Ok(stream) => stream,
        Err(e) => return format!("cannot follow the login session's changes ({e})"),
    };
    shared.set_source(PresenceSource::Logind(path.to_string()));
    tracing::info!("presence from the login session {path}");
    loop {
        match read_session(&conn, &path).await {
            Ok(hints) => shared.publish(hints.presence(shared.clock.now_ms())),
            Err(why) => return why,
        }
        // Whatever changed, the three hints are read again: a signal may name a property
        // without its value.
        match stream.next().await {
            Some(Ok(_)) => {}
            Some(Err(e)) => return format!("the system bus failed ({e})"),
            None => return "the system bus went away".into(),
        }
    }
}

async fn connect(bus: Option<String>) -> Result<Connection, String> {
    let builder = match &bus {
        Some(address) => zbus::connection::Builder::address(address.as_str()),
        None => zbus::connection::Builder::system(),
    };
    match tokio::time::timeout(CALL_TIMEOUT, builder.method_timeout(CALL_TIMEOUT).build()).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(format!("no system bus ({e})")),
        Err(_) => Err("the system bus did not answer".into()),
    }
}

/// The login session Vigil runs in (`GetSessionByPID`), else the one logind calls ours
/// (`GetSession("auto")`: the caller's, or the user's graphical session).
async fn own_session(conn: &Connection) -> Result<OwnedObjectPath, String> {
    let by_pid = conn
        .call_method(
            Some(LOGIND),
            LOGIND_PATH,
            Some(MANAGER),
            "GetSessionByPID",
            &(std::process::id()),
        )
        .await;
    let reply = match by_pid {
        Ok(reply) => reply,
        Err(first) => conn
            .call_method(Some(LOGIND), LOGIND_PATH, Some(MANAGER), "GetSession", &("auto"))
            .await
            .map_err(|e| format!("logind knows no session of Vigil's ({first}; {e})"))?,
    };
    reply
        .body()
        .deserialize::<OwnedObjectPath>()
        .map_err(|e| format!("logind answered with no session ({e})"))
}

/// The session's three hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hints {
    idle: bool,
    /// µs since the epoch (CLOCK_REALTIME) when the session became idle; 0 when unknown.
    idle_since_us: u64,
    locked: bool,
}

impl Hints {
    fn presence(self, now_ms: i64) -> Presence {
        if !self.idle && !self.locked {
            return Presence::Here;
        }
        let idle_since = (self.idle_since_us / 1000) as i64;
        let since_ms = if self.idle && idle_since > 0 {
            idle_since.min(now_ms)
        } else {
            now_ms
        };
        Presence::Away { since_ms }
    }
}

async fn read_session(conn: &Connection, path: &OwnedObjectPath) -> Result<Hints, String> {
    let call = conn.call_method(Some(LOGIND), path.as_str(), Some(PROPERTIES), "GetAll", &(SESSION));
    let reply = match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(e)) => return Err(format!("cannot read the login session ({e})")),
        Err(_) => return Err("logind did not answer".into()),
    };
    let props: HashMap<String, OwnedVariant> = reply
        .body()
        .deserialize()
        .map_err(|e| format!("the login session's properties are unreadable ({e})"))?;
    let get = |name: &str| props.get(name).cloned();
    Ok(Hints {
        idle: get("IdleHint").and_then(|v| bool::try_from(v).ok()).unwrap_or(false),
        idle_since_us: get("IdleSinceHint").and_then(|v| u64::try_from(v).ok()).unwrap_or(0),
        locked: get("LockedHint").and_then(|v| bool::try_from(v).ok()).unwrap_or(false),
    })
}

/// Away once the window has had no input for [`WINDOW_IDLE`], back at the next input.
async fn watch_window(shared: &Shared) {
    loop {
        let last = shared.last_input_ms.load(Ordering::Relaxed);
        let quiet = Duration::from_millis(shared.clock.now_ms().saturating_sub(last).max(0) as u64);
        match WINDOW_IDLE.checked_sub(quiet) {
            Some(left) if !left.is_zero() => {
                shared.publish(Presence::Here);
                tokio::select! {
                    () = shared.input.notified() => {}
                    () = tokio::time::sleep(left) => {}
                }
            }
            _ => {
                shared.publish(Presence::Away { since_ms: last });
                shared.input.notified().await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn idle_is_away_since_logind_says_and_locked_since_it_was_seen() {
        let now = 1_700_000_000_000;
        let hints = |idle, idle_since_us, locked| Hints {
            idle,
            idle_since_us,
            locked,
        };
        assert_eq!(hints(false, 5, false).presence(now), Presence::Here);
        assert_eq!(
            hints(true, 1_699_990_000_000_000, false).presence(now),
            Presence::Away {
                since_ms: 1_699_990_000_000
            }
        );
        assert_eq!(hints(false, 0, true).presence(now), Presence::Away { since_ms: now });
        // A time from the future (a clock step) is now.
        assert_eq!(
            hints(true, 1_800_000_000_000_000, false).presence(now),
            Presence::Away { since_ms: now }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_logind_the_window_is_away_after_five_quiet_minutes_and_back_at_input() {
        let clock = ManualClock::new(1_700_000_000_000);
        let dir = tempfile::tempdir().unwrap();
        let nowhere = format!("unix:path={}", dir.path().join("no-bus").display());
        let watch = PresenceWatch::start(Arc::new(clock.clone()), Some(nowhere));
        let mut rx = watch.subscribe();
        // Time moves for both clocks at once, as it does outside tests.
        let pass = |d: Duration| {
            clock.advance(d);
            tokio::time::advance(d)
        };
        pass(Duration::from_secs(60)).await;
        watch.input_seen();
        let input_at = clock.now_ms();
        pass(WINDOW_IDLE - Duration::from_secs(1)).await;
        assert_eq!(*rx.borrow_and_update(), Presence::Here);
        assert!(matches!(watch.source(), PresenceSource::Window { why } if why.contains("no system bus")));
        pass(Duration::from_secs(2)).await;
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), Presence::Away { since_ms: input_at });
        pass(Duration::from_secs(3600)).await;
        watch.input_seen();
        rx.changed().await.unwrap();
        assert_eq!(*rx.borrow_and_update(), Presence::Here);
    }
}
