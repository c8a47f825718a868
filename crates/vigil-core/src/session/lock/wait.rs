//! # session::lock::wait
//!
//! Owns the wait on the file lock shared by the sync and async paths: each step either
//! finishes with the lock, says how long to sleep, reclaims a stale holder's lock once, or
//! fails with [`SessionError::Locked`].
//!
//! Must never: sleep itself (the caller sleeps, with `tokio::time` or the thread); reclaim
//! twice in one wait, or from a live holder within its maximum hold.

use std::fs::{self, File};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::record::{read_record, Attempt};
use super::SessionLocks;
use crate::session::{io, session_file, suffix, SessionError};

/// The file-lock wait shared by the sync and async paths: each step either finishes or
/// says how long to sleep.
pub(super) struct Waiting<'a> {
    pub(super) locks: &'a SessionLocks,
    pub(super) id: &'a str,
    pub(super) path: PathBuf,
    pub(super) started: Instant,
    pub(super) deadline: Instant,
    pub(super) reclaimed: bool,
    /// The lock was taken when we first tried (in this process or another).
    pub(super) contended: bool,
}

pub(super) enum Step {
    Done(File),
    Sleep(Duration),
}

impl Waiting<'_> {
    pub(super) fn step(&mut self) -> Result<Step, SessionError> {
        loop {
            match self.locks.attempt(&self.path)? {
                Attempt::Got(file) => return Ok(Step::Done(file)),
                Attempt::Vanished => continue,
                Attempt::Busy => self.contended = true,
            }
            let now = Instant::now();
            if now < self.deadline {
                return Ok(Step::Sleep(self.locks.inner.opts.poll.min(self.deadline - now)));
            }
            let holder = read_record(&self.path);
            let stale = holder.and_then(|h| self.locks.stale_reason(&h));
            match (stale, self.reclaimed) {
                (Some(reason), false) => {
                    tracing::warn!("session {}: reclaiming its lock: {reason}", self.id);
                    match fs::remove_file(&self.path) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(e) => return Err(io("remove the stale lock", &self.path)(e)),
                    }
                    // One more full wait, in case another waiter wins the fresh file.
                    self.reclaimed = true;
                    self.locks.inner.counters.reclaimed.fetch_add(1, Ordering::Relaxed);
                    self.deadline = Instant::now() + self.locks.inner.opts.timeout;
                }
                _ => {
                    self.locks.inner.counters.timeouts.fetch_add(1, Ordering::Relaxed);
                    return Err(SessionError::Locked {
                        id: self.id.to_string(),
                        holder,
                        waited: self.started.elapsed(),
                    });
                }
            }
        }
    }
}

impl SessionLocks {
    pub(super) fn waiting<'a>(&'a self, id: &'a str, started: Instant, contended: bool) -> Waiting<'a> {
        Waiting {
            locks: self,
            id,
            path: session_file(&self.inner.dir, id, suffix::LOCK),
            started,
            deadline: started + self.inner.opts.timeout,
            reclaimed: false,
            contended,
        }
    }
}
