//! # system_events
//!
//! Owns the per-session queues of system events (seed 000 §7.1): short human-readable lines
//! such as "Exec completed (abc123, code 0) :: all tests passed" that background work leaves
//! for a session's next turn. In memory only, at most [`MAX_EVENTS`] per session (the oldest
//! goes), a line equal to the one queued just before it is skipped, and a turn drains the
//! whole queue into its context block.
//!
//! Must never: persist (a result that must survive a restart goes to the mailbox), block, or
//! decide when a turn runs (the caller pairs an enqueue with a wake).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most events kept per session; more push the oldest out.
pub const MAX_EVENTS: usize = 20;

/// What kind of thing happened; picks the heartbeat prompt that relays it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemEventKind {
    /// A background command finished (the exec-event prompt relays it).
    ExecFinished,
    /// A scheduled reminder fired (the cron prompt relays it).
    Cron,
    /// Anything else.
    Other,
}

/// One queued event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemEvent {
    pub text: String,
    pub kind: SystemEventKind,
    /// Milliseconds since the Unix epoch.
    pub ts: i64,
}

/// The queues of every session; clones share them.
#[derive(Debug, Clone, Default)]
pub struct SystemEvents {
    /// `std` lock: held for a push or a take, never across an await.
    queues: Arc<Mutex<HashMap<String, Vec<SystemEvent>>>>,
}

impl SystemEvents {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<SystemEvent>>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `text` for `session`'s next turn. Returns false when it was skipped: blank,
    /// or the same as the event queued just before it.
    pub fn enqueue(&self, session: &str, text: &str, kind: SystemEventKind, ts: i64) -> bool {
        let text = text.trim();
        if text.is_empty() {
            return false;
        }
        let mut queues = self.lock();
        let queue = queues.entry(session.to_string()).or_default();
        if queue.last().is_some_and(|last| last.text == text) {
            return false;
        }
        queue.push(SystemEvent {
            text: text.to_string(),
            kind,
            ts,
        });
        if queue.len() > MAX_EVENTS {
            let over = queue.len() - MAX_EVENTS;
            queue.drain(..over);
        }
        true
    }

    /// The queued events, left in place (to choose a prompt before the turn takes them).
    pub fn peek(&self, session: &str) -> Vec<SystemEvent> {
        self.lock().get(session).cloned().unwrap_or_default()
    }

    /// Takes every queued event, oldest first.
    pub fn drain(&self, session: &str) -> Vec<SystemEvent> {
        self.lock().remove(session).unwrap_or_default()
    }

    /// Puts events a failed turn took back in front of any queued since, so they are not
    /// lost; the cap still holds.
    pub fn restore(&self, session: &str, mut events: Vec<SystemEvent>) {
        if events.is_empty() {
            return;
        }
        let mut queues = self.lock();
        let queue = queues.entry(session.to_string()).or_default();
        events.append(queue);
        let over = events.len().saturating_sub(MAX_EVENTS);
        events.drain(..over);
        *queue = events;
    }
}

/// The `## System Events` section of a turn's context block, or `None` when there are none.
/// Each line is prefixed `[SYSTEM]`, as OpenClaw shows them (seed 000 §7.3).
pub fn context_section(events: &[SystemEvent]) -> Option<String> {
    if events.is_empty() {
        return None;
    }
    let mut out = String::from("## System Events");
    for e in events {
        out.push_str("\n- [SYSTEM] ");
        out.push_str(&e.text.replace('\n', "\n  "));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(events: &[SystemEvent]) -> Vec<&str> {
        events.iter().map(|e| e.text.as_str()).collect()
    }

    #[test]
    fn at_most_twenty_are_kept_and_the_oldest_go() {
        let q = SystemEvents::new();
        for i in 0..25 {
            assert!(q.enqueue("main", &format!("event {i}"), SystemEventKind::Other, i));
        }
        let drained = q.drain("main");
        assert_eq!(drained.len(), MAX_EVENTS);
        assert_eq!(drained[0].text, "event 5");
        assert_eq!(drained[19].text, "event 24");
        assert!(q.drain("main").is_empty(), "draining empties the queue");
    }

    #[test]
    fn consecutive_duplicates_are_skipped_but_repeats_later_are_kept() {
        let q = SystemEvents::new();
        assert!(q.enqueue("main", "a", SystemEventKind::Other, 1));
        assert!(!q.enqueue("main", " a ", SystemEventKind::Other, 2));
        assert!(q.enqueue("main", "b", SystemEventKind::Other, 3));
        assert!(q.enqueue("main", "a", SystemEventKind::Other, 4));
        assert!(!q.enqueue("main", "  ", SystemEventKind::Other, 5));
        assert_eq!(texts(&q.peek("main")), ["a", "b", "a"]);
        assert!(q.peek("other").is_empty(), "queues are per session");
    }

    #[test]
    fn the_context_section_lists_them() {
        let q = SystemEvents::new();
        assert_eq!(context_section(&q.peek("main")), None);
        q.enqueue(
            "main",
            "Exec completed (a1, code 0) :: ok\nline 2",
            SystemEventKind::ExecFinished,
            1,
        );
        assert_eq!(
            context_section(&q.peek("main")).unwrap(),
            "## System Events\n- [SYSTEM] Exec completed (a1, code 0) :: ok\n  line 2"
        );
    }

    #[test]
    fn restored_events_go_back_in_front() {
        let q = SystemEvents::new();
        q.enqueue("main", "old", SystemEventKind::Other, 1);
        let taken = q.drain("main");
        q.enqueue("main", "new", SystemEventKind::Other, 2);
        q.restore("main", taken);
        assert_eq!(texts(&q.drain("main")), ["old", "new"]);
    }
}
