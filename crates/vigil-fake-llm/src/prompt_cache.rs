//! Anthropic's prompt cache, kept the way the service keeps it, so a client's caching can be
//! tested by what it costs: a request's `cache_control` breakpoints (in the order the API
//! reads the prompt: `tools`, then `system`, then `messages`) mark prefixes; a prefix seen
//! before and not expired is read from the cache, the rest up to the last breakpoint is
//! written to it. An entry lives 5 minutes, or an hour with `"ttl": "1h"`, counted again from
//! each hit. Tokens are the fake's usual estimate, four characters a token.
//!
//! The cache's clock is the real one plus what the test moved it on by
//! ([`crate::FakeLlm::advance_clock`]), so an hour-long schedule takes no time to test.
//! Simplified: no minimum cacheable length, and a prefix is its JSON text without the
//! `cache_control` fields.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

const FIVE_MINUTES: Duration = Duration::from_secs(5 * 60);
const ONE_HOUR: Duration = Duration::from_secs(3600);

/// What a request's prompt did with the cache, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheUse {
    pub read: u64,
    pub write: u64,
}

/// A `cache_control` mark: the prefix it closes.
struct Breakpoint {
    hash: u64,
    chars: usize,
    ttl: Duration,
}

#[derive(Default)]
pub(crate) struct PromptCache {
    /// Prefix hash → when it expires.
    entries: Mutex<HashMap<u64, Instant>>,
    skew: Mutex<Duration>,
}

impl PromptCache {
    pub(crate) fn advance(&self, by: Duration) {
        *self.skew.lock().unwrap_or_else(PoisonError::into_inner) += by;
    }

    fn now(&self) -> Instant {
        Instant::now() + *self.skew.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads and writes `request`'s prefixes.
    pub(crate) fn account(&self, request: &Value) -> CacheUse {
        let marks = breakpoints(request);
        let Some(last) = marks.last() else {
            return CacheUse::default();
        };
        let now = self.now();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|_, expires| *expires > now);
        let hit = marks.iter().rposition(|m| entries.contains_key(&m.hash));
        let read = hit.map_or(0, |i| tokens(marks[i].chars));
        for m in &marks[hit.unwrap_or(0)..] {
            entries.insert(m.hash, now + m.ttl);
        }
        CacheUse {
            read,
            write: tokens(last.chars).saturating_sub(read),
        }
    }
}

fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(4)
}

/// The breakpoints of `request`, in prompt order.
fn breakpoints(request: &Value) -> Vec<Breakpoint> {
    let mut hasher = DefaultHasher::new();
    let mut chars = 0;
    let mut marks = Vec::new();
    let mut take = |part: &Value| {
        let mut bare = part.clone();
        let control = bare.as_object_mut().and_then(|o| o.remove("cache_control"));
        let text = bare.to_string();
        text.hash(&mut hasher);
        chars += text.chars().count();
        if let Some(control) = control {
            let ttl = if control["ttl"] == "1h" { ONE_HOUR } else { FIVE_MINUTES };
            marks.push(Breakpoint {
                hash: hasher.clone().finish(),
                chars,
                ttl,
            });
        }
    };
    let list = |v: &Value| v.as_array().cloned().unwrap_or_else(|| vec![v.clone()]);
    for tool in list(&request["tools"]) {
        take(&tool);
    }
    for block in list(&request["system"]) {
        take(&block);
    }
    for message in list(&request["messages"]) {
        take(&Value::from(message["role"].as_str().unwrap_or("")));
        for block in list(&message["content"]) {
            take(&block);
        }
    }
    marks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(ttl: Option<&str>, question: &str) -> Value {
        let mut control = json!({"type": "ephemeral"});
        if let Some(ttl) = ttl {
            control["ttl"] = json!(ttl);
        }
        json!({
            "system": [{"type": "text", "text": "You are Vigil. ".repeat(100), "cache_control": control}],
            "messages": [{"role": "user", "content": question}],
        })
    }

    #[test]
    fn a_prefix_is_written_once_then_read_until_it_expires() {
        let cache = PromptCache::default();
        let first = cache.account(&request(None, "hi"));
        assert!(first.write > 300 && first.read == 0, "{first:?}");
        let second = cache.account(&request(None, "something else"));
        assert_eq!(
            second,
            CacheUse {
                read: first.write,
                write: 0
            },
            "same prefix, other question"
        );
        cache.advance(Duration::from_secs(30 * 60));
        assert_eq!(
            cache.account(&request(None, "later")),
            first,
            "5 minutes are long gone: written again"
        );
    }

    #[test]
    fn an_hour_long_entry_outlives_half_an_hour_and_not_two() {
        let cache = PromptCache::default();
        let first = cache.account(&request(Some("1h"), "poll"));
        cache.advance(Duration::from_secs(30 * 60));
        assert_eq!(
            cache.account(&request(Some("1h"), "poll")),
            CacheUse {
                read: first.write,
                write: 0
            }
        );
        cache.advance(Duration::from_secs(2 * 3600));
        assert_eq!(cache.account(&request(Some("1h"), "poll")), first);
    }

    #[test]
    fn no_breakpoint_no_cache() {
        let cache = PromptCache::default();
        let plain = json!({"system": "You are Vigil.", "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(cache.account(&plain), CacheUse::default());
        assert_eq!(cache.account(&plain), CacheUse::default());
    }
}
