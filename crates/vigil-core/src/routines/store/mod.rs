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
//! - While the block is corrupted (a hand edit broke the JSON) the snapshot is the routines in
//!   force ([`FileState::routines`]): the scheduler's bookkeeping ([`RoutineStore::update`])
//!   goes there, so the last good routines keep running, and the file is left alone. A change
//!   someone asks for ([`RoutineStore::edit`]: the routine tools, the editor, a restore)
//!   repairs it: the last good routines plus the change, as a valid block, the broken file
//!   kept as `HEARTBEAT.md.corrupt` first. A block fixed by hand gets back the runs made
//!   meanwhile (see `kept`).
//!
//! - A file another program replaced while a sandboxed command ran is *held* (see
//!   [`trust`]): none of its routines run and nothing is written to it until the user
//!   trusts it ([`RoutineStore::trust_file`]).
//!
//! Must never: write over a corrupted block on its own, or without keeping it as
//! `HEARTBEAT.md.corrupt` first (the user's text would be lost), drop a task it cannot read
//! (it is kept verbatim), or write without the lock.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::Map;

use super::block::{block_json, find_block, join_checks};
pub use super::block::{parse, render, same_tasks, split_checks, strip_block, Entry, Parsed};
use crate::clock::Clock;
use crate::durable::{pending_in_place, recover_in_place, write_atomic, write_in_place};
use crate::session::{SessionError, SessionLocks};
use crate::workspace::heartbeat_file::HEARTBEAT_FILE;

/// The journal of a rewrite of `HEARTBEAT.md` in progress, in the sessions folder (Vigil's
/// own, which no sandbox sees: a journal a command could plant would be replayed as tasks).
const JOURNAL_FILE: &str = ".HEARTBEAT.md.journal";

/// The snapshot's file name, next to `HEARTBEAT.md`.
pub const SNAPSHOT_FILE: &str = ".heartbeat_snapshot.json";

/// Why the store could not do something; each says how to recover.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The task block is not valid and there is no good copy (the snapshot) to go on from, or
    /// the checks cannot be told apart from it. Recover: fix the JSON in `HEARTBEAT.md`, or
    /// restore the routines from the snapshot where there is one.
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
    /// What `HEARTBEAT.md`'s block holds.
    pub parsed: Parsed,
    /// The file's text ("" when there is none).
    pub text: String,
    /// While `parsed` is corrupted: the last good routines (the snapshot, with the runs made
    /// since), which keep running. `None` otherwise, or when there is no good copy.
    pub kept: Option<Parsed>,
    /// The file was replaced while a sandboxed command ran and waits for the user's Trust:
    /// none of its routines run (see [`trust`]).
    pub held: bool,
}

/// The routines in force while the file is held: none.
static NONE: Parsed = Parsed::Empty;

impl FileState {
    /// The routines in force: the file's, or while its block is corrupted the last good ones.
    pub fn routines(&self) -> &Parsed {
        if self.held {
            return &NONE;
        }
        match (&self.parsed, &self.kept) {
            (Parsed::Corrupted(_), Some(kept)) => kept,
            (parsed, _) => parsed,
        }
    }
}

/// What a change is: the scheduler's bookkeeping, or a change someone asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Claims, results, evidence: while the block is corrupted they go to the snapshot.
    Bookkeeping,
    /// A routine tool, the editor, a restore: while the block is corrupted it is repaired.
    Asked,
}

/// A file's size and times, and which file it is: a file replaced (by rename, or deleted
/// and made again) differs even with the same size and modification time, which anyone
/// can set; the change time nobody can.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    changed: (i64, i64),
    file: (u64, u64),
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
    /// `std` lock: the last read, keyed by the file's and the snapshot's stamps; never held
    /// across an await.
    cache: Mutex<Option<(Stamps, Arc<FileState>)>>,
    /// The snapshot last written, to write it only when it changes.
    snapshot: Mutex<Option<String>>,
    /// `std` lock: routines whose bookkeeping went to the snapshot while the block was
    /// corrupted, so the snapshot is ahead of the file for them until the block is repaired
    /// or fixed by hand (then their runs are written back, see `kept`). Per process: another
    /// Vigil on the same folder keeps its own.
    ahead: Mutex<std::collections::HashSet<String>>,
    /// Whether the file as it is may be acted on (see [`trust`]).
    trust: trust::Trust,
}

/// The file's and the snapshot's stamps.
type Stamps = (Option<Stamp>, Option<Stamp>);

impl RoutineStore {
    /// A rewrite of `HEARTBEAT.md` a crash interrupted is finished here, under the lock.
    pub fn new(workspace: &Path, locks: SessionLocks, _clock: Arc<dyn Clock>) -> Self {
        // Beside the journal, in Vigil's own folder.
        let trust = trust::Trust::open(workspace, locks.dir());
        let store = Self {
            inner: Arc::new(Inner {
                workspace: workspace.to_path_buf(),
                locks,
                lock_id: crate::heartbeat::session_id(crate::heartbeat::AGENT),
                cache: Mutex::new(None),
                snapshot: Mutex::new(None),
                ahead: Mutex::new(Default::default()),
                trust,
            }),
        };
        store.recover();
        store
    }

    fn journal_path(&self) -> PathBuf {
        self.inner.locks.dir().join(JOURNAL_FILE)
    }

    fn recover(&self) {
        if !self.journal_path().exists() {
            return;
        }
        let result = self
            .inner
            .locks
            .acquire_blocking(&self.inner.lock_id)
            .map_err(|e| std::io::Error::other(e.to_string()))
            .and_then(|_guard| recover_in_place(&self.path(), &self.journal_path()));
        match result {
            Ok(true) => tracing::warn!("finished a rewrite of {HEARTBEAT_FILE} that a crash interrupted"),
            Ok(false) => {}
            Err(e) => tracing::warn!("could not finish an interrupted rewrite of {HEARTBEAT_FILE}: {e}"),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.inner.workspace.join(HEARTBEAT_FILE)
    }

    pub fn snapshot_path(&self) -> PathBuf {
        self.inner.workspace.join(SNAPSHOT_FILE)
    }

    fn stamp(path: PathBuf) -> Result<Option<Stamp>, StoreError> {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(&path) {
            Ok(m) => Ok(Some(Stamp {
                len: m.len(),
                modified: m.modified().ok(),
                changed: (m.ctime(), m.ctime_nsec()),
                file: (m.dev(), m.ino()),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io {
                action: "read",
                path,
                source,
            }),
        }
    }

    /// The file's text, read beneath its folder (a symlink in its place is refused). The file
    /// is rewritten in place, so a read may meet a rewrite half done (the new text over the
    /// old one's tail, not yet cut): while its journal is there, the journal's text is the
    /// file's; a length that changed under the read means a rewrite ended meanwhile, and the
    /// file is read again.
    fn read_text(&self) -> Result<String, StoreError> {
        use crate::beneath::BeneathError;
        let path = self.path();
        let folder = path.parent().unwrap_or(Path::new("."));
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(HEARTBEAT_FILE);
        let len = || std::fs::symlink_metadata(&path).map(|m| m.len()).ok();
        let mut tries = 0;
        let read = loop {
            let before = len();
            let got = crate::beneath::read(folder, name);
            if let Some(next) = pending_in_place(&path, &self.journal_path()) {
                break Ok(next);
            }
            tries += 1;
            let settled = match &got {
                Ok(bytes) => Some(bytes.len() as u64) == before && before == len(),
                Err(_) => true,
            };
            if settled || tries == 5 {
                break got;
            }
        };
        match read {
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

    /// Rewrites `HEARTBEAT.md` in place, journaled (a crash leaves the old text or the new
    /// one), so a standing sandbox's read-only bind of it stays attached and current: a
    /// rename over it would detach the bind, and a command still running there could write
    /// the new file (see `durable::in_place`). The caller holds the lock.
    fn write(&self, text: &str) -> Result<(), StoreError> {
        let path = self.path();
        write_in_place(&path, &self.journal_path(), text.as_bytes())
            .map(|_| ())
            .map_err(|source| StoreError::Io {
                action: "write",
                path,
                source,
            })
    }

    fn stamps(&self) -> Result<Stamps, StoreError> {
        Ok((Self::stamp(self.path())?, Self::stamp(self.snapshot_path())?))
    }

    /// The file now: from the cache when its size and time (and the snapshot's) are
    /// unchanged. While the block is corrupted, with the last good routines beside it.
    pub fn read(&self) -> Result<Arc<FileState>, StoreError> {
        let look = self.inner.trust.look();
        let trusts = self.inner.trust.trusts();
        let stamps = self.stamps()?;
        if let Some((s, state)) = &*self.cache() {
            if *s == stamps {
                // The same file, unchanged: the trusted one was seen in place again.
                if !state.held {
                    self.inner.trust.seen_again(look);
                }
                return Ok(state.clone());
            }
        }
        let text = self.read_text()?;
        let held = self.inner.trust.check(look, &self.path(), &text);
        #[cfg(test)]
        tests::after_check();
        let parsed = parse(&text);
        let kept = match &parsed {
            // Held: nothing of it runs, and it is no good copy to rebuild from.
            _ if held => None,
            Parsed::Corrupted(_) => self
                .last_good()
                .ok()
                .map(|(entries, extra)| Parsed::Ok { entries, extra }),
            // Not while the snapshot is ahead: the next write brings its runs back first.
            Parsed::Ok { .. } if self.ahead().is_empty() => {
                self.save_snapshot(&parsed);
                None
            }
            _ => None,
        };
        let state = Arc::new(FileState {
            parsed,
            text,
            kept,
            held,
        });
        // The snapshot may just have been written: its stamp after that.
        let stamps = (stamps.0, Self::stamp(self.snapshot_path())?);
        let mut cache = self.cache();
        // A Trust since the check above may have released the hold it found: the next read
        // judges the file again, or a stale hold would stay cached until the file changed
        // (Trust clears the cache, but this read could fill it after).
        if self.inner.trust.trusts() == trusts {
            *cache = Some((stamps, state.clone()));
        }
        Ok(state)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Option<(Stamps, Arc<FileState>)>> {
        self.inner.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The scheduler's bookkeeping (claims, results, evidence) under the lock: re-reads the
    /// file, hands `f` the entries, and writes the result if anything changed. `f`'s error
    /// leaves the file untouched. While the block is corrupted, `f` gets the last good
    /// routines and the result goes to the snapshot; the file is not touched.
    pub async fn update<R>(&self, f: impl FnOnce(&mut Vec<Entry>) -> Result<R, StoreError>) -> Result<R, StoreError> {
        self.change(Change::Bookkeeping, f).await
    }

    /// A change someone asked for (a routine tool, the editor): as [`Self::update`], but a
    /// corrupted block is repaired — the last good routines plus the change, written as a
    /// valid block, the broken file kept as `HEARTBEAT.md.corrupt` first.
    pub async fn edit<R>(&self, f: impl FnOnce(&mut Vec<Entry>) -> Result<R, StoreError>) -> Result<R, StoreError> {
        self.change(Change::Asked, f).await
    }

    async fn change<R>(
        &self,
        change: Change,
        f: impl FnOnce(&mut Vec<Entry>) -> Result<R, StoreError>,
    ) -> Result<R, StoreError> {
        let guard = self.inner.locks.acquire(&self.inner.lock_id).await?;
        let look = self.inner.trust.look();
        let text = self.read_text()?;
        if self.inner.trust.check(look, &self.path(), &text) {
            // Held: its routines are not in force, and writing it would make it Vigil's.
            drop(guard);
            return match change {
                Change::Bookkeeping => f(&mut Vec::new()),
                Change::Asked => Err(StoreError::Rejected(Refusal::new(trust::HELD_MESSAGE))),
            };
        }
        // `rewrite`: the file must be written even if `f` changes nothing.
        let (mut entries, extra, corrupted, rewrite) = match parse(&text) {
            Parsed::Corrupted(e) => {
                // No good copy to go on from: nothing to run, nothing to repair with.
                let (entries, extra) = self.last_good().map_err(|_| StoreError::Corrupted(e))?;
                (entries, extra, true, change == Change::Asked)
            }
            Parsed::Empty => (vec![], Map::new(), false, false),
            Parsed::Ok { mut entries, extra } => {
                // Fixed by hand while the snapshot was ahead: its runs come back first.
                let merged = self.bring_back_runs(&mut entries);
                (entries, extra, false, merged)
            }
        };
        let before = entries.clone();
        let result = f(&mut entries)?;
        if corrupted && change == Change::Bookkeeping {
            if entries != before {
                guard.ensure_held()?;
                self.keep_ahead(&before, &entries, &extra)?;
            }
            drop(guard);
            return Ok(result);
        }
        if entries != before || rewrite {
            let out = if corrupted {
                self.keep_corrupt(&text)?;
                repaired(&text, &entries, &extra)
            } else {
                render(&text, &entries, &extra)
            };
            guard.ensure_held()?;
            self.write(&out)?;
            self.inner.trust.wrote(look, &self.path(), &out);
            self.ahead().clear();
            let state = Arc::new(FileState {
                parsed: parse(&out),
                text: out,
                kept: None,
                held: false,
            });
            self.save_snapshot(&state.parsed);
            *self.cache() = Some((self.stamps()?, state));
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
        let look = self.inner.trust.look();
        let current = self.read_text()?;
        if self.inner.trust.check(look, &self.path(), &current) {
            return Err(StoreError::Rejected(Refusal::new(trust::HELD_MESSAGE)));
        }
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
            self.inner.trust.wrote(look, &self.path(), &out);
            *self.cache() = None;
        }
        drop(guard);
        Ok(split_checks(&out).map(|(c, _)| c).unwrap_or_default())
    }

    /// Replaces a corrupted block with the last good routines (the snapshot, with the runs
    /// made since), keeping the broken file as `HEARTBEAT.md.corrupt` first. The user asks for
    /// this (in the pane, or by asking the agent, whose `routine_restore` tool calls it); it
    /// never happens on its own. Returns how many routines came back.
    pub async fn restore_snapshot(&self) -> Result<usize, StoreError> {
        if !matches!(parse(&self.read_text()?), Parsed::Corrupted(_)) {
            return Err(StoreError::Rejected(Refusal::new(format!(
                "the task block in {HEARTBEAT_FILE} is not corrupted; there is nothing to restore"
            ))));
        }
        self.edit(|entries| Ok(entries.len())).await
    }

    /// The user's Trust of a held file: the file as it is now is trusted and its routines run.
    /// Under the lock, so no write of Vigil's interleaves.
    pub async fn trust_file(&self) -> Result<(), StoreError> {
        let guard = self.inner.locks.acquire(&self.inner.lock_id).await?;
        let look = self.inner.trust.look();
        let text = self.read_text()?;
        self.inner.trust.trust(look, &self.path(), &text);
        *self.cache() = None;
        drop(guard);
        Ok(())
    }

    /// Whether the file waits for the user's Trust (see [`trust`]).
    pub fn held(&self) -> bool {
        self.inner.trust.held()
    }

    /// Writes `.heartbeat_snapshot.json` after a good parse, when it changed.
    fn save_snapshot(&self, parsed: &Parsed) {
        let Parsed::Ok { entries, extra } = parsed else { return };
        if let Err(e) = self.write_snapshot(&block_json(entries, extra)) {
            tracing::warn!("could not write {SNAPSHOT_FILE}: {e}");
        }
    }

    /// Writes `json` as the snapshot, unless it holds that already.
    fn write_snapshot(&self, json: &str) -> std::io::Result<()> {
        let mut last = self.inner.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_deref() == Some(json) {
            return Ok(());
        }
        if std::fs::read_to_string(self.snapshot_path()).ok().as_deref() != Some(json) {
            write_atomic(&self.snapshot_path(), json.as_bytes())?;
        }
        *last = Some(json.to_string());
        Ok(())
    }
}

mod kept;
use kept::repaired;
pub mod trust;

#[cfg(test)]
mod tests;
