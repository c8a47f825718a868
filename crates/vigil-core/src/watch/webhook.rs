//! Webhook triggers: while at least one routine has `{"kind": "webhook"}`, Vigil listens
//! on loopback only — or on the address the user's setting `webhook_bind` names, which
//! Settings shows with a warning — and each such routine has its own secret address,
//! `POST http://127.0.0.1:<port>/hook/<routine>/<secret>`. The secret is compared in
//! constant time, a body over [`MAX_BODY`] is refused, each routine takes at most
//! [`PER_MINUTE`] calls a minute, and the body reaches the run as untrusted data. No webhook
//! routine, no socket.
//!
//! The secrets and the port live in Vigil's data folder (`routine_webhooks.json`), out of
//! every command's reach; the address is shown to the user in the routine's row, never to
//! the model.
//!
//! Must never: listen beyond loopback unless the setting says so; answer differently for a wrong secret and an unknown
//! routine (both 404); keep a socket open with no webhook routine.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, State};
use axum::http::StatusCode;
use axum::routing::post;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

/// The largest body taken.
pub const MAX_BODY: usize = 64 * 1024;
/// Calls per routine per minute; more are refused (429).
pub const PER_MINUTE: usize = 30;
/// The file under the data folder.
pub const FILE: &str = "routine_webhooks.json";

#[derive(Default, Serialize, Deserialize)]
struct Saved {
    #[serde(default)]
    port: u16,
    #[serde(default)]
    secrets: BTreeMap<String, String>,
}

/// The secrets and the port, kept in the data folder.
pub struct Secrets {
    path: PathBuf,
    saved: Mutex<Saved>,
}

impl Secrets {
    pub fn open(data_dir: &Path) -> Self {
        let path = data_dir.join(FILE);
        let saved = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Self {
            path,
            saved: Mutex::new(saved),
        }
    }

    fn save(&self, saved: &Saved) {
        let bytes = serde_json::to_vec_pretty(saved).unwrap_or_default();
        if let Err(e) = crate::durable::write_atomic(&self.path, &bytes) {
            tracing::warn!("the webhook secrets could not be saved: {e}");
        }
    }

    /// Routine `id`'s secret, made on first use.
    pub fn secret(&self, id: &str) -> String {
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = saved.secrets.get(id) {
            return s.clone();
        }
        let s = format!("{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        saved.secrets.insert(id.to_string(), s.clone());
        self.save(&saved);
        s
    }

    fn matches(&self, id: &str, given: &str) -> bool {
        let saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        // An unknown routine is compared against a secret of the same length, so its answer
        // takes as long as a wrong secret's.
        let expected = saved.secrets.get(id).cloned().unwrap_or_else(|| "x".repeat(64));
        bool::from(expected.as_bytes().ct_eq(given.as_bytes())) && saved.secrets.contains_key(id)
    }

    fn port(&self) -> u16 {
        self.saved.lock().unwrap_or_else(|e| e.into_inner()).port
    }

    fn set_port(&self, port: u16) {
        let mut saved = self.saved.lock().unwrap_or_else(|e| e.into_inner());
        if saved.port != port {
            saved.port = port;
            self.save(&saved);
        }
    }
}

/// The running listener; dropping it closes the socket.
pub struct Listener {
    pub port: u16,
    /// The address it listens on (loopback unless the setting names another).
    pub host: std::net::IpAddr,
    /// The routines it takes calls for.
    pub routines: Vec<String>,
    stop: tokio_util::sync::CancellationToken,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[derive(Clone)]
struct Served {
    watch: super::Watch,
    /// Routines taking webhooks now.
    routines: Arc<Vec<String>>,
    calls: Arc<Mutex<HashMap<String, VecDeque<std::time::Instant>>>>,
}

/// Starts listening on `host` (loopback unless the user's setting names another address;
/// the port used before, if it is free) for `routines`.
pub async fn listen(watch: super::Watch, host: std::net::IpAddr, routines: Vec<String>) -> std::io::Result<Listener> {
    let secrets = &watch.shared.webhooks;
    let wanted = secrets.port();
    let listener = match tokio::net::TcpListener::bind((host, wanted)).await {
        Ok(l) => l,
        Err(_) => tokio::net::TcpListener::bind((host, 0)).await?,
    };
    let port = listener.local_addr()?.port();
    secrets.set_port(port);
    let served = Served {
        watch,
        routines: Arc::new(routines.clone()),
        calls: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/hook/{id}/{secret}", post(call))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(served);
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stopped.cancelled().await })
            .await;
    });
    Ok(Listener {
        port,
        host,
        routines,
        stop,
    })
}

async fn call(State(s): State<Served>, UrlPath((id, secret)): UrlPath<(String, String)>, body: Bytes) -> StatusCode {
    if !s.watch.shared.webhooks.matches(&id, &secret) || !s.routines.contains(&id) {
        return StatusCode::NOT_FOUND;
    }
    {
        let mut calls = s.calls.lock().unwrap_or_else(|e| e.into_inner());
        let q = calls.entry(id.clone()).or_default();
        let now = std::time::Instant::now();
        while q.front().is_some_and(|t| now.duration_since(*t).as_secs() >= 60) {
            q.pop_front();
        }
        if q.len() >= PER_MINUTE {
            return StatusCode::TOO_MANY_REQUESTS;
        }
        q.push_back(now);
    }
    let text = String::from_utf8_lossy(&body);
    let evidence = format!(
        "A webhook call ({} bytes). Its body, as sent by whoever called:\n{}",
        body.len(),
        super::check::cut(&text, 8 * 1024)
    );
    let watch = s.watch.clone();
    tokio::spawn(async move { watch.fire(&id, evidence).await });
    StatusCode::ACCEPTED
}
