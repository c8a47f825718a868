//! Keeps the computer awake while Vigil works: while any turn, job or background command runs,
//! a systemd-logind `sleep` inhibitor lock is held; as soon as nothing runs, it is let go.
//!
//! Owns: the one logind lock (a file descriptor: logind keeps the lock while any copy of it is
//! open) and the connection to the system bus it was asked for on.
//!
//! Must never: block or fail the caller (front ends call [`SleepInhibitor::set_running`] from
//! sync code, as often as tasks start and end), hold a lock while nothing runs, retry a bus or
//! logind that failed in a loop, or panic on anything the bus does.
//!
//! One task per inhibitor does all D-Bus work; the handle only writes the wanted state and wakes
//! it. Changes that arrive while the task is busy collapse into one wake, so a burst of task
//! starts costs one `Inhibit` call, not one per start.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use zbus::{Connection, OwnedFd};

const LOGIND: &str = "org.freedesktop.login1";
const LOGIND_PATH: &str = "/org/freedesktop/login1";
const MANAGER: &str = "org.freedesktop.login1.Manager";

/// How long connecting to the bus, or one call on it, may take. A bus that hangs must not keep
/// the task from releasing the lock when work ends.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// While a lock is held and the number of tasks changes, how long to let the burst settle before
/// the lock is taken again with the new count. Taking the first lock and releasing the last are
/// never delayed: only the "why" text waits.
const SETTLE: Duration = Duration::from_millis(200);

/// The tail every "cannot" sentence ends with, so Settings reads the same whatever the cause.
const CONSEQUENCE: &str = "so Vigil cannot keep the computer awake while work runs.";

/// What Settings shows about the inhibitor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InhibitorStatus {
    /// The user turned it off: no lock, no bus connection.
    Off,
    /// The last attempt failed; `reason` is a sentence for the user. Tried again when work
    /// next starts after a pause (the running count goes from 0 to more).
    Unavailable { reason: String },
    /// On, reachable (or not yet tried) and nothing runs, so no lock is held.
    Idle,
    /// A lock is held; its "why" names `tasks`.
    Holding { tasks: usize },
}

/// A cheap, clonable handle to the inhibitor's task. Dropping the last handle stops the task,
/// which releases the lock.
#[derive(Clone)]
pub struct SleepInhibitor {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    /// Cancels the task when the last handle goes; the task holds `shared`, not this.
    _stop: DropGuard,
}

/// What the handle and the task share.
struct Shared {
    /// A `std::sync::Mutex`, not a Tokio one: no await happens while it is held, and
    /// `set_running` must work from sync code.
    state: Mutex<Wanted>,
    /// Wakes the task. `notify_one` stores a permit when the task is busy, so no change is
    /// lost, and many changes before the task looks make one wake.
    wake: Notify,
}

struct Wanted {
    running: usize,
    enabled: bool,
    /// How many times `running` went from 0 to more. A failed attempt is not repeated until
    /// this changes: counting in the handle, not the task, catches a 1 → 0 → 1 the task never
    /// saw because it was busy.
    rises: u64,
    /// Written by the task, read by `status`.
    status: InhibitorStatus,
}

impl SleepInhibitor {
    /// Starts the inhibitor's task on the current Tokio runtime. `bus`: `None` is the system bus
    /// (`DBUS_SYSTEM_BUS_ADDRESS` when set), `Some(address)` a D-Bus address to use instead.
    ///
    /// When enabled, the task checks once at start whether logind is on the bus, so Settings
    /// can say so before any work runs.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime, as `tokio::spawn` does.
    pub fn start(enabled: bool, bus: Option<String>) -> Self {
        let shared = Arc::new(Shared {
            state: Mutex::new(Wanted {
                running: 0,
                enabled,
                rises: 0,
                status: if enabled {
                    InhibitorStatus::Idle
                } else {
                    InhibitorStatus::Off
                },
            }),
            wake: Notify::new(),
        });
        let stop = CancellationToken::new();
        let worker = Worker {
            shared: shared.clone(),
            bus,
            conn: None,
            lock: None,
            failed_at: None,
            probed: false,
            settle_until: None,
        };
        // Its first step, before any wake, is the look at the bus when enabled.
        tokio::spawn(worker.run(stop.clone()));
        SleepInhibitor {
            inner: Arc::new(Inner {
                shared,
                _stop: stop.drop_guard(),
            }),
        }
    }

    /// How many turns, jobs and background commands run now. More than 0: hold a lock whose
    /// "why" says how many; 0: release it at once. Never blocks; call it on every change.
    pub fn set_running(&self, tasks: usize) {
        let shared = &self.inner.shared;
        {
            let mut state = lock(&shared.state);
            if state.running == tasks {
                return;
            }
            if state.running == 0 {
                state.rises += 1;
            }
            state.running = tasks;
        }
        shared.wake.notify_one();
    }

    /// Off: the lock is released and the bus connection closed, and nothing connects until it
    /// is turned on again.
    pub fn set_enabled(&self, enabled: bool) {
        let shared = &self.inner.shared;
        {
            let mut state = lock(&shared.state);
            if state.enabled == enabled {
                return;
            }
            state.enabled = enabled;
        }
        shared.wake.notify_one();
    }

    pub fn status(&self) -> InhibitorStatus {
        lock(&self.inner.shared.state).status.clone()
    }
}

impl std::fmt::Debug for SleepInhibitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SleepInhibitor")
            .field("status", &self.status())
            .finish()
    }
}

/// The state is plain data, so a panic elsewhere while holding the mutex leaves nothing half
/// written: go on with it rather than poison every later call.
fn lock(state: &Mutex<Wanted>) -> MutexGuard<'_, Wanted> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The task: the only code that talks to the bus.
struct Worker {
    shared: Arc<Shared>,
    bus: Option<String>,
    /// Kept between locks so the next `Inhibit` does not pay for a new connection; dropped on
    /// any error (it may be the cause) and when turned off.
    conn: Option<Connection>,
    /// The lock and the count its "why" names. Dropping the fd releases the lock.
    lock: Option<(OwnedFd, usize)>,
    /// After a failure: the `rises` count it happened at. No new attempt until it changes.
    failed_at: Option<u64>,
    /// Whether the start-up check has run since the inhibitor was (last) turned on.
    probed: bool,
    /// While a lock is held and the count changed: when to take the new lock. Not pushed back by
    /// further changes, so a steady stream of them cannot keep a stale "why" forever.
    settle_until: Option<Instant>,
}

impl Worker {
    async fn run(mut self, stop: CancellationToken) {
        loop {
            let wake_at = tokio::select! {
                _ = stop.cancelled() => break,
                wake_at = self.step() => wake_at,
            };
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = self.shared.wake.notified() => {}
                _ = tokio::time::sleep_until(wake_at.unwrap_or_else(Instant::now)), if wake_at.is_some() => {}
            }
        }
        // The last handle is gone: let go of the lock now rather than whenever this is dropped.
        self.lock = None;
    }

    /// Brings the lock in line with what is wanted. Returns when to look again if a change
    /// is waiting for the burst to settle.
    async fn step(&mut self) -> Option<Instant> {
        let (running, enabled, rises) = {
            let state = lock(&self.shared.state);
            (state.running, state.enabled, state.rises)
        };
        if !enabled {
            self.lock = None;
            self.conn = None;
            self.failed_at = None;
            self.probed = false;
            self.settle_until = None;
            self.publish(InhibitorStatus::Off);
            return None;
        }
        if running == 0 {
            self.settle_until = None;
            if self.lock.take().is_some() {
                tracing::debug!("sleep inhibitor released: nothing runs");
            }
            if !self.probed && self.failed_at.is_none() {
                self.probed = true;
                if let Err(reason) = self.probe().await {
                    self.fail(rises, reason);
                    return None;
                }
            }
            if self.failed_at.is_none() {
                self.publish(InhibitorStatus::Idle);
            }
            return None;
        }
        if self.failed_at == Some(rises) {
            return None;
        }
        if let Some((_, held)) = &self.lock {
            if *held == running {
                self.settle_until = None;
                return None;
            }
            let now = Instant::now();
            let until = *self.settle_until.get_or_insert(now + SETTLE);
            if now < until {
                return Some(until);
            }
        }
        self.settle_until = None;
        self.probed = true;
        match self.inhibit(running).await {
            Ok(fd) => {
                // The new lock is in place before the old one goes, so the machine is never
                // without one while work runs.
                let old = self.lock.replace((fd, running));
                drop(old);
                self.failed_at = None;
                self.publish(InhibitorStatus::Holding { tasks: running });
            }
            // Re-taking for a new count failed: keep the lock already held (the machine stays
            // awake, only its "why" is stale) and do not try again until work starts anew.
            Err(reason) if self.lock.is_some() => {
                tracing::warn!("could not renew the sleep inhibitor: {reason}");
                self.failed_at = Some(rises);
            }
            Err(reason) => self.fail(rises, reason),
        }
        None
    }

    fn fail(&mut self, rises: u64, reason: String) {
        tracing::warn!("sleep inhibitor unavailable: {reason}");
        self.failed_at = Some(rises);
        self.publish(InhibitorStatus::Unavailable { reason });
    }

    fn publish(&self, status: InhibitorStatus) {
        lock(&self.shared.state).status = status;
    }

    /// Is logind on the bus? `Peer.Ping` also starts it where it is bus-activated.
    async fn probe(&mut self) -> Result<(), String> {
        self.call("org.freedesktop.DBus.Peer", "Ping", &()).await.map(drop)
    }

    /// `Manager.Inhibit("sleep", "Vigil", why, "block")`: the fd that holds the lock.
    async fn inhibit(&mut self, running: usize) -> Result<OwnedFd, String> {
        let why = if running == 1 {
            "1 task running".to_string()
        } else {
            format!("{running} tasks running")
        };
        let reply = self
            .call(MANAGER, "Inhibit", &("sleep", "Vigil", why.as_str(), "block"))
            .await?;
        // The reply keeps its own copy of the fd; this is a duplicate, and the reply is dropped
        // here, so the lock lives exactly as long as `self.lock`.
        reply
            .body()
            .deserialize::<OwnedFd>()
            .map_err(|e| format!("systemd-logind answered Inhibit with no lock ({e}), {CONSEQUENCE}"))
    }

    /// One call to logind. A connection kept from before may have died with a bus restart: a
    /// call that fails on one without an answer from the bus is tried once more on a fresh
    /// connection. An error reply is final: the bus is there and said no.
    async fn call<B>(&mut self, interface: &str, method: &str, body: &B) -> Result<zbus::Message, String>
    where
        B: serde::Serialize + zbus::DynamicType,
    {
        let reused = self.conn.is_some();
        match self.call_once(interface, method, body).await {
            Err(Failure::Unanswered(_)) if reused => self.call_once(interface, method, body).await,
            result => result,
        }
        .map_err(|(Failure::Answered(reason) | Failure::Unanswered(reason))| reason)
    }

    async fn call_once<B>(&mut self, interface: &str, method: &str, body: &B) -> Result<zbus::Message, Failure>
    where
        B: serde::Serialize + zbus::DynamicType,
    {
        let conn = match &self.conn {
            Some(conn) => conn.clone(),
            None => {
                let conn = self.connect().await.map_err(Failure::Unanswered)?;
                self.conn = Some(conn.clone());
                conn
            }
        };
        let call = conn.call_method(Some(LOGIND), LOGIND_PATH, Some(interface), method, body);
        let failure = match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(Ok(reply)) => return Ok(reply),
            Ok(Err(e)) => explain(&e),
            Err(_) => Failure::Unanswered(format!(
                "systemd-logind did not answer within {} s, {CONSEQUENCE}",
                CALL_TIMEOUT.as_secs()
            )),
        };
        // It may be the connection that is broken; the next attempt makes a new one.
        self.conn = None;
        Err(failure)
    }

    async fn connect(&self) -> Result<Connection, String> {
        let builder = match &self.bus {
            Some(address) => zbus::connection::Builder::address(address.as_str()),
            None => zbus::connection::Builder::system(),
        };
        match tokio::time::timeout(CALL_TIMEOUT, builder.method_timeout(CALL_TIMEOUT).build()).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(format!("Vigil cannot reach the system bus ({e}), {CONSEQUENCE}")),
            Err(_) => Err(format!(
                "The system bus did not answer within {} s, {CONSEQUENCE}",
                CALL_TIMEOUT.as_secs()
            )),
        }
    }
}

/// Why a call failed, as a sentence for Settings.
enum Failure {
    /// The bus delivered an error reply: logind is missing or said no.
    Answered(String),
    /// No reply: the connection broke or the call timed out.
    Unanswered(String),
}

fn explain(e: &zbus::Error) -> Failure {
    use zbus::DBusError as _;
    let (name, detail) = match e {
        zbus::Error::FDO(e) => (e.name().to_string(), e.description().map(str::to_owned)),
        zbus::Error::MethodError(name, detail, _) => (name.to_string(), detail.clone()),
        e => return Failure::Unanswered(format!("The call to systemd-logind failed ({e}), {CONSEQUENCE}")),
    };
    if name == "org.freedesktop.DBus.Error.ServiceUnknown" || name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
        return Failure::Answered(format!(
            "The system bus has no systemd-logind ({LOGIND}), {CONSEQUENCE}"
        ));
    }
    let detail = detail.unwrap_or(name);
    Failure::Answered(format!("systemd-logind refused a sleep lock ({detail}), {CONSEQUENCE}"))
}
