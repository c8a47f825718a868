//! The heartbeat's run lock (seed 003 §5: "心跳获取不到锁时跳过，不硬抢" — a heartbeat that
//! cannot take its lock skips, it does not force it): an advisory `flock` on
//! `sessions/heartbeat_session_<agent>.run.lock`, held for a whole run, so two runs never
//! overlap — in this process (a run asked for outside the wake loop) or in another Vigil
//! process on the same data folder (the app and `vigil-headless`), where both would
//! otherwise append to and cut back the same transcript.
//!
//! The session write locks ([`crate::session::lock`]) cannot serve: they are held for one
//! write each, and a run makes many. `flock` belongs to an open file description, so a second
//! open in the same process is refused too, and the kernel drops the lock of a process that
//! dies: a crash never leaves the heartbeat locked.
//!
//! Must never: wait for the lock (a run that cannot take it is skipped with reason `lock`
//! and retried by the wake loop).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

/// The lock file of `session` in the `sessions` folder.
pub fn path(sessions_dir: &Path, session: &str) -> PathBuf {
    sessions_dir.join(format!("{session}.run.lock"))
}

/// Held while a run lasts; dropping it releases the lock.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

/// Takes the lock without waiting: `Ok(None)` when another run holds it. An error (the folder
/// cannot be written) is the caller's to report; a run then goes ahead unlocked rather than
/// never.
pub fn try_take(sessions_dir: &Path, session: &str) -> std::io::Result<Option<RunLock>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path(sessions_dir, session))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(RunLock { _file: file })),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_taker_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = try_take(dir.path(), "heartbeat_session_main").unwrap();
        assert!(first.is_some());
        assert!(try_take(dir.path(), "heartbeat_session_main").unwrap().is_none());
        assert!(try_take(dir.path(), "heartbeat_session_other").unwrap().is_some());
        drop(first);
        assert!(try_take(dir.path(), "heartbeat_session_main").unwrap().is_some());
    }
}
