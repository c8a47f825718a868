//! ntfy over plain HTTP (reqwest, as the provider clients): a push is one JSON publish to
//! the server's root; answers come back on the reply topic's JSON stream
//! (`GET /<reply topic>/json`, one JSON object per line), reconnected with backoff and
//! resumed with `since=<last id>`. Nothing listens on the desktop.
//!
//! Buttons are offered only where the topics refuse anonymous readers ([`private_topics`]):
//! anyone who can read the push topic holds the approval's token.
//!
//! Must never: put the access token anywhere but the `Authorization` header.

use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{json, Value};

use super::push::Push;

/// How long one publish or probe may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// No line (ntfy sends a keepalive every 45 s by default) for this long: reconnect.
pub const STREAM_SILENCE: Duration = Duration::from_secs(90);

/// What one ntfy channel needs to talk to its server.
#[derive(Clone)]
pub struct Ntfy {
    pub http: reqwest::Client,
    /// Without a trailing `/`.
    pub server: String,
    pub topic: String,
    pub reply_topic: String,
    pub token: Option<String>,
}

/// An answer read from the reply topic: `allow <token>` or `deny <token>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub allow: bool,
    pub token: String,
}

/// Reads a reply-topic message; anything else is not an answer.
pub fn parse_answer(text: &str) -> Option<Answer> {
    let mut words = text.split_whitespace();
    let allow = match words.next()? {
        "allow" => true,
        "deny" => false,
        _ => return None,
    };
    let token = words.next()?.to_string();
    words.next().is_none().then_some(Answer { allow, token })
}

fn failed(e: reqwest::Error) -> String {
    e.without_url().to_string()
}

async fn check(resp: reqwest::Response) -> Result<reqwest::Response, String> {
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let body = resp.text().await.unwrap_or_default();
    Err(format!(
        "the ntfy server answered {status}: {}",
        super::push::cut(&body, 200)
    ))
}

impl Ntfy {
    fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(t) => req.bearer_auth(t),
            None => req,
        }
    }

    /// Publishes `push`; with `buttons`, an approval gets Allow once / Deny, each posting its
    /// answer with the token to the reply topic.
    /// With `click`, tapping the push opens it (the paired Telegram bot's chat).
    pub async fn publish(&self, push: &Push, buttons: bool, click: Option<&str>) -> Result<(), String> {
        let mut body = json!({
            "topic": self.topic,
            "title": push.title,
            "message": push.text(),
        });
        if let Some(url) = click {
            body["click"] = json!(url);
        }
        if let Some(ask) = &push.ask {
            if buttons && !ask.token.is_empty() {
                let url = format!("{}/{}", self.server, self.reply_topic);
                body["actions"] = json!([
                    {"action": "http", "label": "Allow once", "url": url, "method": "POST",
                     "body": format!("allow {}", ask.token), "clear": true},
                    {"action": "http", "label": "Deny", "url": url, "method": "POST",
                     "body": format!("deny {}", ask.token), "clear": true},
                ]);
            } else {
                body["message"] = json!(format!("{}\nAnswer on the desktop or in Telegram.", push.text()));
            }
        }
        let req = self
            .http
            .post(format!("{}/", self.server))
            .json(&body)
            .timeout(REQUEST_TIMEOUT);
        check(self.authed(req).send().await.map_err(failed)?).await.map(|_| ())
    }

    /// Whether both topics refuse a reader without the token (only then may pushes carry
    /// approval buttons). An unreachable server counts as "not known private".
    pub async fn private_topics(&self) -> bool {
        for topic in [&self.topic, &self.reply_topic] {
            let url = format!("{}/{}/json?poll=1", self.server, topic);
            match self.http.get(url).timeout(REQUEST_TIMEOUT).send().await {
                Ok(r) if matches!(r.status().as_u16(), 401 | 403) => {}
                _ => return false,
            }
        }
        true
    }

    /// Streams the reply topic into `on_answer` until the stream ends or fails; `since`:
    /// the last message id seen, updated as messages arrive. `on_open` runs once it is open.
    pub async fn listen(
        &self,
        since: &mut Option<String>,
        on_open: impl FnOnce(),
        mut on_answer: impl FnMut(Answer),
    ) -> Result<(), String> {
        let mut url = format!("{}/{}/json", self.server, self.reply_topic);
        if let Some(id) = since.as_ref() {
            url.push_str(&format!("?since={id}"));
        }
        let resp = check(self.authed(self.http.get(url)).send().await.map_err(failed)?).await?;
        on_open();
        let mut bytes = resp.bytes_stream();
        let mut line = Vec::new();
        loop {
            let chunk = match tokio::time::timeout(STREAM_SILENCE, bytes.next()).await {
                Err(_) => return Err("the answer stream went silent".into()),
                Ok(None) => return Err("the answer stream ended".into()),
                Ok(Some(Err(e))) => return Err(failed(e)),
                Ok(Some(Ok(c))) => c,
            };
            for b in chunk {
                if b != b'\n' {
                    // A line longer than any answer is not read further.
                    if line.len() < 64 * 1024 {
                        line.push(b);
                    }
                    continue;
                }
                let Ok(v) = serde_json::from_slice::<Value>(&line) else {
                    line.clear();
                    continue;
                };
                line.clear();
                if v["event"] != "message" {
                    continue;
                }
                if let Some(id) = v["id"].as_str() {
                    *since = Some(id.to_string());
                }
                if let Some(answer) = v["message"].as_str().and_then(parse_answer) {
                    on_answer(answer);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_exact_answer_is_read() {
        assert_eq!(
            parse_answer("allow abc"),
            Some(Answer {
                allow: true,
                token: "abc".into()
            })
        );
        assert_eq!(parse_answer("deny abc").map(|a| a.allow), Some(false));
        assert_eq!(parse_answer("always abc"), None, "a phone never says always");
        assert_eq!(parse_answer("allow abc extra"), None);
        assert_eq!(parse_answer("allow"), None);
    }
}
