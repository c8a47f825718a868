//! The channels' tokens (the ntfy access token, the Telegram bot token): from the
//! environment for the headless runner (`VIGIL_NTFY_TOKEN`, `VIGIL_TELEGRAM_TOKEN`), else
//! the OS keyring. Unlike an API key, a channel token never falls back to a file: without a
//! keyring the user sets the variable. [`redact`] takes them (and every URL, since the
//! Telegram token is part of each request's path) out of any text shown or logged.
//!
//! Must never: write a token to a file, a log line, an error or a child's environment
//! (the variables, [`crate::children::CHANNEL_TOKEN_VARS`], are withheld from children).

use std::sync::{Arc, Mutex};

use vigil_protocol::ChannelName;

pub use crate::children::NTFY_TOKEN_VAR;
pub use crate::children::TELEGRAM_TOKEN_VAR;

fn var(channel: ChannelName) -> &'static str {
    match channel {
        ChannelName::Ntfy => NTFY_TOKEN_VAR,
        ChannelName::Telegram => TELEGRAM_TOKEN_VAR,
    }
}

fn account(channel: ChannelName) -> &'static str {
    match channel {
        ChannelName::Ntfy => "channels/ntfy-token",
        ChannelName::Telegram => "channels/telegram-token",
    }
}

/// Where tokens come from. Cheap to clone.
#[derive(Clone)]
pub struct Keys {
    source: Arc<Source>,
}

enum Source {
    /// Environment, then keyring (unless `VIGIL_NO_KEYRING`); the keyring's answer is kept,
    /// "none" included, so a view or a poll never waits on it twice.
    System {
        use_keyring: bool,
        cache: Mutex<[Option<Option<String>>; 2]>,
    },
    /// Given (tests, embedding): `[ntfy, telegram]`.
    Fixed(Mutex<[Option<String>; 2]>),
}

fn slot(channel: ChannelName) -> usize {
    match channel {
        ChannelName::Ntfy => 0,
        ChannelName::Telegram => 1,
    }
}

impl Keys {
    pub fn system() -> Self {
        Keys {
            source: Arc::new(Source::System {
                use_keyring: std::env::var_os("VIGIL_NO_KEYRING").is_none(),
                cache: Mutex::default(),
            }),
        }
    }

    pub fn fixed(ntfy: Option<&str>, telegram: Option<&str>) -> Self {
        Keys {
            source: Arc::new(Source::Fixed(Mutex::new([
                ntfy.map(str::to_string),
                telegram.map(str::to_string),
            ]))),
        }
    }

    /// The token for `channel`, if any.
    pub fn get(&self, channel: ChannelName) -> Option<String> {
        match &*self.source {
            Source::Fixed(t) => t.lock().unwrap_or_else(|e| e.into_inner())[slot(channel)].clone(),
            Source::System { use_keyring, cache } => {
                if let Some(v) = std::env::var(var(channel)).ok().filter(|v| !v.trim().is_empty()) {
                    return Some(v.trim().to_string());
                }
                if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner())[slot(channel)].clone() {
                    return v;
                }
                if !use_keyring {
                    return None;
                }
                let acct = account(channel);
                let found = crate::secrets::with_keyring(move || {
                    keyring::Entry::new(crate::secrets::SERVICE, acct)?.get_password()
                })
                .ok();
                cache.lock().unwrap_or_else(|e| e.into_inner())[slot(channel)] = Some(found.clone());
                found
            }
        }
    }

    /// Stores (or, empty, forgets) the token in the keyring. No keyring: an error saying to
    /// use the environment variable; the token goes nowhere else.
    pub fn set(&self, channel: ChannelName, token: &str) -> Result<(), String> {
        let token = token.trim().to_string();
        match &*self.source {
            Source::Fixed(t) => {
                t.lock().unwrap_or_else(|e| e.into_inner())[slot(channel)] = Some(token).filter(|t| !t.is_empty());
                Ok(())
            }
            Source::System { use_keyring, cache } => {
                if !use_keyring {
                    return Err(format!(
                        "No keyring is available here; set {} in Vigil's environment instead.",
                        var(channel)
                    ));
                }
                let acct = account(channel);
                let value = token.clone();
                let done = crate::secrets::with_keyring(move || {
                    let entry = keyring::Entry::new(crate::secrets::SERVICE, acct)?;
                    match value.is_empty() {
                        true => entry.delete_credential().or_else(|e| match e {
                            keyring::Error::NoEntry => Ok(()),
                            e => Err(e),
                        }),
                        false => entry.set_password(&value),
                    }
                });
                done.map_err(|why| {
                    format!(
                        "The keyring did not take the token ({why}); set {} in Vigil's environment instead.",
                        var(channel)
                    )
                })?;
                cache.lock().unwrap_or_else(|e| e.into_inner())[slot(channel)] =
                    Some(Some(token).filter(|t| !t.is_empty()));
                Ok(())
            }
        }
    }

    /// Both tokens, for [`redact`].
    pub fn all(&self) -> Vec<String> {
        [ChannelName::Ntfy, ChannelName::Telegram]
            .into_iter()
            .filter_map(|c| self.get(c))
            .collect()
    }
}

/// `text` with every URL replaced by `<url>` and every secret in `secrets` by `•••`.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out: String = text
        .split_inclusive(char::is_whitespace)
        .map(|word| {
            let trimmed = word.trim_start_matches(['(', '"', '\'', '<']);
            match trimmed.starts_with("http://") || trimmed.starts_with("https://") {
                true => {
                    let tail = if word.ends_with(char::is_whitespace) { " " } else { "" };
                    format!("{}<url>{tail}", &word[..word.len() - trimmed.len()])
                }
                false => word.to_string(),
            }
        })
        .collect();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(s.as_str(), "•••");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_shows_neither_the_url_nor_the_token() {
        let token = "123456:ABC-secret".to_string();
        let error = format!(
            "error sending request for url (https://api.telegram.org/bot{token}/getUpdates): connection refused; token {token}"
        );
        let shown = redact(&error, std::slice::from_ref(&token));
        assert!(!shown.contains(&token), "{shown}");
        assert!(!shown.contains("api.telegram.org"), "{shown}");
        assert!(shown.contains("connection refused"), "{shown}");
    }
}
