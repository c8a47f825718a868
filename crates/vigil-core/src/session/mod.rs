//! # session
//!
//! Owns everything a session keeps on disk, in `<data>/sessions/`:
//!
//! - `<id>.jsonl` — the transcript ([`transcript`]): one message per line, append-only.
//! - `<id>.meta.json` — title, type, revision and the mailbox ([`meta`]), rewritten whole by
//!   [`MetaStore::update_atomic`] only, with the previous good copy kept as `.bak`.
//! - `<id>.lock` — the session lock ([`lock`]) every write takes, across tasks and processes.
//! - `<id>.blobs/<sha256>.<ext>` — the session's images ([`blobs`]), written once each and
//!   named from the transcript by hash.
//!
//! - `<id>.updates.ndjson` — the background updates turns have read and acknowledged
//!   ([`archive`]), so the agent can still open one by its id.
//!
//! Every transcript line carries a stable message id ([`ids`]); lines written before ids
//! existed get one derived from their place and bytes.
//!
//! and [`drain`], which keeps a mailbox event with one turn between showing and acknowledging
//! it, and [`repair`], which makes a loaded history safe to send to a provider. The metadata
//! is [`meta`] (the store and its one write path) over `record` (what the file holds and its
//! bytes) and `mailbox` (a background result waiting), with `catalog` (list, create, delete,
//! rename) on top.
//!
//! Must never: write a session file without holding its lock; overwrite a file it could not
//! read without keeping a copy; drop a whole session because one part of it is bad.

pub mod archive;
pub mod blobs;
mod catalog;
pub mod drain;
pub mod ids;
pub mod lock;
mod mailbox;
pub mod meta;
mod parsed;
mod record;
pub mod repair;
pub mod transcript;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use lock::{LockOptions, SessionLockGuard, SessionLocks};
pub use mailbox::MailboxEvent;
pub use meta::{Listed, MetaLoaded, MetaStore, SessionMeta, SessionType};
pub use repair::repair_tool_chain;
pub use transcript::{Loaded, SessionStore, TranscriptObserver, Unsynced};

/// The user's conversation with Vigil. It always exists and cannot be deleted.
pub const PRIMARY_SESSION: &str = "main";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The id would escape the sessions folder. Recover: use letters, digits, `-`, `_`.
    #[error("\"{0}\" is not a valid session id (use letters, digits, '-' and '_')")]
    InvalidId(String),
    /// The disk refused a read or write. Recover: free space / fix permissions; nothing
    /// already saved is touched.
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another task or process holds the session and is neither dead nor over its maximum
    /// hold. Recover: try again shortly (a heartbeat skips its tick).
    #[error("session {id} is locked by {}; try again", describe_holder(.holder.as_ref()))]
    Locked {
        id: String,
        /// Who holds it, as its lock file says; `None` when the file has no readable record.
        holder: Option<LockHolder>,
        waited: Duration,
    },
    /// This writer held the lock past the maximum hold and another process reclaimed it; the
    /// change was not saved. Recover: redo the operation (it re-reads the latest state).
    #[error(
        "lost the lock on session {id} (held too long and reclaimed by another process); the change was not saved"
    )]
    LockLost { id: String },
    /// No such session. Recover: list sessions and pick an existing id.
    #[error("there is no session \"{0}\"")]
    NotFound(String),
    /// The primary session cannot be deleted. Recover: delete another session instead.
    #[error("the primary session \"{0}\" cannot be deleted")]
    Protected(String),
    /// A conversation needs a title. Recover: type one.
    #[error("a conversation needs a title")]
    InvalidTitle,
    /// The session is working on a turn. Recover: stop it or wait, then try again.
    #[error("conversation {0} is busy with a turn; stop it first")]
    Busy(String),
}

/// Who holds a lock, as recorded in its lock file. Here, beside [`SessionError::Locked`]
/// that names it, so the error does not reach into the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    pub pid: u32,
    /// Milliseconds since the Unix epoch.
    pub acquired_at_ms: i64,
}

pub(crate) fn describe_holder(holder: Option<&LockHolder>) -> String {
    match holder {
        Some(h) => format!("pid {} since {}", h.pid, hms_utc(h.acquired_at_ms)),
        None => "another process (its lock file names no holder)".to_string(),
    }
}

/// `HH:MM:SS UTC`; enough to tell "just now" from "an hour ago" without a time-zone crate.
pub(crate) fn hms_utc(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02} UTC", s / 3600, s / 60 % 60, s % 60)
}

pub(crate) fn io<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> SessionError + 'a {
    move |source| SessionError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Ids are file-name stems: no dots, no separators, so `<id>.jsonl` and `<id>.meta.json`
/// always name files inside the sessions folder and a listing can split names unambiguously.
pub(crate) fn validate_id(id: &str) -> Result<(), SessionError> {
    let valid =
        !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(SessionError::InvalidId(id.to_string()))
    }
}

/// `<dir>/<id><suffix>`, for an id already validated.
pub(crate) fn session_file(dir: &Path, id: &str, suffix: &str) -> PathBuf {
    dir.join(format!("{id}{suffix}"))
}

/// File-name suffixes, in one place so `delete` cannot miss one.
pub(crate) mod suffix {
    pub const TRANSCRIPT: &str = ".jsonl";
    pub const TORN: &str = ".jsonl.torn";
    pub const META: &str = ".meta.json";
    pub const META_BAK: &str = ".meta.json.bak";
    pub const META_BAK_TMP: &str = ".meta.json.bak.tmp";
    pub const META_CORRUPT: &str = ".meta.json.corrupt";
    pub const META_BAK_CORRUPT: &str = ".meta.json.bak.corrupt";
    pub const LOCK: &str = ".lock";
    /// The background updates turns have read ([`super::archive`]).
    pub const UPDATES: &str = ".updates.ndjson";
    /// A folder, not a file: the session's images.
    pub const BLOBS: &str = ".blobs";
}
