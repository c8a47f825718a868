//! Turns a stream of deltas into whole content blocks. Blocks keep the order in which they
//! first appeared; tool-call arguments are collected as text and parsed only once complete,
//! because a half-received JSON object is not an object.

use std::collections::HashMap;

use vigil_protocol::{ContentBlock, StopReason, Usage};

use super::ProviderError;

/// A reply as far as it has arrived.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    blocks: Vec<Partial>,
    /// Wire key (Anthropic block index, OpenAI tool index, …) → position in `blocks`.
    by_key: HashMap<String, usize>,
    pub stop_reason: Option<StopReason>,
    pub usage: Usage,
    pub model: Option<String>,
    /// Whether the protocol's terminator (`message_stop`, `[DONE]`) arrived.
    pub finished: bool,
}

#[derive(Debug)]
enum Partial {
    Text(String),
    Thinking { text: String, signature: Option<String> },
    Tool { id: String, name: String, args: String },
}

impl Partial {
    fn thinking() -> Self {
        Partial::Thinking {
            text: String::new(),
            signature: None,
        }
    }

    fn tool() -> Self {
        Partial::Tool {
            id: String::new(),
            name: String::new(),
            args: String::new(),
        }
    }
}

/// The key under which arguments that were not a JSON object are kept.
pub const INVALID_ARGUMENTS: &str = "_invalid_arguments";

fn invalid_arguments(raw: &str, error: &str) -> serde_json::Value {
    serde_json::json!({ INVALID_ARGUMENTS: raw, "_parse_error": error })
}

/// A finished reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: Vec<ContentBlock>,
    pub stop_reason: StopReason,
    pub usage: Usage,
    pub model: Option<String>,
}

impl Completion {
    /// The text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl Assembler {
    /// The block under `key`, made by `make` if there is none. A delta of another kind under
    /// a key already in use (a confused or hostile server: text for a thinking block's index)
    /// gets a block of its own, so nothing that was streamed to the user is missing from the
    /// saved reply. Found by the `sse` fuzz target.
    fn slot(&mut self, key: &str, make: fn() -> Partial) -> &mut Partial {
        let fresh = make();
        let kind = std::mem::discriminant(&fresh);
        let mut key = key.to_string();
        while let Some(&i) = self.by_key.get(&key) {
            if std::mem::discriminant(&self.blocks[i]) == kind {
                return &mut self.blocks[i];
            }
            key.push('\u{1f}');
        }
        self.blocks.push(fresh);
        self.by_key.insert(key, self.blocks.len() - 1);
        self.blocks.last_mut().expect("just pushed")
    }

    /// Starts (or continues) a text block under `key`.
    pub fn text(&mut self, key: &str, delta: &str) {
        if let Partial::Text(t) = self.slot(key, || Partial::Text(String::new())) {
            t.push_str(delta);
        }
    }

    pub fn thinking(&mut self, key: &str, delta: &str) {
        if let Partial::Thinking { text, .. } = self.slot(key, Partial::thinking) {
            text.push_str(delta);
        }
    }

    pub fn signature(&mut self, key: &str, delta: &str) {
        if let Partial::Thinking { signature, .. } = self.slot(key, Partial::thinking) {
            signature.get_or_insert_with(String::new).push_str(delta);
        }
    }

    /// Starts a tool call, or fills in its id/name when they arrive late.
    pub fn tool_start(&mut self, key: &str, id: Option<&str>, name: Option<&str>) {
        if let Partial::Tool { id: i, name: n, .. } = self.slot(key, Partial::tool) {
            if let Some(id) = id.filter(|s| !s.is_empty()) {
                *i = id.to_string();
            }
            if let Some(name) = name.filter(|s| !s.is_empty()) {
                n.push_str(name);
            }
        }
    }

    pub fn tool_args(&mut self, key: &str, delta: &str) {
        if let Partial::Tool { args, .. } = self.slot(key, Partial::tool) {
            args.push_str(delta);
        }
    }

    /// Whether any block has received content.
    pub fn has_content(&self) -> bool {
        self.blocks.iter().any(|b| match b {
            Partial::Text(t) => !t.is_empty(),
            Partial::Thinking { text, .. } => !text.is_empty(),
            Partial::Tool { .. } => true,
        })
    }

    /// The whole reply. Tool-call arguments that are not a JSON object are kept under
    /// [`INVALID_ARGUMENTS`] for the agent to answer with an error.
    pub fn finish(self) -> Result<Completion, ProviderError> {
        let mut content = Vec::with_capacity(self.blocks.len());
        for block in self.blocks {
            content.push(match block {
                Partial::Text(text) => ContentBlock::Text { text },
                Partial::Thinking { text, signature } => ContentBlock::Thinking {
                    thinking: text,
                    signature,
                },
                Partial::Tool { id, name, args } => {
                    let input = if args.trim().is_empty() {
                        serde_json::json!({})
                    } else {
                        match serde_json::from_str::<serde_json::Value>(&args) {
                            Ok(v) if v.is_object() => v,
                            // Kept as an object (the APIs want one back in the history) that
                            // the agent answers with an error result the model can correct.
                            Ok(_) => invalid_arguments(&args, "the arguments must be a JSON object"),
                            Err(e) => invalid_arguments(&args, &e.to_string()),
                        }
                    };
                    ContentBlock::ToolUse { id, name, input }
                }
            });
        }
        let has_tools = content.iter().any(|b| matches!(b, ContentBlock::ToolUse { .. }));
        let stop_reason = self.stop_reason.unwrap_or(if has_tools {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        });
        Ok(Completion {
            content,
            stop_reason,
            usage: self.usage,
            model: self.model,
        })
    }

    /// What can be kept of an interrupted reply: its text and reasoning, never a
    /// half-received tool call (the provider must not see a call without a result).
    pub fn partial(self, stop_reason: StopReason) -> Completion {
        let content = self
            .blocks
            .into_iter()
            .filter_map(|b| match b {
                Partial::Text(text) if !text.is_empty() => Some(ContentBlock::Text { text }),
                Partial::Thinking { text, signature } if !text.is_empty() => Some(ContentBlock::Thinking {
                    thinking: text,
                    signature,
                }),
                _ => None,
            })
            .collect();
        Completion {
            content,
            stop_reason,
            usage: self.usage,
            model: self.model,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn interleaved_deltas_assemble_in_first_seen_order() {
        let mut a = Assembler::default();
        a.text("0", "Hel");
        a.tool_start("t1", Some("call_1"), Some("read"));
        a.tool_args("t1", "{\"pa");
        a.text("0", "lo");
        a.tool_args("t1", "th\":\"a.txt\"}");
        let c = a.finish().unwrap();
        assert_eq!(
            c.content,
            vec![
                ContentBlock::Text { text: "Hello".into() },
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "read".into(),
                    input: json!({"path": "a.txt"})
                }
            ]
        );
        assert_eq!(c.stop_reason, StopReason::ToolUse);
    }

    /// Regression (sse fuzz target): text for an index that holds a thinking block was shown
    /// to the user but missing from the saved reply.
    #[test]
    fn a_delta_of_another_kind_under_a_used_key_is_kept_in_a_block_of_its_own() {
        let mut a = Assembler::default();
        a.thinking("0", "hmm");
        a.text("0", "Hello ");
        a.text("1", "world");
        a.text("0", "again");
        let c = a.finish().unwrap();
        assert_eq!(c.text(), "Hello againworld");
        assert!(matches!(&c.content[0], ContentBlock::Thinking { thinking, .. } if thinking == "hmm"));
    }

    #[test]
    fn broken_tool_json_is_kept_for_an_error_result_and_partial_keeps_text() {
        let mut a = Assembler::default();
        a.text("0", "so far");
        a.tool_start("t", Some("c1"), Some("edit"));
        a.tool_args("t", "{\"x\":");
        let c = a.finish().unwrap();
        match &c.content[1] {
            ContentBlock::ToolUse { input, .. } => assert_eq!(input[INVALID_ARGUMENTS], "{\"x\":"),
            other => panic!("{other:?}"),
        }
        let mut a = Assembler::default();
        a.text("0", "so far");
        a.tool_args("t", "{\"x\":");
        let p = a.partial(StopReason::Error);
        assert_eq!(p.content, vec![ContentBlock::Text { text: "so far".into() }]);
    }
}
