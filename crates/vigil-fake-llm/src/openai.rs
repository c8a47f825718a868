//! The OpenAI Chat Completions API (`POST /v1/chat/completions`) as the real service (and
//! the compatible servers) speak it: `chat.completion.chunk` data lines, the optional usage
//! chunk, `[DONE]`, the non-streaming completion and the error bodies.
//!
//! This module only translates a [`Reply`] into OpenAI's shapes; framing and faults are
//! `sse`'s, routing and auth decisions are `server`'s.

use serde_json::{json, Value};

use crate::reply::Reply;
use crate::script::StopReason;
use crate::sse::{Rendered, SseEvent};

fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn | StopReason::StopSequence => "stop",
        StopReason::MaxTokens => "length",
        StopReason::ToolUse => "tool_calls",
    }
}

/// `{"error":{"message","type","param","code"}}`, the body of every OpenAI error.
pub(crate) fn error_body(message: &str, error_type: &str, code: Option<&str>) -> Value {
    json!({"error": {"message": message, "type": error_type, "param": null, "code": code}})
}

/// The body of a 400 for messages longer than the context window, as OpenAI sends it.
pub(crate) fn too_long_body(tokens: u64, window: u64) -> Value {
    let message = format!(
        "This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."
    );
    json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
}

/// Scripts name errors with Anthropic's types; this is what OpenAI sends for the same
/// failure: its `type`, and its default `code`.
pub(crate) fn map_error_type(anthropic_type: &str) -> (&str, Option<&'static str>) {
    match anthropic_type {
        "rate_limit_error" => ("requests", Some("rate_limit_exceeded")),
        "authentication_error" => ("invalid_request_error", Some("invalid_api_key")),
        "permission_error" => ("invalid_request_error", Some("unsupported_country_region_territory")),
        "not_found_error" => ("invalid_request_error", Some("model_not_found")),
        "invalid_request_error" | "request_too_large" => ("invalid_request_error", None),
        "overloaded_error" | "api_error" => ("server_error", None),
        other => (other, None),
    }
}

/// The body of a 401 for a missing or wrong bearer token.
pub(crate) fn auth_error_body(given: Option<&str>) -> Value {
    let message = match given {
        Some(key) => format!(
            "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.",
            redact(key)
        ),
        None => "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).".to_owned(),
    };
    error_body(&message, "invalid_request_error", Some("invalid_api_key"))
}

/// The real service never echoes a whole key back; tests should not learn to expect it.
fn redact(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return "*".repeat(chars.len());
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}{}{tail}", "*".repeat(chars.len() - 7))
}

/// The body of a 404 for a model the script does not offer.
pub(crate) fn model_not_found_body(model: &str) -> Value {
    error_body(
        &format!("The model `{model}` does not exist or you do not have access to it."),
        "invalid_request_error",
        Some("model_not_found"),
    )
}

/// The streamed reply: a role chunk, reasoning/content/tool-call delta chunks, a finish
/// chunk, the usage chunk when `include_usage`, then `[DONE]` as the terminator.
pub(crate) fn stream(reply: &Reply, model: &str, id: &str, created: u64, include_usage: bool) -> Rendered {
    let chunk = |delta: Value, finish: Option<&str>| {
        SseEvent::data(
            json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            })
            .to_string(),
        )
    };
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    if let Some(thinking) = &reply.thinking {
        for c in reply.chunks(thinking) {
            events.push(chunk(json!({"reasoning_content": c}), None));
        }
    }
    for c in reply.chunks(&reply.text) {
        events.push(chunk(json!({"content": c}), None));
    }
    for (index, call) in reply.calls.iter().enumerate() {
        // Like the real service: id, type and name only in a call's first chunk, then the
        // arguments in pieces keyed by the call's index.
        events.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}]}),
            None,
        ));
        let arguments = Reply::arguments_json(call);
        for piece in reply.chunks(&arguments) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                None,
            ));
        }
    }
    events.push(chunk(json!({}), Some(finish_reason(reply.stop))));
    if include_usage {
        events.push(SseEvent::data(
            json!({
                "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                "choices": [], "usage": usage(reply),
            })
            .to_string(),
        ));
    }
    let faults = &reply.faults;
    let (error_type, code) = map_error_type(faults.error_type.as_deref().unwrap_or("overloaded_error"));
    Rendered {
        events,
        terminator: SseEvent::data("[DONE]"),
        error_event: SseEvent::data(
            error_body(
                faults.error_message.as_deref().unwrap_or("Overloaded"),
                error_type,
                code,
            )
            .to_string(),
        ),
        // Cut off mid-string: valid SSE framing around data no JSON parser accepts.
        invalid_event: SseEvent::data(
            r#"{"id":"chatcmpl-broken","object":"chat.completion.chunk","choices":[{"delta":{"content":"#,
        ),
    }
}

/// The non-streaming reply (`"stream"` absent or false).
pub(crate) fn completion(reply: &Reply, model: &str, id: &str, created: u64) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if reply.text.is_empty() && !reply.calls.is_empty() {
            Value::Null
        } else {
            Value::String(reply.text.clone())
        },
    });
    if let Some(thinking) = &reply.thinking {
        message["reasoning_content"] = json!(thinking);
    }
    if !reply.calls.is_empty() {
        message["tool_calls"] = reply
            .calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": Reply::arguments_json(c)}})
            })
            .collect();
    }
    json!({
        "id": id, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply.stop)}],
        "usage": usage(reply),
    })
}

fn usage(reply: &Reply) -> Value {
    let mut usage = json!({
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    });
    if let Some(cached) = reply.cached_tokens {
        usage["prompt_tokens_details"] = json!({"cached_tokens": cached});
    }
    if let Some(cost) = reply.cost {
        usage["cost"] = json!(cost);
    }
    usage
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_redacted_like_the_real_service() {
        assert_eq!(redact("sk-wrong"), "********");
        assert_eq!(redact("sk-abcdefghijkl"), "sk-********ijkl");
    }
}
