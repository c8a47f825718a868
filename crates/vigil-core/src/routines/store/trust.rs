//! # routines::store::trust
//!
//! Whether Vigil may act on `HEARTBEAT.md` as it is now. Every sandbox binds the file
//! read-only, but a bind lasts only while the path names the bound file: when another
//! program replaces it (an editor saving by rename, a delete and create), the kernel
//! detaches the bind in the sandboxes already running, and a command still running there
//! could write the new file — routines Vigil would record as the user's.
//!
//! The rule: a file whose identity (device, inode, birth time) or content differs from the
//! last one Vigil trusted is trusted only if no sandbox that bound another file had a live
//! process at any time since the trusted one was last seen in place (`sandbox::pins`; a
//! standing sandbox counts while it runs). Otherwise the file is *held*: none of its
//! routines run, its checklist is not given to the heartbeat, the routines pane says why, and
//! only the user's Trust releases it. Vigil's own writes are trusted (they are in place and
//! recorded here as they are made). A hand edit while no sandbox runs, or one in place (which
//! no sandbox can make while the bind holds), needs no confirmation.
//!
//! Owns: `.HEARTBEAT.md.trust.json` in the sessions folder (Vigil's data folder, which no
//! sandbox sees), written when a file is held and when the user trusts one: the held file's
//! identity and SHA-256, so a hold outlives a restart, and the one trusted. Between those,
//! the trusted file is followed in memory (at a start no sandbox of that run has lived yet,
//! so a file not held is trusted then).
//!
//! Must never: trust a file when in doubt (a record it cannot read means "held" once a file
//! was trusted); hold a file Vigil itself wrote.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::sandbox::pins::{self, FileId};

/// The record's file name, in the sessions folder.
pub const TRUST_FILE: &str = ".HEARTBEAT.md.trust.json";

/// What the routines pane says while the file is held.
pub const HELD_MESSAGE: &str =
    "HEARTBEAT.md was replaced while a sandboxed command was running; its routines wait for you: review the file, then Trust it.";

/// One file as Vigil saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    id: Option<FileId>,
    sha256: String,
}

impl Seen {
    fn of(id: Option<FileId>, text: &str) -> Self {
        Seen {
            id,
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    /// The last file Vigil trusted.
    trusted: Option<Seen>,
    /// The file held for the user's Trust, as last seen.
    held: Option<Seen>,
}

struct State {
    record: Record,
    /// When the trusted file was last seen in place (`pins::now`).
    seen_at: u64,
    /// How many times the user trusted the file since the store opened: a reader that
    /// judged the file before a Trust keeps what it found to itself.
    trusts: u64,
}

/// The task file's trust; one per store.
pub(super) struct Trust {
    /// The real workspace: the pins are kept by it.
    workspace: PathBuf,
    /// The workspace as the store and the heartbeat name it (the hold is told by it).
    named: PathBuf,
    record_path: PathBuf,
    /// `std` lock: never held across an await.
    state: Mutex<State>,
}

impl Trust {
    /// Loads the record from `dir` (the sessions folder). With none, the file found first
    /// is trusted (a new install, or one from before this rule).
    pub fn open(workspace: &Path, dir: &Path) -> Self {
        let record_path = dir.join(TRUST_FILE);
        let record = match std::fs::read(&record_path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                tracing::warn!(
                    "{} is unreadable ({e}): HEARTBEAT.md is held until trusted",
                    record_path.display()
                );
                Record {
                    trusted: Some(Seen::of(None, "")),
                    held: Some(Seen::of(None, "")),
                }
            }),
            Err(_) => Record::default(),
        };
        let trust = Trust {
            workspace: workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf()),
            named: workspace.to_path_buf(),
            record_path,
            state: Mutex::new(State {
                record,
                seen_at: pins::now(),
                trusts: 0,
            }),
        };
        let held = trust.lock().record.held.is_some();
        crate::workspace::heartbeat_file::set_held(&trust.named, held);
        trust
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A point on the pins' counter, taken before the file is read: every sandbox that ends
    /// after it is after it.
    pub fn look(&self) -> u64 {
        pins::now()
    }

    /// Whether the file at `path`, read after `at` as `text`, is held. Its identity is taken
    /// after the read: a file replaced between the two is judged as the newer one, never
    /// the text of a new file under the trusted file's identity.
    pub fn check(&self, at: u64, path: &Path, text: &str) -> bool {
        let id = pins::identity(path);
        let seen = Seen::of(id, text);
        let mut state = self.lock();
        if state.record.held.is_some() {
            if state.record.held.as_ref() != Some(&seen) {
                state.record.held = Some(seen);
                self.save(&state.record);
            }
            return true;
        }
        if id.is_none() {
            // No file: nothing to run. The trusted one stays the reference for the next.
            return false;
        }
        match &state.record.trusted {
            Some(t) if *t == seen => {}
            Some(_) if pins::other_ran_since(&self.workspace, id, state.seen_at) => {
                tracing::warn!(
                    "HEARTBEAT.md was replaced while a sandboxed command was running: its routines are held"
                );
                state.record.held = Some(seen);
                self.save(&state.record);
                crate::workspace::heartbeat_file::set_held(&self.named, true);
                return true;
            }
            // Kept in memory only: at a start no sandbox of this run has lived, so any file
            // not held is trusted then, and the record need not follow every edit.
            _ => state.record.trusted = Some(seen),
        }
        state.seen_at = at;
        false
    }

    /// The trusted file, unchanged since it was checked (same identity, size and times),
    /// was seen in place again at `at`.
    pub fn seen_again(&self, at: u64) {
        let mut state = self.lock();
        if state.record.held.is_none() {
            state.seen_at = state.seen_at.max(at);
        }
    }

    /// Vigil wrote `text` itself (in place, under the lock): that file is trusted.
    pub fn wrote(&self, at: u64, path: &Path, text: &str) {
        let seen = Seen::of(pins::identity(path), text);
        let mut state = self.lock();
        if state.record.held.is_none() {
            state.record.trusted = Some(seen);
        }
        state.seen_at = state.seen_at.max(at);
    }

    /// The user's Trust: the file as it is now (`text`) is trusted, and the hold released.
    pub fn trust(&self, at: u64, path: &Path, text: &str) {
        let id = pins::identity(path);
        let mut state = self.lock();
        state.record = Record {
            trusted: Some(Seen::of(id, text)),
            held: None,
        };
        state.seen_at = at;
        state.trusts += 1;
        self.save(&state.record);
        crate::workspace::heartbeat_file::set_held(&self.named, false);
    }

    pub fn held(&self) -> bool {
        self.lock().record.held.is_some()
    }

    /// How many Trusts so far (see `State::trusts`).
    pub fn trusts(&self) -> u64 {
        self.lock().trusts
    }

    fn save(&self, record: &Record) {
        let json = serde_json::to_vec_pretty(record).unwrap_or_default();
        if let Err(e) = crate::durable::write_atomic(&self.record_path, &json) {
            tracing::warn!("could not write {}: {e}", self.record_path.display());
        }
    }
}
