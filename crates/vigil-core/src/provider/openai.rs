//! The OpenAI Chat Completions API and the servers that copy it (Ollama, LM Studio, vLLM,
//! OpenRouter): request shape and `chat.completion.chunk` events ending with `[DONE]`.

use serde_json::{json, Value};
use vigil_protocol::{ContentBlock, Message, Role, StopReason};

use super::images::{Wire, WireImage};
use super::{join_url, Assembler, ChatRequest, Flow, ProviderConfig, ProviderError, StreamEvent};

pub(super) fn request(cfg: &ProviderConfig, req: &ChatRequest, images: &Wire) -> (String, Value) {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        push_message(&mut messages, m, images);
    }
    let mut body = json!({
        "model": cfg.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": cfg.max_tokens,
    });
    if !req.tools.is_empty() {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    (join_url(&cfg.base_url, "/chat/completions"), body)
}

pub(super) fn auth(builder: reqwest::RequestBuilder, cfg: &ProviderConfig) -> reqwest::RequestBuilder {
    match &cfg.api_key {
        Some(key) => builder.bearer_auth(key),
        None => builder,
    }
}

/// One transcript message can become several chat messages: tool results are one `tool`
/// message each, and the images they returned follow in one user message (a `tool` message
/// carries text only).
fn push_message(out: &mut Vec<Value>, m: &Message, images: &Wire) {
    match m.role {
        Role::User => {
            let text = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } | ContentBlock::Context { text } if !text.is_empty() => {
                        Some(text.as_str())
                    }
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n\n");
            let pictures: Vec<Value> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Image { sha256, mime } => Some(image_part(images, sha256, mime)),
                    _ => None,
                })
                .collect();
            if pictures.is_empty() {
                if !text.is_empty() {
                    out.push(json!({"role": "user", "content": text}));
                }
                return;
            }
            // With images the content is a list of parts; a plain string otherwise, which
            // every compatible server reads.
            let mut parts = Vec::new();
            if !text.is_empty() {
                parts.push(json!({"type": "text", "text": text}));
            }
            parts.extend(pictures);
            out.push(json!({"role": "user", "content": parts}));
        }
        Role::Assistant => {
            let text = m.text();
            let calls: Vec<Value> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } => Some(json!({
                        "id": id, "type": "function",
                        "function": {"name": name, "arguments": input.to_string()}
                    })),
                    _ => None,
                })
                .collect();
            if text.is_empty() && calls.is_empty() {
                return;
            }
            let mut msg =
                json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !calls.is_empty() {
                msg["tool_calls"] = json!(calls);
            }
            out.push(msg);
        }
        Role::ToolResult => {
            let mut after: Vec<Value> = Vec::new();
            let mut call: Option<&str> = None;
            for b in &m.content {
                match b {
                    ContentBlock::ToolResult {
                        tool_use_id, content, ..
                    } => {
                        out.push(json!({"role": "tool", "tool_call_id": tool_use_id, "content": content}));
                        call = Some(tool_use_id);
                    }
                    // An image, or the placeholder of one whose file is missing.
                    ContentBlock::Image { .. } | ContentBlock::Text { .. } => {
                        let part = match b {
                            ContentBlock::Image { sha256, mime } => image_part(images, sha256, mime),
                            ContentBlock::Text { text } => json!({"type": "text", "text": text}),
                            _ => continue,
                        };
                        if let Some(id) = call.take() {
                            after.push(json!({"type": "text", "text": format!("Images returned by tool call {id}:")}));
                        }
                        after.push(part);
                    }
                    _ => {}
                }
            }
            if !after.is_empty() {
                out.push(json!({"role": "user", "content": after}));
            }
        }
    }
}

/// An `image_url` part with a data URL, or a text part in its place.
fn image_part(images: &Wire, sha256: &str, mime: &str) -> Value {
    match images.image(sha256, mime) {
        WireImage::Data { mime, base64 } => json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{mime};base64,{base64}")},
        }),
        WireImage::Note(text) => json!({"type": "text", "text": text}),
    }
}

fn finish_reason(s: &str) -> StopReason {
    match s {
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "length" => StopReason::MaxTokens,
        "content_filter" => StopReason::Refusal,
        _ => StopReason::EndTurn,
    }
}

pub(super) fn on_event(
    asm: &mut Assembler,
    data: &str,
    emit: &mut (dyn FnMut(StreamEvent) + Send),
) -> Result<Flow, ProviderError> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(Flow::Done);
    }
    if data.is_empty() {
        return Ok(Flow::More);
    }
    let v: Value = serde_json::from_str(data).map_err(|e| ProviderError::Stream {
        message: format!("an event was not valid JSON ({e})"),
    })?;
    if let Some(err) = v.get("error") {
        return Err(ProviderError::InStream {
            error_type: err["type"]
                .as_str()
                .or_else(|| err["code"].as_str())
                .unwrap_or("error")
                .to_string(),
            message: err["message"].as_str().unwrap_or("no details given").to_string(),
        });
    }
    if let Some(model) = v["model"].as_str() {
        asm.model = Some(model.to_string());
    }
    if let Some(usage) = v.get("usage").filter(|u| u.is_object()) {
        asm.usage.input_tokens = usage["prompt_tokens"].as_u64().unwrap_or(asm.usage.input_tokens);
        asm.usage.output_tokens = usage["completion_tokens"].as_u64().unwrap_or(asm.usage.output_tokens);
        // Servers that cache prompts by themselves say how much they read from it.
        if let Some(read) = usage["prompt_tokens_details"]["cached_tokens"].as_u64() {
            asm.usage.cache_read_tokens = read;
        }
        // OpenRouter's price of the call, in US dollars.
        if let Some(cost) = usage["cost"].as_f64().filter(|c| c.is_finite() && *c >= 0.0) {
            asm.usage.cost_micro_usd = (cost * 1e6).round() as u64;
        }
    }
    let Some(choices) = v["choices"].as_array() else {
        return Ok(Flow::More);
    };
    for choice in choices.iter().filter(|c| c["index"].as_u64().unwrap_or(0) == 0) {
        let delta = &choice["delta"];
        // `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama).
        for field in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta[field].as_str().filter(|t| !t.is_empty()) {
                asm.thinking("reasoning", text);
                emit(StreamEvent::ReasoningDelta(text.to_string()));
            }
        }
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            asm.text("text", text);
            emit(StreamEvent::TextDelta(text.to_string()));
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for call in calls {
                let key = format!("tool{}", call["index"].as_u64().unwrap_or(0));
                asm.tool_start(&key, call["id"].as_str(), call["function"]["name"].as_str());
                if let Some(args) = call["function"]["arguments"].as_str() {
                    asm.tool_args(&key, args);
                }
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            asm.stop_reason = Some(finish_reason(reason));
        }
    }
    Ok(Flow::More)
}
