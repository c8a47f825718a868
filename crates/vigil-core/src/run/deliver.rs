//! Delivering what a run found, the one way every kind of work does it: to the main
//! conversation's mailbox first (the one durable copy, which the next turn reads), then the
//! card in the window and, when asked, the notification; or, for a conversation's own
//! continuation, a notification that opens the conversation at the reply.
//!
//! Owns: the mailbox event a result becomes, the card and notification made from it, the
//! summary line they show, and which replies say there is nothing to tell.
//! Must never: raise the card or the notification of a result the mailbox did not keep (a
//! result the user was told of must survive a restart); notify a silent reply.

use vigil_protocol::{Event, NotificationKind, Scope, Source};

use crate::events::Emitter;
use crate::session::{MailboxEvent, MetaStore, PRIMARY_SESSION};

/// Longest notification body and card summary.
pub const SUMMARY_CHARS: usize = 160;

/// Replies that mean "nothing to tell": no delivery.
pub const SILENT_REPLIES: [&str; 2] = ["NO_REPLY", HEARTBEAT_OK];

/// The heartbeat's "nothing to report" (seed 002).
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";

/// Where a result goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The main conversation's mailbox and card (the heartbeat, routines, jobs). The key keeps
    /// one copy of a result delivered twice (a retried delivery, a repeated alert).
    Mailbox { dedupe_key: Option<String> },
    /// The conversation the reply is in: only the notification, a click opens it there.
    Conversation {
        session_id: String,
        message_ts: Option<i64>,
    },
}

/// One result to deliver.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// The session (or subsystem) that produced it.
    pub from: String,
    pub run_id: Option<String>,
    /// `job_completed`, `heartbeat_result`, `reminder`, …: the card's kind.
    pub event_type: String,
    /// The notification's title.
    pub title: String,
    /// The whole result; the card and the notification show its first line.
    pub text: String,
    /// Who the events come from.
    pub source: Source,
    /// The notification's kind; `None`: no notification (the user turned them off).
    pub notify: Option<NotificationKind>,
    pub target: Target,
}

/// Delivers `d`: mailbox, card, notification, in that order. Fails only when the mailbox
/// could not keep it (nothing was shown then).
pub async fn deliver(meta: &MetaStore, emitter: &Emitter, now_ms: i64, d: Delivery) -> Result<(), String> {
    let summary = summarize(&d.text);
    let (event_id, session_id, message_ts, emitter) = match d.target {
        Target::Conversation { session_id, message_ts } => {
            let emitter = emitter.for_session(&session_id, Scope::Primary);
            (None, Some(session_id), message_ts, emitter)
        }
        Target::Mailbox { dedupe_key } => {
            let event = MailboxEvent {
                event_id: uuid::Uuid::new_v4().to_string(),
                source: d.from,
                detail: (summary != d.text.trim()).then(|| d.text.clone()),
                summary: summary.clone(),
                created_at: now_ms,
                run_id: d.run_id,
                event_type: d.event_type,
                priority: 1,
                dedupe_key,
                claim: None,
            };
            let kept = meta
                .deposit(PRIMARY_SESSION, event.clone())
                .await
                .map_err(|e| format!("could not deliver the result: {e}"))?;
            let primary = emitter.for_session(PRIMARY_SESSION, Scope::Primary);
            primary.emit(
                d.source,
                Event::BackgroundUpdate {
                    update: event.card(),
                    unread: kept.mailbox.len() as u32,
                },
            );
            (Some(event.event_id), None, None, primary)
        }
    };
    if let Some(kind) = d.notify {
        emitter.emit(
            d.source,
            Event::Notification {
                kind,
                title: d.title,
                body: summary,
                event_id,
                process_id: None,
                approval_id: None,
                target_session_id: session_id,
                message_ts,
            },
        );
    }
    Ok(())
}

/// Whether a reply only says there is nothing to tell (`NO_REPLY`, `HEARTBEAT_OK`, nothing).
pub fn is_silent(reply: &str) -> bool {
    let reply = reply.trim().trim_matches(|c: char| c == '*' || c == '`' || c == '.');
    reply.is_empty() || SILENT_REPLIES.iter().any(|s| reply.eq_ignore_ascii_case(s))
}

/// The first non-blank line, cut to [`SUMMARY_CHARS`].
pub fn summarize(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if line.chars().count() <= SUMMARY_CHARS && line.len() == text.trim().len() {
        return line.to_string();
    }
    let mut short: String = line.chars().take(SUMMARY_CHARS - 1).collect();
    if short.chars().count() < line.chars().count() {
        short.push('…');
    }
    short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_are_the_first_line_cut_short() {
        assert_eq!(summarize("Disk at 93 %."), "Disk at 93 %.");
        assert_eq!(summarize("\n  Disk at 93 %.\nDetails"), "Disk at 93 %.");
        let long = "x".repeat(500);
        let s = summarize(&long);
        assert_eq!(s.chars().count(), SUMMARY_CHARS);
        assert!(s.ends_with('…'));
    }

    #[test]
    fn only_a_bare_token_is_silent() {
        for silent in [
            "NO_REPLY",
            " no_reply\n",
            "HEARTBEAT_OK",
            "**NO_REPLY**",
            "`NO_REPLY`.",
            "",
        ] {
            assert!(is_silent(silent), "{silent:?}");
        }
        for said in [
            "Tests passed; NO_REPLY needed",
            "NO_REPLY but the build failed",
            "Done.",
        ] {
            assert!(!is_silent(said), "{said:?}");
        }
    }
}
