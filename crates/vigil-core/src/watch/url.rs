//! URL triggers: a look at an HTTP(S) address every `every` (at least a minute), from
//! Vigil's own process, and a fire when what the trigger watches changes — the status (or
//! that it could not be reached), the body's hash, or the time over `slower_than_ms` (when
//! it turns slow, not at every slow look). The first look only remembers.
//!
//! Must never: look before the user approved the routine as written; read more than
//! [`MAX_BODY`] of a body; follow more than a few redirects.

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use vigil_protocol::{Trigger, UrlWhen};

use super::shape::{parse_every, DEFAULT_URL_EVERY, MIN_URL_EVERY};

/// The body read per look (hashed; its start is the excerpt).
pub const MAX_BODY: usize = 256 * 1024;
/// The excerpt in the evidence.
pub const EXCERPT: usize = 1024;
/// One look's time limit.
pub const LOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// What one look saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// The HTTP status, or why there was none ("connection refused").
    pub status: Result<u16, String>,
    pub hash: String,
    pub millis: u64,
    pub excerpt: String,
}

/// A URL trigger's settings, read from the routine.
#[derive(Debug, Clone, PartialEq)]
pub struct UrlWatch {
    pub id: String,
    pub url: String,
    pub every: Duration,
    pub when: UrlWhen,
    pub slower_than_ms: Option<u64>,
}

impl UrlWatch {
    pub fn from_trigger(id: &str, t: &Trigger) -> Option<Self> {
        let Trigger::Url {
            url,
            every,
            when,
            slower_than_ms,
        } = t
        else {
            return None;
        };
        let every = every
            .as_deref()
            .and_then(|e| parse_every(e).ok())
            .unwrap_or(DEFAULT_URL_EVERY)
            .max(MIN_URL_EVERY);
        Some(Self {
            id: id.to_string(),
            url: url.trim().to_string(),
            every,
            when: when.unwrap_or(UrlWhen::Status),
            slower_than_ms: *slower_than_ms,
        })
    }
}

fn status_words(s: &Result<u16, String>) -> String {
    match s {
        Ok(code) => format!("status {code}"),
        Err(why) => format!("unreachable ({why})"),
    }
}

/// The evidence of a change from `before` to `now`, or `None` when nothing the trigger
/// watches changed.
pub fn changed(w: &UrlWatch, before: &Look, now: &Look) -> Option<String> {
    let what = if let Some(bound) = w.slower_than_ms {
        (now.millis > bound && before.millis <= bound).then(|| format!("slower than {bound} ms"))
    } else {
        match w.when {
            UrlWhen::Status => (before.status != now.status)
                .then(|| format!("{} → {}", status_words(&before.status), status_words(&now.status))),
            UrlWhen::Content => {
                (before.hash != now.hash || before.status != now.status).then(|| "the content changed".into())
            }
        }
    }?;
    Some(format!(
        "{}: {what}\n{}, {} ms\n{}",
        w.url,
        status_words(&now.status),
        now.millis,
        now.excerpt
    ))
}

/// One look at `url`.
pub async fn look(client: &reqwest::Client, url: &str) -> Look {
    let started = Instant::now();
    let response = client.get(url).send().await;
    let (status, body) = match response {
        Ok(mut r) => {
            let status = r.status().as_u16();
            let mut body = Vec::new();
            while body.len() < MAX_BODY {
                match r.chunk().await {
                    Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                    _ => break,
                }
            }
            body.truncate(MAX_BODY);
            (Ok(status), body)
        }
        Err(e) => {
            let why = if e.is_timeout() {
                "timed out".to_string()
            } else if e.is_connect() {
                "could not connect".to_string()
            } else {
                "the request failed".to_string()
            };
            (Err(why), Vec::new())
        }
    };
    let millis = started.elapsed().as_millis() as u64;
    let text = String::from_utf8_lossy(&body[..body.len().min(EXCERPT)]).into_owned();
    Look {
        status,
        hash: hex::encode(Sha256::digest(&body)),
        millis,
        excerpt: super::check::cut(text.trim(), EXCERPT),
    }
}

/// The client URL looks use: a time limit, a few redirects, no cookies.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(LOOK_TIMEOUT)
        .redirect(reqwest::redirect::Policy::limited(5))
        .user_agent("Vigil routine check")
        .build()
        .unwrap_or_default()
}

impl super::Watch {
    /// Looks at `w`'s URL every `every` until `stop` (or the watches are rebuilt, which
    /// aborts this task), and fires on a change. Not approved as written: no look, and the
    /// user is asked once.
    pub(super) async fn watch_url(self, w: UrlWatch, stop: tokio_util::sync::CancellationToken) {
        let client = client();
        let every = self.shared.url_every.unwrap_or(w.every);
        loop {
            let Some(r) = self.routine(&w.id) else { return };
            if self.approved(&r) {
                let now = tokio::select! {
                    _ = stop.cancelled() => return,
                    now = look(&client, &w.url) => now,
                };
                let before = {
                    let mut looks = self.shared.looks.lock().unwrap_or_else(|e| e.into_inner());
                    looks.insert(w.id.clone(), (w.url.clone(), now.clone()))
                };
                if let Some((url, before)) = before.filter(|(u, _)| *u == w.url) {
                    let _ = url;
                    if let Some(evidence) = changed(&w, &before, &now) {
                        let this = self.clone();
                        let id = w.id.clone();
                        tokio::spawn(async move { this.fire(&id, evidence).await });
                    }
                }
            } else {
                self.ask_once(&r).await;
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn look(status: Result<u16, String>, hash: &str, millis: u64) -> Look {
        Look {
            status,
            hash: hash.into(),
            millis,
            excerpt: "ok".into(),
        }
    }

    fn watch(when: UrlWhen, slower: Option<u64>) -> UrlWatch {
        UrlWatch {
            id: "site".into(),
            url: "http://127.0.0.1:1/".into(),
            every: MIN_URL_EVERY,
            when,
            slower_than_ms: slower,
        }
    }

    #[test]
    fn a_status_change_fires_and_a_steady_site_does_not() {
        let w = watch(UrlWhen::Status, None);
        let up = look(Ok(200), "a", 10);
        assert_eq!(changed(&w, &up, &look(Ok(200), "b", 12)), None);
        let down = changed(&w, &up, &look(Err("could not connect".into()), "", 1)).unwrap();
        assert!(down.contains("status 200 → unreachable (could not connect)"), "{down}");
        let c = watch(UrlWhen::Content, None);
        assert!(changed(&c, &up, &look(Ok(200), "b", 12)).is_some());
        let s = watch(UrlWhen::Status, Some(2000));
        assert!(changed(&s, &up, &look(Ok(200), "a", 2500)).is_some());
        assert_eq!(changed(&s, &look(Ok(200), "a", 2500), &look(Ok(200), "a", 2600)), None);
    }
}
