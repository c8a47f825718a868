//! # vigil-fake-llm
//!
//! A scripted fake LLM provider: a real HTTP server that speaks the Anthropic Messages and
//! OpenAI Chat Completions streaming protocols byte for byte like the real services, so
//! Vigil's real HTTP client can be tested against it — including the faults real networks
//! and real providers produce (split reads, CRLF, dropped connections, stalls, in-stream
//! errors, invalid JSON).
//!
//! ## Layout
//!
//! - [`script`] — the JSON script format ([`Script`], [`Step`]) and constructors.
//! - `faults` — [`StreamOptions`] and [`Faults`]: chunking, delays and wire faults of a step.
//! - `prompt_cache` — Anthropic's prompt cache: breakpoints, reads, writes, 5 min / 1 h.
//! - `reply` — resolves a step against the request (echo text, token estimates).
//! - `anthropic` / `openai` — render a reply and errors in each protocol's shapes.
//! - `sse` — SSE framing, fault injection, and the chunk-by-chunk streaming body.
//! - `server` — routes, shared state, api-key/model gates, [`RecordedRequest`]s.
//! - [`FakeLlm`] (here) — the handle tests hold; dropping it stops the server.
//!
//! Endpoints: `POST /v1/messages`, `POST /v1/chat/completions`, `GET /v1/models`, and the
//! control routes `GET /_requests`, `POST /_script`, `POST /_reset`.

mod anthropic;
mod faults;
mod openai;
mod prompt_cache;
mod reply;
pub mod script;
mod server;
mod sse;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

pub use script::{
    EchoStep, ErrorStep, Faults, RawChunk, RawStep, Script, ScriptError, SideReply, Step, StopReason, StreamOptions,
    TextStep, ToolCall, ToolCallsStep, Usage,
};
pub use server::RecordedRequest;

/// Where and how to run the server; [`Options::default`] is `127.0.0.1:0`, no log.
#[derive(Debug, Clone)]
pub struct Options {
    pub addr: SocketAddr,
    /// Append every recorded request to this file as one JSON line.
    pub log: Option<PathBuf>,
    /// Record only the last this-many entries of a body's `messages`: a long soak run
    /// resends the whole history in every request, which kept in full grows as its square.
    pub keep_messages: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            log: None,
            keep_messages: None,
        }
    }
}

/// A running fake server. Cheap to query from tests; dropping it shuts the server down and
/// aborts any response still streaming.
pub struct FakeLlm {
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    task: JoinHandle<()>,
    /// Cancels the shutdown token when the handle is dropped, mini-redis style, so a test
    /// that forgets to stop the server cannot leak it.
    _guard: DropGuard,
}

impl FakeLlm {
    /// Serve `script` on `127.0.0.1` at a free port.
    pub async fn start(script: Script) -> std::io::Result<FakeLlm> {
        Self::start_with(script, Options::default()).await
    }

    /// Serve `script` with explicit address and log file.
    pub async fn start_with(script: Script, options: Options) -> std::io::Result<FakeLlm> {
        let log = match &options.log {
            Some(path) => Some(std::fs::OpenOptions::new().create(true).append(true).open(path)?),
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(options.addr).await?;
        let addr = listener.local_addr()?;
        let shutdown = CancellationToken::new();
        let shared = Arc::new(server::Shared::new(
            script,
            log,
            options.keep_messages,
            shutdown.clone(),
        ));
        let app = server::router(shared.clone());
        let stop = shutdown.clone();
        let task = tokio::spawn(async move {
            use axum::serve::ListenerExt as _;
            // As real providers' servers do: each SSE frame leaves at once. With Nagle on,
            // a frame written while the previous one waits for its (delayed) ACK stalls
            // ~40 ms, which made every scripted turn on loopback take ~45 ms.
            let listener = listener.tap_io(|tcp| {
                if let Err(e) = tcp.set_nodelay(true) {
                    tracing::warn!("fake LLM: TCP_NODELAY not set: {e}");
                }
            });
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::warn!("fake LLM server stopped: {e}");
            }
        });
        Ok(FakeLlm {
            addr,
            shared,
            task,
            _guard: shutdown.drop_guard(),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`; the Anthropic client appends `/v1/messages`.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`; the OpenAI client appends `/chat/completions`.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request recorded so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests()
    }

    /// The requests recorded after the first `n`, oldest first.
    pub fn requests_since(&self, n: usize) -> Vec<RecordedRequest> {
        self.shared.requests_since(n)
    }

    /// How many requests were recorded, without copying them.
    pub fn request_count(&self) -> usize {
        self.shared.request_count()
    }

    /// Moves the prompt cache's clock on by `by`: entries expire as if that time had passed.
    pub fn advance_clock(&self, by: std::time::Duration) {
        self.shared.cache.advance(by);
    }

    /// Replace the script and start again from its first step.
    pub fn set_script(&self, script: Script) {
        self.shared.set_script(script);
    }

    /// Stop accepting, abort live streams, and wait until the server has finished.
    pub async fn shutdown(self) {
        self.shared.shutdown.cancel();
        if let Err(e) = self.task.await {
            tracing::warn!("fake LLM server task failed: {e}");
        }
    }
}
