//! The OpenAI Chat Completions API and the servers that copy it (Ollama, LM Studio, vLLM,
//! OpenRouter): request shape and `chat.completion.chunk` events ending with `[DONE]`.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;
use vigil_protocol::{ContentBlock, Message, Role, StopReason};

use super::images::{Wire, WireImage};
use super::{join_url, Assembler, ChatRequest, Flow, ProviderConfig, ProviderError, StreamEvent};

/// The URL and JSON body of one request, written straight from the request it borrows (see
/// `anthropic::request`).
pub(super) fn request(cfg: &ProviderConfig, req: &ChatRequest, images: &Wire) -> (String, Vec<u8>) {
    let mut messages = Vec::new();
    if !req.system.is_empty() {
        messages.push(WireMessage::new(
            "system",
            Some(Content::Text(Cow::Borrowed(&req.system))),
        ));
    }
    for m in &req.messages {
        push_message(&mut messages, m, images);
    }
    let body = Body {
        model: &cfg.model,
        tools: req
            .tools
            .iter()
            .map(|t| ToolDef {
                kind: "function",
                function: Function {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
        messages,
        stream: true,
        stream_options: StreamOptions { include_usage: true },
        max_tokens: cfg.max_tokens,
    };
    let bytes = serde_json::to_vec(&body).expect("a request body always serializes");
    (join_url(&cfg.base_url, "/chat/completions"), bytes)
}

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDef<'a>>,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    max_tokens: u32,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ToolDef<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// `null` for an assistant message that only calls tools.
    content: Option<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Call<'a>>,
}

impl<'a> WireMessage<'a> {
    fn new(role: &'static str, content: Option<Content<'a>>) -> Self {
        Self {
            role,
            content,
            tool_call_id: None,
            tool_calls: Vec::new(),
        }
    }
}

/// A plain string, which every compatible server reads, or a list of parts (with images).
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: DataUrl<'a> },
}

/// `{"url": "data:<mime>;base64,<data>"}`, written without first copying the data.
struct DataUrl<'a> {
    mime: &'a str,
    base64: &'a str,
}

impl Serialize for DataUrl<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let url = format_args!("data:{};base64,{}", self.mime, self.base64);
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("url", &Collected(url))?;
        map.end()
    }
}

/// Serializes its arguments as one string, formatted straight into the output.
struct Collected<'a>(std::fmt::Arguments<'a>);

impl Serialize for Collected<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: String,
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
fn push_message<'a>(out: &mut Vec<WireMessage<'a>>, m: &'a Message, images: &Wire<'a>) {
    match m.role {
        Role::User => {
            let texts: Vec<&str> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } | ContentBlock::Context { text } if !text.is_empty() => {
                        Some(text.as_str())
                    }
                    _ => None,
                })
                .collect();
            let text: Cow<str> = match texts[..] {
                [one] => Cow::Borrowed(one),
                _ => Cow::Owned(texts.join("\n\n")),
            };
            let pictures: Vec<Part> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Image { sha256, mime } => Some(image_part(images, sha256, mime)),
                    _ => None,
                })
                .collect();
            if pictures.is_empty() {
                if !text.is_empty() {
                    out.push(WireMessage::new("user", Some(Content::Text(text))));
                }
                return;
            }
            // With images the content is a list of parts; a plain string otherwise, which
            // every compatible server reads.
            let mut parts = Vec::new();
            if !text.is_empty() {
                parts.push(Part::Text { text });
            }
            parts.extend(pictures);
            out.push(WireMessage::new("user", Some(Content::Parts(parts))));
        }
        Role::Assistant => {
            let text = m.text();
            let calls: Vec<Call> = m
                .content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } => Some(Call {
                        id,
                        kind: "function",
                        function: CallFunction {
                            name,
                            arguments: input.to_string(),
                        },
                    }),
                    _ => None,
                })
                .collect();
            if text.is_empty() && calls.is_empty() {
                return;
            }
            let content = (!text.is_empty()).then_some(Content::Text(Cow::Owned(text)));
            out.push(WireMessage {
                tool_calls: calls,
                ..WireMessage::new("assistant", content)
            });
        }
        Role::ToolResult => {
            let mut after: Vec<Part> = Vec::new();
            let mut call: Option<&str> = None;
            for b in &m.content {
                let part = match b {
                    ContentBlock::ToolResult {
                        tool_use_id, content, ..
                    } => {
                        out.push(WireMessage {
                            tool_call_id: Some(tool_use_id),
                            ..WireMessage::new("tool", Some(Content::Text(Cow::Borrowed(content))))
                        });
                        call = Some(tool_use_id);
                        continue;
                    }
                    // An image, or the placeholder of one whose file is missing.
                    ContentBlock::Image { sha256, mime } => image_part(images, sha256, mime),
                    ContentBlock::Text { text } => Part::Text { text: text.into() },
                    _ => continue,
                };
                if let Some(id) = call.take() {
                    after.push(Part::Text {
                        text: format!("Images returned by tool call {id}:").into(),
                    });
                }
                after.push(part);
            }
            if !after.is_empty() {
                out.push(WireMessage::new("user", Some(Content::Parts(after))));
            }
        }
    }
}

/// An `image_url` part with a data URL, or a text part in its place.
fn image_part<'a>(images: &Wire<'a>, sha256: &str, mime: &'a str) -> Part<'a> {
    match images.image(sha256, mime) {
        WireImage::Data { mime, base64 } => Part::ImageUrl {
            image_url: DataUrl { mime, base64 },
        },
        WireImage::Note(text) => Part::Text { text: text.into() },
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
