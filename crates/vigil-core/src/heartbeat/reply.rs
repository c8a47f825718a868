//! What a heartbeat reply means (seed 003 §6.1, seed 000 §9): `HEARTBEAT_OK` at the start or
//! end (also wrapped in Markdown or HTML, also followed by a little punctuation) is an
//! acknowledgement; with at most `ackMaxChars` of other text the reply is suppressed.
//! Anything else is delivered, without the token.

/// The reply meaning "nothing needs attention".
pub const HEARTBEAT_TOKEN: &str = crate::run::deliver::HEARTBEAT_OK;

/// What to do with a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyDecision {
    /// No text at all.
    OkEmpty,
    /// The token, with at most `ackMaxChars` besides.
    OkToken,
    /// Text for the user (the token removed).
    Deliver(String),
}

/// Decides about `reply`. `never_suppress` (replies to exec events): the user asked for
/// that result, so any text besides the token is delivered however short.
pub fn decide(reply: &str, ack_max_chars: usize, never_suppress: bool) -> ReplyDecision {
    let trimmed = reply.trim();
    if trimmed.is_empty() {
        return ReplyDecision::OkEmpty;
    }
    let normalized = strip_markup(trimmed);
    if !trimmed.contains(HEARTBEAT_TOKEN) && !normalized.contains(HEARTBEAT_TOKEN) {
        return ReplyDecision::Deliver(trimmed.to_string());
    }
    let original = strip_token_at_edges(trimmed);
    let picked = match original {
        Some(ref text) if !text.is_empty() => original,
        _ => strip_token_at_edges(&normalized),
    };
    let Some(rest) = picked else {
        // The token only in the middle: not an acknowledgement.
        return ReplyDecision::Deliver(trimmed.to_string());
    };
    if rest.is_empty() {
        return ReplyDecision::OkToken;
    }
    if !never_suppress && rest.chars().count() <= ack_max_chars {
        return ReplyDecision::OkToken;
    }
    ReplyDecision::Deliver(rest)
}

/// Tags become spaces, `&nbsp;` a space, and Markdown emphasis around the whole reply goes,
/// so `<b>HEARTBEAT_OK</b>` and `**HEARTBEAT_OK**` read as the bare token.
fn strip_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match (in_tag, c) {
            (false, '<') => in_tag = true,
            (true, '>') => {
                in_tag = false;
                out.push(' ');
            }
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    if in_tag {
        // A lone `<` was not a tag after all.
        return text.replace("&nbsp;", " ");
    }
    let out = out.replace("&nbsp;", " ").replace("&NBSP;", " ");
    let emphasis = |c: char| matches!(c, '*' | '`' | '~' | '_');
    out.trim()
        .trim_start_matches(emphasis)
        .trim_end_matches(emphasis)
        .to_string()
}

/// Removes the token from the start and the end (repeatedly; at the end it may be followed
/// by up to four non-word characters, e.g. `HEARTBEAT_OK.` or `HEARTBEAT_OK!!`).
/// `None` when there was no token at either edge; else the rest, whitespace collapsed.
fn strip_token_at_edges(text: &str) -> Option<String> {
    let mut text = text.trim().to_string();
    let mut stripped = false;
    loop {
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        if let Some(rest) = text.strip_prefix(HEARTBEAT_TOKEN) {
            // `HEARTBEAT_OKAY` is a word of its own, not the token.
            if !rest.starts_with(is_word) {
                text = rest.trim().to_string();
                stripped = true;
                continue;
            }
        }
        let Some(idx) = text.rfind(HEARTBEAT_TOKEN) else { break };
        let after = &text[idx + HEARTBEAT_TOKEN.len()..];
        if after.chars().count() > 4 || after.chars().any(is_word) {
            break;
        }
        let before = text[..idx].trim_end();
        text = if before.is_empty() {
            String::new()
        } else {
            format!("{before}{}", after.trim_start()).trim_end().to_string()
        };
        stripped = true;
    }
    stripped.then(|| text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReplyDecision::*;

    fn d(reply: &str) -> ReplyDecision {
        decide(reply, 300, false)
    }

    #[test]
    fn the_behaviour_matrix() {
        // seed 003 §6.1: token alone → suppress; token + ≤300 → suppress;
        // token + >300 → deliver; no token → deliver.
        assert_eq!(d("HEARTBEAT_OK"), OkToken);
        let short = "All quiet; disk at 41 %.";
        assert_eq!(d(&format!("HEARTBEAT_OK {short}")), OkToken);
        assert_eq!(d(&format!("{short} HEARTBEAT_OK")), OkToken);
        let exactly = "x".repeat(300);
        assert_eq!(d(&format!("HEARTBEAT_OK {exactly}")), OkToken, "300 is still an ack");
        let long = "y".repeat(301);
        assert_eq!(d(&format!("HEARTBEAT_OK {long}")), Deliver(long.clone()));
        assert_eq!(d("Disk usage is 93 %."), Deliver("Disk usage is 93 %.".into()));
        assert_eq!(d("  \n "), OkEmpty);
        assert_eq!(d(""), OkEmpty);
    }

    #[test]
    fn the_limit_counts_characters_not_bytes() {
        let cjk = "磁".repeat(300);
        assert_eq!(d(&format!("HEARTBEAT_OK {cjk}")), OkToken);
        assert_eq!(decide(&format!("HEARTBEAT_OK {cjk}"), 299, false), Deliver(cjk));
    }

    #[test]
    fn wrappers_and_punctuation_are_stripped() {
        for reply in [
            "**HEARTBEAT_OK**",
            "<b>HEARTBEAT_OK</b>",
            "`HEARTBEAT_OK`",
            "_HEARTBEAT_OK_",
            "HEARTBEAT_OK.",
            "HEARTBEAT_OK!!",
            "<p>HEARTBEAT_OK</p>&nbsp;",
            "HEARTBEAT_OK HEARTBEAT_OK",
            "\n\nHEARTBEAT_OK\n",
            "Nothing new. **HEARTBEAT_OK**",
        ] {
            assert_eq!(d(reply), OkToken, "{reply:?}");
        }
    }

    #[test]
    fn the_token_in_the_middle_is_not_an_ack() {
        let reply = "The HEARTBEAT_OK check failed: disk full";
        assert_eq!(d(reply), Deliver(reply.into()));
        assert_eq!(d("HEARTBEAT_OKAY"), Deliver("HEARTBEAT_OKAY".into()));
    }

    #[test]
    fn delivered_text_loses_the_token() {
        let long = format!("Disk usage is 93 %. {}", "Details follow. ".repeat(30));
        assert_eq!(d(&format!("HEARTBEAT_OK\n{long}")), Deliver(long.trim().to_string()));
    }

    #[test]
    fn replies_to_exec_events_are_never_suppressed() {
        assert_eq!(
            decide("Tests passed. HEARTBEAT_OK", 300, true),
            Deliver("Tests passed.".into())
        );
        assert_eq!(
            decide("Build failed: 2 errors.", 300, true),
            Deliver("Build failed: 2 errors.".into())
        );
        assert_eq!(decide("HEARTBEAT_OK", 300, true), OkToken, "nothing besides the token");
    }
}
