//! # session::repair
//!
//! Owns the last check before a history goes to a provider: every tool call must be answered
//! by exactly one result in the message right after it, or the API rejects the whole request
//! (seed 003 §10.1: minimal protocol repair, no semantic guessing). A crash or a Stop in the
//! middle of a tool call leaves exactly such a hole.
//!
//! Must never: change the transcript on disk (it repairs a copy), invent anything but an
//! explicit "interrupted" error result, or repair silently (every change is reported).

use std::collections::HashSet;

use vigil_protocol::{ContentBlock, Message, Role};

/// The content of a result made up for a call that never finished.
pub const INTERRUPTED: &str = "[interrupted: the turn ended before this tool finished]";

/// Returns a history in which each `ToolUse` of an assistant message is answered by exactly
/// one `ToolResult` (same id) in the `ToolResult` message that follows it, plus one note per
/// change:
///
/// - a missing result gets a synthetic error result (and a `ToolResult` message is inserted
///   right after the assistant message when there is none);
/// - a second result for the same call is dropped;
/// - a result whose call is not in the preceding assistant message is dropped (and a message
///   left empty by that is dropped too).
///
/// Results are put in the order of their calls, ahead of any other blocks, as Anthropic
/// requires. The images (and image placeholders) that follow a result belong to it: they
/// move with it, and go with it when it is dropped.
pub fn repair_tool_chain(messages: Vec<Message>) -> (Vec<Message>, Vec<String>) {
    let mut out = Vec::with_capacity(messages.len() + 1);
    let mut notes = Vec::new();
    // Messages move into the result: a sound history is returned without a copy.
    let mut messages = messages.into_iter().enumerate().peekable();
    while let Some((i, msg)) = messages.next() {
        if msg.role != Role::Assistant {
            // A results message not right after an assistant message answers nothing.
            push_without_orphans(&mut out, &mut notes, msg, i);
            continue;
        }
        let calls: Vec<(&str, &str)> = msg
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, name, .. } => Some((id.as_str(), name.as_str())),
                _ => None,
            })
            .collect();
        let answer = match messages.next_if(|(_, m)| m.role == Role::ToolResult) {
            Some((j, results)) => answer_calls(&mut notes, results, j, &calls),
            None if calls.is_empty() => None,
            None => {
                let mut synthetic = Message {
                    role: Role::ToolResult,
                    content: vec![],
                    ts: msg.ts,
                    model: None,
                    usage: None,
                    stop_reason: None,
                    kind: Default::default(),
                };
                for (id, name) in &calls {
                    notes.push(missing_note(i, id, name));
                    synthetic.content.push(interrupted(id));
                }
                Some(synthetic)
            }
        };
        out.push(msg);
        out.extend(answer);
    }
    (out, notes)
}

/// Rebuilds the results message at `index` so it answers `calls` exactly once each; `None`
/// if nothing is left of it.
fn answer_calls(
    notes: &mut Vec<String>,
    mut results: Message,
    index: usize,
    calls: &[(&str, &str)],
) -> Option<Message> {
    let known: HashSet<&str> = calls.iter().map(|(id, _)| *id).collect();
    let blocks = std::mem::take(&mut results.content);
    // Each kept result with the blocks that belong to it.
    let mut first: Vec<(String, Vec<ContentBlock>)> = Vec::new();
    let mut others = Vec::new();
    // Where the blocks after the latest result go: kept (`Some`), dropped (`None`), or there
    // was no result yet (the outer `None`).
    let mut owner: Option<Option<usize>> = None;
    for block in blocks {
        match block {
            ContentBlock::ToolResult { ref tool_use_id, .. } => {
                let id = tool_use_id.as_str();
                if !known.contains(id) {
                    notes.push(orphan_note(index, id));
                    owner = Some(None);
                } else if first.iter().any(|(seen, _)| seen == id) {
                    notes.push(format!(
                        "message {}: dropped a second result for tool call {id}",
                        index + 1
                    ));
                    owner = Some(None);
                } else {
                    first.push((id.to_string(), vec![block]));
                    owner = Some(Some(first.len() - 1));
                }
            }
            attached if belongs_to_result(&attached) && owner.is_some() => match owner {
                Some(Some(k)) => first[k].1.push(attached),
                _ => notes.push(format!("message {}: dropped an image of a dropped result", index + 1)),
            },
            other => others.push(other),
        }
    }
    let mut content = Vec::with_capacity(calls.len() + others.len());
    for (k, (id, name)) in calls.iter().enumerate() {
        match first.iter_mut().find(|(seen, _)| seen == id) {
            // Moved, unless a later call has the same id and needs it too.
            Some((_, blocks)) if calls[k + 1..].iter().any(|(later, _)| later == id) => {
                content.extend(blocks.iter().cloned())
            }
            Some((_, blocks)) => content.append(blocks),
            None => {
                notes.push(missing_note(index - 1, id, name));
                content.push(interrupted(id));
            }
        }
    }
    content.extend(others);
    if content.is_empty() {
        notes.push(format!(
            "message {}: dropped a tool-result message left empty",
            index + 1
        ));
        return None;
    }
    results.content = content;
    Some(results)
}

/// Keeps a message that answers no calls, without any `ToolResult` blocks (nor the images
/// that belong to them).
fn push_without_orphans(out: &mut Vec<Message>, notes: &mut Vec<String>, mut msg: Message, index: usize) {
    if !msg.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. })) {
        out.push(msg);
        return;
    }
    let blocks = std::mem::take(&mut msg.content);
    let mut content = Vec::with_capacity(blocks.len());
    let mut after_result = false;
    for block in blocks {
        match block {
            ContentBlock::ToolResult { tool_use_id, .. } => {
                notes.push(orphan_note(index, &tool_use_id));
                after_result = true;
            }
            attached if after_result && belongs_to_result(&attached) => {}
            other => {
                after_result = false;
                content.push(other);
            }
        }
    }
    if content.is_empty() {
        notes.push(format!(
            "message {}: dropped a tool-result message left empty",
            index + 1
        ));
    } else {
        msg.content = content;
        out.push(msg);
    }
}

/// Whether a block after a `ToolResult` in a results message is part of that result: an
/// image it returned, or the placeholder of one whose file is missing.
fn belongs_to_result(block: &ContentBlock) -> bool {
    matches!(block, ContentBlock::Image { .. } | ContentBlock::Text { .. })
}

fn interrupted(id: &str) -> ContentBlock {
    ContentBlock::ToolResult {
        tool_use_id: id.to_string(),
        content: INTERRUPTED.to_string(),
        is_error: true,
    }
}

fn missing_note(assistant_index: usize, id: &str, name: &str) -> String {
    format!(
        "message {}: tool call {id} ({name}) had no result; added an \"interrupted\" error result",
        assistant_index + 1
    )
}

fn orphan_note(index: usize, id: &str) -> String {
    format!("message {}: dropped a result for unknown tool call {id}", index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assistant(calls: &[&str]) -> Message {
        let mut content = vec![ContentBlock::Text { text: "working".into() }];
        for id in calls {
            content.push(ContentBlock::ToolUse {
                id: id.to_string(),
                name: "shell".into(),
                input: serde_json::json!({}),
            });
        }
        Message {
            role: Role::Assistant,
            content,
            ts: 10,
            model: None,
            usage: None,
            stop_reason: None,
            kind: Default::default(),
        }
    }

    fn result(id: &str, content: &str) -> ContentBlock {
        ContentBlock::ToolResult {
            tool_use_id: id.into(),
            content: content.into(),
            is_error: false,
        }
    }

    fn results(blocks: Vec<ContentBlock>) -> Message {
        Message {
            role: Role::ToolResult,
            content: blocks,
            ts: 11,
            model: None,
            usage: None,
            stop_reason: None,
            kind: Default::default(),
        }
    }

    fn user(text: &str) -> Message {
        Message::user_text(text, 1)
    }

    #[test]
    fn a_sound_history_is_returned_unchanged() {
        let h = vec![
            user("hi"),
            assistant(&["a", "b"]),
            results(vec![result("a", "1"), result("b", "2")]),
            assistant(&[]),
            user("thanks"),
        ];
        assert_eq!(repair_tool_chain(h.clone()), (h.clone(), vec![]));
        assert_eq!(repair_tool_chain(vec![]), (vec![], vec![]));
    }

    #[test]
    fn a_missing_result_is_added_as_interrupted() {
        let h = vec![user("hi"), assistant(&["a", "b"]), results(vec![result("a", "1")])];
        let (fixed, notes) = repair_tool_chain(h.clone());
        assert_eq!(
            fixed,
            vec![
                user("hi"),
                assistant(&["a", "b"]),
                results(vec![result("a", "1"), interrupted("b")]),
            ]
        );
        assert_eq!(
            notes,
            vec!["message 2: tool call b (shell) had no result; added an \"interrupted\" error result"]
        );
    }

    #[test]
    fn a_results_message_is_inserted_when_there_is_none() {
        let h = vec![user("hi"), assistant(&["a"]), user("hello?")];
        let (fixed, notes) = repair_tool_chain(h.clone());
        let mut inserted = results(vec![interrupted("a")]);
        inserted.ts = 10;
        assert_eq!(fixed, vec![user("hi"), assistant(&["a"]), inserted, user("hello?")]);
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn a_history_cut_off_after_the_calls_is_closed() {
        let h = vec![user("hi"), assistant(&["a", "b", "c"])];
        let (fixed, notes) = repair_tool_chain(h.clone());
        let mut inserted = results(vec![interrupted("a"), interrupted("b"), interrupted("c")]);
        inserted.ts = 10;
        assert_eq!(fixed, vec![user("hi"), assistant(&["a", "b", "c"]), inserted]);
        assert_eq!(notes.len(), 3);
    }

    #[test]
    fn duplicate_results_are_dropped_keeping_the_first() {
        let h = vec![
            assistant(&["a"]),
            results(vec![result("a", "first"), result("a", "second")]),
        ];
        let (fixed, notes) = repair_tool_chain(h.clone());
        assert_eq!(fixed, vec![assistant(&["a"]), results(vec![result("a", "first")])]);
        assert_eq!(notes, vec!["message 2: dropped a second result for tool call a"]);
    }

    #[test]
    fn orphan_results_are_dropped_and_empty_messages_with_them() {
        let h = vec![
            user("hi"),
            assistant(&["a"]),
            results(vec![result("zzz", "?"), result("a", "1")]),
            results(vec![result("a", "late")]),
            assistant(&[]),
            results(vec![result("q", "?")]),
        ];
        let (fixed, notes) = repair_tool_chain(h.clone());
        assert_eq!(
            fixed,
            vec![
                user("hi"),
                assistant(&["a"]),
                results(vec![result("a", "1")]),
                assistant(&[]),
            ]
        );
        assert_eq!(
            notes,
            vec![
                "message 3: dropped a result for unknown tool call zzz",
                "message 4: dropped a result for unknown tool call a",
                "message 4: dropped a tool-result message left empty",
                "message 6: dropped a result for unknown tool call q",
                "message 6: dropped a tool-result message left empty",
            ]
        );
    }

    #[test]
    fn several_calls_are_answered_in_call_order_ahead_of_other_blocks() {
        let note = ContentBlock::Text {
            text: "user interjected".into(),
        };
        let h = vec![
            assistant(&["a", "b", "c"]),
            results(vec![note.clone(), result("c", "3"), result("a", "1")]),
        ];
        let (fixed, notes) = repair_tool_chain(h.clone());
        assert_eq!(
            fixed,
            vec![
                assistant(&["a", "b", "c"]),
                results(vec![result("a", "1"), interrupted("b"), result("c", "3"), note]),
            ]
        );
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn a_results_images_move_with_it_and_go_with_it() {
        let image = |c: &str| ContentBlock::Image {
            sha256: c.repeat(64),
            mime: "image/png".into(),
        };
        let h = vec![
            assistant(&["a", "b"]),
            results(vec![
                result("b", "2"),
                image("b"),
                result("a", "1"),
                image("a"),
                result("x", "orphan"),
                image("c"),
                result("a", "again"),
                image("d"),
            ]),
            results(vec![result("y", "late"), image("e")]),
        ];
        let (fixed, notes) = repair_tool_chain(h.clone());
        assert_eq!(
            fixed,
            vec![
                assistant(&["a", "b"]),
                results(vec![result("a", "1"), image("a"), result("b", "2"), image("b")]),
            ]
        );
        assert_eq!(notes.len(), 6, "{notes:?}");
    }

    #[test]
    fn results_for_an_earlier_turn_do_not_answer_a_later_one() {
        let h = vec![
            assistant(&["a"]),
            user("stop"),
            results(vec![result("a", "1")]),
            assistant(&["b"]),
            results(vec![result("b", "2")]),
        ];
        let (fixed, notes) = repair_tool_chain(h.clone());
        let mut inserted = results(vec![interrupted("a")]);
        inserted.ts = 10;
        assert_eq!(
            fixed,
            vec![
                assistant(&["a"]),
                inserted,
                user("stop"),
                assistant(&["b"]),
                results(vec![result("b", "2")]),
            ]
        );
        assert_eq!(notes.len(), 3, "{notes:?}");
    }
}
