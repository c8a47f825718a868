//! [`RegistryHandle`]: the clonable way in to the process registry actor.
//!
//! Every method is one message with a `oneshot` reply. Methods taking an `owner` only see
//! that owner's processes (an id of another owner is "not found"); the few without one
//! (`list_all`, `resize`, `raw_output`) are for the Processes panel, which shows them all.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::actor::{Actor, Killer, Msg, Reply};
use super::{
    ExecError, ExecEvents, LogView, Outcome, Polled, ProcessInfo, RegistryConfig, SpawnRequest, TermSize, Yielded,
};
use crate::clock::Clock;

/// How long `write` waits for the child to take its input.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// Room for chunks between the reader threads and the actor. With 64 KiB reads this bounds
/// output in flight to a few MiB however many processes flood at once.
const PUMP_CAPACITY: usize = 64;

/// A cheap, clonable handle to the process registry. When every handle is dropped, or the
/// cancellation token given at start fires, the registry kills what still runs and stops.
#[derive(Clone)]
pub struct RegistryHandle {
    tx: mpsc::UnboundedSender<Msg>,
    /// The registry's clock, so callers can say how long a process has run.
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for RegistryHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryHandle").finish_non_exhaustive()
    }
}

impl RegistryHandle {
    /// Starts the registry actor on the current tokio runtime.
    pub fn start(config: RegistryConfig, clock: Arc<dyn Clock>, events: Arc<dyn ExecEvents>) -> Self {
        Self::start_with_cancel(config, clock, events, CancellationToken::new())
    }

    /// Like [`RegistryHandle::start`]; cancelling `cancel` shuts the registry down (killing
    /// every running process group), as [`RegistryHandle::shutdown`] does.
    pub fn start_with_cancel(
        config: RegistryConfig,
        clock: Arc<dyn Clock>,
        events: Arc<dyn ExecEvents>,
        cancel: CancellationToken,
    ) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let (pump_tx, pump_rx) = mpsc::channel(PUMP_CAPACITY);
        let actor = Actor::new(config, clock.clone(), events, pump_tx, tx.downgrade());
        tokio::spawn(actor.run(rx, pump_rx, cancel));
        Self { tx, clock }
    }

    /// Now, by the registry's clock (what `started_at` and `ended_at` are measured in).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Msg) -> Result<T, ExecError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(make(reply)).map_err(|_| ExecError::ShutDown)?;
        rx.await.map_err(|_| ExecError::ShutDown)?
    }

    /// Starts a command. A spawn failure is recorded as a `FailedToStart` process too.
    pub async fn spawn(&self, req: SpawnRequest) -> Result<ProcessInfo, ExecError> {
        self.ask(|reply| Msg::Spawn { req, reply }).await
    }

    pub async fn info(&self, owner: &str, id: &str) -> Result<ProcessInfo, ExecError> {
        self.ask(|reply| Msg::Info {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// The owner's processes, running and finished, oldest first (finished ones past their
    /// TTL are swept first).
    pub async fn list(&self, owner: &str) -> Vec<ProcessInfo> {
        self.list_scoped(Some(owner.into())).await
    }

    /// Every owner's processes, for the panel.
    pub async fn list_all(&self) -> Vec<ProcessInfo> {
        self.list_scoped(None).await
    }

    async fn list_scoped(&self, owner: Option<String>) -> Vec<ProcessInfo> {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Msg::List { owner, reply }).is_err() {
            return Vec::new();
        }
        rx.await.unwrap_or_default()
    }

    /// Moves a running process to the background (its exit will produce an exit notice), or
    /// returns its outcome if it already finished — atomically, so an exit racing the yield
    /// is reported exactly one way.
    pub async fn background(&self, owner: &str, id: &str) -> Result<Yielded, ExecError> {
        self.ask(|reply| Msg::Yield {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// Waits until the process has finished.
    pub async fn wait(&self, owner: &str, id: &str) -> Result<Outcome, ExecError> {
        self.ask(|reply| Msg::Wait {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// Resolves when there is output not yet polled, or the process has finished.
    pub async fn changed(&self, owner: &str, id: &str) -> Result<(), ExecError> {
        self.ask(|reply| Msg::Changed {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// The process and the end of its stripped output.
    pub async fn tail(&self, owner: &str, id: &str) -> Result<(ProcessInfo, String), ExecError> {
        self.ask(|reply| Msg::Tail {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// Takes the output that arrived since the last poll.
    pub async fn poll(&self, owner: &str, id: &str) -> Result<Polled, ExecError> {
        self.ask(|reply| Msg::Poll {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// All kept output (the newest `max_output_chars`), without consuming anything.
    pub async fn log(&self, owner: &str, id: &str) -> Result<LogView, ExecError> {
        self.ask(|reply| Msg::Log {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// Writes to the child's input; with `eof`, ends it afterwards. Fails if the child does
    /// not take the input within 5 s.
    pub async fn write(&self, owner: &str, id: &str, data: Vec<u8>, eof: bool) -> Result<(), ExecError> {
        let asked = self.ask(|reply| Msg::Write {
            owner: owner.into(),
            id: id.into(),
            data,
            eof,
            reply,
        });
        match tokio::time::timeout(WRITE_TIMEOUT, asked).await {
            Ok(done) => done,
            Err(_) => Err(ExecError::WriteTimedOut {
                id: id.into(),
                secs: WRITE_TIMEOUT.as_secs(),
            }),
        }
    }

    /// Kills the process group (SIGTERM, SIGKILL after the grace period) and waits until the
    /// process has finished. The owner asked, so no exit notice follows. A finished process
    /// just returns its outcome.
    pub async fn kill(&self, owner: &str, id: &str) -> Result<Outcome, ExecError> {
        self.ask(|reply| Msg::Kill {
            owner: Some(owner.into()),
            id: id.into(),
            by: Killer::Owner,
            reply: Some(reply),
        })
        .await
    }

    /// The Processes panel's Kill, of any owner's process: as [`RegistryHandle::kill`], but
    /// the user asked, so a backgrounded process's owner gets its exit notice (`Exec killed
    /// by the user (…)`, see [`super::exit_notice_text`]) and a foreground one's result says
    /// who killed it.
    pub async fn kill_by_user(&self, id: &str) -> Result<Outcome, ExecError> {
        self.ask(|reply| Msg::Kill {
            owner: None,
            id: id.into(),
            by: Killer::User,
            reply: Some(reply),
        })
        .await
    }

    /// Starts a kill without waiting; usable where nothing can be awaited (a drop guard).
    pub fn kill_detached(&self, owner: &str, id: &str) {
        let _ = self.tx.send(Msg::Kill {
            owner: Some(owner.into()),
            id: id.into(),
            by: Killer::Owner,
            reply: None,
        });
    }

    /// Forgets a finished process and its output.
    pub async fn clear(&self, owner: &str, id: &str) -> Result<ProcessInfo, ExecError> {
        self.ask(|reply| Msg::Clear {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// Kills the process if it runs (waiting for it to finish), then forgets it.
    pub async fn remove(&self, owner: &str, id: &str) -> Result<ProcessInfo, ExecError> {
        self.ask(|reply| Msg::Remove {
            owner: owner.into(),
            id: id.into(),
            reply,
        })
        .await
    }

    /// Resizes a process's terminal (the panel's size).
    pub async fn resize(&self, id: &str, size: TermSize) -> Result<(), ExecError> {
        self.ask(|reply| Msg::Resize {
            id: id.into(),
            size,
            reply,
        })
        .await
    }

    /// The raw terminal bytes kept for a process (the newest `max_raw_bytes`).
    pub async fn raw_output(&self, id: &str) -> Result<Vec<u8>, ExecError> {
        self.ask(|reply| Msg::Raw { id: id.into(), reply }).await
    }

    /// Forgets finished processes past their TTL now; returns how many.
    pub async fn sweep(&self) -> usize {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Msg::Sweep { reply }).is_err() {
            return 0;
        }
        rx.await.unwrap_or(0)
    }

    /// Kills every running process group (SIGTERM, then SIGKILL after the grace period),
    /// waits until they have finished, and stops the registry. Later calls fail with
    /// [`ExecError::ShutDown`].
    pub async fn shutdown(&self) {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Msg::Shutdown { reply }).is_ok() {
            let _ = rx.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;
    use crate::exec::NoExecEvents;

    /// The 65th concurrent process is refused with a sentence saying how many run and how to
    /// free one; killing one makes room again. Pipes, not terminals: 64 PTYs would only make
    /// the test slower.
    #[tokio::test]
    async fn at_most_64_processes_run_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let config = RegistryConfig {
            kill_grace: Duration::from_millis(200),
            ..RegistryConfig::default()
        };
        assert_eq!(config.max_running, 64);
        let registry = RegistryHandle::start(config, Arc::new(SystemClock), Arc::new(NoExecEvents));
        let sleeper = |owner: &str| SpawnRequest {
            pty: false,
            ..SpawnRequest::new(owner, "sleep 60", dir.path())
        };
        let mut ids = Vec::new();
        for i in 0..64 {
            // Two owners: the cap is the machine's, not a session's.
            let owner = if i % 2 == 0 { "a" } else { "b" };
            let info = registry.spawn(sleeper(owner)).await.unwrap();
            ids.push((owner, info.id));
        }
        let refused = registry.spawn(sleeper("c")).await.unwrap_err();
        assert!(matches!(refused, ExecError::TooMany { running: 64 }), "{refused:?}");
        assert_eq!(
            refused.to_string(),
            "64 processes are already running, the most that may run at once. Stop one with \
             process kill (process list shows them) or wait for one to finish, then start this again."
        );
        // Refused means not started and not listed.
        assert_eq!(registry.list("c").await, vec![]);
        assert_eq!(registry.list_all().await.len(), 64);

        let (owner, id) = &ids[0];
        registry.kill(owner, id).await.unwrap();
        let started = registry.spawn(sleeper("c")).await.unwrap();
        assert!(started.is_running());
        assert!(matches!(
            registry.spawn(sleeper("c")).await,
            Err(ExecError::TooMany { running: 64 })
        ));
        registry.shutdown().await;
    }

    /// A finished process stays listed for its TTL and is then forgotten: the sweep is armed
    /// by the finish (an idle registry has no timer to wake it).
    #[tokio::test]
    async fn a_finished_process_is_forgotten_after_its_ttl() {
        let dir = tempfile::tempdir().unwrap();
        let config = RegistryConfig {
            finished_ttl: Duration::from_millis(300),
            sweep_every: Duration::from_millis(50),
            ..RegistryConfig::default()
        };
        let registry = RegistryHandle::start(config, Arc::new(SystemClock), Arc::new(NoExecEvents));
        let quick = SpawnRequest {
            pty: false,
            ..SpawnRequest::new("a", "true", dir.path())
        };
        let info = registry.spawn(quick).await.unwrap();
        registry.wait("a", &info.id).await.unwrap();
        assert!(registry.info("a", &info.id).await.is_ok(), "kept while its TTL runs");
        tokio::time::sleep(Duration::from_millis(600)).await;
        // `info` does not sweep (`list` does): only the timer can have forgotten it.
        assert!(registry.info("a", &info.id).await.is_err(), "forgotten after it");
        registry.shutdown().await;
    }
}
