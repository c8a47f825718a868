//! A fake ntfy server: what Vigil publishes is recorded, what a phone posts to a topic is
//! streamed to subscribers, and reads need the access token when one is set (a server with
//! `auth-default-access: write-only`, the setup docs/channels.md describes).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::StreamExt as _;
use serde_json::{json, Value};
use tokio::sync::broadcast;
use tokio_util::sync::{CancellationToken, DropGuard};

/// One publish the server took, as it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub topic: String,
    /// The JSON publish body (`title`, `message`, `click`, `actions`…), or for a raw publish
    /// `{"message": <body>}`.
    pub body: Value,
    /// The `Authorization` header, if any.
    pub auth: Option<String>,
}

#[derive(Default)]
struct Topics {
    /// Topic → its messages as subscribers see them (`id`, `time`, `event`, `message`…).
    cached: HashMap<String, Vec<Value>>,
    published: Vec<Published>,
}

struct Shared {
    token: Option<String>,
    topics: Mutex<Topics>,
    live: broadcast::Sender<Value>,
    next_id: AtomicU64,
    /// Every request fails with 503 and open streams end, as a server that went away.
    down: AtomicBool,
    refused_reads: AtomicU64,
    subscribers: AtomicU64,
}

/// A running fake ntfy server; dropping it stops it.
pub struct FakeNtfy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _stop: DropGuard,
}

impl FakeNtfy {
    /// On loopback at a free port; `token`: reading needs `Authorization: Bearer <token>`
    /// (writing does not, so a phone's button can post an answer).
    pub async fn start(token: Option<&str>) -> std::io::Result<FakeNtfy> {
        Self::start_at(crate::loopback(), token).await
    }

    pub async fn start_at(addr: SocketAddr, token: Option<&str>) -> std::io::Result<FakeNtfy> {
        let shared = Arc::new(Shared {
            token: token.map(str::to_string),
            topics: Mutex::default(),
            live: broadcast::channel(256).0,
            next_id: AtomicU64::new(1),
            down: AtomicBool::new(false),
            refused_reads: AtomicU64::new(0),
            subscribers: AtomicU64::new(0),
        });
        let stop = CancellationToken::new();
        let app = axum::Router::new()
            .route("/", post(publish_json))
            .route("/{topic}", post(publish_raw))
            .route("/{topic}/json", get(subscribe))
            .with_state(shared.clone());
        let addr = crate::serve(app, addr, stop.clone()).await?;
        Ok(FakeNtfy {
            addr,
            shared,
            _stop: stop.drop_guard(),
        })
    }

    /// `http://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Everything published so far, in order.
    pub fn published(&self) -> Vec<Published> {
        self.shared
            .topics
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .published
            .clone()
    }

    /// What was published to `topic`.
    pub fn published_to(&self, topic: &str) -> Vec<Published> {
        self.published().into_iter().filter(|p| p.topic == topic).collect()
    }

    /// Waits up to `within` for at least `n` publishes to `topic`.
    pub async fn wait_for(&self, topic: &str, n: usize, within: Duration) -> Vec<Published> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let got = self.published_to(topic);
            if got.len() >= n || tokio::time::Instant::now() >= deadline {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Takes the server down (503 and closed streams) or brings it back.
    pub fn set_down(&self, down: bool) {
        self.shared.down.store(down, Ordering::SeqCst);
        if down {
            let _ = self.shared.live.send(json!({"event": "_down"}));
        }
    }

    /// Reads refused for want of the token.
    pub fn refused_reads(&self) -> u64 {
        self.shared.refused_reads.load(Ordering::SeqCst)
    }

    /// Subscriptions open now.
    pub fn subscribers(&self) -> u64 {
        self.shared.subscribers.load(Ordering::SeqCst)
    }
}

fn auth(headers: &HeaderMap) -> Option<String> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

impl Shared {
    fn is_down(&self) -> bool {
        self.down.load(Ordering::SeqCst)
    }

    /// A wrong token is refused; no token may write (`write-only` for everyone).
    fn may_write(&self, headers: &HeaderMap) -> bool {
        match (auth(headers), &self.token) {
            (None, _) | (_, None) => true,
            (Some(given), Some(t)) => given == format!("Bearer {t}"),
        }
    }

    fn may_read(&self, headers: &HeaderMap) -> bool {
        match &self.token {
            None => true,
            Some(t) => auth(headers).is_some_and(|given| given == format!("Bearer {t}")),
        }
    }

    fn store(&self, topic: &str, body: Value, auth: Option<String>) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let mut message = json!({
            "id": format!("m{id}"),
            "time": id,
            "event": "message",
            "topic": topic,
            "message": body.get("message").cloned().unwrap_or(json!("")),
        });
        for key in ["title", "click", "actions", "tags", "priority"] {
            if let Some(v) = body.get(key) {
                message[key] = v.clone();
            }
        }
        let mut topics = self.topics.lock().unwrap_or_else(|e| e.into_inner());
        topics.published.push(Published {
            topic: topic.to_string(),
            body,
            auth,
        });
        topics
            .cached
            .entry(topic.to_string())
            .or_default()
            .push(message.clone());
        drop(topics);
        let _ = self.live.send(message.clone());
        message
    }
}

fn status(code: StatusCode, why: &str) -> Response {
    (code, axum::Json(json!({"code": code.as_u16(), "error": why}))).into_response()
}

async fn publish_json(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    if s.is_down() {
        return status(StatusCode::SERVICE_UNAVAILABLE, "down");
    }
    if !s.may_write(&headers) {
        return status(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return status(StatusCode::BAD_REQUEST, "invalid JSON");
    };
    let Some(topic) = body.get("topic").and_then(Value::as_str).map(str::to_string) else {
        return status(StatusCode::BAD_REQUEST, "no topic");
    };
    axum::Json(s.store(&topic, body, auth(&headers))).into_response()
}

async fn publish_raw(
    State(s): State<Arc<Shared>>,
    Path(topic): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if s.is_down() {
        return status(StatusCode::SERVICE_UNAVAILABLE, "down");
    }
    if !s.may_write(&headers) {
        return status(StatusCode::UNAUTHORIZED, "unauthorized");
    }
    let text = String::from_utf8_lossy(&body).into_owned();
    axum::Json(s.store(&topic, json!({ "message": text }), auth(&headers))).into_response()
}

/// Counts an open subscription while it lives.
struct Open(Arc<Shared>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.subscribers.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn subscribe(
    State(s): State<Arc<Shared>>,
    Path(topic): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if s.is_down() {
        return status(StatusCode::SERVICE_UNAVAILABLE, "down");
    }
    if !s.may_read(&headers) {
        s.refused_reads.fetch_add(1, Ordering::SeqCst);
        return status(StatusCode::FORBIDDEN, "forbidden");
    }
    let since = q.get("since").cloned();
    let backlog: Vec<Value> = {
        let topics = s.topics.lock().unwrap_or_else(|e| e.into_inner());
        let all = topics.cached.get(&topic).cloned().unwrap_or_default();
        match since.as_deref() {
            Some("all") => all,
            Some(id) => match all.iter().position(|m| m["id"] == id) {
                Some(i) => all[i + 1..].to_vec(),
                None => Vec::new(),
            },
            None => Vec::new(),
        }
    };
    let line = |v: &Value| Ok::<_, std::io::Error>(Bytes::from(format!("{v}\n")));
    if q.get("poll").is_some_and(|p| p == "1") {
        let body: String = backlog.iter().map(|m| format!("{m}\n")).collect();
        return body.into_response();
    }
    s.subscribers.fetch_add(1, Ordering::SeqCst);
    let open = Open(s.clone());
    let mut rx = s.live.subscribe();
    let head = std::iter::once(json!({"event": "open", "topic": topic}))
        .chain(backlog)
        .map(|v| line(&v))
        .collect::<Vec<_>>();
    let live = async_stream(move |tx| async move {
        let _open = open;
        loop {
            let next = tokio::time::timeout(Duration::from_secs(25), rx.recv()).await;
            let v = match next {
                Err(_) => json!({"event": "keepalive", "topic": topic}),
                Ok(Ok(v)) if v["event"] == "_down" => return,
                Ok(Ok(v)) if v["topic"] == topic.as_str() => v,
                Ok(Ok(_)) => continue,
                Ok(Err(broadcast::error::RecvError::Lagged(_))) => continue,
                Ok(Err(_)) => return,
            };
            if tx.send(line(&v)).await.is_err() {
                return;
            }
        }
    });
    let stream = futures_util::stream::iter(head).chain(live);
    Response::builder()
        .header("content-type", "application/x-ndjson")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

type Item = Result<Bytes, std::io::Error>;

/// A stream fed by a task through a small channel.
fn async_stream<F, Fut>(f: F) -> impl futures_util::Stream<Item = Item>
where
    F: FnOnce(tokio::sync::mpsc::Sender<Item>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(f(tx));
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
}
