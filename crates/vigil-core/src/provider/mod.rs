//! # provider
//!
//! Owns talking to models: the Anthropic Messages API and the OpenAI-compatible Chat
//! Completions API, both streamed over SSE (parsed by `eventsource-stream`, never by hand).
//! Retries 429/5xx/529 and connection failures with exponential back-off, honouring
//! `Retry-After`, but only before the reply started: once text has reached the user a retry
//! would repeat it, so a mid-stream failure is an error that keeps the partial reply.
//!
//! Images go out in each protocol's own shape (Anthropic `image` blocks with a base64 source,
//! OpenAI `image_url` parts with a data URL), from the bytes the caller put in
//! [`ChatRequest::images`]. Once a model has refused images, this client sends each image as
//! a line saying so instead, until the settings change (a new client): the conversation goes
//! on rather than failing at every message.
//!
//! What a server sends is held to bounds, so a hostile or broken one cannot exhaust memory:
//! an event of at most 16 MiB (`sse`), an error body read up to 64 KiB.
//!
//! Redirects are followed only within the base URL's origin (scheme, host and port): a
//! redirect elsewhere is an error naming the target, never a request there.
//!
//! Must never: log or return the API key, or touch sessions (the agent decides what to keep);
//! send the key or the conversation to any origin but the configured base URL's.

mod anthropic;
mod assemble;
mod error;
mod images;
mod openai;
mod sse;
#[cfg(test)]
mod wire_tests;

use std::sync::Arc;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;
use vigil_protocol::{Message, ProviderKind, StopReason};

use crate::clock::Clock;
use assemble::Assembler;
pub use assemble::{Completion, INVALID_ARGUMENTS};
pub use error::ProviderError;
pub use images::RequestImages;

/// Everything needed to reach one model.
#[derive(Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    pub base_url: String,
    pub model: String,
    pub max_tokens: u32,
    /// Sent as `x-api-key` (Anthropic) or `Authorization: Bearer` (OpenAI); `None` for
    /// local servers that need none.
    pub api_key: Option<String>,
    pub connect_timeout: Duration,
    /// Longest silence tolerated inside a stream (Anthropic pings every few seconds).
    pub idle_timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
}

impl std::fmt::Debug for ProviderConfig {
    // Hand-written so the key can never reach a log through `{:?}`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .finish_non_exhaustive()
    }
}

impl ProviderConfig {
    pub fn new(kind: ProviderKind, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            kind,
            base_url: base_url.into(),
            model: model.into(),
            max_tokens: vigil_protocol::DEFAULT_MAX_TOKENS,
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(90),
            max_retries: 3,
        }
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One request to the model.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    /// Shared with the tool registry: the same specs go out with every request.
    pub tools: Arc<[ToolSpec]>,
    /// The bytes of the images `messages` name; one missing here is sent as a line saying so.
    pub images: RequestImages,
    /// How long the provider should keep the stable prefix (tools + system) cached.
    pub cache: CacheLife,
}

/// How long a prompt cache entry should live, where the provider lets the client say
/// (Anthropic's `cache_control.ttl`; OpenAI-compatible servers decide for themselves).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CacheLife {
    /// The provider's default: Anthropic's 5 minutes, enough for a conversation's turns.
    #[default]
    Minutes,
    /// An hour (writes cost 2× instead of 1.25×): for background runs that come back within
    /// the hour, so each reads the prefix the last one wrote.
    Hour,
}

/// What the client reports while a reply streams.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// A transient failure; the request is sent again after `delay`.
    Retrying {
        attempt: u32,
        delay: Duration,
        error: ProviderError,
    },
}

/// A failed reply, with whatever had arrived before the failure.
#[derive(Debug)]
pub struct StreamFailure {
    pub error: ProviderError,
    pub partial: Completion,
}

/// Back-off before retry `attempt` (1-based) when the server gave no `Retry-After`.
fn backoff(attempt: u32) -> Duration {
    let secs = 1u64 << (attempt.saturating_sub(1)).min(5);
    Duration::from_secs(secs.min(30))
}

/// The longest `Retry-After` honoured; beyond it the error goes to the user.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// A streaming client for one configured provider. Cheap to clone.
#[derive(Clone)]
pub struct ModelClient {
    config: Arc<ProviderConfig>,
    http: reqwest::Client,
    clock: Arc<dyn Clock>,
    /// Set when the model answered that it does not accept images; shared by the clones, and
    /// gone with the client when the settings change.
    images_refused: Arc<std::sync::atomic::AtomicBool>,
}

/// Whether the parser wants more events.
pub(crate) enum Flow {
    More,
    Done,
}

impl ModelClient {
    pub fn new(config: ProviderConfig, clock: Arc<dyn Clock>) -> Result<Self, ProviderError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .redirect(same_origin_redirects())
            .user_agent(concat!("vigil/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Config(format!("could not set up HTTP: {e}")))?;
        Ok(Self {
            config: Arc::new(config),
            http,
            clock,
            images_refused: Arc::default(),
        })
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Streams one reply, retrying transient failures that happen before any content.
    pub async fn stream(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<Completion, StreamFailure> {
        let mut attempt = 0;
        loop {
            let mut asm = Assembler::default();
            let result = self.attempt(request, cancel, &mut asm, on_event).await;
            if matches!(result, Err(ProviderError::ImagesNotAccepted { .. })) {
                self.images_refused.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            let error = match result {
                Ok(()) => {
                    return asm.finish().map_err(|error| StreamFailure {
                        error,
                        partial: Completion {
                            content: vec![],
                            stop_reason: StopReason::Error,
                            usage: Default::default(),
                            model: None,
                        },
                    })
                }
                Err(e) => e,
            };
            let started = asm.started();
            attempt += 1;
            let delay = error.retry_after().unwrap_or_else(|| backoff(attempt));
            if started || !error.is_retryable() || attempt > self.config.max_retries || delay > MAX_RETRY_AFTER {
                let stop = if error == ProviderError::Cancelled {
                    StopReason::Cancelled
                } else {
                    StopReason::Error
                };
                return Err(StreamFailure {
                    error,
                    partial: asm.partial(stop),
                });
            }
            tracing::warn!(attempt, ?delay, %error, "provider request failed; retrying");
            on_event(StreamEvent::Retrying { attempt, delay, error });
            tokio::select! {
                _ = cancel.cancelled() => {
                    return Err(StreamFailure { error: ProviderError::Cancelled, partial: asm.partial(StopReason::Cancelled) });
                }
                _ = self.clock.sleep(delay) => {}
            }
        }
    }

    async fn attempt(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
        asm: &mut Assembler,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
    ) -> Result<(), ProviderError> {
        let cfg = &*self.config;
        let images = images::Wire {
            images: &request.images,
            refused: self.images_refused.load(std::sync::atomic::Ordering::Relaxed),
        };
        let (url, body) = match cfg.kind {
            ProviderKind::Anthropic => anthropic::request(cfg, request, &images),
            ProviderKind::Openai => openai::request(cfg, request, &images),
        };
        let mut builder = self
            .http
            .post(&url)
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .body(body);
        builder = match cfg.kind {
            ProviderKind::Anthropic => anthropic::auth(builder, cfg),
            ProviderKind::Openai => openai::auth(builder, cfg),
        };
        let response = tokio::select! {
            _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
            r = builder.send() => r.map_err(|e| transport_error(&url, e, cfg))?,
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| error::parse_retry_after(v, std::time::SystemTime::now()));
            let body = tokio::select! {
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                b = tokio::time::timeout(cfg.idle_timeout, read_capped(response, MAX_ERROR_BODY)) => b.unwrap_or_default(),
            };
            return Err(ProviderError::from_status(
                status.as_u16(),
                &body,
                retry_after,
                &cfg.model,
                &url,
            ));
        }

        let mut events = sse::Bounded::new(response.bytes_stream()).eventsource();
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                n = tokio::time::timeout(cfg.idle_timeout, events.next()) => n,
            };
            let event = match next {
                Err(_) => {
                    return Err(ProviderError::Timeout {
                        what: "the stream went silent",
                        seconds: cfg.idle_timeout.as_secs(),
                    })
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err(stream_error(e)),
                Ok(Some(Ok(event))) => event,
            };
            if let Flow::Done = feed(cfg.kind, asm, &event, on_event)? {
                return Ok(());
            }
        }
        ended(cfg.kind, asm)
    }

    /// Checks that the provider answers with these settings: the key is accepted and the
    /// model exists. Sends the smallest possible request.
    pub async fn test_connection(&self, cancel: &CancellationToken) -> Result<String, ProviderError> {
        let request = ChatRequest {
            system: String::new(),
            messages: vec![Message::user_text("Reply with the word ok.", self.clock.now_ms())],
            tools: Arc::default(),
            images: RequestImages::default(),
            cache: CacheLife::Minutes,
        };
        let mut probe = self.clone();
        let mut cfg = (*self.config).clone();
        cfg.max_retries = 0;
        cfg.max_tokens = 16;
        probe.config = Arc::new(cfg);
        let done = probe.stream(&request, cancel, &mut |_| {}).await.map_err(|f| f.error)?;
        Ok(format!(
            "Connected: {} answered with model {}.",
            self.config.base_url,
            done.model.unwrap_or_else(|| self.config.model.clone())
        ))
    }
}

/// Hands one server-sent event to the protocol's decoder.
fn feed(
    kind: ProviderKind,
    asm: &mut Assembler,
    event: &eventsource_stream::Event,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<Flow, ProviderError> {
    let flow = match kind {
        ProviderKind::Anthropic => anthropic::on_event(asm, &event.event, &event.data, on_event)?,
        ProviderKind::Openai => openai::on_event(asm, &event.data, on_event)?,
    };
    if let Flow::Done = flow {
        asm.finished = true;
    }
    Ok(flow)
}

/// The body ended without the protocol's terminator: whole for some servers, cut for others.
fn ended(kind: ProviderKind, asm: &Assembler) -> Result<(), ProviderError> {
    match kind {
        // Some OpenAI-compatible servers omit `[DONE]` after a finish_reason; the reply is whole.
        ProviderKind::Openai if asm.stop_reason.is_some() => Ok(()),
        _ => Err(ProviderError::Stream {
            message: "the connection closed before the reply was complete".into(),
        }),
    }
}

/// Decodes a whole response body that arrived in `chunks` (split anywhere, even inside a
/// UTF-8 character) exactly as a live stream is decoded: the fuzz targets and replays of
/// recorded streams use it.
pub fn assemble_sse(
    kind: ProviderKind,
    chunks: Vec<bytes::Bytes>,
    on_event: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<Completion, ProviderError> {
    use futures_util::FutureExt;
    let mut asm = Assembler::default();
    let body = futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::convert::Infallible>));
    let mut events = sse::Bounded::new(body).eventsource();
    // An in-memory stream is always ready: `now_or_never` never sees a pending poll.
    while let Some(Some(next)) = events.next().now_or_never() {
        let event = next.map_err(stream_error)?;
        if let Flow::Done = feed(kind, &mut asm, &event, on_event)? {
            return asm.finish();
        }
    }
    ended(kind, &asm)?;
    asm.finish()
}

impl Assembler {
    /// Whether anything of the reply reached the caller (after which retrying would repeat it).
    fn started(&self) -> bool {
        self.has_content()
    }
}

/// A redirect that would leave the base URL's origin, refused.
#[derive(Debug)]
struct CrossOrigin {
    from: reqwest::Url,
    to: reqwest::Url,
}

impl std::fmt::Display for CrossOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "redirect from {} to {}", self.from, self.to)
    }
}

impl std::error::Error for CrossOrigin {}

/// Follows a redirect only to the same scheme, host and port, at most 10 times.
///
/// Refused rather than followed without the key: a 307 or 308 sends the same request
/// again, body and all, so the other server would still get the whole conversation (the
/// system prompt, files the agent read, tool output); and reqwest drops `Authorization` on
/// a host change but not `x-api-key`. Nor is https → http followed (another scheme is
/// another origin), which would put both on the wire in clear. A provider that really moved
/// is one Settings edit away, and the error says where to.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let origin = |u: &reqwest::Url| {
            (
                u.scheme().to_owned(),
                u.host_str().map(str::to_owned),
                u.port_or_known_default(),
            )
        };
        let Some(first) = attempt.previous().first() else {
            return attempt.stop();
        };
        if origin(first) != origin(attempt.url()) {
            let refused = CrossOrigin {
                from: first.clone(),
                to: attempt.url().clone(),
            };
            return attempt.error(refused);
        }
        if attempt.previous().len() > 10 {
            return attempt.error("more than 10 redirects");
        }
        attempt.follow()
    })
}

/// The most of an error body read: the message is in its first few hundred bytes, and a
/// server must not make Vigil hold an endless one.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The first `cap` bytes of the body (lossy UTF-8); the rest is never read. A failed read
/// keeps what had arrived.
async fn read_capped(mut response: reqwest::Response, cap: usize) -> String {
    let mut body = Vec::new();
    while body.len() < cap {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk[..chunk.len().min(cap - body.len())]),
            Ok(None) | Err(_) => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// A broken or unreadable stream, in words.
fn stream_error<E: std::fmt::Display>(e: eventsource_stream::EventStreamError<sse::Wire<E>>) -> ProviderError {
    use eventsource_stream::EventStreamError;
    let message = match e {
        EventStreamError::Transport(sse::Wire::TooLong) => sse::too_long_message(),
        other => other.to_string(),
    };
    ProviderError::Stream { message }
}

fn transport_error(url: &str, e: reqwest::Error, cfg: &ProviderConfig) -> ProviderError {
    if e.is_timeout() || e.is_connect() && format!("{e:?}").contains("TimedOut") {
        return ProviderError::Timeout {
            what: "connecting",
            seconds: cfg.connect_timeout.as_secs(),
        };
    }
    if e.is_builder() {
        return ProviderError::Config(format!("the base URL \"{}\" is not a valid URL", cfg.base_url));
    }
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        if let Some(r) = s.downcast_ref::<CrossOrigin>() {
            let to = r.to.origin().ascii_serialization();
            return ProviderError::Config(format!(
                "{} redirected the request to {}, another server. Vigil sends your API key and \
                 conversation only to the base URL in Settings; if {to} is the right server, set \
                 the base URL to it.",
                r.from, r.to
            ));
        }
        source = s.source();
    }
    // reqwest's Display hides the cause ("error sending request"); the chain names it.
    let mut message = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        message = s.to_string();
        source = s.source();
    }
    ProviderError::Network {
        url: url.to_string(),
        message,
    }
}

/// Joins a base URL and a path without doubling or dropping the slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}
