//! # session::lock
//!
//! Owns the per-session write lock, in two layers:
//!
//! 1. an in-process `tokio::sync::Mutex` per session id, so tasks of one process queue
//!    fairly without polling the file system;
//! 2. an advisory `flock` on `sessions/<id>.lock` (`std::fs::File::try_lock`), so processes
//!    exclude each other. The kernel drops the lock of a process that dies, at once, so a
//!    crashed holder never blocks anyone.
//!
//! The holder writes `{"pid":…,"acquired_at_ms":…}` into the lock file. A waiter that has not
//! got the lock within [`LockOptions::timeout`] reads that record: if the pid is gone (a lock
//! leaked to a surviving child, a file system that keeps locks) or the record is older than
//! [`LockOptions::max_hold`] (a hung holder), it reclaims the lock by unlinking the file and
//! locking a fresh one; otherwise it fails with [`SessionError::Locked`].
//!
//! Reclaiming is the one way two writers can overlap, so it is fenced: a lock only counts
//! while the path still names the file the guard locked, and writers call
//! [`SessionLockGuard::ensure_held`] right before they commit. This replaces seed 004's
//! in-holder watchdog (which would have to yank a lock from a task mid-write).
//!
//! Layout: this file holds the two layers and the guard; `record.rs` the lock file itself
//! (one attempt on it, the holder's record, whether the path still names it, whether the
//! holder lives); `wait.rs` the wait that ends in the lock, a reclaim or
//! [`SessionError::Locked`].
//!
//! Must never: reclaim from a live holder within its maximum hold; block a tokio worker
//! while waiting ([`SessionLocks::acquire`] sleeps with `tokio::time`).

mod record;
mod wait;

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OwnedMutexGuard;

use self::record::{names_same_file, read_record};
use self::wait::{Step, Waiting};
use super::{hms_utc, io, session_file, suffix, validate_id, LockHolder, SessionError};
use crate::clock::{Clock, SystemClock};

pub(crate) use self::record::pid_alive;

/// How long to wait and when a holder counts as stuck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockOptions {
    /// How long to wait before looking at the holder (and then failing or reclaiming).
    pub timeout: Duration,
    /// A holder older than this is presumed hung and may be reclaimed (seed 004 §1: a
    /// lock is held 5 minutes at most). A holder whose process is gone is reclaimed after the
    /// wait whatever its age; a live one holds the lock for one write, never a model call.
    pub max_hold: Duration,
    /// Sleep between attempts on the file lock.
    pub poll: Duration,
}

impl Default for LockOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            max_hold: Duration::from_secs(5 * 60),
            poll: Duration::from_millis(20),
        }
    }
}

/// The locks of one sessions folder. Clones share the in-process layer; two separate
/// instances (or processes) still exclude each other through the file layer, because
/// `flock` locks belong to open file descriptions, not to processes.
#[derive(Clone)]
pub struct SessionLocks {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    opts: LockOptions,
    /// Stamps lock records and judges their age. Records are read by other processes, so
    /// production passes the system clock.
    clock: Arc<dyn Clock>,
    /// Session id → its in-process mutex; an entry is removed when nobody holds or waits
    /// for it. `std` lock: held only to look up or drop an entry, never across an await.
    local: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    counters: Counters,
}

/// Lock contention since start, for the health check (seed 003 §12 Phase 2: `lock_wait_ms`,
/// `lock_timeout_count`). Relaxed atomics: each is read on its own.
#[derive(Default)]
struct Counters {
    held: AtomicU32,
    acquired: AtomicU64,
    waited: AtomicU64,
    wait_ms_total: AtomicU64,
    wait_ms_max: AtomicU64,
    timeouts: AtomicU64,
    reclaimed: AtomicU64,
}

impl std::fmt::Debug for SessionLocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLocks")
            .field("dir", &self.inner.dir)
            .field("opts", &self.inner.opts)
            .finish()
    }
}

/// A held session lock; dropping it releases both layers.
pub struct SessionLockGuard {
    id: String,
    path: PathBuf,
    /// Fields are `Option` so `drop` can release the file lock before the in-process one.
    file: Option<File>,
    local: Option<OwnedMutexGuard<()>>,
    locks: SessionLocks,
    acquired: Instant,
}

impl std::fmt::Debug for SessionLockGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLockGuard").field("id", &self.id).finish()
    }
}

impl SessionLocks {
    pub fn new(sessions_dir: &Path, opts: LockOptions, clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                dir: sessions_dir.to_path_buf(),
                opts,
                clock,
                local: Mutex::new(HashMap::new()),
                counters: Counters::default(),
            }),
        }
    }

    /// Default options and the system clock.
    pub fn with_defaults(sessions_dir: &Path) -> Self {
        Self::new(sessions_dir, LockOptions::default(), Arc::new(SystemClock))
    }

    /// The sessions folder these locks live in: Vigil's own, hidden from every sandbox.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    pub fn options(&self) -> LockOptions {
        self.inner.opts
    }

    /// Takes the lock, waiting with `tokio::time::sleep` between attempts.
    pub async fn acquire(&self, id: &str) -> Result<SessionLockGuard, SessionError> {
        validate_id(id)?;
        let started = Instant::now();
        let mutex = self.local_mutex(id);
        let (local, contended) = match mutex.clone().try_lock_owned() {
            Ok(g) => (g, false),
            Err(_) => match tokio::time::timeout(self.inner.opts.timeout, mutex.lock_owned()).await {
                Ok(g) => (g, true),
                Err(_) => return Err(self.locked_in_process(id, started)),
            },
        };
        let mut waiting = self.waiting(id, started, contended);
        loop {
            match waiting.step()? {
                Step::Done(file) => return Ok(self.guard(&waiting, file, local)),
                Step::Sleep(d) => tokio::time::sleep(d).await,
            }
        }
    }

    /// Takes the lock, sleeping the calling thread between attempts. For threads that are
    /// not async workers: tests, the CLI, `spawn_blocking`.
    pub fn acquire_blocking(&self, id: &str) -> Result<SessionLockGuard, SessionError> {
        validate_id(id)?;
        let started = Instant::now();
        let mutex = self.local_mutex(id);
        let mut contended = false;
        let local = loop {
            match mutex.clone().try_lock_owned() {
                Ok(g) => break g,
                Err(_) if started.elapsed() >= self.inner.opts.timeout => {
                    return Err(self.locked_in_process(id, started))
                }
                Err(_) => {
                    contended = true;
                    std::thread::sleep(self.inner.opts.poll)
                }
            }
        };
        let mut waiting = self.waiting(id, started, contended);
        loop {
            match waiting.step()? {
                Step::Done(file) => return Ok(self.guard(&waiting, file, local)),
                Step::Sleep(d) => std::thread::sleep(d),
            }
        }
    }

    /// The lock is ours: counts it, and the wait if there was one.
    fn guard(&self, waiting: &Waiting<'_>, file: File, local: OwnedMutexGuard<()>) -> SessionLockGuard {
        let c = &self.inner.counters;
        c.acquired.fetch_add(1, Ordering::Relaxed);
        c.held.fetch_add(1, Ordering::Relaxed);
        if waiting.contended {
            let ms = waiting.started.elapsed().as_millis() as u64;
            c.waited.fetch_add(1, Ordering::Relaxed);
            c.wait_ms_total.fetch_add(ms, Ordering::Relaxed);
            c.wait_ms_max.fetch_max(ms, Ordering::Relaxed);
        }
        SessionLockGuard {
            id: waiting.id.to_string(),
            path: waiting.path.clone(),
            file: Some(file),
            local: Some(local),
            locks: self.clone(),
            acquired: Instant::now(),
        }
    }

    /// Contention since start, and the locks held now.
    pub fn health(&self) -> vigil_protocol::LockHealth {
        let c = &self.inner.counters;
        vigil_protocol::LockHealth {
            held: c.held.load(Ordering::Relaxed),
            acquired: c.acquired.load(Ordering::Relaxed),
            waited: c.waited.load(Ordering::Relaxed),
            wait_ms_total: c.wait_ms_total.load(Ordering::Relaxed),
            wait_ms_max: c.wait_ms_max.load(Ordering::Relaxed),
            timeouts: c.timeouts.load(Ordering::Relaxed),
            reclaimed: c.reclaimed.load(Ordering::Relaxed),
        }
    }

    /// A task of this very process holds it; there is nothing to reclaim from ourselves.
    fn locked_in_process(&self, id: &str, started: Instant) -> SessionError {
        self.inner.counters.timeouts.fetch_add(1, Ordering::Relaxed);
        SessionError::Locked {
            id: id.to_string(),
            holder: read_record(&session_file(&self.inner.dir, id, suffix::LOCK)),
            waited: started.elapsed(),
        }
    }

    fn local_mutex(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.inner
            .local
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id.to_string())
            .or_default()
            .clone()
    }

    fn stale_reason(&self, holder: &LockHolder) -> Option<String> {
        let age_ms = self.inner.clock.now_ms() - holder.acquired_at_ms;
        if !pid_alive(holder.pid) {
            Some(format!("its holder, pid {}, is no longer running", holder.pid))
        } else if age_ms > self.inner.opts.max_hold.as_millis() as i64 {
            Some(format!(
                "pid {} has held it since {} ({} s, more than the maximum {} s)",
                holder.pid,
                hms_utc(holder.acquired_at_ms),
                age_ms / 1000,
                self.inner.opts.max_hold.as_secs()
            ))
        } else {
            None
        }
    }

    fn release_local(&self, id: &str, local: Option<OwnedMutexGuard<()>>) {
        let mut map = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
        drop(local);
        // Every clone of an entry is taken under this map lock, so a count of one (the
        // map's) means no task holds or awaits it.
        if map.get(id).is_some_and(|m| Arc::strong_count(m) == 1) {
            map.remove(id);
        }
    }
}

impl SessionLockGuard {
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Fails with [`SessionError::LockLost`] if the lock was reclaimed from us. Writers call
    /// this right before a write becomes visible.
    pub fn ensure_held(&self) -> Result<(), SessionError> {
        match &self.file {
            Some(f) if names_same_file(f, &self.path) => Ok(()),
            _ => Err(SessionError::LockLost { id: self.id.clone() }),
        }
    }

    /// Removes the lock file while holding it (session deletion). Waiters that had opened
    /// it see it vanish once we release, and retry on a fresh file.
    pub(crate) fn remove_lock_file(&self) -> Result<(), SessionError> {
        match fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io("remove", &self.path)(e)),
        }
    }
}

impl Drop for SessionLockGuard {
    fn drop(&mut self) {
        let held = self.acquired.elapsed();
        if held > self.locks.inner.opts.max_hold {
            tracing::warn!(
                "session {}: held its lock for {} s, more than the maximum {} s; another process may have reclaimed it",
                self.id,
                held.as_secs(),
                self.locks.inner.opts.max_hold.as_secs()
            );
        }
        if let Some(file) = self.file.take() {
            // Empty the record first, so a waiter never mistakes our old record for the
            // next holder's (which it writes right after locking).
            if self.ensure_held().is_ok() {
                let _ = file.set_len(0);
            }
            let _ = file.unlock();
        }
        let local = self.local.take();
        self.locks.release_local(&self.id, local);
        self.locks.inner.counters.held.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests;
