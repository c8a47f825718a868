//! One channel's queue of pushes, kept in `<data dir>/channels/outbox-<channel>.json` so a
//! restart loses none. Bounded: past [`MAX_QUEUED`] the oldest are folded into one
//! "N more" push, never dropped silently. A flood is coalesced: a conversation's first push
//! goes at once, later ones within [`COALESCE_MS`] wait and go as one with a count.
//! Approvals are neither coalesced nor saved: each keeps its own buttons, and an approval
//! dies with the process that asked (so after a restart none is pushed), while its token
//! must never reach a file.
//!
//! Must never: reorder pushes that are due, or lose one without a trace in a fold.

use std::collections::HashMap;
use std::path::PathBuf;

use super::push::{Kind, Push};

/// Pushes waiting, at most; the oldest are folded past it.
pub const MAX_QUEUED: usize = 50;
/// A conversation's pushes within this long after one went are sent as one.
pub const COALESCE_MS: i64 = 60_000;

pub struct Outbox {
    path: PathBuf,
    queue: Vec<Push>,
    next_seq: u64,
    /// Conversation → when its last push went (or was queued to go at once).
    last_went: HashMap<String, i64>,
}

impl Outbox {
    /// Opens the saved queue (approvals in it are gone: their runs ended with the process).
    pub fn open(path: PathBuf) -> Self {
        let queue: Vec<Push> = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        let queue: Vec<Push> = queue.into_iter().filter(|p| p.ask.is_none()).collect();
        let next_seq = queue.iter().map(|p| p.seq + 1).max().unwrap_or(1);
        Outbox {
            path,
            queue,
            next_seq,
            last_went: HashMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Queues `push` at `now_ms`: coalesced into a push of its conversation still waiting
    /// out its minute, held if that conversation's last push went less than a minute ago,
    /// and the oldest folded past the bound.
    pub fn add(&mut self, mut push: Push, now_ms: i64) {
        push.seq = self.next_seq;
        self.next_seq += 1;
        push.due_at = now_ms;
        if push.ask.is_none() {
            if let Some(c) = push.conversation.clone() {
                if let Some(held) = self
                    .queue
                    .iter_mut()
                    .find(|p| p.ask.is_none() && p.conversation.as_ref() == Some(&c) && p.due_at > now_ms)
                {
                    held.more += 1 + push.more;
                    held.title = push.title;
                    held.body = push.body;
                    self.save();
                    return;
                }
                match self.last_went.get(&c) {
                    Some(at) if now_ms - at < COALESCE_MS => push.due_at = at + COALESCE_MS,
                    _ => {
                        self.last_went.insert(c, now_ms);
                    }
                }
            }
        }
        self.queue.push(push);
        self.fold();
        self.save();
    }

    /// Folds the oldest pushes into one so at most [`MAX_QUEUED`] wait.
    fn fold(&mut self) {
        if self.queue.len() <= MAX_QUEUED {
            return;
        }
        let n = self.queue.len() - MAX_QUEUED + 1;
        let folded: Vec<Push> = self.queue.drain(..n).collect();
        let events: u32 = folded.iter().map(|p| 1 + p.more).sum();
        let titles: Vec<&str> = folded.iter().map(|p| p.title.as_str()).take(5).collect();
        let first = &folded[0];
        self.queue.insert(
            0,
            Push {
                seq: first.seq,
                kind: Kind::Failure,
                conversation: None,
                title: format!("{events} more events while Vigil could not reach you"),
                body: titles.join("\n"),
                more: events - 1,
                due_at: first.due_at,
                ask: None,
                folded: true,
            },
        );
    }

    /// The first push due at `now_ms` (in order of arrival), or when the next one is due.
    pub fn next(&self, now_ms: i64) -> Result<Push, Option<i64>> {
        match self.queue.iter().find(|p| p.due_at <= now_ms) {
            Some(p) => Ok(p.clone()),
            None => Err(self.queue.iter().map(|p| p.due_at).min()),
        }
    }

    /// `seq` went out (or will never go).
    pub fn done(&mut self, seq: u64) {
        self.queue.retain(|p| p.seq != seq);
        self.save();
    }

    /// Drops the push of an approval that ended before it went.
    pub fn drop_approval(&mut self, approval_id: &str) {
        let before = self.queue.len();
        self.queue
            .retain(|p| p.ask.as_ref().is_none_or(|a| a.approval_id != approval_id));
        if self.queue.len() != before {
            self.save();
        }
    }

    fn save(&self) {
        let saved: Vec<&Push> = self.queue.iter().filter(|p| p.ask.is_none()).collect();
        let Ok(bytes) = serde_json::to_vec(&saved) else {
            return;
        };
        if let Some(dir) = self.path.parent() {
            let _ = crate::durable::create_private_dir_all(dir);
        }
        if let Err(e) = crate::durable::write_atomic(&self.path, &bytes) {
            tracing::warn!("could not save the channel's queue {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::push::Ask;

    fn push(conversation: Option<&str>, title: &str) -> Push {
        Push {
            seq: 0,
            kind: Kind::Routine,
            conversation: conversation.map(str::to_string),
            title: title.into(),
            body: title.into(),
            more: 0,
            due_at: 0,
            ask: None,
            folded: false,
        }
    }

    #[test]
    fn a_flood_in_one_conversation_goes_as_the_first_and_then_one_with_a_count() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = Outbox::open(dir.path().join("o.json"));
        for i in 0..5 {
            o.add(push(Some("c1"), &format!("e{i}")), 1_000 + i);
        }
        o.add(push(Some("c2"), "other"), 1_010);
        let first = o.next(1_010).unwrap();
        assert_eq!((first.title.as_str(), first.more), ("e0", 0));
        o.done(first.seq);
        let other = o.next(1_010).unwrap();
        assert_eq!(other.title, "other", "another conversation is not held");
        o.done(other.seq);
        assert_eq!(
            o.next(1_010),
            Err(Some(1_000 + COALESCE_MS)),
            "the rest wait their minute"
        );
        let rest = o.next(1_000 + COALESCE_MS).unwrap();
        assert_eq!((rest.title.as_str(), rest.more), ("e4", 3));
        assert_eq!(rest.text(), "e4\n(+3 more)");
    }

    #[test]
    fn past_the_bound_the_oldest_fold_into_one_and_a_restart_keeps_the_queue() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("o.json");
        let mut o = Outbox::open(path.clone());
        for i in 0..(MAX_QUEUED + 10) {
            o.add(push(None, &format!("e{i}")), i as i64);
        }
        o.add(
            Push {
                ask: Some(Ask {
                    approval_id: "a1".into(),
                    token: "secret-token".into(),
                    expires_at: None,
                }),
                ..push(None, "approval")
            },
            100,
        );
        assert_eq!(o.len(), MAX_QUEUED);
        let first = o.next(1_000).unwrap();
        assert_eq!(first.title, "12 more events while Vigil could not reach you");
        let saved = std::fs::read_to_string(&path).unwrap();
        assert!(!saved.contains("secret-token"), "a token in the file");
        let reopened = Outbox::open(path);
        assert_eq!(
            reopened.len(),
            MAX_QUEUED - 1,
            "all but the approval, which died with the process"
        );
        assert_eq!(reopened.next(1_000).unwrap().title, first.title, "in order");
    }
}
