//! The indexer: one thread owning the index's only writing connection, fed by a channel.
//! Writers of transcripts only send a session id ([`Cmd::Changed`]); the indexer reads what
//! was appended from the JSONL itself, so the index can never hold what the transcript does
//! not, and a missed message is caught up by the next one or at the next start.
//!
//! Each session is caught up in transactions of at most [`CHUNK`] messages that also move
//! its `files` row forward: a kill between two leaves the index exactly as far as its last
//! commit, and the next catch-up goes on from there.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender};

use rusqlite::{params, Connection, OptionalExtension};

use super::extract::extract;
use super::Shared;
use crate::session::ids::line_id;

/// Messages per transaction: large enough that a rebuild is not commit-bound, small enough
/// that a kill loses little work and readers see progress.
const CHUNK: usize = 2_000;
/// Bytes of a transcript's end (hashed) remembered to tell "appended to" from "rewritten".
const TAIL: u64 = 64;

pub enum Cmd {
    /// Lines were appended to (or cut from) this transcript.
    Changed(String),
    /// This transcript was deleted: drop it from the index and compact.
    Removed(String),
    /// Reply once everything sent before is done (tests, benches, shutdown).
    Flush(SyncSender<()>),
    /// The index's owner is gone: stop now (what is left is caught up at the next start).
    Stop,
}

pub fn run(mut conn: Connection, sessions: PathBuf, shared: std::sync::Arc<Shared>, rx: Receiver<Cmd>) {
    if let Err(e) = catch_up_all(&mut conn, &sessions, &shared) {
        tracing::warn!("the history index could not catch up with the transcripts: {e}");
    }
    shared.set_ready();
    while let Ok(first) = rx.recv() {
        // Everything already queued, in one pass: a turn streaming many lines costs one
        // catch-up of its session, not one per line.
        let mut changed = BTreeSet::new();
        let mut removed = BTreeSet::new();
        let mut flushes = Vec::new();
        for cmd in std::iter::once(first).chain(rx.try_iter()) {
            match cmd {
                Cmd::Changed(id) => {
                    changed.insert(id);
                }
                Cmd::Removed(id) => {
                    changed.remove(&id);
                    removed.insert(id);
                }
                Cmd::Flush(done) => flushes.push(done),
                Cmd::Stop => return,
            }
        }
        for id in &removed {
            if let Err(e) = remove(&conn, id) {
                tracing::warn!("could not remove {id} from the history index: {e}");
            }
        }
        if !removed.is_empty() {
            if let Err(e) = super::db::compact(&conn) {
                tracing::warn!("could not compact the history index: {e}");
            }
            shared.removed_done(&removed);
        }
        for id in &changed {
            if let Err(e) = catch_up(&mut conn, &sessions, id) {
                tracing::warn!("could not index the transcript of {id}: {e}");
            }
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Every transcript on disk caught up; sessions whose transcript is gone removed.
pub fn catch_up_all(conn: &mut Connection, sessions: &Path, shared: &Shared) -> Result<()> {
    let mut on_disk = BTreeSet::new();
    let mut by_age = Vec::new();
    for entry in std::fs::read_dir(sessions)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_suffix(crate::session::suffix::TRANSCRIPT))
        else {
            continue;
        };
        if crate::session::validate_id(id).is_ok() {
            on_disk.insert(id.to_string());
            let written = entry.metadata().and_then(|m| m.modified()).ok();
            by_age.push((written, id.to_string()));
        }
    }
    let indexed: Vec<String> = conn
        .prepare("SELECT session FROM files")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in indexed.iter().filter(|id| !on_disk.contains(*id)) {
        remove(conn, id)?;
    }
    // The least recently written first: rowids follow recency, which searches rank by
    // (see `query`), also after a rebuild.
    by_age.sort();
    for (_, id) in &by_age {
        if shared.stopping() {
            return Ok(());
        }
        catch_up(conn, sessions, id)?;
    }
    Ok(())
}

fn remove(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let done = (|| {
        conn.execute(
            "DELETE FROM fts WHERE rowid IN (SELECT rowid FROM messages WHERE session = ?1)",
            [id],
        )?;
        conn.execute("DELETE FROM messages WHERE session = ?1", [id])?;
        conn.execute("DELETE FROM history_calls WHERE session = ?1", [id])?;
        conn.execute("DELETE FROM files WHERE session = ?1", [id])?;
        Ok(())
    })();
    conn.execute_batch(if done.is_ok() { "COMMIT" } else { "ROLLBACK" })?;
    done
}

struct Known {
    dev: u64,
    ino: u64,
    len: u64,
    tail: Vec<u8>,
    next_line: usize,
    next_seq: i64,
    kind: String,
}

/// Indexes what `id`'s transcript gained since it was last indexed, or all of it again if
/// it is another file now, shorter, or changed before its indexed end.
pub fn catch_up(conn: &mut Connection, sessions: &Path, id: &str) -> Result<()> {
    let path = sessions.join(format!("{id}{}", crate::session::suffix::TRANSCRIPT));
    let mut f = match File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(remove(conn, id)?),
        Err(e) => return Err(e.into()),
    };
    let m = f.metadata()?;
    let known: Option<Known> = conn
        .query_row(
            "SELECT dev, ino, len, tail, next_line, next_seq, kind FROM files WHERE session = ?1",
            [id],
            |r| {
                Ok(Known {
                    dev: r.get::<_, i64>(0)? as u64,
                    ino: r.get::<_, i64>(1)? as u64,
                    len: r.get::<_, i64>(2)? as u64,
                    tail: r.get(3)?,
                    next_line: r.get::<_, i64>(4)? as usize,
                    next_seq: r.get(5)?,
                    kind: r.get(6)?,
                })
            },
        )
        .optional()?;
    let known = match known {
        Some(k) if still_holds(&f, &m, &k) => k,
        other => {
            if other.is_some() {
                remove(conn, id)?;
            }
            Known {
                dev: m.dev(),
                ino: m.ino(),
                len: 0,
                tail: Vec::new(),
                next_line: 0,
                next_seq: 0,
                kind: super::session_kind(sessions, id).as_str().to_string(),
            }
        }
    };
    if m.len() == known.len {
        return Ok(());
    }
    let mut bytes = Vec::new();
    f.seek(SeekFrom::Start(known.len))?;
    f.read_to_end(&mut bytes)?;
    // Only whole lines: a line being written now is indexed once it is complete.
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let bytes = &bytes[..complete];
    let mut state = known;
    let mut lines = bytes.split_inclusive(|&b| b == b'\n').peekable();
    while lines.peek().is_some() {
        let tx = conn.transaction()?;
        {
            let mut add_msg = tx.prepare_cached(
                "INSERT INTO messages(session, seq, id, role, ts, kind, line, off, nbytes, copy)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?;
            let mut add_text = tx.prepare_cached("INSERT INTO fts(rowid, text) VALUES (?1, ?2)")?;
            let mut add_call =
                tx.prepare_cached("INSERT OR IGNORE INTO history_calls(session, call_id) VALUES (?1, ?2)")?;
            let mut is_call = tx.prepare_cached("SELECT 1 FROM history_calls WHERE session = ?1 AND call_id = ?2")?;
            let mut n = 0;
            while n < CHUNK {
                let Some(raw) = lines.next() else { break };
                let off = state.len;
                state.len += raw.len() as u64;
                let line = raw.strip_suffix(b"\n").unwrap_or(raw);
                let line_no = state.next_line;
                state.next_line += 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                // An unreadable line is skipped by every load too, so places stay aligned.
                let Ok(message) = serde_json::from_slice::<vigil_protocol::Message>(line) else {
                    continue;
                };
                for call in super::extract::history_calls(&message) {
                    add_call.execute(params![id, call])?;
                }
                let copy = match super::extract::answers(&message) {
                    Some(call) => is_call.exists(params![id, call])?,
                    None => false,
                };
                let mut e = extract(&message);
                if copy {
                    e.text.clear();
                }
                let msg_id = line_id(line_no, line);
                add_msg.execute(params![
                    id,
                    state.next_seq,
                    msg_id,
                    e.role,
                    e.ts,
                    state.kind,
                    line_no as i64,
                    off as i64,
                    line.len() as i64,
                    copy
                ])?;
                add_text.execute(params![tx.last_insert_rowid(), e.text])?;
                state.next_seq += 1;
                n += 1;
            }
        }
        state.tail = tail_before(&f, state.len)?;
        tx.execute(
            "INSERT OR REPLACE INTO files(session, dev, ino, len, tail, next_line, next_seq, kind)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                id,
                state.dev as i64,
                state.ino as i64,
                state.len as i64,
                state.tail,
                state.next_line as i64,
                state.next_seq,
                state.kind
            ],
        )?;
        tx.commit()?;
    }
    Ok(())
}

fn still_holds(f: &File, m: &std::fs::Metadata, k: &Known) -> bool {
    if (m.dev(), m.ino()) != (k.dev, k.ino) || m.len() < k.len {
        return false;
    }
    k.len == 0 || tail_before(f, k.len).is_ok_and(|now| now == k.tail)
}

/// A hash of the [`TAIL`] bytes before `len`: the index keeps no transcript bytes, only
/// enough to tell whether they are still there.
fn tail_before(f: &File, len: u64) -> std::io::Result<Vec<u8>> {
    use sha2::{Digest, Sha256};
    let n = len.min(TAIL);
    let mut tail = vec![0u8; n as usize];
    f.read_exact_at(&mut tail, len - n)?;
    Ok(Sha256::digest(&tail).to_vec())
}
