//! The index file: `<data>/history/index.sqlite` (with SQLite's `-wal` and `-shm` beside it),
//! its schema, and the decision to throw it away. It is a cache of the transcripts, so any
//! doubt — an unreadable file, a failed integrity check, another schema version — is settled
//! by deleting it and rebuilding from the JSONL.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// Bumped whenever what is indexed or how changes: an index of another version is rebuilt.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS files(
    session TEXT PRIMARY KEY,
    -- The transcript as last indexed: same device and inode, at least this long, and the
    -- same last bytes before `len` (their SHA-256), or it is indexed again from its start.
    dev INTEGER NOT NULL, ino INTEGER NOT NULL, len INTEGER NOT NULL, tail BLOB NOT NULL,
    -- Where the next line goes: its line number in the file, and its place among messages.
    next_line INTEGER NOT NULL, next_seq INTEGER NOT NULL,
    kind TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages(
    rowid INTEGER PRIMARY KEY,
    session TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    ts INTEGER NOT NULL,
    kind TEXT NOT NULL,
    -- Where its line is in the transcript: line number, byte offset, length without the
    -- newline. Snippets and `read_history` read the text back from there.
    line INTEGER NOT NULL, off INTEGER NOT NULL, nbytes INTEGER NOT NULL,
    -- A history tool's result (a copy of other messages): nothing of it is indexed or shown.
    copy INTEGER NOT NULL
);
-- Calls to the history tools: their results are copies of other messages, left out.
CREATE TABLE IF NOT EXISTS history_calls(session TEXT NOT NULL, call_id TEXT NOT NULL, PRIMARY KEY(session, call_id));
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session, seq);
CREATE INDEX IF NOT EXISTS messages_by_id ON messages(session, id);
-- The words, under the same rowid as their `messages` row. Contentless: the index holds the
-- words' postings but not the text, which stays in the JSONL only (half the file's size);
-- `contentless_delete` lets a session's rows be deleted. unicode61 with diacritics folded:
-- `cafe` finds `café`.
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    text, content = '', contentless_delete = 1, tokenize = 'unicode61 remove_diacritics 2'
);
";

/// The folder the index lives in, inside Vigil's data folder (which no sandbox shows).
pub fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("history")
}

pub fn file(data_dir: &Path) -> PathBuf {
    dir(data_dir).join("index.sqlite")
}

fn tune(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(Duration::from_secs(5))?;
    // WAL: readers never wait for the indexer, and a killed writer loses only its open
    // transaction. `synchronous = NORMAL` is durable enough for a cache of files on disk.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Freed pages are zeroed: a forgotten conversation's text does not linger in them.
    conn.pragma_update(None, "secure_delete", "ON")?;
    Ok(())
}

/// Opens the index for writing, creating or rebuilding it when it is missing, corrupt or of
/// another version. The bool says whether it started empty (so everything is indexed anew).
pub fn open_writer(data_dir: &Path) -> Result<(Connection, bool), rusqlite::Error> {
    crate::durable::create_private_dir_all(&dir(data_dir))
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    let path = file(data_dir);
    let existed = path.exists();
    match try_open(&path) {
        Ok(conn) => Ok((conn, !existed)),
        // Another Vigil holds it (busy past the timeout): it is fine, only not ours now.
        Err(e) if busy(&e) => Err(e),
        Err(e) => {
            tracing::warn!(
                "the history index at {} is unusable ({e}); rebuilding it from the transcripts",
                path.display()
            );
            remove_files(&path);
            try_open(&path).map(|c| (c, true))
        }
    }
}

fn busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _)
        if matches!(f.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

fn try_open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    tune(&conn)?;
    let ok: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if ok != "ok" {
        return Err(rusqlite::Error::InvalidQuery);
    }
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    if tables > 0 && version != SCHEMA_VERSION {
        return Err(rusqlite::Error::InvalidQuery);
    }
    conn.execute_batch(SCHEMA)?;
    // A deleted row's postings are removed from the index at once rather than masked by a
    // tombstone until the next merge: forgetting does not wait for `optimize`.
    conn.execute("INSERT INTO fts(fts, rank) VALUES('secure-delete', 1)", [])?;
    conn.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    // Touch the full-text index itself: a torn file can pass the quick check's pages.
    conn.query_row("SELECT count(*) FROM fts WHERE fts MATCH 'vigil'", [], |r| {
        r.get::<_, i64>(0)
    })?;
    Ok(conn)
}

/// A connection for searches: read-only, so a search can never change the index.
pub fn open_reader(data_dir: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        file(data_dir),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
    )?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

fn remove_files(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

/// Merges the full-text index, rewrites the file without free pages and empties the WAL:
/// afterwards nothing deleted is left in any of the files.
pub fn compact(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute("INSERT INTO fts(fts) VALUES('optimize')", [])?;
    conn.execute_batch("VACUUM")?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}
