//! The Anthropic Messages API: request shape and stream events
//! (`message_start`, `content_block_*`, `message_delta`, `message_stop`, `ping`, `error`).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use vigil_protocol::{ContentBlock, Message, Role, StopReason};

use super::images::{Wire, WireImage};
use super::{join_url, Assembler, CacheLife, ChatRequest, Flow, ProviderConfig, ProviderError, StreamEvent};

const API_VERSION: &str = "2023-06-01";

/// The URL and JSON body of one request. The body is written straight from the request it
/// borrows (no `Value` tree, no copy of the transcript, the tools or an image's base64): it
/// is built every round, and is most of a turn's own work otherwise.
pub(super) fn request(cfg: &ProviderConfig, req: &ChatRequest, images: &Wire) -> (String, Vec<u8>) {
    let body = Body {
        model: &cfg.model,
        max_tokens: cfg.max_tokens,
        // The breakpoint caches tools + system: both are byte-stable from turn to turn.
        system: (!req.system.is_empty()).then(|| {
            [SystemText {
                kind: "text",
                text: &req.system,
                cache_control: CacheControl {
                    kind: "ephemeral",
                    ttl: (req.cache == CacheLife::Hour).then_some("1h"),
                },
            }]
        }),
        tools: req
            .tools
            .iter()
            .map(|t| ToolDef {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
            })
            .collect(),
        messages: req.messages.iter().filter_map(|m| message(m, images)).collect(),
        stream: true,
    };
    let bytes = serde_json::to_vec(&body).expect("a request body always serializes");
    (join_url(&cfg.base_url, "/v1/messages"), bytes)
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[SystemText<'a>; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDef<'a>>,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
}

#[derive(Serialize)]
struct SystemText<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
    cache_control: CacheControl,
}

#[derive(Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttl: Option<&'static str>,
}

#[derive(Serialize)]
struct ToolDef<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultContent<'a>,
        is_error: bool,
    },
    Image {
        source: ImageSource<'a>,
    },
}

/// A tool result's content: its text, or a list of blocks once images follow it.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

pub(super) fn auth(builder: reqwest::RequestBuilder, cfg: &ProviderConfig) -> reqwest::RequestBuilder {
    let builder = builder.header("anthropic-version", API_VERSION);
    match &cfg.api_key {
        Some(key) => builder.header("x-api-key", key),
        None => builder,
    }
}

fn message<'a>(m: &'a Message, images: &Wire<'a>) -> Option<WireMessage<'a>> {
    let role = match m.role {
        Role::User | Role::ToolResult => "user",
        Role::Assistant => "assistant",
    };
    let mut content: Vec<Block<'a>> = Vec::new();
    // Whether `content`'s last entry is a `tool_result` the blocks after it belong to.
    let mut in_result = false;
    for b in &m.content {
        let block = match b {
            ContentBlock::Text { text } if text.is_empty() => continue,
            ContentBlock::Text { text } | ContentBlock::Context { text } => Block::Text { text: text.into() },
            // The API accepts thinking back only with its signature.
            ContentBlock::Thinking {
                thinking,
                signature: Some(signature),
            } => Block::Thinking { thinking, signature },
            ContentBlock::Thinking { .. } => continue,
            ContentBlock::ToolUse { id, name, input } => Block::ToolUse { id, name, input },
            ContentBlock::ToolResult {
                tool_use_id,
                content: text,
                is_error,
            } => {
                content.push(Block::ToolResult {
                    tool_use_id,
                    content: ResultContent::Text(text),
                    is_error: *is_error,
                });
                in_result = true;
                continue;
            }
            ContentBlock::Image { sha256, mime } => image(images, sha256, mime),
        };
        match content.last_mut() {
            // A tool's images (and a placeholder for a missing one) go inside its result,
            // which then holds a list of blocks instead of a string.
            Some(Block::ToolResult { content: result, .. }) if in_result => {
                if let ResultContent::Text(text) = *result {
                    *result = ResultContent::Blocks(vec![Block::Text { text: text.into() }]);
                }
                if let ResultContent::Blocks(list) = result {
                    list.push(block);
                }
            }
            _ => content.push(block),
        }
    }
    (!content.is_empty()).then_some(WireMessage { role, content })
}

/// An `image` block with a base64 source, or a text line in its place.
fn image<'a>(images: &Wire<'a>, sha256: &str, mime: &'a str) -> Block<'a> {
    match images.image(sha256, mime) {
        WireImage::Data { mime, base64 } => Block::Image {
            source: ImageSource {
                kind: "base64",
                media_type: mime,
                data: base64,
            },
        },
        WireImage::Note(text) => Block::Text { text: text.into() },
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
