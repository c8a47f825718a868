//! Delivering what a heartbeat run found (through [`crate::run::deliver`]: the mailbox, the card,
//! the notification), and the 24-hour rule against repeating the same alert.

use vigil_protocol::{NotificationKind, Source};

use super::prompts::PromptKind;
use super::Heartbeat;
use crate::run::deliver::{deliver, Delivery, Target};

/// The same text is not delivered twice within this (seed 002 §7.2).
const DEDUPE_WINDOW_MS: i64 = 24 * 3600 * 1000;
/// Where the last delivery is remembered: the heartbeat session's metadata, so the 24-hour
/// rule survives a restart.
const LAST_DELIVERY_KEY: &str = "heartbeat_last_delivery";

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

    /// Mailbox first (the one durable copy), then the card and the notification; then the
    /// delivery is remembered for the 24-hour rule.
    pub(super) async fn deliver(
        &self,
        session: &str,
        kind: &PromptKind,
        text: &str,
        notify: bool,
    ) -> Result<(), String> {
        let deps = &self.shared.deps;
        let now = deps.clock.now_ms();
        let (event_type, title) = match kind {
            PromptKind::ExecEvent => ("exec_completed", "Vigil: a command finished"),
            PromptKind::Cron(_) => ("reminder", "Vigil: reminder"),
            PromptKind::Poll => ("heartbeat_result", "Vigil needs your attention"),
        };
        let delivery = Delivery {
            from: session.to_string(),
            run_id: None,
            event_type: event_type.into(),
            title: title.into(),
            text: text.to_string(),
            source: Source::Heartbeat,
            notify: notify.then_some(NotificationKind::Heartbeat),
            target: Target::Mailbox {
                dedupe_key: Some(format!("heartbeat:{}", digest(text))),
            },
        };
        deliver(&deps.meta, &deps.emitter, now, delivery).await?;
        let record = serde_json::json!({ "text": text, "at": now });
        if let Err(e) = deps
            .meta
            .update_atomic_async(session, |m| m.extra.insert(LAST_DELIVERY_KEY.into(), record))
            .await
        {
            tracing::warn!("could not remember the heartbeat's delivery: {e}");
        }
        Ok(())
    }
}

/// A short stable digest of a delivered text, for `dedupe_key`.
fn digest(text: &str) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(text.as_bytes());
    hex::encode(&hash[..8])
}
