//! The Anthropic Messages API: request shape and stream events
//! (`message_start`, `content_block_*`, `message_delta`, `message_stop`, `ping`, `error`).

use serde_json::{json, Value};
use vigil_protocol::{ContentBlock, Message, Role, StopReason};

use super::images::{Wire, WireImage};
use super::{join_url, Assembler, CacheLife, ChatRequest, Flow, ProviderConfig, ProviderError, StreamEvent};

const API_VERSION: &str = "2023-06-01";

pub(super) fn request(cfg: &ProviderConfig, req: &ChatRequest, images: &Wire) -> (String, Value) {
    let messages: Vec<Value> = req.messages.iter().filter_map(|m| message(m, images)).collect();
    let mut body = json!({
        "model": cfg.model,
        "max_tokens": cfg.max_tokens,
        "messages": messages,
        "stream": true,
    });
    if !req.system.is_empty() {
        // The breakpoint caches tools + system: both are byte-stable from turn to turn.
        let mut control = json!({"type": "ephemeral"});
        if req.cache == CacheLife::Hour {
            control["ttl"] = json!("1h");
        }
        body["system"] = json!([{"type": "text", "text": req.system, "cache_control": control}]);
    }
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    (join_url(&cfg.base_url, "/v1/messages"), body)
}

pub(super) fn auth(builder: reqwest::RequestBuilder, cfg: &ProviderConfig) -> reqwest::RequestBuilder {
    let builder = builder.header("anthropic-version", API_VERSION);
    match &cfg.api_key {
        Some(key) => builder.header("x-api-key", key),
        None => builder,
    }
}

fn message(m: &Message, images: &Wire) -> Option<Value> {
    let role = match m.role {
        Role::User | Role::ToolResult => "user",
        Role::Assistant => "assistant",
    };
    let mut content: Vec<Value> = Vec::new();
    // Whether `content`'s last entry is a `tool_result` the blocks after it belong to.
    let mut in_result = false;
    for b in &m.content {
        let block = match b {
            ContentBlock::Text { text } if text.is_empty() => continue,
            ContentBlock::Text { text } | ContentBlock::Context { text } => json!({"type": "text", "text": text}),
            // The API accepts thinking back only with its signature.
            ContentBlock::Thinking {
                thinking,
                signature: Some(sig),
            } => json!({"type": "thinking", "thinking": thinking, "signature": sig}),
            ContentBlock::Thinking { .. } => continue,
            ContentBlock::ToolUse { id, name, input } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content: text,
                is_error,
            } => {
                content.push(
                    json!({"type": "tool_result", "tool_use_id": tool_use_id, "content": text, "is_error": is_error}),
                );
                in_result = true;
                continue;
            }
            ContentBlock::Image { sha256, mime } => image(images, sha256, mime),
        };
        match content.last_mut() {
            // A tool's images (and a placeholder for a missing one) go inside its result,
            // which then holds a list of blocks instead of a string.
            Some(result) if in_result => {
                if let Some(text) = result["content"].as_str().map(str::to_string) {
                    result["content"] = json!([{"type": "text", "text": text}]);
                }
                if let Some(list) = result["content"].as_array_mut() {
                    list.push(block);
                }
            }
            _ => content.push(block),
        }
    }
    (!content.is_empty()).then(|| json!({"role": role, "content": content}))
}

/// An `image` block with a base64 source, or a text line in its place.
fn image(images: &Wire, sha256: &str, mime: &str) -> Value {
    match images.image(sha256, mime) {
        WireImage::Data { mime, base64 } => json!({
            "type": "image",
            "source": {"type": "base64", "media_type": mime, "data": base64},
        }),
        WireImage::Note(text) => json!({"type": "text", "text": text}),
    }
}

fn stop_reason(s: &str) -> StopReason {
    match s {
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        _ => StopReason::EndTurn,
    }
}

fn parse(data: &str) -> Result<Value, ProviderError> {
    serde_json::from_str(data).map_err(|e| ProviderError::Stream {
        message: format!("an event was not valid JSON ({e})"),
    })
}

pub(super) fn on_event(
    asm: &mut Assembler,
    name: &str,
    data: &str,
    emit: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<Flow, ProviderError> {
    match name {
        "ping" | "" if data.trim().is_empty() => return Ok(Flow::More),
        "ping" => return Ok(Flow::More),
        "message_stop" => return Ok(Flow::Done),
        _ => {}
    }
    let v = parse(data)?;
    let key = |v: &Value| format!("a{}", v.get("index").and_then(Value::as_u64).unwrap_or(0));
    match name {
        "message_start" => {
            let msg = &v["message"];
            asm.model = msg["model"].as_str().map(str::to_string);
            let usage = &msg["usage"];
            asm.usage.cache_read_tokens = usage["cache_read_input_tokens"].as_u64().unwrap_or(0);
            asm.usage.cache_write_tokens = usage["cache_creation_input_tokens"].as_u64().unwrap_or(0);
            asm.usage.input_tokens = usage["input_tokens"].as_u64().unwrap_or(0)
                + asm.usage.cache_read_tokens
                + asm.usage.cache_write_tokens;
            asm.usage.output_tokens = usage["output_tokens"].as_u64().unwrap_or(0);
        }
        "content_block_start" => {
            let block = &v["content_block"];
            let k = key(&v);
            match block["type"].as_str() {
                Some("tool_use") | Some("server_tool_use") => {
                    asm.tool_start(&k, block["id"].as_str(), block["name"].as_str())
                }
                Some("thinking") => asm.thinking(&k, block["thinking"].as_str().unwrap_or("")),
                Some("text") => {
                    let text = block["text"].as_str().unwrap_or("");
                    asm.text(&k, text);
                    if !text.is_empty() {
                        emit(StreamEvent::TextDelta(text.to_string()));
                    }
                }
                _ => {}
            }
        }
        "content_block_delta" => {
            let delta = &v["delta"];
            let k = key(&v);
            match delta["type"].as_str() {
                Some("text_delta") => {
                    let text = delta["text"].as_str().unwrap_or("");
                    asm.text(&k, text);
                    emit(StreamEvent::TextDelta(text.to_string()));
                }
                Some("thinking_delta") => {
                    let text = delta["thinking"].as_str().unwrap_or("");
                    asm.thinking(&k, text);
                    emit(StreamEvent::ReasoningDelta(text.to_string()));
                }
                Some("signature_delta") => asm.signature(&k, delta["signature"].as_str().unwrap_or("")),
                Some("input_json_delta") => asm.tool_args(&k, delta["partial_json"].as_str().unwrap_or("")),
                _ => {}
            }
        }
        "message_delta" => {
            if let Some(reason) = v["delta"]["stop_reason"].as_str() {
                asm.stop_reason = Some(stop_reason(reason));
            }
            let usage = &v["usage"];
            if let Some(out) = usage["output_tokens"].as_u64() {
                asm.usage.output_tokens = out;
            }
            // The final counts, where the service repeats them (the cache's included).
            if let Some(read) = usage["cache_read_input_tokens"].as_u64() {
                asm.usage.cache_read_tokens = read;
            }
            if let Some(write) = usage["cache_creation_input_tokens"].as_u64() {
                asm.usage.cache_write_tokens = write;
            }
            if let Some(input) = usage["input_tokens"].as_u64().filter(|&n| n > 0) {
                asm.usage.input_tokens = input + asm.usage.cache_read_tokens + asm.usage.cache_write_tokens;
            }
        }
        "error" => {
            return Err(ProviderError::InStream {
                error_type: v["error"]["type"].as_str().unwrap_or("error").to_string(),
                message: v["error"]["message"].as_str().unwrap_or("no details given").to_string(),
            })
        }
        // content_block_stop and future event types need nothing: blocks are parsed at the end.
        _ => {}
    }
    Ok(Flow::More)
}
