//! Delivering what a heartbeat run found: the mailbox first (the one durable copy), then the
//! card and the notification; and the 24-hour rule against repeating the same alert.

use vigil_protocol::{Event, NotificationKind, Scope, Source};

use super::prompts::PromptKind;
use super::Heartbeat;
use crate::session::{MailboxEvent, PRIMARY_SESSION};

/// The same text is not delivered twice within this (seed 002 §7.2).
const DEDUPE_WINDOW_MS: i64 = 24 * 3600 * 1000;
/// Where the last delivery is remembered: the heartbeat session's metadata, so the 24-hour
/// rule survives a restart.
const LAST_DELIVERY_KEY: &str = "heartbeat_last_delivery";
/// Longest notification body and card summary.
const SUMMARY_CHARS: usize = 160;

impl Heartbeat {
    pub(super) fn delivered_recently(&self, session: &str, text: &str, now: i64) -> bool {
        let Ok(loaded) = self.shared.deps.meta.load(session) else {
            return false;
        };
        let Some(last) = loaded.meta.extra.get(LAST_DELIVERY_KEY) else {
            return false;
        };
        let same = last["text"].as_str() == Some(text);
        let at = last["at"].as_i64().unwrap_or(i64::MIN);
        same && now.saturating_sub(at) < DEDUPE_WINDOW_MS
    }

    /// Mailbox first (the one durable copy), then the card and the notification.
    pub(super) async fn deliver(
        &self,
        session: &str,
        kind: &PromptKind,
        text: &str,
        notify: bool,
    ) -> Result<(), String> {
        let deps = &self.shared.deps;
        let now = deps.clock.now_ms();
        let summary = summarize(text);
        let (event_type, title) = match kind {
            PromptKind::ExecEvent => ("exec_completed", "Vigil: a command finished"),
            PromptKind::Cron(_) => ("reminder", "Vigil: reminder"),
            PromptKind::Poll => ("heartbeat_result", "Vigil needs your attention"),
        };
        let event = MailboxEvent {
            event_id: uuid::Uuid::new_v4().to_string(),
            source: session.to_string(),
            detail: (summary != text).then(|| text.to_string()),
            summary: summary.clone(),
            created_at: now,
            run_id: None,
            event_type: event_type.into(),
            priority: 1,
            dedupe_key: Some(format!("heartbeat:{}", digest(text))),
            claim: None,
        };
        let meta = deps
            .meta
            .deposit(PRIMARY_SESSION, event.clone())
            .await
            .map_err(|e| e.to_string())?;
        let record = serde_json::json!({ "text": text, "at": now });
        if let Err(e) = deps
            .meta
            .update_atomic_async(session, |m| m.extra.insert(LAST_DELIVERY_KEY.into(), record))
            .await
        {
            tracing::warn!("could not remember the heartbeat's delivery: {e}");
        }
        let primary = deps.emitter.for_session(PRIMARY_SESSION, Scope::Primary);
        primary.emit(
            Source::Heartbeat,
            Event::BackgroundUpdate {
                update: event.card(),
                unread: meta.mailbox.len() as u32,
            },
        );
        if notify {
            primary.emit(
                Source::Heartbeat,
                Event::Notification {
                    kind: NotificationKind::Heartbeat,
                    title: title.into(),
                    body: summary,
                    event_id: Some(event.event_id),
                    process_id: None,
                    approval_id: None,
                    target_session_id: None,
                    message_ts: None,
                },
            );
        }
        Ok(())
    }
}

/// The first non-blank line, cut to [`SUMMARY_CHARS`].
pub(super) fn summarize(text: &str) -> String {
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

/// A short stable digest of a delivered text, for `dedupe_key`.
fn digest(text: &str) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(text.as_bytes());
    hex::encode(&hash[..8])
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
}
