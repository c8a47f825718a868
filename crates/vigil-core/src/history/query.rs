//! Searches: what the user or the agent typed, made into an FTS5 query that cannot be an
//! injection (every word quoted), ranked by bm25 with a boost for recent messages.

use rusqlite::{params_from_iter, types::Value, Connection};

use super::{Hit, Kind, Nearby, Query};

/// Marks around a matched word in [`Hit::snippet`]; never in indexed text (control bytes).
pub const MARK_START: char = '\u{2}';
pub const MARK_END: char = '\u{3}';
/// Words of context in a snippet.
const SNIPPET_WORDS: i64 = 16;
/// A message this many days old weighs about half as much as one from today, at equal bm25.
const HALF_WEIGHT_DAYS: f64 = 14.0;

/// `"disk"* AND "figure"*`: each word of the input quoted (so `OR`, `NEAR`, `-` and quotes
/// are words, not syntax) and taken as a prefix, so results come as the user types.
/// `None` when the input has no word.
pub fn fts_query(input: &str) -> Option<String> {
    let words: Vec<String> = input
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(16)
        .map(|w| format!("\"{w}\"*"))
        .collect();
    (!words.is_empty()).then(|| words.join(" AND "))
}

pub fn search(conn: &Connection, q: &Query, now_ms: i64) -> rusqlite::Result<Vec<Hit>> {
    let Some(matcher) = fts_query(&q.text) else {
        return Ok(Vec::new());
    };
    // The best `limit` first, by score alone; snippets only for those (a snippet costs
    // more than a score, and a common word matches thousands of messages).
    let mut inner = format!(
        "SELECT m.rowid AS rid,
                bm25(fts) * (1.0 + {HALF_WEIGHT_DAYS} / ({HALF_WEIGHT_DAYS} + max(0, ?2 - m.ts) / 86400000.0)) AS score
         FROM fts JOIN messages m ON m.rowid = fts.rowid
         WHERE fts MATCH ?1"
    );
    let mut args: Vec<Value> = vec![Value::Text(matcher), Value::Integer(now_ms)];
    if let Some(s) = &q.session {
        args.push(Value::Text(s.clone()));
        inner.push_str(&format!(" AND m.session = ?{}", args.len()));
    }
    if !q.kinds.is_empty() {
        let list: Vec<String> = q.kinds.iter().map(|k| format!("'{}'", k.as_str())).collect();
        inner.push_str(&format!(" AND m.kind IN ({})", list.join(",")));
    }
    if let Some(t) = q.since_ms {
        args.push(Value::Integer(t));
        inner.push_str(&format!(" AND m.ts >= ?{}", args.len()));
    }
    if let Some(t) = q.until_ms {
        args.push(Value::Integer(t));
        inner.push_str(&format!(" AND m.ts < ?{}", args.len()));
    }
    args.push(Value::Integer(q.limit.clamp(1, 200) as i64));
    // bm25 is negative, better when lower; the boost makes recent ones lower still.
    inner.push_str(&format!(" ORDER BY score LIMIT ?{}", args.len()));
    let sql = format!(
        "WITH top AS ({inner})
         SELECT m.session, m.id, m.seq, m.role, m.ts, m.kind,
                snippet(fts, 0, '{MARK_START}', '{MARK_END}', '…', {SNIPPET_WORDS})
         FROM top JOIN fts ON fts.rowid = top.rid JOIN messages m ON m.rowid = top.rid
         WHERE fts MATCH ?1 ORDER BY top.score"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(args), |r| {
        Ok(Hit {
            session: r.get(0)?,
            message_id: r.get(1)?,
            seq: r.get::<_, i64>(2)? as u64,
            role: r.get(3)?,
            ts: r.get(4)?,
            kind: Kind::parse(&r.get::<_, String>(5)?),
            snippet: r.get(6)?,
            title: String::new(),
        })
    })?;
    rows.collect()
}

/// The messages of `session` from `before` messages before `message_id` to `after` after.
pub fn around(
    conn: &Connection,
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
        "SELECT m.id, m.seq, m.role, m.ts, fts.text FROM messages m JOIN fts ON fts.rowid = m.rowid
         WHERE m.session = ?1 AND m.seq BETWEEN ?2 AND ?3 ORDER BY m.seq",
    )?;
    let rows = stmt.query_map(
        rusqlite::params![session, seq - before as i64, seq + after as i64],
        |r| {
            Ok(Nearby {
                message_id: r.get(0)?,
                seq: r.get::<_, i64>(1)? as u64,
                role: r.get(2)?,
                ts: r.get(3)?,
                text: r.get(4)?,
                hit: r.get::<_, i64>(1)? == seq,
            })
        },
    )?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map(Some)
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
