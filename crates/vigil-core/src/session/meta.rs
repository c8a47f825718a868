//! # session::meta
//!
//! Owns session metadata: `sessions/<id>.meta.json` holds a [`SessionMeta`] (title, type,
//! revision, the mailbox of background updates) inside a checksummed envelope:
//!
//! ```text
//! {"checksum":"sha256:<hex of the exact bytes of meta>","meta":{…}}
//! ```
//!
//! There is one write path, [`MetaStore::update_atomic`]: under the session lock it re-reads
//! the file, runs the caller's mutator, bumps `revision` and `updated_at`, and commits with
//! [`crate::durable::stage`] (temp file in the same folder, fsync, rename, fsync the folder).
//! The file it replaces, if it was good, stays as `<id>.meta.json.bak` (a hard link, so no
//! copy).
//! A reader that finds the main file unparsable or failing its checksum falls back to the
//! backup and says so; if both are bad it fails naming both and leaves them untouched.
//!
//! Beside it: the record and its checksummed bytes ([`super::record`]), the mailbox's event
//! ([`super::mailbox`]), listing / creating / deleting / renaming (`catalog`), and showing
//! and acknowledging the mailbox ([`super::drain`]); each of them builds on this file, and
//! this file on none of them.
//!
//! Must never: write the meta file by any other path; write without the session lock;
//! overwrite the only good copy; let `revision` go back.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use vigil_protocol::{Message, Role};

use super::lock::SessionLockGuard;
pub use super::mailbox::MailboxEvent;
pub(crate) use super::record::type_from_id;
use super::record::{encode, read_one, temp_prefix, ReadOne};
pub use super::record::{SessionMeta, SessionType};
use super::{io, session_file, suffix, validate_id, SessionError, SessionStore, PRIMARY_SESSION};
use crate::clock::Clock;
use crate::durable;

/// Metadata as loaded, with what had to be worked around.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaLoaded {
    pub meta: SessionMeta,
    /// E.g. "fell back to the backup"; for the log and the UI.
    pub warnings: Vec<String>,
}

/// All sessions, newest first, and the ones that could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listed {
    pub sessions: Vec<SessionMeta>,
    pub warnings: Vec<String>,
}

/// The metadata store of one sessions folder; clones share locks.
#[derive(Clone)]
pub struct MetaStore {
    pub(super) transcripts: SessionStore,
    /// Stamps `created_at` / `updated_at`.
    pub(super) clock: Arc<dyn Clock>,
    /// Sessions whose leftover temp files this store has removed. Once per process is
    /// enough: they appear only when a process dies in the middle of a commit. `std` lock:
    /// never held across an await.
    pub(super) swept: Arc<Mutex<HashSet<String>>>,
    /// Mailbox traffic since start, for the health check (seed 003 §12 Phase 2:
    /// `mailbox_deposit_count`, `mailbox_drain_count`).
    pub(super) mailbox_counts: Arc<MailboxCounts>,
    /// Names this store (and its clones) in drain claims: unique per open, so a claim left
    /// by another store in this same process is told apart from this one's.
    pub(super) instance: Arc<str>,
}

#[derive(Default)]
pub(super) struct MailboxCounts {
    pub(super) deposited: AtomicU64,
    pub(super) drained: AtomicU64,
}

/// The state of the main file as read under the lock; decides what a commit does with it.
pub(super) enum MainFile {
    Good,
    Missing,
    /// Unreadable: moved to `.corrupt` at the next commit, never made the backup.
    Bad,
}

/// The latest readable metadata of a session.
struct Current {
    meta: Option<SessionMeta>,
    main: MainFile,
    warnings: Vec<String>,
    /// The revision salvaged from an unreadable main file, so a fallback to an older backup
    /// still moves `revision` forward.
    revision_floor: u64,
    /// The main file and its backup were both there and neither is readable: the metadata is
    /// rebuilt from the transcript (see [`MetaStore::adopt`]).
    unreadable: bool,
}

impl MetaStore {
    /// Opens `<data_dir>/sessions` with default lock options.
    pub fn open(data_dir: &Path, clock: Arc<dyn Clock>) -> Result<Self, SessionError> {
        let transcripts = SessionStore::open_with(data_dir, clock.clone(), super::LockOptions::default())?;
        Ok(Self::new(transcripts, clock))
    }

    /// Shares the transcript store's folder and locks.
    pub fn new(transcripts: SessionStore, clock: Arc<dyn Clock>) -> Self {
        Self {
            transcripts,
            clock,
            swept: Default::default(),
            mailbox_counts: Default::default(),
            instance: uuid::Uuid::new_v4().to_string().into(),
        }
    }

    pub(super) fn instance(&self) -> &str {
        &self.instance
    }

    pub(super) fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Updates deposited (a repeated `event_id` is not counted twice) and drained since start.
    pub fn mailbox_counts(&self) -> (u64, u64) {
        let c = &self.mailbox_counts;
        (c.deposited.load(Ordering::Relaxed), c.drained.load(Ordering::Relaxed))
    }

    pub fn transcripts(&self) -> &SessionStore {
        &self.transcripts
    }

    pub(super) fn file(&self, id: &str, suffix: &str) -> PathBuf {
        session_file(self.transcripts.dir(), id, suffix)
    }

    /// Loads a session's metadata. A session with a transcript but no metadata (made before
    /// metadata existed) gets it now, titled after its first user message.
    pub fn load(&self, id: &str) -> Result<MetaLoaded, SessionError> {
        validate_id(id)?;
        let current = self.read_current(id)?;
        if let Some(meta) = current.meta {
            return Ok(MetaLoaded {
                meta,
                warnings: current.warnings,
            });
        }
        if !current.unreadable && id != PRIMARY_SESSION && !self.transcripts.exists(id)? {
            return Err(SessionError::NotFound(id.to_string()));
        }
        let guard = self.transcripts.locks().acquire_blocking(id)?;
        let current = self.read_current(id)?;
        let meta = match current.meta {
            Some(meta) => meta,
            None => self.adopt(&guard, id, &current)?,
        };
        Ok(MetaLoaded {
            meta,
            warnings: current.warnings,
        })
    }

    /// The one write path: under the session lock, re-read, mutate, bump `revision` and
    /// `updated_at`, commit atomically. Returns the new metadata and the mutator's result.
    /// The mutator must not touch this session's files (it runs under the lock); it cannot
    /// change `id`, `revision` or `updated_at`.
    pub fn update_atomic<R>(
        &self,
        id: &str,
        mutator: impl FnOnce(&mut SessionMeta) -> R,
    ) -> Result<(SessionMeta, R), SessionError> {
        let guard = self.transcripts.locks().acquire_blocking(id)?;
        self.update_held(&guard, id, mutator)
    }

    /// [`Self::update_atomic`] that waits for the lock without blocking the worker. The
    /// commit itself (a few fsyncs) runs inline, like a transcript append.
    pub async fn update_atomic_async<R>(
        &self,
        id: &str,
        mutator: impl FnOnce(&mut SessionMeta) -> R,
    ) -> Result<(SessionMeta, R), SessionError> {
        let guard = self.transcripts.locks().acquire(id).await?;
        self.update_held(&guard, id, mutator)
    }

    /// [`Self::update_atomic_async`] that sets `updated_at` to `updated_at` instead of now:
    /// a heartbeat with nothing to report must not move its session in "recently active"
    /// (seed 002 §7.1). `revision` still moves forward.
    pub async fn update_keeping_time<R>(
        &self,
        id: &str,
        updated_at: i64,
        mutator: impl FnOnce(&mut SessionMeta) -> R,
    ) -> Result<(SessionMeta, R), SessionError> {
        let guard = self.transcripts.locks().acquire(id).await?;
        self.update_held_stamped(&guard, id, mutator, Some(updated_at))
    }

    /// Puts a background update into a session's mailbox (seed 003 §4.5 `deposit`). Reads
    /// nothing of the target but its metadata; idempotent per `event_id`.
    pub async fn deposit(&self, target: &str, event: MailboxEvent) -> Result<SessionMeta, SessionError> {
        let (meta, added) = self
            .update_atomic_async(target, move |m| {
                let new = !m.mailbox.iter().any(|e| e.event_id == event.event_id);
                if new {
                    m.mailbox.push(event);
                }
                new
            })
            .await?;
        if added {
            self.mailbox_counts.deposited.fetch_add(1, Ordering::Relaxed);
        }
        Ok(meta)
    }

    /// Removes `.<id>.meta.json.XXXXXX` files: temp files of commits whose process died
    /// between naming the temp file and renaming it. The caller holds the session lock, so
    /// no live commit owns them.
    pub(super) fn remove_temp_files(&self, id: &str) {
        let temp_prefix = format!(".{id}{}.", suffix::META);
        let Ok(entries) = fs::read_dir(self.transcripts.dir()) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&temp_prefix) {
                let _ = fs::remove_file(entry.path());
            }
        }
    }

    pub(super) fn update_held<R>(
        &self,
        guard: &SessionLockGuard,
        id: &str,
        mutator: impl FnOnce(&mut SessionMeta) -> R,
    ) -> Result<(SessionMeta, R), SessionError> {
        self.update_held_stamped(guard, id, mutator, None)
    }

    pub(super) fn update_held_stamped<R>(
        &self,
        guard: &SessionLockGuard,
        id: &str,
        mutator: impl FnOnce(&mut SessionMeta) -> R,
        updated_at: Option<i64>,
    ) -> Result<(SessionMeta, R), SessionError> {
        let first_visit = self
            .swept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string());
        if first_visit {
            self.remove_temp_files(id);
        }
        let current = self.read_current(id)?;
        let (base, main) = match current.meta {
            Some(meta) => (meta, current.main),
            None => (self.adopt(guard, id, &current)?, MainFile::Good),
        };
        let mut next = base.clone();
        let result = mutator(&mut next);
        next.id = base.id.clone();
        next.revision = base.revision.max(current.revision_floor) + 1;
        next.updated_at = updated_at.unwrap_or_else(|| self.clock.now_ms());
        self.commit(guard, id, &main, &next)?;
        Ok((next, result))
    }

    /// Metadata for a session that has a transcript but no metadata yet (or the primary
    /// session, which always exists), committed as revision 1. Also for one whose metadata
    /// and backup are both unreadable (seed 003 §10.3: start the metadata afresh, with a
    /// warning): the messages are in the transcript, so only the title, the unread count and
    /// undelivered background updates are lost, and both bad files are kept beside it
    /// (`.meta.json.corrupt`, `.meta.json.bak.corrupt`) for a by-hand rescue.
    fn adopt(&self, guard: &SessionLockGuard, id: &str, current: &Current) -> Result<SessionMeta, SessionError> {
        if current.unreadable {
            let bak = self.file(id, suffix::META_BAK);
            let kept = self.file(id, suffix::META_BAK_CORRUPT);
            match durable::rename(&bak, &kept) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io("set aside", &bak)(e)),
                _ => {}
            }
        } else if id != PRIMARY_SESSION && !self.transcripts.exists(id)? {
            // Taking the lock made a lock file; do not leave it behind for a session that
            // does not exist.
            guard.remove_lock_file()?;
            return Err(SessionError::NotFound(id.to_string()));
        }
        let loaded = self.transcripts.load_held(guard)?;
        let now = self.clock.now_ms();
        let meta = SessionMeta {
            id: id.to_string(),
            title: title_from(&loaded.messages),
            session_type: type_from_id(id),
            revision: current.revision_floor + 1,
            created_at: loaded.messages.first().map_or(now, |m| m.ts),
            updated_at: now,
            mailbox: vec![],
            continuations: 0,
            continuation_limit: None,
            stopped_at_limit: false,
            extra: Default::default(),
        };
        self.commit(guard, id, &current.main, &meta)?;
        Ok(meta)
    }

    fn read_current(&self, id: &str) -> Result<Current, SessionError> {
        let main_path = self.file(id, suffix::META);
        let bak_path = self.file(id, suffix::META_BAK);
        let main = read_one(&main_path, id)?;
        if let ReadOne::Good(meta) = main {
            return Ok(Current {
                meta: Some(meta),
                main: MainFile::Good,
                warnings: vec![],
                revision_floor: 0,
                unreadable: false,
            });
        }
        let bak = read_one(&bak_path, id)?;
        let (main_state, main_problem, revision_floor) = match main {
            ReadOne::Missing => (MainFile::Missing, "missing".to_string(), 0),
            ReadOne::Bad { problem, revision_hint } => (MainFile::Bad, problem, revision_hint.unwrap_or(0)),
            ReadOne::Good(_) => unreachable!("returned above"),
        };
        match (bak, &main_state) {
            (ReadOne::Missing, MainFile::Missing) => Ok(Current {
                meta: None,
                main: MainFile::Missing,
                warnings: vec![],
                revision_floor: 0,
                unreadable: false,
            }),
            (ReadOne::Good(meta), _) => {
                let warning = format!(
                    "{} is {main_problem}; using the backup {} (revision {}){}",
                    main_path.display(),
                    bak_path.display(),
                    meta.revision,
                    if matches!(main_state, MainFile::Bad) {
                        "; the bad file will be kept as .corrupt at the next update"
                    } else {
                        ""
                    }
                );
                tracing::warn!("{warning}");
                Ok(Current {
                    meta: Some(meta),
                    main: main_state,
                    warnings: vec![warning],
                    revision_floor,
                    unreadable: false,
                })
            }
            (bak, _) => {
                let bak_problem = match bak {
                    ReadOne::Bad { problem, .. } => problem,
                    _ => "missing".to_string(),
                };
                let warning = format!(
                    "{} is {main_problem} and its backup {} is {bak_problem}: the conversation's details (title, unread updates) were rebuilt from its transcript, which is intact; the unreadable files are kept with a .corrupt suffix",
                    main_path.display(),
                    bak_path.display(),
                );
                tracing::warn!("{warning}");
                Ok(Current {
                    meta: None,
                    main: main_state,
                    warnings: vec![warning],
                    revision_floor,
                    unreadable: true,
                })
            }
        }
    }

    /// Writes `meta` as the new main file. A good old main becomes the backup; a bad one is
    /// kept as `.corrupt` (the backup, our base, stays). Every step before the final rename
    /// leaves a readable state behind if we crash there.
    pub(super) fn commit(
        &self,
        guard: &SessionLockGuard,
        id: &str,
        main: &MainFile,
        meta: &SessionMeta,
    ) -> Result<(), SessionError> {
        let main_path = self.file(id, suffix::META);
        let bytes = encode(meta).map_err(io("encode", &main_path))?;
        let staged = durable::stage(&main_path, &bytes, &temp_prefix(&main_path))
            .map_err(io("write a temporary file for", &main_path))?;
        match main {
            MainFile::Good => self.rotate_backup(id, &main_path)?,
            MainFile::Bad => {
                let corrupt = self.file(id, suffix::META_CORRUPT);
                durable::rename(&main_path, &corrupt).map_err(io("set aside", &main_path))?;
            }
            MainFile::Missing => {}
        }
        guard.ensure_held()?;
        staged.commit().map(|_| ()).map_err(io("replace", &main_path))
    }

    /// `<id>.meta.json.bak` := the current main file, replaced atomically. A hard link costs
    /// no copy and no extra fsync (the data is already durable); the commit's folder fsync
    /// makes the new name durable too. Falls back to an atomic copy where links fail.
    pub(super) fn rotate_backup(&self, id: &str, main_path: &Path) -> Result<(), SessionError> {
        let bak = self.file(id, suffix::META_BAK);
        let tmp = self.file(id, suffix::META_BAK_TMP);
        match fs::remove_file(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("remove", &tmp)(e)),
        }
        if durable::hard_link(main_path, &tmp).is_ok() {
            return durable::rename(&tmp, &bak).map_err(io("replace", &bak));
        }
        let old = fs::read(main_path).map_err(io("read", main_path))?;
        let staged = durable::stage(&bak, &old, &temp_prefix(&bak)).map_err(io("write a temporary file for", &bak))?;
        staged.commit().map(|_| ()).map_err(io("replace", &bak))
    }
}

/// The first line of the first user message, shortened; "Conversation" when there is none.
fn title_from(messages: &[Message]) -> String {
    const MAX_CHARS: usize = 60;
    let text = messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.text())
        .unwrap_or_default();
    let line = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .find(|l| !l.is_empty());
    match line {
        None => "Conversation".to_string(),
        Some(l) if l.chars().count() <= MAX_CHARS => l,
        Some(l) => {
            let mut short: String = l.chars().take(MAX_CHARS - 1).collect();
            short.push('…');
            short
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::record::decode;

    fn meta() -> SessionMeta {
        SessionMeta {
            id: "main".into(),
            title: "Hello".into(),
            session_type: SessionType::Primary,
            revision: 3,
            created_at: 1,
            updated_at: 2,
            mailbox: vec![],
            continuations: 0,
            continuation_limit: None,
            stopped_at_limit: false,
            extra: Default::default(),
        }
    }

    #[test]
    fn envelope_round_trips_and_detects_a_changed_byte() {
        let bytes = encode(&meta()).unwrap();
        assert!(bytes.starts_with(b"{\"checksum\":\"sha256:"));
        assert!(matches!(decode(&bytes, "main"), ReadOne::Good(m) if m == meta()));
        let tampered = String::from_utf8(bytes).unwrap().replace("\"Hello\"", "\"Hellp\"");
        match decode(tampered.as_bytes(), "main") {
            ReadOne::Bad { problem, revision_hint } => {
                assert!(problem.contains("checksum mismatch"), "{problem}");
                assert_eq!(revision_hint, Some(3));
            }
            _ => panic!("tampering not detected"),
        }
        assert!(matches!(decode(b"{\"checksum\":", "main"), ReadOne::Bad { .. }));
        assert!(matches!(
            decode(&encode(&meta()).unwrap(), "other"),
            ReadOne::Bad { .. }
        ));
    }

    #[test]
    fn unknown_fields_survive_a_rewrite() {
        let json = r#"{"id":"main","title":"t","session_type":"job","revision":1,"created_at":1,"updated_at":1,"future":{"x":1}}"#;
        let m: SessionMeta = serde_json::from_str(json).unwrap();
        assert!(m.mailbox.is_empty());
        assert_eq!(m.extra["future"], serde_json::json!({"x": 1}));
        assert!(serde_json::to_string(&m).unwrap().contains(r#""future":{"x":1}"#));
    }

    #[test]
    fn titles_come_from_the_first_user_line() {
        assert_eq!(title_from(&[]), "Conversation");
        let msgs = [Message::user_text("\n  plan   my\ttrip \nsecond line", 1)];
        assert_eq!(title_from(&msgs), "plan my trip");
        let long = "x".repeat(100);
        let t = title_from(&[Message::user_text(long, 1)]);
        assert_eq!(t.chars().count(), 60);
        assert!(t.ends_with('…'));
        assert_eq!(type_from_id("job_abc"), SessionType::Job);
        assert_eq!(type_from_id("heartbeat"), SessionType::Heartbeat);
        assert_eq!(type_from_id("main"), SessionType::Primary);
    }
}
