//! The Anthropic Messages API (`POST /v1/messages`) as the real service speaks it: the SSE
//! event sequence, the non-streaming message, and the error bodies.
//!
//! This module only translates a [`Reply`] into Anthropic's shapes; framing and faults are
//! `sse`'s, routing and auth decisions are `server`'s.

use serde_json::{json, Value};

use crate::reply::Reply;
use crate::script::{StopReason, ToolCall};
use crate::sse::{Rendered, SseEvent};

/// Anthropic's wire name for a stop reason.
fn stop_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::EndTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::StopSequence => "stop_sequence",
        StopReason::ToolUse => "tool_use",
    }
}

/// The real API sends a signature after thinking; clients must carry it back, so the fake
/// sends one too.
const FAKE_SIGNATURE: &str = "fake-signature";

/// `{"type":"error","error":{"type":..,"message":..}}`, the body of every Anthropic error.
pub(crate) fn error_body(error_type: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}

/// The body of a 401 for a missing or wrong `x-api-key`.
pub(crate) fn auth_error_body() -> Value {
    error_body("authentication_error", "invalid x-api-key")
}

/// The body of a 400 for a prompt longer than the context window, worded as the real API
/// words it.
pub(crate) fn too_long_body(tokens: u64, window: u64) -> Value {
    error_body(
        "invalid_request_error",
        &format!("prompt is too long: {tokens} tokens > {window} maximum"),
    )
}

/// The body of a 404 for a model the script does not offer.
pub(crate) fn model_not_found_body(model: &str) -> Value {
    error_body("not_found_error", &format!("model: {model}"))
}

/// The streamed reply: `message_start`, `ping`, one start/deltas/stop run per content block,
/// `message_delta`, then `message_stop` as the terminator.
pub(crate) fn stream(reply: &Reply, model: &str, id: &str) -> Rendered {
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": usage(reply, 1),
            }}),
        ),
        event("ping", json!({"type": "ping"})),
    ];
    let mut index = 0;
    if let Some(thinking) = &reply.thinking {
        let mut deltas: Vec<Value> = reply
            .chunks(thinking)
            .into_iter()
            .map(|c| json!({"type": "thinking_delta", "thinking": c}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": FAKE_SIGNATURE}));
        push_block(
            &mut events,
            index,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
        index += 1;
    }
    if reply.has_text_block() {
        let deltas = reply
            .chunks(&reply.text)
            .into_iter()
            .map(|c| json!({"type": "text_delta", "text": c}))
            .collect();
        push_block(&mut events, index, json!({"type": "text", "text": ""}), deltas);
        index += 1;
    }
    for call in &reply.calls {
        let arguments = Reply::arguments_json(call);
        let deltas = reply
            .chunks(&arguments)
            .into_iter()
            .map(|c| json!({"type": "input_json_delta", "partial_json": c}))
            .collect();
        push_block(
            &mut events,
            index,
            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
            deltas,
        );
        index += 1;
    }
    events.push(event(
        "message_delta",
        json!({"type": "message_delta",
            "delta": {"stop_reason": stop_reason(reply.stop), "stop_sequence": null},
            "usage": {"output_tokens": reply.output_tokens}}),
    ));
    let faults = &reply.faults;
    Rendered {
        events,
        terminator: event("message_stop", json!({"type": "message_stop"})),
        error_event: event(
            "error",
            error_body(
                faults.error_type.as_deref().unwrap_or("overloaded_error"),
                faults.error_message.as_deref().unwrap_or("Overloaded"),
            ),
        ),
        // Cut off mid-string: valid SSE framing around data no JSON parser accepts.
        invalid_event: SseEvent::named(
            "content_block_delta",
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"#,
        ),
    }
}

/// The non-streaming reply (`"stream"` absent or false).
pub(crate) fn message(reply: &Reply, model: &str, id: &str) -> Value {
    let mut content = Vec::new();
    if let Some(thinking) = &reply.thinking {
        content.push(json!({"type": "thinking", "thinking": thinking, "signature": FAKE_SIGNATURE}));
    }
    if reply.has_text_block() {
        content.push(json!({"type": "text", "text": reply.text}));
    }
    content.extend(
        reply
            .calls
            .iter()
            .map(|c: &ToolCall| json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments})),
    );
    json!({
        "id": id, "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop_reason(reply.stop), "stop_sequence": null,
        "usage": usage(reply, reply.output_tokens),
    })
}

fn event(name: &'static str, data: Value) -> SseEvent {
    SseEvent::named(name, data.to_string())
}

fn push_block(events: &mut Vec<SseEvent>, index: usize, block: Value, deltas: Vec<Value>) {
    events.push(event(
        "content_block_start",
        json!({"type": "content_block_start", "index": index, "content_block": block}),
    ));
    for delta in deltas {
        events.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        ));
    }
    events.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": index}),
    ));
}

/// The error type the real API uses for an HTTP status, when a script names none.
pub(crate) fn error_type_for_status(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

/// The `usage` object: the uncached input, the cache's part, and `output` tokens.
fn usage(reply: &Reply, output: u64) -> Value {
    json!({
        "input_tokens": reply.input_tokens,
        "cache_read_input_tokens": reply.cache_read_tokens,
        "cache_creation_input_tokens": reply.cache_write_tokens,
        "output_tokens": output,
    })
}
