//! The Telegram Bot API over plain reqwest: the five methods Vigil uses (`getUpdates` as a
//! long poll, `sendMessage`, `editMessageText`, `answerCallbackQuery`) are a few lines of
//! JSON each. `frankenstein` would give typed structs for the whole API and `teloxide` a bot
//! framework with its own dispatcher; either adds a large typed surface to compile on a
//! 2-core machine for four calls, and neither adds a check we need: the trust rules
//! (paired chat, one-time tokens) are ours either way.
//!
//! Must never: show the bot token: it is part of every request's path, so errors are taken
//! without their URL (`reqwest::Error::without_url`) and never carry a response's request.

use std::time::Duration;

use serde_json::{json, Value};

/// Telegram's limit on one message's text, in characters.
pub const MAX_TEXT: usize = 4096;
/// How long one long poll waits on Telegram's side.
pub const POLL_SECS: u64 = 25;

#[derive(Clone)]
pub struct Telegram {
    pub http: reqwest::Client,
    /// `https://api.telegram.org`, without a trailing `/`.
    pub api_base: String,
    pub token: String,
}

/// What an update says, reduced to what Vigil acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// A text message in `chat_id`.
    Text { chat_id: i64, text: String },
    /// A button pressed under `message_id` in `chat_id` by user `from`.
    Button {
        query_id: String,
        chat_id: i64,
        from: i64,
        message_id: i64,
        data: String,
    },
    /// Anything else (stickers, edits, other chats' joins): skipped.
    Other,
}

/// The inline keyboard of an approval: Allow once / Deny, each with the token.
pub fn approval_buttons(token: &str) -> Value {
    json!({"inline_keyboard": [[
        {"text": "Allow once", "callback_data": format!("a {token}")},
        {"text": "Deny", "callback_data": format!("d {token}")},
    ]]})
}

/// A button's data: `(allow, token)`.
pub fn parse_button(data: &str) -> Option<(bool, &str)> {
    let (verb, token) = data.split_once(' ')?;
    match verb {
        "a" => Some((true, token)),
        "d" => Some((false, token)),
        _ => None,
    }
}

/// `text` split into messages of at most [`MAX_TEXT`] characters (at a line break when one
/// is near the end, so a paragraph is not cut mid-word where it need not be).
pub fn split(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut start = 0;
    while chars.len() - start > MAX_TEXT {
        let window = &chars[start..start + MAX_TEXT];
        let cut = window
            .iter()
            .rposition(|c| *c == '\n')
            .filter(|i| *i >= MAX_TEXT - 500)
            .map(|i| i + 1)
            .unwrap_or(MAX_TEXT);
        out.push(window[..cut].iter().collect());
        start += cut;
    }
    out.push(chars[start..].iter().collect());
    out
}

impl Telegram {
    async fn call(&self, method: &str, body: Value, timeout: Duration) -> Result<Value, String> {
        let url = format!("{}/bot{}/{method}", self.api_base, self.token);
        let resp = self
            .http
            .post(url)
            .json(&body)
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| e.without_url().to_string())?;
        let status = resp.status();
        let v: Value = resp.json().await.map_err(|e| e.without_url().to_string())?;
        if v["ok"] == true {
            return Ok(v["result"].clone());
        }
        let why = v["description"].as_str().unwrap_or("no description");
        Err(format!(
            "Telegram answered {method} with {status}: {}",
            super::push::cut(why, 200)
        ))
    }

    /// Waits up to [`POLL_SECS`] for updates from `offset` on; returns them with the next offset.
    pub async fn updates(&self, offset: i64) -> Result<(Vec<Update>, i64), String> {
        let body = json!({"offset": offset, "timeout": POLL_SECS, "allowed_updates": ["message", "callback_query"]});
        let result = self
            .call("getUpdates", body, Duration::from_secs(POLL_SECS + 10))
            .await?;
        let mut next = offset;
        let mut out = Vec::new();
        for u in result.as_array().into_iter().flatten() {
            if let Some(id) = u["update_id"].as_i64() {
                next = next.max(id + 1);
            }
            out.push(read_update(u));
        }
        Ok((out, next))
    }

    /// Sends `text` (with `buttons`, an inline keyboard); returns the message's id.
    pub async fn send(&self, chat_id: i64, text: &str, buttons: Option<Value>) -> Result<i64, String> {
        let mut body = json!({"chat_id": chat_id, "text": text});
        if let Some(b) = buttons {
            body["reply_markup"] = b;
        }
        let sent = self.call("sendMessage", body, Duration::from_secs(15)).await?;
        sent["message_id"]
            .as_i64()
            .ok_or_else(|| "Telegram sent no message id".to_string())
    }

    /// Replaces a message's text (and removes its buttons).
    pub async fn edit(&self, chat_id: i64, message_id: i64, text: &str) -> Result<(), String> {
        let body = json!({"chat_id": chat_id, "message_id": message_id, "text": text});
        match self.call("editMessageText", body, Duration::from_secs(15)).await {
            // Nothing to change is not a failure.
            Err(e) if e.contains("message is not modified") => Ok(()),
            r => r.map(|_| ()),
        }
    }

    /// The bot's chat link from `getMe` (see [`bot_link`]).
    pub async fn link(&self) -> Result<Option<String>, String> {
        // Short: the first ntfy push after a settings change waits for it.
        let me = self.call("getMe", json!({}), Duration::from_secs(5)).await?;
        Ok(me["username"].as_str().and_then(bot_link))
    }

    /// Shows `text` on the phone that pressed a button.
    pub async fn answer_button(&self, query_id: &str, text: &str) -> Result<(), String> {
        let body = json!({"callback_query_id": query_id, "text": text});
        self.call("answerCallbackQuery", body, Duration::from_secs(15))
            .await
            .map(|_| ())
    }
}

/// `https://t.me/<username>`: where tapping an ntfy push takes the user when a bot is
/// paired. `None` for a name Telegram would not give a bot (5 to 32 letters, digits and
/// underscores), so nothing else can end up in the link.
pub fn bot_link(username: &str) -> Option<String> {
    let fits = (5..=32).contains(&username.len()) && username.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    fits.then(|| format!("https://t.me/{username}"))
}

fn read_update(u: &Value) -> Update {
    if let Some(m) = u.get("message") {
        if let (Some(chat_id), Some(text)) = (m["chat"]["id"].as_i64(), m["text"].as_str()) {
            return Update::Text {
                chat_id,
                text: text.to_string(),
            };
        }
    }
    if let Some(q) = u.get("callback_query") {
        if let (Some(id), Some(chat_id), Some(from), Some(message_id), Some(data)) = (
            q["id"].as_str(),
            q["message"]["chat"]["id"].as_i64(),
            q["from"]["id"].as_i64(),
            q["message"]["message_id"].as_i64(),
            q["data"].as_str(),
        ) {
            return Update::Button {
                query_id: id.to_string(),
                chat_id,
                from,
                message_id,
                data: data.to_string(),
            };
        }
    }
    Update::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reply_splits_at_the_limit_and_loses_nothing() {
        let text = "x".repeat(MAX_TEXT * 2 + 10);
        let parts = split(&text);
        assert_eq!(
            parts.iter().map(|p| p.chars().count()).collect::<Vec<_>>(),
            [4096, 4096, 10]
        );
        assert_eq!(parts.concat(), text);
        let lines = format!("{}\n{}", "a".repeat(4000), "b".repeat(200));
        let parts = split(&lines);
        assert_eq!(parts[0], format!("{}\n", "a".repeat(4000)), "cut at the line break");
        assert_eq!(parts.concat(), lines);
        assert_eq!(split("short"), ["short"]);
    }

    #[test]
    fn the_bot_link_takes_only_a_bots_username() {
        assert_eq!(
            bot_link("vigil_test_bot").as_deref(),
            Some("https://t.me/vigil_test_bot")
        );
        assert_eq!(bot_link("evil.example/x"), None);
        assert_eq!(bot_link("a?b=c"), None);
        assert_eq!(bot_link("bot"), None);
    }

    #[test]
    fn a_button_says_allow_once_or_deny_and_nothing_else() {
        assert_eq!(parse_button("a tok"), Some((true, "tok")));
        assert_eq!(parse_button("d tok"), Some((false, "tok")));
        assert_eq!(parse_button("always tok"), None);
    }
}
