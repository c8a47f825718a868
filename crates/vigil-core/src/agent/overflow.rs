//! Recovering from a request the model's context window cannot hold.
//!
//! The estimate that triggers compaction is rough; the provider's "too long" is the last
//! word. On it the turn recovers in steps, each of which must make the request smaller, at
//! most [`MAX_RECOVERIES`] times for one request: first older messages are summarised
//! (`compact`, forced); when nothing older can be cut or that did not help — the round that
//! overflowed is all that is left, say three parallel reads of 30 % of the window each —
//! the tool results the request carries are cut, the largest first, down to one common
//! length (cut in the middle, head and tail kept), and an image a tool returned is left out
//! once that length is below what the image costs. Each step aims at three quarters of the
//! request, and at most 70 % of the window. The cuts hold for the rest of the turn; they are
//! made in the request only, so the transcript and the cards keep what the tools returned.
//!
//! Must never: send a request again unchanged after a "too long", or cut a result below
//! [`FLOOR_CHARS`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use vigil_protocol::{ContentBlock, Message, Role};

use super::compact::{estimate_message, request_view, IMAGE_TOKENS};
use super::{context, Finish, Turn};
use crate::provider::{ModelClient, ProviderError, StreamFailure};
use crate::tools::truncate_head_tail;

/// Recoveries for one request before the turn gives up: each one made the request smaller,
/// and still it did not fit.
pub(super) const MAX_RECOVERIES: u32 = 4;

/// No result is cut below this many characters: what is left should still say something.
pub(super) const FLOOR_CHARS: usize = 1_000;

/// What an image costs in the estimate, in characters.
const IMAGE_CHARS: usize = IMAGE_TOKENS as usize * 4;

/// Said at the end of a result cut to fit.
const CUT_NOTE: &str = "(Cut to fit the model's context window; read the source again in parts for the rest.)";

/// Said in a result whose image was left out.
const IMAGE_NOTE: &str =
    "(An image it returned was left out to fit the model's context window; ask for it again on its own if it matters.)";

/// One turn's cuts, and how many recoveries the request being made has had.
#[derive(Debug, Default)]
pub(super) struct Overflow {
    /// Recoveries since the last request that went through.
    pub tries: u32,
    /// The most characters a tool result (by its call's id) may have in a request.
    caps: HashMap<String, usize>,
    /// Images (by hash) that tool results no longer carry.
    dropped: HashSet<String>,
}

/// Rough tokens of a request's system prompt and messages.
pub(super) fn estimate(system: &str, messages: &[Message]) -> u64 {
    system.len() as u64 / 4 + messages.iter().map(estimate_message).sum::<u64>()
}

impl Overflow {
    /// `view` with this turn's cuts made.
    pub fn apply(&self, mut view: Vec<Message>) -> Vec<Message> {
        if self.caps.is_empty() && self.dropped.is_empty() {
            return view;
        }
        for m in view.iter_mut().filter(|m| m.role == Role::ToolResult) {
            let mut blocks: Vec<ContentBlock> = Vec::with_capacity(m.content.len());
            for block in std::mem::take(&mut m.content) {
                match block {
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    } => {
                        let content = match self.caps.get(&tool_use_id) {
                            Some(&cap) if content.chars().count() > cap => {
                                format!("{}\n{CUT_NOTE}", truncate_head_tail(&content, cap))
                            }
                            _ => content,
                        };
                        blocks.push(ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        });
                    }
                    ContentBlock::Image { sha256, .. } if self.dropped.contains(&sha256) => {
                        // Said in the result the image belongs to: the one before it.
                        if let Some(ContentBlock::ToolResult { content, .. }) = blocks
                            .iter_mut()
                            .rev()
                            .find(|b| matches!(b, ContentBlock::ToolResult { .. }))
                        {
                            content.push_str("\n\n");
                            content.push_str(IMAGE_NOTE);
                        }
                    }
                    other => blocks.push(other),
                }
            }
            m.content = blocks;
        }
        view
    }

    /// Cuts more of `view` (the messages of a request that was too long, before this
    /// turn's cuts): everything its tool results carry above one common length, the largest
    /// first. Returns whether the next request will be smaller; when not, nothing changed.
    pub fn cut(&mut self, system: &str, view: &[Message], window: u64) -> bool {
        let sent = self.apply(view.to_vec());
        let before = estimate(system, &sent);
        let goal = (before * 3 / 4).min(window * 7 / 10);
        let need = (before.saturating_sub(goal) as usize).saturating_mul(4);
        let mut texts: Vec<(&str, usize)> = Vec::new();
        let mut images: Vec<&str> = Vec::new();
        for m in sent.iter().filter(|m| m.role == Role::ToolResult) {
            for b in &m.content {
                match b {
                    ContentBlock::ToolResult {
                        tool_use_id, content, ..
                    } => texts.push((tool_use_id, content.chars().count())),
                    ContentBlock::Image { sha256, .. } => images.push(sha256),
                    _ => {}
                }
            }
        }
        let gain = |cap: usize| -> usize {
            let text: usize = texts.iter().map(|&(_, n)| n.saturating_sub(cap)).sum();
            let pictures = if cap < IMAGE_CHARS {
                images.len() * IMAGE_CHARS
            } else {
                0
            };
            text + pictures
        };
        // The longest common length that gains enough (the gain only grows as it shrinks);
        // the floor when none does.
        let top = texts.iter().map(|&(_, n)| n).max().unwrap_or(0).max(IMAGE_CHARS);
        let (mut low, mut high) = (FLOOR_CHARS, top.max(FLOOR_CHARS));
        while low < high {
            let mid = (low + high).div_ceil(2);
            if gain(mid) >= need {
                low = mid;
            } else {
                high = mid - 1;
            }
        }
        let cap = low;
        let old = (self.caps.clone(), self.dropped.clone());
        for &(id, n) in &texts {
            if n > cap {
                let kept = self.caps.entry(id.to_string()).or_insert(cap);
                *kept = (*kept).min(cap);
            }
        }
        if cap < IMAGE_CHARS {
            self.dropped.extend(images.iter().map(|s| s.to_string()));
        }
        let smaller = estimate(system, &self.apply(view.to_vec())) < before;
        if !smaller {
            (self.caps, self.dropped) = old;
        }
        smaller
    }
}

impl Turn<'_> {
    /// After a "too long": makes the next request smaller than `sent` was, or ends the turn
    /// with an error that says why it could not (see [`overflow`]).
    pub(super) async fn recover(
        &self,
        client: &ModelClient,
        system: &str,
        transcript: Arc<Vec<Message>>,
        sent: &[Message],
        overflow: &mut Overflow,
        failure: StreamFailure,
    ) -> Result<Arc<Vec<Message>>, Finish> {
        let give_up = |why: &str| {
            self.error(
                failure.error.kind(),
                format!(
                    "The conversation is too long for the model's context window ({}), and {why}. Start a new conversation, or pick a model with a larger window in Settings.",
                    match &failure.error {
                        ProviderError::ContextTooLong { message } => message.as_str(),
                        _ => "",
                    }
                ),
            );
            Err(Finish::because(failure.partial.stop_reason))
        };
        if overflow.tries >= MAX_RECOVERIES {
            return give_up(&format!(
                "it still did not fit after being made smaller {} times",
                MAX_RECOVERIES
            ));
        }
        overflow.tries += 1;
        let before = estimate(system, sent);
        // Older messages first: a summary keeps more of them than a cut does.
        let transcript = self.compact(client, system, transcript, true).await?;
        let mut view = request_view(&transcript);
        if let Some(limit) = self.extras.history_limit {
            view = context::latest(view, limit);
        }
        let view = crate::session::repair_tool_chain(view).0;
        if estimate(system, &overflow.apply(view.clone())) < before {
            return Ok(transcript);
        }
        if overflow.cut(system, &view, self.config.context_window) {
            tracing::info!(session = self.session_id, "tool results cut to fit the context window");
            return Ok(transcript);
        }
        give_up("nothing more can be cut: older messages are summarised and the tool results are cut as far as they go")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(sizes: &[usize], images: &[&str]) -> Message {
        let mut content: Vec<ContentBlock> = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| ContentBlock::ToolResult {
                tool_use_id: format!("r{i}"),
                content: (0..n).map(|j| if j % 50 == 49 { '\n' } else { 'x' }).collect(),
                is_error: false,
            })
            .collect();
        content.extend(images.iter().map(|s| ContentBlock::Image {
            sha256: s.to_string(),
            mime: "image/png".into(),
        }));
        Message {
            role: Role::ToolResult,
            content,
            ..Message::user_text("", 0)
        }
    }

    fn lengths(view: &[Message]) -> Vec<usize> {
        view.iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                ContentBlock::ToolResult { content, .. } => Some(content.chars().count()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_largest_results_are_cut_to_one_length_and_the_small_ones_kept() {
        let view = vec![
            Message::user_text("read them", 0),
            results(&[40_000, 30_000, 2_000], &[]),
        ];
        let mut o = Overflow::default();
        let before = estimate("", &view);
        assert!(o.cut("", &view, 16_000));
        let after = o.apply(view.clone());
        let n = lengths(&after);
        assert_eq!(n[2], 2_000, "the small result is whole");
        assert!(n[0].abs_diff(n[1]) < 10, "one common length: {n:?}");
        assert!(
            estimate("", &after) <= before * 3 / 4,
            "{} of {before}",
            estimate("", &after)
        );
        // Cut again, it goes on shrinking, and the cuts of the earlier step hold.
        assert!(o.cut("", &view, 16_000));
        let again = lengths(&o.apply(view));
        assert!(again[0] < n[0] && again[1] < n[1], "{again:?}");
    }

    #[test]
    fn images_go_once_text_alone_cannot_gain_enough_and_nothing_goes_below_the_floor() {
        let view = vec![results(&[1_500], &["a", "b"])];
        let mut o = Overflow::default();
        // A window so small that leaving the images out is not enough.
        assert!(o.cut("", &view, 100));
        let after = o.apply(view.clone());
        let blocks = &after[0].content;
        assert_eq!(blocks.len(), 1, "both images left out: {blocks:?}");
        let ContentBlock::ToolResult { content, .. } = &blocks[0] else {
            panic!("{blocks:?}")
        };
        assert_eq!(content.matches(IMAGE_NOTE).count(), 2, "{content}");
        assert!(content.contains(CUT_NOTE));
        // At the floor with no image left: nothing more to cut, and nothing changes.
        assert!(!o.cut("", &view, 100));
        assert_eq!(o.apply(view), after);
    }

    #[test]
    fn a_request_without_tool_results_has_nothing_to_cut() {
        let view = vec![Message::user_text("x".repeat(100_000), 0)];
        let mut o = Overflow::default();
        assert!(!o.cut("system", &view, 1_000));
        assert_eq!(o.apply(view.clone()), view);
    }
}
