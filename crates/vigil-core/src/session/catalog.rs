//! # catalog — the sessions as a list: listing, creating, deleting, renaming
//!
//! Each change goes through the metadata's one write path under the session lock
//! ([`super::meta`]); a delete removes every file of the session ([`super::suffix`]).
//!
//! Must never: delete the primary session; list a session twice or drop one because a
//! neighbour is unreadable.

use std::fs;

use super::meta::{Listed, MainFile, MetaStore, SessionMeta, SessionType};
use super::{io, suffix, validate_id, SessionError, PRIMARY_SESSION};

impl MetaStore {
    /// Every session (with metadata or a transcript), most recently updated first.
    /// Unreadable ones are skipped with a warning.
    pub fn list(&self) -> Result<Listed, SessionError> {
        let dir = self.transcripts.dir();
        let mut ids = std::collections::BTreeSet::new();
        for entry in fs::read_dir(dir).map_err(io("list", dir))? {
            let name = entry.map_err(io("list", dir))?.file_name();
            let name = name.to_string_lossy();
            let id = name
                .strip_suffix(suffix::META)
                .or_else(|| name.strip_suffix(suffix::TRANSCRIPT));
            if let Some(id) = id.filter(|id| validate_id(id).is_ok()) {
                ids.insert(id.to_string());
            }
        }
        let mut listed = Listed::default();
        for id in ids {
            match self.load(&id) {
                Ok(l) => {
                    listed.sessions.push(l.meta);
                    listed.warnings.extend(l.warnings);
                }
                Err(e) => {
                    let w = format!("skipped session {id}: {e}");
                    tracing::warn!("{w}");
                    listed.warnings.push(w);
                }
            }
        }
        listed
            .sessions
            .sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
        Ok(listed)
    }

    /// A new, empty session with a short unique id like `job_3f9a2c71be04`.
    pub fn create(&self, title: &str, session_type: SessionType) -> Result<SessionMeta, SessionError> {
        let prefix = match session_type {
            SessionType::Primary => "chat",
            SessionType::Heartbeat => "heartbeat",
            SessionType::Job => "job",
        };
        loop {
            let uuid = uuid::Uuid::new_v4().simple().to_string();
            let id = format!("{prefix}_{}", &uuid[..12]);
            let guard = self.transcripts.locks().acquire_blocking(&id)?;
            if self.transcripts.exists(&id)? || self.file(&id, suffix::META).exists() {
                continue;
            }
            let now = self.clock.now_ms();
            let meta = SessionMeta {
                id: id.clone(),
                title: title.to_string(),
                session_type,
                revision: 1,
                created_at: now,
                updated_at: now,
                mailbox: vec![],
                continuations: 0,
                continuation_limit: None,
                stopped_at_limit: false,
                extra: Default::default(),
            };
            self.commit(&guard, &id, &MainFile::Missing, &meta)?;
            return Ok(meta);
        }
    }

    /// Removes a session's transcript, metadata, backups and lock file. The primary session
    /// cannot be deleted.
    pub fn delete(&self, id: &str) -> Result<(), SessionError> {
        validate_id(id)?;
        if id == PRIMARY_SESSION {
            return Err(SessionError::Protected(id.to_string()));
        }
        let guard = self.transcripts.locks().acquire_blocking(id)?;
        let mut existed = false;
        for sfx in [
            suffix::TRANSCRIPT,
            suffix::TORN,
            suffix::META,
            suffix::META_BAK,
            suffix::META_BAK_TMP,
            suffix::META_CORRUPT,
            suffix::UPDATES,
        ] {
            let path = self.file(id, sfx);
            match fs::remove_file(&path) {
                Ok(()) => existed |= sfx == suffix::TRANSCRIPT || sfx == suffix::META,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("remove", &path)(e)),
            }
        }
        self.remove_temp_files(id);
        self.transcripts.forget_parsed(id);
        let blobs = self.file(id, suffix::BLOBS);
        match fs::remove_dir_all(&blobs) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io("remove", &blobs)(e)),
        }
        guard.remove_lock_file()?;
        if existed {
            Ok(())
        } else {
            Err(SessionError::NotFound(id.to_string()))
        }
    }

    /// Sets the title.
    pub fn rename(&self, id: &str, title: &str) -> Result<SessionMeta, SessionError> {
        let title = title.to_string();
        self.update_atomic(id, move |m| m.title = title).map(|(m, ())| m)
    }
}
