//! What of a transcript message is searchable: its text, the names and arguments of the
//! tools it calls, tool results up to a bound, images as a placeholder naming their type.
//! Not the model's hidden reasoning, nor the volatile context sent with a user message
//! (the time, updates), which the user never sees either.

use vigil_protocol::{ContentBlock, Message, MessageKind, Role};

/// The most of one tool result, or one call's arguments, that is indexed: enough for the
/// lines that matter (an error, a figure), not a whole log dumped into the index.
pub const RESULT_BOUND: usize = 4_000;

/// Tools whose calls and results are copies of other messages, not history of their own:
/// not indexed, or every search would also find every earlier search for the same words.
pub const HISTORY_TOOLS: [&str; 2] = ["search_history", "read_history"];

/// The ids of the calls to [`HISTORY_TOOLS`] in `m`, whose results are not indexed.
pub fn history_calls(m: &Message) -> impl Iterator<Item = &str> {
    m.content.iter().filter_map(|b| match b {
        ContentBlock::ToolUse { id, name, .. } if HISTORY_TOOLS.contains(&name.as_str()) => Some(id.as_str()),
        _ => None,
    })
}

/// The call a tool result answers, if `m` is one.
pub fn answers(m: &Message) -> Option<&str> {
    m.content.iter().find_map(|b| match b {
        ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
        _ => None,
    })
}

/// One message as the index keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// `user`, `assistant`, `tool_result`, or `event` for a system event.
    pub role: &'static str,
    pub ts: i64,
    pub text: String,
}

pub fn extract(m: &Message) -> Extracted {
    let mut text = String::new();
    let mut push = |s: &str| {
        if !s.is_empty() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(s);
        }
    };
    for block in &m.content {
        match block {
            ContentBlock::Text { text } => push(text),
            // A search's own words would find themselves: the question is not history.
            ContentBlock::ToolUse { name, .. } if HISTORY_TOOLS.contains(&name.as_str()) => {}
            ContentBlock::ToolUse { name, input, .. } => {
                let args = input.to_string();
                push(&format!("{name} {}", bounded(&args)));
            }
            ContentBlock::ToolResult { content, .. } => push(bounded(content)),
            ContentBlock::Image { mime, .. } => push(&format!("[image {mime}]")),
            ContentBlock::Thinking { .. } | ContentBlock::Context { .. } => {}
        }
    }
    let role = match (m.role, m.kind) {
        (_, MessageKind::SystemEvent) => "event",
        (Role::User, _) => "user",
        (Role::Assistant, _) => "assistant",
        (Role::ToolResult, _) => "tool_result",
    };
    Extracted { role, ts: m.ts, text }
}

/// The first [`RESULT_BOUND`] bytes of `s`, cut at a character boundary.
fn bounded(s: &str) -> &str {
    if s.len() <= RESULT_BOUND {
        return s;
    }
    let mut end = RESULT_BOUND;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_calls_results_and_images_are_searchable_reasoning_and_context_are_not() {
        let m = Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Thinking {
                    thinking: "secret musing".into(),
                    signature: None,
                },
                ContentBlock::Text {
                    text: "Checking disk".into(),
                },
                ContentBlock::ToolUse {
                    id: "t1".into(),
                    name: "exec".into(),
                    input: json!({"command": "df -h"}),
                },
                ContentBlock::Context {
                    text: "now: 10:00".into(),
                },
                ContentBlock::Image {
                    sha256: "ab".into(),
                    mime: "image/png".into(),
                },
            ],
            ts: 5,
            model: None,
            usage: None,
            stop_reason: None,
            kind: MessageKind::Plain,
        };
        let e = extract(&m);
        assert_eq!(e.text, "Checking disk\nexec {\"command\":\"df -h\"}\n[image image/png]");
        assert_eq!((e.role, e.ts), ("assistant", 5));
        let long = Message {
            role: Role::ToolResult,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "t1".into(),
                content: "é".repeat(RESULT_BOUND),
                is_error: false,
            }],
            ..Message::user_text("", 1)
        };
        assert!(extract(&long).text.len() <= RESULT_BOUND);
    }
}
