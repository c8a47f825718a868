//! A search result's snippet, made from the message's text (read back from its transcript,
//! since the index keeps no text): the few words around the best cluster of matches, each
//! matched word marked. Words are cut and folded as the index's tokenizer does (letters and
//! digits; case and accents folded), so the words marked are the words that matched.

use unicode_normalization::{char::is_combining_mark, UnicodeNormalization};

/// Marks around a matched word in [`super::query::Hit::snippet`]; never in indexed text
/// (control bytes).
pub const MARK_START: char = '\u{2}';
pub const MARK_END: char = '\u{3}';

/// `word` as the index compares it: lower case, without accents.
pub fn fold(word: &str) -> String {
    word.nfd()
        .filter(|c| !is_combining_mark(*c))
        .flat_map(char::to_lowercase)
        .collect()
}

/// The byte ranges of `text`'s words.
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric() || is_combining_mark(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// At most `len` words of `text` around its matches of `terms` (folded prefixes), each
/// match between [`MARK_START`] and [`MARK_END`], `…` where words were left out.
pub fn snippet(text: &str, terms: &[String], len: usize) -> String {
    let words = words(text);
    if words.is_empty() || len == 0 {
        return String::new();
    }
    // Which term each word matches, if any.
    let matched: Vec<Option<usize>> = words
        .iter()
        .map(|&(s, e)| {
            let w = fold(&text[s..e]);
            terms.iter().position(|t| w.starts_with(t.as_str()))
        })
        .collect();
    // The window with the most distinct terms, starting a little before a match.
    let lead = len / 4;
    let mut best = (0usize, 0usize);
    for (i, m) in matched.iter().enumerate() {
        if m.is_none() {
            continue;
        }
        let start = i.saturating_sub(lead).min(words.len().saturating_sub(len));
        let mut seen: Vec<usize> = matched[start..(start + len).min(words.len())]
            .iter()
            .flatten()
            .copied()
            .collect();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() > best.1 {
            best = (start, seen.len());
        }
    }
    let start = best.0;
    let end = (start + len).min(words.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    // From the text's very start, and to its very end, when the window reaches them.
    let mut at = if start == 0 { 0 } else { words[start].0 };
    for i in start..end {
        let (s, e) = words[i];
        out.push_str(&text[at..s]);
        if matched[i].is_some() {
            out.push(MARK_START);
            out.push_str(&text[s..e]);
            out.push(MARK_END);
        } else {
            out.push_str(&text[s..e]);
        }
        at = e;
    }
    if end < words.len() {
        out.push('…');
    } else {
        out.push_str(&text[at..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(ws: &[&str]) -> Vec<String> {
        ws.iter().map(|w| fold(w)).collect()
    }

    #[test]
    fn the_words_around_the_matches_are_shown_with_the_matches_marked() {
        let text = "one two three four five six seven Café eight nine ten eleven twelve";
        assert_eq!(
            snippet(text, &terms(&["cafe", "nin"]), 4),
            "…seven \u{2}Café\u{3} eight \u{2}nine\u{3}…"
        );
        assert_eq!(snippet("Disk at 91%.", &terms(&["disk"]), 16), "\u{2}Disk\u{3} at 91%.");
        assert_eq!(snippet("no match here", &terms(&["zz"]), 2), "no match…");
        assert_eq!(snippet("", &terms(&["zz"]), 2), "");
    }
}
