//! # runtime
//!
//! Owns the running system: one clonable [`Runtime`] handle that takes [`Op`]s, runs turns
//! (one at a time per session lane, sessions concurrently), and sends events to the sink.
//! Front ends (the Tauri shell, `vigil-headless`) hold a handle and nothing else.
//!
//! Must never: block the caller of [`Runtime::submit`]; turns run on spawned tasks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vigil_protocol::{
    ConnectionVerdict, ErrorKind, Event, Message, Op, ProviderSettings, Scope, SettingsView, Source,
};

use crate::agent::Turn;
use crate::clock::Clock;
use crate::events::{Emitter, EventSink};
use crate::provider::ModelClient;
use crate::secrets::Secrets;
use crate::session::{Loaded, LockOptions, SessionError, SessionStore, PRIMARY_SESSION};
use crate::settings;

/// A cheap, clonable handle to the runtime.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

struct Inner {
    data_dir: PathBuf,
    clock: Arc<dyn Clock>,
    emitter: Emitter,
    store: SessionStore,
    secrets: Secrets,
    /// `std` lock: read for a clone at turn start, written when settings change; never held
    /// across an await.
    client: RwLock<Option<ModelClient>>,
    /// Session id → its lane. `std` lock: only held to look a lane up.
    lanes: Mutex<HashMap<String, Arc<Lane>>>,
    tasks: TaskTracker,
    /// Cancelled on shutdown; every turn's token is a child of it.
    shutdown: CancellationToken,
}

/// One session's turn slot: turns wait for the `turn` lock, so they run in order.
struct Lane {
    turn: tokio::sync::Mutex<()>,
    /// The running turn's token, for Stop.
    current: Mutex<CancellationToken>,
}

impl Runtime {
    /// Opens the data directory (creating it) and starts with no provider configured;
    /// call [`Runtime::apply_settings`] next.
    pub fn new(
        data_dir: &Path,
        clock: Arc<dyn Clock>,
        sink: Arc<dyn EventSink>,
    ) -> Result<Self, SessionError> {
        let store = SessionStore::open_with(data_dir, clock.clone(), LockOptions::default())?;
        Ok(Self {
            inner: Arc::new(Inner {
                data_dir: data_dir.to_path_buf(),
                emitter: Emitter::new(sink, clock.clone()),
                clock,
                store,
                secrets: Secrets::new(data_dir),
                client: RwLock::new(None),
                lanes: Mutex::new(HashMap::new()),
                tasks: TaskTracker::new(),
                shutdown: CancellationToken::new(),
            }),
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }

    pub fn clock(&self) -> Arc<dyn Clock> {
        self.inner.clock.clone()
    }

    /// Takes one op; returns at once.
    pub fn submit(&self, op: Op) {
        match op {
            Op::UserMessage { text, session_id } => {
                let session_id = session_id.unwrap_or_else(|| PRIMARY_SESSION.to_string());
                self.start_turn(session_id, text);
            }
            Op::Interrupt { session_id } => {
                let session_id = session_id.unwrap_or_else(|| PRIMARY_SESSION.to_string());
                if let Some(lane) = self.lane_if_exists(&session_id) {
                    lane.current
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .cancel();
                }
            }
            Op::Shutdown => self.inner.shutdown.cancel(),
        }
    }

    /// Reports a problem that is not part of any turn (an unreadable op, a settings file…).
    pub fn report(&self, kind: ErrorKind, message: impl Into<String>) {
        self.inner.emitter.emit(
            Source::System,
            Event::Error {
                kind,
                message: message.into(),
            },
        );
    }

    /// Asks the front end to raise a native notification.
    pub fn notify(&self, title: impl Into<String>, body: impl Into<String>) {
        self.inner.emitter.emit(
            Source::System,
            Event::Notification {
                title: title.into(),
                body: body.into(),
            },
        );
    }

    fn lane_if_exists(&self, session_id: &str) -> Option<Arc<Lane>> {
        self.inner
            .lanes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(session_id)
            .cloned()
    }

    fn lane(&self, session_id: &str) -> Arc<Lane> {
        self.inner
            .lanes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(session_id.to_string())
            .or_insert_with(|| {
                Arc::new(Lane {
                    turn: tokio::sync::Mutex::new(()),
                    current: Mutex::new(CancellationToken::new()),
                })
            })
            .clone()
    }

    fn start_turn(&self, session_id: String, text: String) {
        if self.inner.shutdown.is_cancelled() {
            return self.report(
                ErrorKind::InvalidOp,
                "Vigil is shutting down; the message was not sent.",
            );
        }
        let this = self.clone();
        self.inner.tasks.spawn(async move {
            let lane = this.lane(&session_id);
            let _slot = lane.turn.lock().await;
            let cancel = this.inner.shutdown.child_token();
            *lane.current.lock().unwrap_or_else(|e| e.into_inner()) = cancel.clone();
            let run_id = uuid::Uuid::new_v4().to_string();
            let client = this
                .inner
                .client
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let turn = Turn {
                session_id: &session_id,
                store: &this.inner.store,
                client,
                emitter: this
                    .inner
                    .emitter
                    .for_run(&session_id, Scope::Primary, &run_id),
                clock: this.inner.clock.clone(),
                cancel,
            };
            turn.run(text).await;
        });
    }

    /// The saved conversation of a session, with any load warnings.
    pub fn history(&self, session_id: Option<&str>) -> Result<Loaded, SessionError> {
        self.inner.store.load(session_id.unwrap_or(PRIMARY_SESSION))
    }

    /// Convenience for tests and the headless runner.
    pub fn messages(&self, session_id: Option<&str>) -> Vec<Message> {
        self.history(session_id)
            .map(|l| l.messages)
            .unwrap_or_default()
    }

    /// Resolves settings (stored + environment + key) and swaps the client used by the next
    /// turn. Running turns keep the client they started with.
    pub fn apply_settings(
        &self,
        stored: Option<ProviderSettings>,
        warnings: Vec<String>,
    ) -> SettingsView {
        let mut resolved = settings::resolve(stored, &self.inner.secrets, warnings);
        let client = match settings::validate(&resolved.view.provider) {
            Err(e) => {
                resolved.view.warnings.push(e);
                None
            }
            Ok(()) => match ModelClient::new(resolved.config, self.inner.clock.clone()) {
                Ok(c) => Some(c),
                Err(e) => {
                    resolved.view.warnings.push(e.to_string());
                    None
                }
            },
        };
        self.set_client(client);
        resolved.view
    }

    /// Replaces the client the next turn uses (`None`: turns report that no provider is set).
    pub fn set_client(&self, client: Option<ModelClient>) {
        *self.inner.client.write().unwrap_or_else(|e| e.into_inner()) = client;
    }

    /// Stores (or with an empty key, forgets) the API key for a provider kind.
    pub fn set_api_key(
        &self,
        kind: vigil_protocol::ProviderKind,
        key: &str,
    ) -> Result<Option<String>, String> {
        if key.trim().is_empty() {
            self.inner.secrets.delete(kind);
            return Ok(None);
        }
        self.inner
            .secrets
            .set(kind, key)
            .map(|f| f.warning)
            .map_err(|e| e.to_string())
    }

    /// Tries the given settings without saving them. `api_key` overrides the stored key.
    pub async fn test_connection(
        &self,
        provider: ProviderSettings,
        api_key: Option<String>,
    ) -> ConnectionVerdict {
        if let Err(message) = settings::validate(&provider) {
            return ConnectionVerdict { ok: false, message };
        }
        let mut resolved = settings::resolve(Some(provider), &self.inner.secrets, vec![]);
        if let Some(key) = api_key.filter(|k| !k.trim().is_empty()) {
            resolved.config.api_key = Some(key.trim().to_string());
        }
        let client = match ModelClient::new(resolved.config, self.inner.clock.clone()) {
            Ok(c) => c,
            Err(e) => {
                return ConnectionVerdict {
                    ok: false,
                    message: e.to_string(),
                }
            }
        };
        match client
            .test_connection(&self.inner.shutdown.child_token())
            .await
        {
            Ok(message) => ConnectionVerdict { ok: true, message },
            Err(e) => ConnectionVerdict {
                ok: false,
                message: e.to_string(),
            },
        }
    }

    /// Cancels running turns and waits until each has saved what it had.
    pub async fn shutdown(&self) {
        self.inner.shutdown.cancel();
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }

    /// Waits until every turn submitted so far has finished (for scripts reaching EOF).
    pub async fn idle(&self) {
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
        self.inner.tasks.reopen();
    }
}
