//! The request bodies both protocols send, whole, for a transcript that holds every kind of
//! block: what a provider receives is pinned here, key by key.

use serde_json::{json, Value};
use vigil_protocol::{ContentBlock, Message, ProviderKind, Role};

use super::images::Wire;
use super::{CacheLife, ChatRequest, ProviderConfig, RequestImages, ToolSpec};

fn message(role: Role, content: Vec<ContentBlock>) -> Message {
    Message {
        role,
        content,
        ..Message::user_text("", 1)
    }
}

fn text(t: &str) -> ContentBlock {
    ContentBlock::Text { text: t.into() }
}

fn image(sha256: &str) -> ContentBlock {
    ContentBlock::Image {
        sha256: sha256.into(),
        mime: "image/png".into(),
    }
}

fn result(id: &str, content: &str, is_error: bool) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_use_id: id.into(),
        content: content.into(),
        is_error,
    }
}

/// Every block kind, in the places a transcript holds them.
fn rich_request(cache: CacheLife) -> ChatRequest {
    let mut images = RequestImages::default();
    images.insert("aa", b"PNG-A");
    images.insert("bb", b"PNG-B");
    ChatRequest {
        system: "You are \"Vigil\".\nBe brief.".into(),
        messages: vec![
            message(
                Role::User,
                vec![
                    ContentBlock::Context {
                        text: "Current time: now".into(),
                    },
                    text("look at this"),
                    image("aa"),
                    text(""),
                ],
            ),
            message(
                Role::Assistant,
                vec![
                    ContentBlock::Thinking {
                        thinking: "signed thought".into(),
                        signature: Some("sig-1".into()),
                    },
                    ContentBlock::Thinking {
                        thinking: "unsigned thought".into(),
                        signature: None,
                    },
                    text(""),
                    text("Let me run two things."),
                    ContentBlock::ToolUse {
                        id: "call_1".into(),
                        name: "exec".into(),
                        input: json!({"command": "ls", "cwd": "a\u{1b}b"}),
                    },
                    ContentBlock::ToolUse {
                        id: "call_2".into(),
                        name: "read".into(),
                        input: json!({"path": "x.png"}),
                    },
                ],
            ),
            message(
                Role::ToolResult,
                vec![
                    result("call_1", "a\nb", false),
                    result("call_2", "an image", false),
                    image("bb"),
                    image("cc"),
                    text("[placeholder]"),
                ],
            ),
            message(Role::ToolResult, vec![result("call_3", "failed", true)]),
            message(Role::User, vec![text("")]),
            message(Role::Assistant, vec![ContentBlock::ToolUse {
                id: "call_4".into(),
                name: "ls".into(),
                input: json!({}),
            }]),
            message(Role::User, vec![text("thanks"), text("and more")]),
        ],
        tools: vec![
            ToolSpec {
                name: "exec".into(),
                description: "Runs a command.".into(),
                parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
            },
            ToolSpec {
                name: "read".into(),
                description: "Reads a file.".into(),
                parameters: json!({"type": "object"}),
            },
        ]
        .into(),
        images,
        cache,
    }
}

fn body(kind: ProviderKind, req: &ChatRequest, refused: bool) -> (String, Value) {
    let mut cfg = ProviderConfig::new(kind, "http://127.0.0.1:9/base/", "the-model");
    cfg.max_tokens = 1234;
    let images = Wire {
        images: &req.images,
        refused,
    };
    let (url, bytes) = match kind {
        ProviderKind::Anthropic => super::anthropic::request(&cfg, req, &images),
        ProviderKind::Openai => super::openai::request(&cfg, req, &images),
    };
    (url, serde_json::from_slice(&bytes).unwrap())
}

fn pinned(kind: ProviderKind) -> Value {
    let text = match kind {
        ProviderKind::Anthropic => include_str!("../../tests/fixtures/wire/anthropic.json"),
        ProviderKind::Openai => include_str!("../../tests/fixtures/wire/openai.json"),
    };
    serde_json::from_str(text).unwrap()
}

#[test]
fn both_protocols_send_the_transcript_as_pinned() {
    for (kind, path) in [
        (ProviderKind::Anthropic, "/v1/messages"),
        (ProviderKind::Openai, "/chat/completions"),
    ] {
        let (url, sent) = body(kind, &rich_request(CacheLife::Minutes), false);
        assert_eq!(url, format!("http://127.0.0.1:9/base{path}"));
        assert_eq!(
            sent,
            pinned(kind),
            "{kind:?}: {}",
            serde_json::to_string_pretty(&sent).unwrap()
        );
    }
}

#[test]
fn an_hour_long_cache_is_asked_of_anthropic_and_changes_nothing_else() {
    let (_, sent) = body(ProviderKind::Anthropic, &rich_request(CacheLife::Hour), false);
    let mut expected = pinned(ProviderKind::Anthropic);
    expected["system"][0]["cache_control"]["ttl"] = json!("1h");
    assert_eq!(sent, expected);
    let (_, sent) = body(ProviderKind::Openai, &rich_request(CacheLife::Hour), false);
    assert_eq!(
        sent,
        pinned(ProviderKind::Openai),
        "OpenAI-compatible servers have no such field"
    );
}

#[test]
fn once_images_are_refused_each_is_sent_as_a_line_saying_so() {
    for kind in [ProviderKind::Anthropic, ProviderKind::Openai] {
        let (_, sent) = body(kind, &rich_request(CacheLife::Minutes), true);
        let text = sent.to_string();
        assert!(!text.contains("base64"), "{kind:?}: {text}");
        let note = "[an image was here; it was not sent: this model does not accept images]";
        // Two stored images and one missing one.
        assert_eq!(text.matches(note).count(), 3, "{kind:?}: {text}");
        assert!(!text.contains("is missing from this conversation"), "{kind:?}: {text}");
    }
}
