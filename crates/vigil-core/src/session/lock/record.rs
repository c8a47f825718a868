//! # session::lock::record
//!
//! Owns the lock file itself: one non-blocking attempt to lock it and write the holder's
//! record, reading that record back, whether a path still names the file a guard locked, and
//! whether a recorded holder's process still lives.
//!
//! Must never: truncate the record to zero before writing (ext4 would flush it on close,
//! about 1.3 ms a lock); fsync it (the kernel drops a dead holder's lock anyway).

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use super::SessionLocks;
use crate::session::{io, LockHolder, SessionError};

/// What one attempt on the file lock found.
pub(super) enum Attempt {
    Got(File),
    /// Someone holds it.
    Busy,
    /// We locked a file that had been unlinked meanwhile; try again at once.
    Vanished,
}

impl SessionLocks {
    pub(super) fn attempt(&self, path: &Path) -> Result<Attempt, SessionError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io("open", path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(Attempt::Busy),
            Err(TryLockError::Error(e)) => return Err(io("lock", path)(e)),
        }
        if !names_same_file(&file, path) {
            return Ok(Attempt::Vanished);
        }
        let record = LockHolder {
            pid: std::process::id(),
            acquired_at_ms: self.inner.clock.now_ms(),
        };
        // Not fsync'd: the record is for diagnosis and staleness, and after a crash the
        // kernel has already dropped the lock it describes. Written over the last record,
        // then cut to its own length: truncating to zero first made ext4 flush the file as
        // it was closed (auto_da_alloc), about 1.3 ms for every lock taken.
        let bytes = serde_json::to_vec(&record).unwrap_or_default();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.write_all(&bytes))
            .and_then(|_| file.set_len(bytes.len() as u64))
            .map_err(io("write the lock record", path))?;
        Ok(Attempt::Got(file))
    }
}

pub(super) fn read_record(path: &Path) -> Option<LockHolder> {
    // On Windows a locked range cannot be read, so this is `None` there and only Unix
    // reclaims; a Windows holder that dies still releases its lock through the kernel.
    let bytes = fs::read(path).ok()?;
    // The first record: a longer one it replaced may still trail it for an instant.
    serde_json::Deserializer::from_slice(&bytes)
        .into_iter::<LockHolder>()
        .next()?
        .ok()
}

/// Whether `path` still names the file `file` has open.
#[cfg(unix)]
pub(super) fn names_same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Windows refuses to delete a file another handle has open without share-delete, which
/// the lock layer never sees in practice; only check that the path still exists.
#[cfg(not(unix))]
pub(super) fn names_same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

#[cfg(unix)]
pub(crate) fn pid_alive(pid: u32) -> bool {
    use rustix::process::{test_kill_process, Pid};
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    match test_kill_process(pid) {
        Ok(()) => true,
        // It exists but belongs to someone else.
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

/// Without a cheap liveness probe, only age makes a record stale.
#[cfg(not(unix))]
pub(crate) fn pid_alive(_pid: u32) -> bool {
    true
}
