//! The routine store: the ```` ```json ```` block under `## Tasks` in `HEARTBEAT.md` (seed
//! 003 §11), parsed to `ok | corrupted | empty`, and rewritten in place.
//!
//! - Reads are cached by the file's size and modification time, so a scheduler tick costs a
//!   `stat` when nothing changed; a hand edit is seen at the next tick.
//! - Every write re-reads the file under the lock the heartbeat session's writes take
//!   (`heartbeat_session_main`, across processes too), changes only the block's contents
//!   (the user's own text around it stays byte for byte), and replaces the file atomically.
//! - After each good parse the task list is copied to `.heartbeat_snapshot.json`, the floor
//!   a corrupted block can be rebuilt from.
//!
//! Must never: write over a corrupted block (the user's text would be lost; writes fail with
//! [`StoreError::Corrupted`] until it is fixed or restored on purpose), drop a task it cannot
//! read (it is kept verbatim), or write without the lock.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::Map;

use super::block::{block_json, find_block, join_checks};
pub use super::block::{parse, render, same_tasks, split_checks, strip_block, Entry, Parsed};
use crate::clock::Clock;
use crate::durable::write_atomic;
use crate::heartbeat::file::HEARTBEAT_FILE;
use crate::session::{SessionError, SessionLocks};

/// The snapshot's file name, next to `HEARTBEAT.md`.
pub const SNAPSHOT_FILE: &str = ".heartbeat_snapshot.json";
/// The schema version written.
pub const SCHEMA_VERSION: u64 = 2;

/// Why the store could not do something; each says how to recover.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The task block is not valid; nothing is written until it is. Recover: fix the JSON in
    /// `HEARTBEAT.md`, or restore the routines from the snapshot.
    #[error("the task block in HEARTBEAT.md is corrupted ({0}); fix it, or restore the routines from {SNAPSHOT_FILE}")]
    Corrupted(String),
    /// The file could not be read or written. Recover: fix permissions / free space.
    #[error("could not {action} {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another writer holds the lock. Recover: try again shortly.
    #[error("HEARTBEAT.md is being written by someone else: {0}")]
    Locked(#[from] SessionError),
    /// The change itself was refused (a bad schedule, a duplicate, no such routine).
    /// Recover: change the request as the message says.
    #[error("{0}")]
    Rejected(Refusal),
}

/// Why a change was refused, and the draft field it is about when there is one (`title`,
/// `schedule`, `timezone`, `next_run_at`, `timeout_seconds`, `kind`), so an editor can show
/// it at that field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: Option<&'static str>,
    pub message: String,
}

impl Refusal {
    /// A refusal about the request as a whole.
    pub fn new(message: impl Into<String>) -> Self {
        Refusal {
            field: None,
            message: message.into(),
        }
    }

    /// A refusal about one field of the draft.
    pub fn at(field: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            field: Some(field),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// The file as last read.
#[derive(Debug, Clone)]
pub struct FileState {
    pub parsed: Parsed,
    /// The file's text ("" when there is none).
    pub text: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

/// The routine store; cheap to clone.
#[derive(Clone)]
pub struct RoutineStore {
    inner: Arc<Inner>,
}

struct Inner {
    workspace: PathBuf,
    locks: SessionLocks,
    /// The lock id: the heartbeat session's, so routine writes and heartbeat writes exclude
    /// each other (seed 003 §8.2).
    lock_id: String,
    /// `std` lock: the last read, keyed by the file's stamp; never held across an await.
    cache: Mutex<Option<(Option<Stamp>, Arc<FileState>)>>,
    /// The snapshot last written, to write it only when it changes.
    snapshot: Mutex<Option<String>>,
}

impl RoutineStore {
    pub fn new(workspace: &Path, locks: SessionLocks, _clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                workspace: workspace.to_path_buf(),
                locks,
                lock_id: crate::heartbeat::session_id(crate::heartbeat::AGENT),
                cache: Mutex::new(None),
                snapshot: Mutex::new(None),
            }),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.inner.workspace.join(HEARTBEAT_FILE)
    }

    pub fn snapshot_path(&self) -> PathBuf {
        self.inner.workspace.join(SNAPSHOT_FILE)
    }

    fn stamp(&self) -> Result<Option<Stamp>, StoreError> {
        let path = self.path();
        match std::fs::metadata(&path) {
            Ok(m) => Ok(Some(Stamp {
                len: m.len(),
                modified: m.modified().ok(),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io {
                action: "read",
                path,
                source,
            }),
        }
    }

    /// The file's text, read beneath its folder (a symlink in its place is refused).
    fn read_text(&self) -> Result<String, StoreError> {
        use crate::beneath::BeneathError;
        let path = self.path();
        let folder = path.parent().unwrap_or(Path::new("."));
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(HEARTBEAT_FILE);
        match crate::beneath::read(folder, name) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| StoreError::Io {
                action: "read",
                path,
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
            }),
            Err(BeneathError::Missing) => Ok(String::new()),
            Err(BeneathError::Io(source)) => Err(StoreError::Io {
                action: "read",
                path,
                source,
            }),
            Err(link @ BeneathError::Link) => Err(StoreError::Io {
                action: "read",
                path,
                source: std::io::Error::other(link.to_string()),
            }),
        }
    }

    /// Replaces `HEARTBEAT.md` atomically; the caller holds the lock.
    fn write(&self, text: &str) -> Result<(), StoreError> {
        let path = self.path();
        write_atomic(&path, text.as_bytes())
            .map(|_| ())
            .map_err(|source| StoreError::Io {
                action: "write",
                path,
                source,
            })
    }

    /// The file now: from the cache when its size and time are unchanged.
    pub fn read(&self) -> Result<Arc<FileState>, StoreError> {
        let stamp = self.stamp()?;
        if let Some((s, state)) = &*self.cache() {
            if *s == stamp {
                return Ok(state.clone());
            }
        }
        let text = self.read_text()?;
        let state = Arc::new(FileState {
            parsed: parse(&text),
            text,
        });
        self.save_snapshot(&state.parsed);
        *self.cache() = Some((stamp, state.clone()));
        Ok(state)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Option<(Option<Stamp>, Arc<FileState>)>> {
        self.inner.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the task list under the lock: re-reads the file, hands `f` the entries, and
    /// writes the result if anything changed. `f`'s error leaves the file untouched.
    pub async fn update<R>(&self, f: impl FnOnce(&mut Vec<Entry>) -> Result<R, StoreError>) -> Result<R, StoreError> {
        let guard = self.inner.locks.acquire(&self.inner.lock_id).await?;
        let text = self.read_text()?;
        let (mut entries, extra) = match parse(&text) {
            Parsed::Corrupted(e) => return Err(StoreError::Corrupted(e)),
            Parsed::Empty => (vec![], Map::new()),
            Parsed::Ok { entries, extra } => (entries, extra),
        };
        let before = entries.clone();
        let result = f(&mut entries)?;
        if entries != before {
            let out = render(&text, &entries, &extra);
            guard.ensure_held()?;
            self.write(&out)?;
            let state = Arc::new(FileState {
                parsed: parse(&out),
                text: out,
            });
            self.save_snapshot(&state.parsed);
            *self.cache() = Some((self.stamp()?, state));
        }
        drop(guard);
        Ok(result)
    }

    /// The checks part of the file now, from the cache when unchanged.
    pub fn checks(&self) -> Result<String, StoreError> {
        let state = self.read()?;
        split_checks(&state.text)
            .map(|(checks, _)| checks)
            .map_err(StoreError::Corrupted)
    }

    /// Replaces the checks with `text`, keeping the routines' section as it is on disk now.
    /// `expected` is the checks as the editor loaded them: if the file's checks changed
    /// since (the agent or another editor wrote them), nothing is written and the error says
    /// so, rather than one side's words silently replacing the other's.
    pub async fn save_checks(&self, expected: &str, text: &str) -> Result<String, StoreError> {
        if !matches!(find_block(text), Ok(None)) {
            return Err(StoreError::Rejected(Refusal::new(
                "the checks cannot hold a ```json block under ## Tasks: routines are edited in the list",
            )));
        }
        let guard = self.inner.locks.acquire(&self.inner.lock_id).await?;
        let current = self.read_text()?;
        let (checks, section) = split_checks(&current).map_err(StoreError::Corrupted)?;
        if checks.trim_end() != expected.trim_end() {
            return Err(StoreError::Rejected(Refusal::new(format!(
                "{HEARTBEAT_FILE} changed since it was opened here; reload to see the new text, then edit again"
            ))));
        }
        let out = join_checks(text, section);
        if out != current {
            guard.ensure_held()?;
            self.write(&out)?;
            *self.cache() = None;
        }
        drop(guard);
        Ok(split_checks(&out).map(|(c, _)| c).unwrap_or_default())
    }

    /// Replaces a corrupted block with the snapshot's tasks, keeping the broken file as
    /// `HEARTBEAT.md.corrupt` first. The user asks for this (in the pane, or by asking the
    /// agent, whose `routine_restore` tool calls it); it never happens on its own.
    pub async fn restore_snapshot(&self) -> Result<usize, StoreError> {
        let guard = self.inner.locks.acquire(&self.inner.lock_id).await?;
        let text = self.read_text()?;
        let snap_path = self.snapshot_path();
        let snap = std::fs::read_to_string(&snap_path).map_err(|source| StoreError::Io {
            action: "read",
            path: snap_path.clone(),
            source,
        })?;
        let fenced = format!("## Tasks\n\n```json\n{snap}\n```\n");
        let Parsed::Ok { entries, extra } = parse(&fenced) else {
            return Err(StoreError::Rejected(Refusal::new(format!(
                "{} is not readable either",
                snap_path.display()
            ))));
        };
        let corrupt = self.inner.workspace.join(format!("{HEARTBEAT_FILE}.corrupt"));
        write_atomic(&corrupt, text.as_bytes()).map_err(|source| StoreError::Io {
            action: "write",
            path: corrupt,
            source,
        })?;
        let out = match find_block(&text) {
            Ok(Some(_)) => render(&text, &entries, &extra),
            // An unclosed block: keep everything before it, then a fresh block.
            _ => {
                let cut = text.find("## Tasks").unwrap_or(text.len());
                render(&text[..cut], &entries, &extra)
            }
        };
        guard.ensure_held()?;
        self.write(&out)?;
        *self.cache() = None;
        Ok(entries.len())
    }

    /// Writes `.heartbeat_snapshot.json` after a good parse, when it changed.
    fn save_snapshot(&self, parsed: &Parsed) {
        let Parsed::Ok { entries, extra } = parsed else { return };
        let json = block_json(entries, extra);
        let mut last = self.inner.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_deref() == Some(json.as_str()) {
            return;
        }
        if std::fs::read_to_string(self.snapshot_path()).ok().as_deref() != Some(json.as_str()) {
            if let Err(e) = write_atomic(&self.snapshot_path(), json.as_bytes()) {
                tracing::warn!("could not write {SNAPSHOT_FILE}: {e}");
                return;
            }
        }
        *last = Some(json);
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
