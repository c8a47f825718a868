//! The user's search as the protocol carries it: `search_history` in, `history_results` out.

use vigil_protocol::{Event, HistoryHit, SnippetPart, Source};

use super::query::{MARK_END, MARK_START};
use super::{History, Hit, Query};
use crate::events::Emitter;

/// Results a search box shows at most.
pub const USER_RESULTS: usize = 50;

/// Runs the user's search off the async threads and emits its results (an empty list when
/// the index cannot be read: the box shows "no results", the log says why).
pub fn answer(history: Option<&History>, emitter: &Emitter, query: String) {
    let (history, emitter) = (history.cloned(), emitter.clone());
    tokio::task::spawn_blocking(move || {
        let q = Query {
            text: query.clone(),
            limit: USER_RESULTS,
            ..Query::default()
        };
        let Some(history) = history else {
            emitter.emit(
                Source::System,
                Event::HistoryResults {
                    query,
                    hits: Vec::new(),
                },
            );
            return;
        };
        let hits = match history.search(&q) {
            Ok(hits) => hits.into_iter().map(to_wire).collect(),
            Err(e) => {
                tracing::warn!("history search failed: {e}");
                Vec::new()
            }
        };
        emitter.emit(Source::System, Event::HistoryResults { query, hits });
    });
}

pub fn to_wire(h: Hit) -> HistoryHit {
    HistoryHit {
        session_id: h.session,
        title: h.title,
        kind: h.kind.as_str().to_string(),
        message_id: h.message_id,
        role: h.role,
        ts: h.ts,
        snippet: parts(&h.snippet),
    }
}

/// A marked snippet as parts, the matched words apart.
fn parts(snippet: &str) -> Vec<SnippetPart> {
    let mut out = Vec::new();
    let mut rest = snippet;
    while let Some(start) = rest.find(MARK_START) {
        if start > 0 {
            out.push(SnippetPart {
                text: rest[..start].to_string(),
                matched: false,
            });
        }
        let after = &rest[start + MARK_START.len_utf8()..];
        let end = after.find(MARK_END).unwrap_or(after.len());
        out.push(SnippetPart {
            text: after[..end].to_string(),
            matched: true,
        });
        rest = after.get(end + MARK_END.len_utf8()..).unwrap_or("");
    }
    if !rest.is_empty() {
        out.push(SnippetPart {
            text: rest.to_string(),
            matched: false,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matched_words_become_their_own_parts() {
        let p = |t: &str, m| SnippetPart {
            text: t.into(),
            matched: m,
        };
        assert_eq!(
            parts("the \u{2}disk\u{3} is \u{2}full\u{3}"),
            vec![p("the ", false), p("disk", true), p(" is ", false), p("full", true)]
        );
        assert_eq!(parts("plain"), vec![p("plain", false)]);
    }
}
