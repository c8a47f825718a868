//! Searches: what the user or the agent typed, made into an FTS5 query that cannot be an
//! injection (every word quoted), ranked by bm25 with a boost for recent messages, and the
//! hits' snippets made from their lines in the transcripts (the index keeps no text).
//!
//! Ranking: bm25 costs FTS5 over a microsecond a message (it reads each one's length), so a
//! common word's tens of thousands of matches cannot all be scored in a search's
//! milliseconds — and FTS5's `ORDER BY rank LIMIT n` scores every match before it cuts.
//! So a search scores only the most recent [`WINDOW`] matches: the window's start is found
//! walking the matches newest first by rowid (cheap: no score), and only rows from there on
//! are scored, bm25 times a recency boost. Rowids follow recency: appends get ever higher
//! ones, and a rebuild indexes the least recently written transcripts first. A word with
//! fewer matches than the window is ranked over all of them.

use std::path::Path;

use rusqlite::{params_from_iter, types::Value, Connection};

use super::snippet::{fold, snippet};
pub use super::snippet::{MARK_END, MARK_START};
use super::source::{Place, Transcripts};
use super::{Hit, Kind, Nearby, Query};

/// Words of context in a snippet.
const SNIPPET_WORDS: usize = 16;
/// A message this many days old weighs about half as much as one from today, at equal bm25.
const HALF_WEIGHT_DAYS: f64 = 14.0;
/// The most recent matches (passing the filters) that are scored and ranked.
const WINDOW: i64 = 1_000;

/// The words of the input, at most 16.
fn words(input: &str) -> Vec<&str> {
    input
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(16)
        .collect()
}

/// `"disk"* AND "figure"*`: each word of the input quoted (so `OR`, `NEAR`, `-` and quotes
/// are words, not syntax) and taken as a prefix, so results come as the user types.
/// `None` when the input has no word.
pub fn fts_query(input: &str) -> Option<String> {
    let words: Vec<String> = words(input).iter().map(|w| format!("\"{w}\"*")).collect();
    (!words.is_empty()).then(|| words.join(" AND "))
}

/// One row of a ranked search, before its snippet.
struct Row {
    hit: Hit,
    place: Place,
}

pub fn search(conn: &Connection, sessions: &Path, q: &Query, now_ms: i64) -> rusqlite::Result<Vec<Hit>> {
    let Some(matcher) = fts_query(&q.text) else {
        return Ok(Vec::new());
    };
    let limit = q.limit.clamp(1, 200);
    let rows = ranked(conn, &matcher, q, now_ms)?;
    let terms: Vec<String> = words(&q.text).into_iter().map(fold).collect();
    let mut transcripts = Transcripts::new(sessions);
    let mut hits = Vec::with_capacity(limit);
    for Row { mut hit, place } in rows {
        if hits.len() == limit {
            break;
        }
        // A line that is not the indexed message any more: the indexer is catching up.
        let Some(text) = transcripts.text(&hit.session, &hit.message_id, place, false) else {
            continue;
        };
        hit.snippet = snippet(&text, &terms, SNIPPET_WORDS);
        hits.push(hit);
    }
    Ok(hits)
}

/// Matches of `matcher` passing `q`'s filters among the most recent [`WINDOW`] of them,
/// best first: bm25 with the recency boost.
fn ranked(conn: &Connection, matcher: &str, q: &Query, now_ms: i64) -> rusqlite::Result<Vec<Row>> {
    let mut args: Vec<Value> = vec![Value::Text(matcher.to_string()), Value::Integer(now_ms)];
    let mut filters = String::new();
    if let Some(s) = &q.session {
        args.push(Value::Text(s.clone()));
        filters.push_str(&format!(" AND m.session = ?{}", args.len()));
    }
    if !q.kinds.is_empty() {
        let list: Vec<String> = q.kinds.iter().map(|k| format!("'{}'", k.as_str())).collect();
        filters.push_str(&format!(" AND m.kind IN ({})", list.join(",")));
    }
    if let Some(t) = q.since_ms {
        args.push(Value::Integer(t));
        filters.push_str(&format!(" AND m.ts >= ?{}", args.len()));
    }
    if let Some(t) = q.until_ms {
        args.push(Value::Integer(t));
        filters.push_str(&format!(" AND m.ts < ?{}", args.len()));
    }
    // ?2 is in every statement so the arguments' numbers stay the same in both.
    let from = format!(
        "FROM fts f JOIN messages m ON m.rowid = f.rowid WHERE f.fts MATCH ?1 AND ?2 = ?2 AND m.copy = 0 {filters}"
    );
    let floor: i64 = match conn
        .prepare_cached(&format!(
            "SELECT f.rowid {from} ORDER BY f.rowid DESC LIMIT 1 OFFSET {}",
            WINDOW - 1
        ))?
        .query_row(params_from_iter(args.iter()), |r| r.get(0))
    {
        Ok(rowid) => rowid,
        Err(rusqlite::Error::QueryReturnedNoRows) => i64::MIN,
        Err(e) => return Err(e),
    };
    args.push(Value::Integer(floor));
    let floor_arg = args.len();
    // bm25 is negative, better when lower; the boost makes recent ones lower still. A few
    // more rows than asked, for lines found stale when their snippet is read.
    args.push(Value::Integer((q.limit.clamp(1, 200) + 8) as i64));
    let sql = format!(
        "SELECT m.session, m.id, m.seq, m.role, m.ts, m.kind, m.line, m.off, m.nbytes,
                f.rank * (1.0 + {HALF_WEIGHT_DAYS} / ({HALF_WEIGHT_DAYS} + max(0, ?2 - m.ts) / 86400000.0)) AS score
         {from} AND f.rowid >= ?{floor_arg}
         ORDER BY score LIMIT ?{}",
        args.len()
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(args), |r| {
        Ok(Row {
            hit: Hit {
                session: r.get(0)?,
                message_id: r.get(1)?,
                seq: r.get::<_, i64>(2)? as u64,
                role: r.get(3)?,
                ts: r.get(4)?,
                kind: Kind::parse(&r.get::<_, String>(5)?),
                snippet: String::new(),
                title: String::new(),
            },
            place: place(r, 6)?,
        })
    })?;
    rows.collect()
}

fn place(r: &rusqlite::Row, first: usize) -> rusqlite::Result<Place> {
    Ok(Place {
        line: r.get::<_, i64>(first)? as u64,
        off: r.get::<_, i64>(first + 1)? as u64,
        nbytes: r.get::<_, i64>(first + 2)? as u64,
    })
}

/// The messages of `session` from `before` messages before `message_id` to `after` after,
/// read from the transcript; `None` if there is no such message any more.
pub fn around(
    conn: &Connection,
    sessions: &Path,
    session: &str,
    message_id: &str,
    before: u64,
    after: u64,
) -> rusqlite::Result<Option<Vec<Nearby>>> {
    let seq: Option<i64> = match conn.query_row(
        "SELECT seq FROM messages WHERE session = ?1 AND id = ?2",
        [session, message_id],
        |r| r.get(0),
    ) {
        Ok(s) => Some(s),
        Err(rusqlite::Error::QueryReturnedNoRows) => None,
        Err(e) => return Err(e),
    };
    let Some(seq) = seq else { return Ok(None) };
    let mut stmt = conn.prepare_cached(
        "SELECT id, seq, role, ts, line, off, nbytes, copy FROM messages
         WHERE session = ?1 AND seq BETWEEN ?2 AND ?3 ORDER BY seq",
    )?;
    let rows = stmt
        .query_map(
            rusqlite::params![session, seq - before as i64, seq + after as i64],
            |r| {
                let id: String = r.get(0)?;
                let this: i64 = r.get(1)?;
                Ok((
                    Nearby {
                        message_id: id,
                        seq: this as u64,
                        role: r.get(2)?,
                        ts: r.get(3)?,
                        text: String::new(),
                        hit: this == seq,
                    },
                    place(r, 4)?,
                    r.get::<_, bool>(7)?,
                ))
            },
        )?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut transcripts = Transcripts::new(sessions);
    let mut out = Vec::with_capacity(rows.len());
    for (mut nearby, place, copy) in rows {
        match transcripts.text(session, &nearby.message_id, place, copy) {
            Some(text) => nearby.text = text,
            // The message asked about is not in its transcript any more.
            None if nearby.hit => return Ok(None),
            None => continue,
        }
        out.push(nearby);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_syntax_in_the_input_is_only_words() {
        assert_eq!(
            fts_query("disk OR \"x\" NEAR(a)").unwrap(),
            "\"disk\"* AND \"OR\"* AND \"x\"* AND \"NEAR\"* AND \"a\"*"
        );
        assert_eq!(fts_query(" -- ** "), None);
    }
}
