//! Turns a script [`Step`] plus the request that consumed it into a protocol-neutral
//! [`Action`]: what to say (text, reasoning, calls, usage) and how to stream it.
//!
//! Everything request-dependent (echo text, token estimates) is decided here once, so the
//! Anthropic and OpenAI renderers only translate and never look at the request again.

use std::time::Duration;

use serde_json::Value;

use crate::script::{ErrorStep, Faults, RawStep, Step, StopReason, ToolCall};

/// What the server does with one chat request. Made once per request of a test's script:
/// the size of a reply does not matter.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Action {
    Reply(Reply),
    Error(ErrorStep),
    Raw(RawStep),
}

/// A successful reply, before it is rendered in a protocol.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub thinking: Option<String>,
    pub text: String,
    pub calls: Vec<ToolCall>,
    pub stop: StopReason,
    /// Input tokens not read from or written to the prompt cache.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Anthropic's `cache_read_input_tokens`, from the prompt cache.
    pub cache_read_tokens: u64,
    /// Anthropic's `cache_creation_input_tokens`.
    pub cache_write_tokens: u64,
    /// OpenAI-compatible `prompt_tokens_details.cached_tokens`, as scripted.
    pub cached_tokens: Option<u64>,
    /// OpenRouter's `usage.cost` in dollars, as scripted.
    pub cost: Option<f64>,
    /// Always at least 1, so chunking terminates.
    pub chunk_chars: usize,
    pub delay: Duration,
    pub faults: Faults,
}

impl Reply {
    /// A text block is sent when there is text, or when nothing else would make a block:
    /// real services never answer with zero content blocks.
    pub fn has_text_block(&self) -> bool {
        !self.text.is_empty() || (self.thinking.is_none() && self.calls.is_empty())
    }

    /// The call's arguments as the compact JSON string that is split into deltas.
    pub fn arguments_json(call: &ToolCall) -> String {
        call.arguments.to_string()
    }

    /// The text cut into pieces of `chunk_chars` characters (never inside a character).
    pub fn chunks<'a>(&self, text: &'a str) -> Vec<&'a str> {
        chunk_chars(text, self.chunk_chars)
    }
}

/// Decide what `step` means for this request.
/// `n` is the server's request number (for numbered echoes).
pub(crate) fn resolve(step: &Step, request: &Value, n: u64) -> Action {
    let (thinking, text, calls, stop, usage, stream) = match step {
        Step::Error(e) => return Action::Error(e.clone()),
        Step::Raw(r) => return Action::Raw(r.clone()),
        Step::Text(s) => (
            s.thinking.clone(),
            s.text.clone(),
            Vec::new(),
            s.stop_reason,
            s.usage,
            &s.stream,
        ),
        Step::Echo(s) => (
            None,
            match s.numbered {
                true => format!("{}{} #{n}", s.prefix, last_user_text(request)),
                false => format!("{}{}", s.prefix, last_user_text(request)),
            },
            Vec::new(),
            StopReason::EndTurn,
            None,
            &s.stream,
        ),
        Step::ToolCalls(s) => (
            s.thinking.clone(),
            s.text.clone().unwrap_or_default(),
            s.calls.clone(),
            StopReason::ToolUse,
            s.usage,
            &s.stream,
        ),
    };
    let usage = usage.unwrap_or_default();
    let output_chars = thinking.as_deref().map_or(0, |t| t.chars().count())
        + text.chars().count()
        + calls
            .iter()
            .map(|c| Reply::arguments_json(c).chars().count() + c.name.len())
            .sum::<usize>();
    Action::Reply(Reply {
        thinking,
        text,
        calls,
        stop,
        input_tokens: usage
            .input_tokens
            .unwrap_or_else(|| estimate_tokens(request.to_string().chars().count())),
        output_tokens: usage.output_tokens.unwrap_or_else(|| estimate_tokens(output_chars)),
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cached_tokens: usage.cached_tokens,
        cost: usage.cost,
        chunk_chars: stream.chunk_chars.max(1),
        delay: Duration::from_millis(stream.delay_ms),
        faults: stream.faults.clone(),
    })
}

/// What an image costs: about what Anthropic bills for one scaled to its 1568 px limit.
const IMAGE_TOKENS: u64 = 1_600;

/// The tokens of a request as a context window counts them: its JSON at about four
/// characters a token, except that an image costs [`IMAGE_TOKENS`] whatever the length of its
/// base64 (Anthropic's `image` source, OpenAI's `data:` URL).
pub(crate) fn request_tokens(request: &Value) -> u64 {
    let mut text = request.clone();
    let images = blank_images(&mut text);
    estimate_tokens(text.to_string().chars().count()) + images * IMAGE_TOKENS
}

/// Empties the data of every image in `v`; returns how many there were.
fn blank_images(v: &mut Value) -> u64 {
    match v {
        Value::Object(map) => {
            let image = match map.get("type").and_then(Value::as_str) {
                Some("image") => map.get_mut("source").and_then(|s| s.get_mut("data")),
                Some("image_url") => map.get_mut("image_url").and_then(|u| u.get_mut("url")),
                _ => None,
            };
            if let Some(data) = image {
                *data = Value::String(String::new());
                return 1;
            }
            map.values_mut().map(blank_images).sum()
        }
        Value::Array(items) => items.iter_mut().map(blank_images).sum(),
        _ => 0,
    }
}

/// Roughly four characters a token, like the usual rule of thumb; never zero so clients that
/// treat zero usage as "missing" still see a count.
fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

/// The system prompt of a request in either protocol: Anthropic's `system` (a string or
/// blocks), OpenAI's `system` / `developer` messages.
pub(crate) fn system_text(request: &Value) -> String {
    let mut out = match request.get("system") {
        Some(system) => content_text(system),
        None => String::new(),
    };
    for m in request.get("messages").and_then(Value::as_array).into_iter().flatten() {
        if matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")) {
            out.push_str(&m.get("content").map(content_text).unwrap_or_default());
        }
    }
    out
}

/// Cut `text` into pieces of at most `n` characters.
pub(crate) fn chunk_chars(text: &str, n: usize) -> Vec<&str> {
    let n = n.max(1);
    let mut out = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in text.char_indices() {
        if count == n {
            out.push(&text[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The text of the last `role: "user"` message. Both protocols use `messages[]` with
/// `content` as a string or an array of blocks; Anthropic tool results nest their text one
/// level deeper, so those are searched too. `<context>…</context>` sections (volatile
/// context a client adds to a message, such as the time) are left out, so an echo repeats
/// the user's own words.
pub(crate) fn last_user_text(request: &Value) -> String {
    strip_context(&last_user_content(request))
}

fn strip_context(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<context>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</context>") {
            Some(end) => rest = &rest[start + end + "</context>".len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.trim().to_string()
}

fn last_user_content(request: &Value) -> String {
    let Some(messages) = request.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .and_then(|m| m.get("content"))
        .map(content_text)
        .unwrap_or_default()
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => {
            let parts: Vec<String> = blocks
                .iter()
                .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                    Some("text") | Some("input_text") | None => {
                        b.get("text").and_then(Value::as_str).map(str::to_owned)
                    }
                    Some("tool_result") => b.get("content").map(content_text),
                    _ => None,
                })
                .filter(|s| !s.is_empty())
                .collect();
            parts.join("\n")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chunks_respect_characters() {
        assert_eq!(chunk_chars("héllo wörld", 4), vec!["héll", "o wö", "rld"]);
        assert_eq!(chunk_chars("", 4), Vec::<&str>::new());
        assert_eq!(chunk_chars("ab", 0), vec!["a", "b"]);
    }

    #[test]
    fn last_user_text_handles_strings_and_blocks() {
        let openai = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
        ]});
        assert_eq!(last_user_text(&openai), "second");
        let anthropic = json!({"messages": [
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "out"}]},
                {"type": "text", "text": "and more"},
            ]},
        ]});
        assert_eq!(last_user_text(&anthropic), "out\nand more");
        assert_eq!(last_user_text(&json!({})), "");
    }

    #[test]
    fn echo_leaves_out_context_sections() {
        let req = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "<context>\nCurrent time: now\n</context>"},
            {"type": "text", "text": "hello"}
        ]}]});
        assert_eq!(last_user_text(&req), "hello");
        let req = json!({"messages": [{"role": "user", "content": "<context>t</context>\n\nhi there"}]});
        assert_eq!(last_user_text(&req), "hi there");
    }

    #[test]
    fn an_image_costs_the_same_whatever_its_base64_in_both_protocols() {
        let small = "A".repeat(100);
        let big = "A".repeat(400_000);
        let anthropic = |data: &str| {
            json!({"messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
            ]}]})
        };
        let openai = |data: &str| {
            json!({"messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}}
            ]}]})
        };
        for request in [anthropic, openai] {
            let (a, b) = (request_tokens(&request(&small)), request_tokens(&request(&big)));
            assert_eq!(a, b);
            assert!((IMAGE_TOKENS..IMAGE_TOKENS + 50).contains(&a), "{a}");
        }
        let text = json!({"messages": [{"role": "user", "content": "x".repeat(4_000)}]});
        assert!((1_000..1_050).contains(&request_tokens(&text)));
    }

    #[test]
    fn echo_resolves_with_prefix() {
        let req = json!({"messages": [{"role": "user", "content": "hi"}]});
        let Action::Reply(reply) = resolve(&Step::echo(), &req, 1) else {
            panic!("echo must reply");
        };
        assert_eq!(reply.text, "echo: hi");
        assert_eq!(reply.stop, StopReason::EndTurn);
    }

    #[test]
    fn a_numbered_echo_ends_with_the_request_number() {
        let req = json!({"messages": [{"role": "user", "content": "hi"}]});
        let Action::Reply(reply) = resolve(&Step::echo_numbered(), &req, 7) else {
            panic!("echo must reply");
        };
        assert_eq!(reply.text, "echo: hi #7");
        let parsed: Step = serde_json::from_value(json!({"kind": "echo", "numbered": true})).unwrap();
        assert_eq!(parsed, Step::echo_numbered());
    }
}
