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
//! Must never: reclaim from a live holder within its maximum hold; block a tokio worker
//! while waiting ([`SessionLocks::acquire`] sleeps with `tokio::time`).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::OwnedMutexGuard;

use super::{hms_utc, io, session_file, suffix, validate_id, LockHolder, SessionError};
use crate::clock::{Clock, SystemClock};

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

/// What one attempt on the file lock found.
enum Attempt {
    Got(File),
    /// Someone holds it.
    Busy,
    /// We locked a file that had been unlinked meanwhile; try again at once.
    Vanished,
}

/// The file-lock wait shared by the sync and async paths: each step either finishes or
/// says how long to sleep.
struct Waiting<'a> {
    locks: &'a SessionLocks,
    id: &'a str,
    path: PathBuf,
    started: Instant,
    deadline: Instant,
    reclaimed: bool,
    /// The lock was taken when we first tried (in this process or another).
    contended: bool,
}

enum Step {
    Done(File),
    Sleep(Duration),
}

impl Waiting<'_> {
    fn step(&mut self) -> Result<Step, SessionError> {
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

    fn waiting<'a>(&'a self, id: &'a str, started: Instant, contended: bool) -> Waiting<'a> {
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

    fn attempt(&self, path: &Path) -> Result<Attempt, SessionError> {
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

fn read_record(path: &Path) -> Option<LockHolder> {
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
fn names_same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Windows refuses to delete a file another handle has open without share-delete, which
/// the lock layer never sees in practice; only check that the path still exists.
#[cfg(not(unix))]
fn names_same_file(_file: &File, path: &Path) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::describe_holder;

    #[test]
    fn a_record_is_read_even_with_the_tail_of_a_longer_one_behind_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.lock");
        let held = LockHolder {
            pid: 42,
            acquired_at_ms: 7,
        };
        let mut bytes = serde_json::to_vec(&held).unwrap();
        bytes.extend_from_slice(b"000}");
        fs::write(&path, &bytes).unwrap();
        assert_eq!(read_record(&path), Some(held));
    }

    #[test]
    fn a_new_record_replaces_a_longer_one_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.lock");
        fs::write(
            &path,
            format!("{{\"pid\":1,\"acquired_at_ms\":1,\"note\":\"{}\"}}", "x".repeat(200)),
        )
        .unwrap();
        let locks = locks(dir.path(), 100);
        let guard = locks.acquire_blocking("main").unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let record: LockHolder = serde_json::from_str(&text).expect("only the new record is left");
        assert_eq!(record.pid, std::process::id());
        drop(guard);
    }

    fn locks(dir: &Path, timeout_ms: u64) -> SessionLocks {
        SessionLocks::new(
            dir,
            LockOptions {
                timeout: Duration::from_millis(timeout_ms),
                max_hold: Duration::from_secs(60),
                poll: Duration::from_millis(5),
            },
            Arc::new(SystemClock),
        )
    }

    #[test]
    fn formats_holder_times() {
        assert_eq!(hms_utc(3_723_000), "01:02:03 UTC");
        assert_eq!(
            describe_holder(Some(&LockHolder {
                pid: 1234,
                acquired_at_ms: 43_201_000
            })),
            "pid 1234 since 12:00:01 UTC"
        );
    }

    #[test]
    fn two_instances_in_one_process_exclude_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let a = locks(dir.path(), 100);
        let b = locks(dir.path(), 100);
        let held = a.acquire_blocking("main").unwrap();
        let err = b.acquire_blocking("main").unwrap_err();
        assert!(matches!(err, SessionError::Locked { .. }), "{err}");
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!("session main is locked by pid {} since ", std::process::id())),
            "{msg}"
        );
        assert!(msg.ends_with("; try again"), "{msg}");
        drop(held);
        b.acquire_blocking("main").unwrap();
    }

    #[test]
    fn clones_share_the_in_process_layer_and_entries_are_cleaned_up() {
        let dir = tempfile::tempdir().unwrap();
        let a = locks(dir.path(), 50);
        let g = a.acquire_blocking("x").unwrap();
        assert!(matches!(
            a.clone().acquire_blocking("x"),
            Err(SessionError::Locked { .. })
        ));
        drop(g);
        assert!(a.inner.local.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn async_waiters_queue_behind_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let l = locks(dir.path(), 2_000);
        let g = l.acquire("main").await.unwrap();
        let l2 = l.clone();
        let waiter = tokio::spawn(async move { l2.acquire("main").await.map(|_| ()) });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert!(!waiter.is_finished());
        drop(g);
        waiter.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn the_health_check_counts_waits_timeouts_and_the_locks_held() {
        let dir = tempfile::tempdir().unwrap();
        let l = locks(dir.path(), 2_000);
        let g = l.acquire("main").await.unwrap();
        let other = l.acquire("other").await.unwrap();
        assert_eq!((l.health().held, l.health().acquired, l.health().waited), (2, 2, 0));
        drop(other);
        let l2 = l.clone();
        let waiter = tokio::spawn(async move { l2.acquire("main").await.map(drop) });
        tokio::time::sleep(Duration::from_millis(40)).await;
        drop(g);
        waiter.await.unwrap().unwrap();
        let h = l.health();
        assert_eq!((h.held, h.acquired, h.waited, h.timeouts), (0, 3, 1, 0));
        assert!(h.wait_ms_max >= 30 && h.wait_ms_total == h.wait_ms_max, "{h:?}");

        // Another instance (the file layer) that gives up is a timeout, not an acquisition.
        let held = l.acquire("main").await.unwrap();
        let impatient = locks(dir.path(), 30);
        assert!(impatient.acquire("main").await.is_err());
        drop(held);
        assert_eq!(
            (
                impatient.health().timeouts,
                impatient.health().acquired,
                impatient.health().held
            ),
            (1, 0, 0)
        );
    }

    #[test]
    fn a_deleted_lock_file_is_not_a_held_lock() {
        let dir = tempfile::tempdir().unwrap();
        let l = locks(dir.path(), 100);
        let g = l.acquire_blocking("main").unwrap();
        g.ensure_held().unwrap();
        fs::remove_file(dir.path().join("main.lock")).unwrap();
        assert!(matches!(g.ensure_held(), Err(SessionError::LockLost { .. })));
        // Another instance gets a fresh file although `g` still locks the unlinked one.
        locks(dir.path(), 100).acquire_blocking("main").unwrap();
    }
}
