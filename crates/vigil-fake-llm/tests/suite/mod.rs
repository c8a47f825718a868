//! Shared helpers: a tiny SSE parser and request shortcuts, so each case states only what
//! it checks.

mod anthropic;
mod binary;
mod control;
mod faults;
mod openai;

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{json, Value};
use vigil_fake_llm::FakeLlm;

/// One parsed SSE event: `event:` name (if any) and the joined `data:` lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: Option<String>,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {}", self.data))
    }
}

/// Parse an SSE body the way the spec says: lines end in `\n`, `\r\n` or `\r`; `:` starts a
/// comment; a blank line dispatches.
pub fn parse_sse(body: &str) -> Vec<Event> {
    let normalized = body.replace("\r\n", "\n").replace('\r', "\n");
    let mut events = Vec::new();
    let mut name = None;
    let mut data: Vec<String> = Vec::new();
    for line in normalized.split('\n') {
        if line.is_empty() {
            if !data.is_empty() {
                events.push(Event {
                    name: name.take(),
                    data: data.join("\n"),
                });
                data.clear();
            }
            name = None;
        } else if line.starts_with(':') {
            continue;
        } else if let Some(v) = line.strip_prefix("event:") {
            name = Some(v.trim_start().to_owned());
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push(v.strip_prefix(' ').unwrap_or(v).to_owned());
        }
    }
    events
}

pub fn client() -> reqwest::Client {
    reqwest::Client::new()
}

/// A streaming Anthropic request with one user message.
pub fn anthropic_body(text: &str) -> Value {
    json!({"model": "fake-model", "max_tokens": 100, "stream": true,
        "messages": [{"role": "user", "content": text}]})
}

/// A streaming OpenAI request with one user message, usage chunk requested.
pub fn openai_body(text: &str) -> Value {
    json!({"model": "fake-model", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": text}]})
}

pub async fn post_anthropic(server: &FakeLlm, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", server.anthropic_base_url()))
        .header("x-api-key", "sk-test")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .expect("request reaches the fake server")
}

pub async fn post_openai(server: &FakeLlm, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .bearer_auth("sk-test")
        .json(body)
        .send()
        .await
        .expect("request reaches the fake server")
}

/// Every body chunk as the client received it, and the error that ended the body, if any.
pub async fn chunks(response: reqwest::Response) -> (Vec<Bytes>, Option<reqwest::Error>) {
    let mut stream = response.bytes_stream();
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(b) => out.push(b),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// The whole body as text, parsed as SSE.
pub async fn events(response: reqwest::Response) -> Vec<Event> {
    let text = response.text().await.expect("body arrives whole");
    parse_sse(&text)
}

/// Names of events, `None` shown as `"-"`, for whole-sequence comparisons.
pub fn names(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.name.clone().unwrap_or_else(|| "-".to_owned()))
        .collect()
}

/// Concatenate a string field of every data object matching `pick`.
pub fn join(events: &[Event], pick: impl Fn(&Value) -> Option<String>) -> String {
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .filter_map(|e| pick(&e.json()))
        .collect()
}
