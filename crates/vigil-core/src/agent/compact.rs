//! Compaction: keeping long conversations inside the model's context window.
//!
//! Transcripts are append-only, so a summary cannot replace lines in place. Instead a
//! summary message is appended with `kind: summary { replaces_before: K }`: from then on the
//! request sees `[summary] + transcript[K..]` (earlier summaries skipped). The cut point `K`
//! is always a place where no tool call is separated from its result: before a plain user
//! message, or before an assistant message that follows a tool-result message.

use tokio_util::sync::CancellationToken;
use vigil_protocol::{ContentBlock, Message, MessageKind, Role};

use crate::provider::{ChatRequest, ModelClient, ProviderError};

/// Rough tokens of a message: ~4 characters a token, plus framing. Good enough to decide
/// when to compact; the provider's own error is the backstop.
pub fn estimate_message(m: &Message) -> u64 {
    let chars: usize = m
        .content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } | ContentBlock::Context { text } => text.len(),
            ContentBlock::Thinking { thinking, .. } => thinking.len(),
            ContentBlock::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            ContentBlock::ToolResult { content, .. } => content.len(),
            ContentBlock::Image { .. } => IMAGE_TOKENS as usize * 4,
        })
        .sum();
    chars as u64 / 4 + 8
}

/// What an image costs at most once downscaled to 1568 px on its long side (Anthropic bills
/// about width × height / 750 and scales anything bigger down to ~1,600 tokens).
pub(super) const IMAGE_TOKENS: u64 = 1_600;

/// Rough tokens of the system prompt and what the provider is sent for this transcript
/// ([`request_view`]), counted without copying it.
pub fn estimate_view(system: &str, transcript: &[Message]) -> u64 {
    system.len() as u64 / 4
        + view_indices(transcript)
            .into_iter()
            .map(|i| estimate_message(&transcript[i]))
            .sum::<u64>()
}

/// The latest summary, as (its index, the index it replaces everything before).
fn latest_summary(transcript: &[Message]) -> Option<(usize, usize)> {
    transcript.iter().enumerate().rev().find_map(|(i, m)| match m.kind {
        MessageKind::Summary { replaces_before } => Some((i, replaces_before as usize)),
        _ => None,
    })
}

/// Transcript indices the request sees, in order (the summary first, if any).
pub fn view_indices(transcript: &[Message]) -> Vec<usize> {
    let Some((summary, start)) = latest_summary(transcript) else {
        return (0..transcript.len()).collect();
    };
    let rest = (start.min(transcript.len())..transcript.len())
        .filter(|&i| !matches!(transcript[i].kind, MessageKind::Summary { .. }));
    std::iter::once(summary).chain(rest).collect()
}

/// What the provider is sent for this transcript.
pub fn request_view(transcript: &[Message]) -> Vec<Message> {
    view_indices(transcript)
        .into_iter()
        .map(|i| transcript[i].clone())
        .collect()
}

fn is_cut_point(transcript: &[Message], i: usize) -> bool {
    let m = &transcript[i];
    if matches!(m.kind, MessageKind::Summary { .. }) || i == 0 {
        return false;
    }
    match m.role {
        Role::User => !m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. })),
        // After a tool result in the order the request sees: a summary made between two
        // rounds of one turn is appended between them, and is not what precedes the call.
        Role::Assistant => transcript[..i]
            .iter()
            .rev()
            .find(|p| !matches!(p.kind, MessageKind::Summary { .. }))
            .is_some_and(|p| p.role == Role::ToolResult),
        Role::ToolResult => false,
    }
}

/// Where to cut so that the kept tail holds about `keep_tokens`: the latest safe cut point
/// whose tail is at least that big, else the earliest safe one. `None` if nothing can be
/// summarised without breaking a tool-call pair.
pub fn choose_cut(transcript: &[Message], keep_tokens: u64) -> Option<usize> {
    let view = view_indices(transcript);
    // Never cut where the view already starts (the first message, or the one the latest
    // summary starts at): there would be nothing new to summarise, and a summary of the
    // summary would cost a model call and make nothing smaller.
    let start = latest_summary(transcript).map_or(0, |(_, start)| start);
    let candidates: Vec<usize> = view
        .iter()
        .copied()
        .filter(|&i| i > start && is_cut_point(transcript, i))
        .collect();
    let tail_tokens = |cut: usize| -> u64 {
        view.iter()
            .filter(|&&i| i >= cut && !matches!(transcript[i].kind, MessageKind::Summary { .. }))
            .map(|&i| estimate_message(&transcript[i]))
            .sum()
    };
    candidates
        .iter()
        .rev()
        .copied()
        .find(|&c| tail_tokens(c) >= keep_tokens)
        .or_else(|| candidates.first().copied())
}

/// Renders messages as plain text for the summariser (tool results shortened).
fn render(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let who = match (m.role, m.kind) {
            (_, MessageKind::Summary { .. }) => "Earlier summary",
            (Role::User, _) => "User",
            (Role::Assistant, _) => "Assistant",
            (Role::ToolResult, _) => "Tool result",
        };
        for b in &m.content {
            let line = match b {
                ContentBlock::Text { text } => text.clone(),
                ContentBlock::ToolUse { name, input, .. } => format!("→ calls {name} {input}"),
                ContentBlock::ToolResult { content, is_error, .. } => {
                    let short = crate::tools::truncate_head_tail(content, 2_000);
                    if *is_error {
                        format!("(error) {short}")
                    } else {
                        short
                    }
                }
                // The summariser reads text only: an old image becomes a line saying one was there.
                ContentBlock::Image { mime, .. } => format!("[an image ({mime}) was shown here]"),
                ContentBlock::Thinking { .. } | ContentBlock::Context { .. } => continue,
            };
            out.push_str(&format!("{who}: {line}\n\n"));
        }
    }
    out
}

const SUMMARY_PROMPT: &str =
    "You compress conversations between a user and an AI agent so the agent can continue the work. \
Write a faithful summary of the conversation below: the user's goals and preferences, decisions made, \
files read or changed (with paths), commands and their outcomes, open questions and what remains to do. \
Keep concrete facts (names, numbers, paths); drop pleasantries. Write in the conversation's language.";

/// The summary message text for a transcript prefix.
pub const SUMMARY_HEADING: &str = "[Summary of the earlier conversation]";

/// Asks the model to summarise `old` and returns the summary message to append.
pub async fn summarise(
    client: &ModelClient,
    old: &[Message],
    replaces_before: usize,
    max_chars: usize,
    now_ms: i64,
    cancel: &CancellationToken,
) -> Result<Message, ProviderError> {
    let text = crate::tools::truncate_head_tail(&render(old), max_chars);
    let request = ChatRequest {
        system: SUMMARY_PROMPT.to_string(),
        messages: vec![Message::user_text(text, now_ms)],
        tools: Default::default(),
        images: Default::default(),
        cache: Default::default(),
    };
    let done = client
        .stream(&request, cancel, &mut |_| {})
        .await
        .map_err(|f| f.error)?;
    let mut message = Message::user_text(format!("{SUMMARY_HEADING}\n\n{}", done.text().trim()), now_ms);
    message.kind = MessageKind::Summary {
        replaces_before: replaces_before as u64,
    };
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(t: &str) -> Message {
        Message::user_text(t, 0)
    }
    fn assistant(blocks: Vec<ContentBlock>) -> Message {
        Message {
            role: Role::Assistant,
            content: blocks,
            ..user("")
        }
    }
    fn call(id: &str) -> ContentBlock {
        ContentBlock::ToolUse {
            id: id.into(),
            name: "read".into(),
            input: json!({}),
        }
    }
    fn result(id: &str) -> Message {
        Message {
            role: Role::ToolResult,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: id.into(),
                content: "x".repeat(400),
                is_error: false,
            }],
            ..user("")
        }
    }

    fn conversation() -> Vec<Message> {
        vec![
            user("one"),                                                 // 0
            assistant(vec![call("a")]),                                  // 1
            result("a"),                                                 // 2
            assistant(vec![ContentBlock::Text { text: "done".into() }]), // 3 (cut point: after a result)
            user("two"),                                                 // 4 (cut point)
            assistant(vec![call("b")]),                                  // 5
            result("b"),                                                 // 6
            assistant(vec![ContentBlock::Text { text: "ok".into() }]),   // 7 (cut point)
        ]
    }

    #[test]
    fn an_old_image_becomes_a_placeholder_line_for_the_summariser_and_counts_as_tokens() {
        let mut m = user("look at this");
        m.content.push(ContentBlock::Image {
            sha256: "a".repeat(64),
            mime: "image/png".into(),
        });
        assert_eq!(
            render(&[m.clone()]),
            "User: look at this\n\nUser: [an image (image/png) was shown here]\n\n"
        );
        assert!(estimate_message(&m) >= IMAGE_TOKENS, "{}", estimate_message(&m));
    }

    #[test]
    fn cuts_never_separate_a_call_from_its_result() {
        let t = conversation();
        for keep in [0, 50, 100, 200, 10_000] {
            let cut = choose_cut(&t, keep).unwrap();
            assert!([3, 4, 7].contains(&cut), "keep {keep}: cut {cut}");
        }
        assert_eq!(choose_cut(&t, 0), Some(7));
        assert_eq!(choose_cut(&t, 10_000), Some(3));
    }

    #[test]
    fn a_round_after_a_summary_made_inside_the_turn_can_still_be_cut_before() {
        // A summary appended between two rounds (the turn compacted before its next
        // request): the next round's call follows a tool result in the request's order.
        let mut t = conversation(); // .., 5 call b, 6 result b
        t.truncate(7);
        let mut s = user("S1");
        s.kind = MessageKind::Summary { replaces_before: 4 };
        t.push(s); // 7
        t.push(assistant(vec![call("c")])); // 8
        t.push(result("c")); // 9
        assert_eq!(view_indices(&t), vec![7, 4, 5, 6, 8, 9]);
        assert_eq!(choose_cut(&t, 0), Some(8));
    }

    #[test]
    fn the_view_starts_with_the_latest_summary_and_skips_replaced_lines() {
        let mut t = conversation();
        let mut s = user("S1");
        s.kind = MessageKind::Summary { replaces_before: 4 };
        t.push(s); // 8
        t.push(user("three")); // 9
        assert_eq!(view_indices(&t), vec![8, 4, 5, 6, 7, 9]);
        let mut s2 = user("S2");
        s2.kind = MessageKind::Summary { replaces_before: 7 };
        t.push(s2); // 10
        assert_eq!(view_indices(&t), vec![10, 7, 9]);
        // The next cut is chosen among what the view holds, never the summary itself.
        assert_eq!(choose_cut(&t, 0), Some(9));
        // Nor where the view already starts: that would summarise the summary alone.
        assert_eq!(choose_cut(&t, 10_000), Some(9));
        t.truncate(9);
        t.push(assistant(vec![call("c")])); // 9
        assert_eq!(view_indices(&t), vec![8, 4, 5, 6, 7, 9]);
        assert_eq!(choose_cut(&t, 10_000), Some(7));
        let mut s3 = user("S3");
        s3.kind = MessageKind::Summary { replaces_before: 7 };
        t.push(s3); // 10
        assert_eq!(choose_cut(&t, 0), None, "only the summary's own start is left");
    }
}
