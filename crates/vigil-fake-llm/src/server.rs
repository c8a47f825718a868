//! The HTTP side: routes, the shared state behind them (script, step cursor, recorded
//! requests, request log), the api-key and model gates, and turning a resolved
//! [`Action`] into a response.
//!
//! Protocol shapes come from `anthropic` / `openai`, streaming bodies from `sse`; this module
//! decides only *which* answer a request gets.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::reply::{self, Action, Reply};
use crate::script::{ErrorStep, RawStep, Script, Step};
use crate::sse::{self, Piece};
use crate::{anthropic, openai};

/// Real prompts with long histories and images exceed axum's 2 MB default; the fake must
/// accept anything the real service would.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// One request as it reached the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    pub path: String,
    /// Lowercased header names; repeated headers joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON, else as (lossy UTF-8) text; `null` when empty.
    pub body: Value,
}

/// State shared by every connection; owned by an `Arc` held by the router and the handle.
pub(crate) struct Shared {
    /// A `std::sync::Mutex`, not Tokio's: it is held only for short sections with no await.
    state: Mutex<ScriptState>,
    /// The `--log` file; appends are whole lines written under this lock so lines never
    /// interleave.
    log: Option<Mutex<File>>,
    /// Keep only this many of a recorded body's last `messages` (see `Options`).
    keep_messages: Option<usize>,
    /// Cancelled when the server stops: ends graceful shutdown and aborts live streams.
    pub(crate) shutdown: CancellationToken,
    /// Numbers response ids so each reply is distinguishable in client logs.
    next_id: AtomicU64,
    /// Anthropic's prompt cache, for the usage a reply reports.
    pub(crate) cache: crate::prompt_cache::PromptCache,
}

struct ScriptState {
    script: Script,
    cursor: usize,
    requests: Vec<RecordedRequest>,
}

impl Shared {
    pub(crate) fn new(
        script: Script,
        log: Option<File>,
        keep_messages: Option<usize>,
        shutdown: CancellationToken,
    ) -> Self {
        Shared {
            state: Mutex::new(ScriptState {
                script,
                cursor: 0,
                requests: Vec::new(),
            }),
            log: log.map(Mutex::new),
            keep_messages,
            shutdown,
            next_id: AtomicU64::new(1),
            cache: Default::default(),
        }
    }

    /// No code panics while holding the lock with state half-updated, so a poisoned lock
    /// still guards consistent data.
    fn lock(&self) -> MutexGuard<'_, ScriptState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    pub(crate) fn requests_since(&self, n: usize) -> Vec<RecordedRequest> {
        self.lock().requests.get(n..).map(<[_]>::to_vec).unwrap_or_default()
    }

    pub(crate) fn request_count(&self) -> usize {
        self.lock().requests.len()
    }

    pub(crate) fn set_script(&self, script: Script) {
        let mut state = self.lock();
        state.script = script;
        state.cursor = 0;
    }

    fn record(&self, path: &str, headers: &HeaderMap, body: &Bytes) -> Value {
        let mut names: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in headers {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            names
                .entry(name.as_str().to_owned())
                .and_modify(|v| {
                    v.push_str(", ");
                    v.push_str(&value);
                })
                .or_insert(value);
        }
        let parsed = if body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(body).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(body).into_owned()))
        };
        let mut kept = parsed.clone();
        if let (Some(keep), Some(messages)) = (
            self.keep_messages,
            kept.get_mut("messages").and_then(Value::as_array_mut),
        ) {
            let cut = messages.len().saturating_sub(keep);
            messages.drain(..cut);
        }
        let recorded = RecordedRequest {
            path: path.to_owned(),
            headers: names,
            body: kept,
        };
        if let Some(log) = &self.log {
            append_log(log, &recorded);
        }
        self.lock().requests.push(recorded);
        parsed
    }

    fn gate(&self) -> (Option<String>, Option<Vec<String>>) {
        let state = self.lock();
        (state.script.api_key.clone(), state.script.models.clone())
    }

    fn context_window(&self) -> Option<u64> {
        self.lock().script.context_window
    }

    /// The next step, advancing the cursor; the fallback once steps run out. A side request
    /// (see [`Script::side_replies`]) gets its own step and leaves the cursor where it is.
    fn next_step(&self, request: &Value) -> Step {
        let mut state = self.lock();
        if !state.script.side_replies.is_empty() {
            let system = reply::system_text(request);
            if let Some(side) = state
                .script
                .side_replies
                .iter()
                .find(|r| system.contains(&r.system_contains))
            {
                return side.step.clone();
            }
        }
        let cursor = state.cursor;
        match state.script.steps.get(cursor).cloned() {
            Some(step) => {
                state.cursor += 1;
                step
            }
            None => state.script.fallback.clone().unwrap_or_else(Step::echo),
        }
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }
}

fn append_log(log: &Mutex<File>, recorded: &RecordedRequest) {
    let mut line = match serde_json::to_string(recorded) {
        Ok(line) => line,
        Err(e) => {
            tracing::warn!("cannot serialize request for the log: {e}");
            return;
        }
    };
    line.push('\n');
    let mut file = log.lock().unwrap_or_else(PoisonError::into_inner);
    if let Err(e) = file.write_all(line.as_bytes()).and_then(|()| file.flush()) {
        tracing::warn!("cannot append to the request log: {e}");
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Protocol {
    Anthropic,
    OpenAi,
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/_requests", get(requests))
        .route("/_script", post(set_script))
        .route("/_reset", post(reset))
        .fallback(unknown)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn messages(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    chat(&shared, Protocol::Anthropic, "/v1/messages", &headers, &body)
}

async fn chat_completions(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    chat(&shared, Protocol::OpenAi, "/v1/chat/completions", &headers, &body)
}

fn chat(shared: &Shared, protocol: Protocol, path: &str, headers: &HeaderMap, body: &Bytes) -> Response {
    let request = shared.record(path, headers, body);
    let (api_key, models) = shared.gate();
    if let Some(key) = api_key {
        let ok = match protocol {
            Protocol::Anthropic => header_str(headers, "x-api-key") == Some(key.as_str()),
            Protocol::OpenAi => bearer(headers) == Some(key.as_str()),
        };
        if !ok {
            return auth_error(protocol, headers);
        }
    }
    if !request.is_object() {
        return invalid_request(protocol, "request body must be a JSON object");
    }
    let Some(model) = request.get("model").and_then(Value::as_str) else {
        return invalid_request(protocol, "model: Field required");
    };
    if models.is_some_and(|m| !m.iter().any(|m| m == model)) {
        let body = match protocol {
            Protocol::Anthropic => anthropic::model_not_found_body(model),
            Protocol::OpenAi => openai::model_not_found_body(model),
        };
        return json_response(StatusCode::NOT_FOUND, &body);
    }
    if let Some(window) = shared.context_window() {
        let tokens = reply::request_tokens(&request);
        if tokens > window {
            let body = match protocol {
                Protocol::Anthropic => anthropic::too_long_body(tokens, window),
                Protocol::OpenAi => openai::too_long_body(tokens, window),
            };
            return json_response(StatusCode::BAD_REQUEST, &body);
        }
    }
    // Gates come before the cursor moves: a rejected request does not use up a step.
    let step = shared.next_step(&request);
    let n = shared.next_id();
    match reply::resolve(&step, &request, n) {
        Action::Error(e) => error_response(protocol, &e),
        Action::Raw(r) => raw_response(&r, shared.shutdown.clone()),
        Action::Reply(mut r) => {
            if protocol == Protocol::Anthropic {
                let cached = shared.cache.account(&request);
                r.input_tokens = r.input_tokens.saturating_sub(cached.read + cached.write).max(1);
                (r.cache_read_tokens, r.cache_write_tokens) = (cached.read, cached.write);
            }
            let streaming = request.get("stream").and_then(Value::as_bool) == Some(true);
            reply_response(protocol, &r, model, n, streaming, &request, shared)
        }
    }
}

fn reply_response(
    protocol: Protocol,
    reply: &Reply,
    model: &str,
    n: u64,
    streaming: bool,
    request: &Value,
    shared: &Shared,
) -> Response {
    let created = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (rendered, request_id) = match protocol {
        Protocol::Anthropic => {
            let id = format!("msg_fake_{n:06}");
            if !streaming {
                return json_response(StatusCode::OK, &anthropic::message(reply, model, &id));
            }
            (anthropic::stream(reply, model, &id), ("request-id", id))
        }
        Protocol::OpenAi => {
            let id = format!("chatcmpl-fake-{n:06}");
            if !streaming {
                let body = openai::completion(reply, model, &id, created);
                return json_response(StatusCode::OK, &body);
            }
            let include_usage = request
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                == Some(true);
            let rendered = openai::stream(reply, model, &id, created, include_usage);
            (rendered, ("x-request-id", id))
        }
    };
    let pieces = sse::plan(rendered, &reply.faults, reply.delay);
    let mut response = sse_response(sse::body(pieces, shared.shutdown.clone()));
    if let Ok(value) = HeaderValue::from_str(&request_id.1) {
        response.headers_mut().insert(request_id.0, value);
    }
    response
}

fn error_response(protocol: Protocol, e: &ErrorStep) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let error_type = e
        .error_type
        .as_deref()
        .unwrap_or_else(|| anthropic::error_type_for_status(status.as_u16()));
    let body = match protocol {
        Protocol::Anthropic => anthropic::error_body(error_type, &e.message),
        Protocol::OpenAi => {
            let (openai_type, code) = openai::map_error_type(error_type);
            openai::error_body(&e.message, openai_type, e.code.as_deref().or(code))
        }
    };
    let mut response = json_response(status, &body);
    if let Some(retry_after) = &e.retry_after {
        match HeaderValue::from_str(retry_after) {
            Ok(value) => {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            Err(_) => tracing::warn!("retry_after {retry_after:?} is not a valid header value"),
        }
    }
    response
}

fn raw_response(r: &RawStep, shutdown: CancellationToken) -> Response {
    let delay = std::time::Duration::from_millis(r.delay_ms);
    let mut pieces = Vec::new();
    for (i, chunk) in r.chunks.iter().enumerate() {
        if i > 0 && !delay.is_zero() {
            pieces.push(Piece::Sleep(delay));
        }
        pieces.push(Piece::Bytes(Bytes::copy_from_slice(chunk.as_bytes())));
    }
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK);
    let mut response = (status, sse::body(pieces, shutdown)).into_response();
    if let Ok(value) = HeaderValue::from_str(&r.content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

fn auth_error(protocol: Protocol, headers: &HeaderMap) -> Response {
    let body = match protocol {
        Protocol::Anthropic => anthropic::auth_error_body(),
        Protocol::OpenAi => openai::auth_error_body(bearer(headers)),
    };
    json_response(StatusCode::UNAUTHORIZED, &body)
}

fn invalid_request(protocol: Protocol, message: &str) -> Response {
    let body = match protocol {
        Protocol::Anthropic => anthropic::error_body("invalid_request_error", message),
        Protocol::OpenAi => openai::error_body(message, "invalid_request_error", None),
    };
    json_response(StatusCode::BAD_REQUEST, &body)
}

async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    shared.record("/v1/models", &headers, &body);
    let (api_key, models) = shared.gate();
    if let Some(key) = api_key {
        let given = [header_str(&headers, "x-api-key"), bearer(&headers)];
        if !given.contains(&Some(key.as_str())) {
            // Answer in the style of whichever client seems to be asking.
            let anthropic_client = headers.contains_key("x-api-key") || headers.contains_key("anthropic-version");
            let protocol = if anthropic_client {
                Protocol::Anthropic
            } else {
                Protocol::OpenAi
            };
            return auth_error(protocol, &headers);
        }
    }
    let ids = models.unwrap_or_else(|| vec!["fake-model".to_owned()]);
    // Fields of both services at once, so either client's parser finds what it needs.
    let data: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"id": id, "object": "model", "type": "model", "display_name": id,
                "created": 0, "created_at": "2025-01-01T00:00:00Z", "owned_by": "vigil-fake-llm"})
        })
        .collect();
    let body = json!({"object": "list", "data": data, "has_more": false,
        "first_id": ids.first(), "last_id": ids.last()});
    json_response(StatusCode::OK, &body)
}

async fn requests(State(shared): State<Arc<Shared>>) -> Json<Vec<RecordedRequest>> {
    Json(shared.requests())
}

async fn set_script(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let text = String::from_utf8_lossy(&body);
    match Script::from_json(&text) {
        Ok(script) => {
            shared.set_script(script);
            json_response(StatusCode::OK, &json!({"ok": true}))
        }
        Err(e) => json_response(StatusCode::BAD_REQUEST, &json!({"ok": false, "error": e.to_string()})),
    }
}

async fn reset(State(shared): State<Arc<Shared>>) -> Response {
    shared.lock().requests.clear();
    json_response(StatusCode::OK, &json!({"ok": true}))
}

/// Unknown paths are recorded too: a client that builds the wrong URL shows up in
/// `/_requests` instead of vanishing.
async fn unknown(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    shared.record(uri.path(), &headers, &body);
    let message = format!("no route for {}", uri.path());
    json_response(
        StatusCode::NOT_FOUND,
        &anthropic::error_body("not_found_error", &message),
    )
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    header_str(headers, "authorization").and_then(|v| v.strip_prefix("Bearer "))
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, Json(body)).into_response()
}

fn sse_response(body: Body) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
