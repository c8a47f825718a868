//! The test side of the seam: a [`Recording`] of every call [`super`] makes on paths under
//! one folder, in order, as readable lines. Test-only: this module does not exist in a build.
//!
//! Recordings are keyed by folder, not by thread, because a write may run on a blocking
//! thread or another worker; tests running in parallel each record their own temp folder.
//!
//! A recording can also make the disk slow or failing for its folder's `fdatasync`s
//! ([`Recording::slow_syncs`], [`Recording::fail_syncs`]): what a caller promises while a
//! sync is pending, or after one failed, is then observable.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// One seam call that succeeded.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    CreateTemp(PathBuf),
    Write(PathBuf),
    SyncData(PathBuf),
    SyncAll(PathBuf),
    SetLen(PathBuf, u64),
    Rename(PathBuf, PathBuf),
    HardLink(PathBuf, PathBuf),
    SyncDir(PathBuf),
    Remove(PathBuf),
}

impl Op {
    fn path(&self) -> &Path {
        match self {
            Op::CreateTemp(p)
            | Op::Write(p)
            | Op::SyncData(p)
            | Op::SyncAll(p)
            | Op::SetLen(p, _)
            | Op::Rename(p, _)
            | Op::HardLink(p, _)
            | Op::SyncDir(p)
            | Op::Remove(p) => p,
        }
    }
}

#[derive(Default)]
struct Log {
    ops: Vec<Op>,
    /// Temp files in the order they were created: the `n` of their `<n>` label.
    temps: Vec<PathBuf>,
    /// How long each `fdatasync` under the folder takes at least.
    slow_syncs: Duration,
    /// Each `fdatasync` under the folder fails.
    fail_syncs: bool,
}

type Shared = Arc<Mutex<Log>>;

/// The recordings in progress, with the folder each one watches.
static ACTIVE: Mutex<Vec<(PathBuf, Shared)>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Called by every seam function after its call succeeded.
pub(crate) fn note(op: Op) {
    for (root, log) in lock(&ACTIVE).iter() {
        if op.path().starts_with(root) {
            let mut log = lock(log);
            if let Op::CreateTemp(p) = &op {
                log.temps.push(p.clone());
            }
            log.ops.push(op.clone());
        }
    }
}

/// Called by `sync_data` before it syncs: a slow or failing disk, if a test asked for one.
pub(crate) fn before_sync(path: &Path) -> std::io::Result<()> {
    let (mut slow, mut fail) = (Duration::ZERO, false);
    for (root, log) in lock(&ACTIVE).iter() {
        if path.starts_with(root) {
            let log = lock(log);
            slow = slow.max(log.slow_syncs);
            fail |= log.fail_syncs;
        }
    }
    std::thread::sleep(slow);
    match fail {
        true => Err(std::io::Error::other("the test's disk failed this sync")),
        false => Ok(()),
    }
}

/// Records the seam calls on paths under a folder until dropped.
pub(crate) struct Recording {
    root: PathBuf,
    log: Shared,
}

impl Recording {
    pub(crate) fn start(root: &Path) -> Self {
        let log = Shared::default();
        lock(&ACTIVE).push((root.to_owned(), log.clone()));
        Self {
            root: root.to_owned(),
            log,
        }
    }

    /// From now on each `fdatasync` under the folder takes at least `each`.
    pub(crate) fn slow_syncs(&self, each: Duration) {
        lock(&self.log).slow_syncs = each;
    }

    /// From now on each `fdatasync` under the folder fails.
    pub(crate) fn fail_syncs(&self) {
        lock(&self.log).fail_syncs = true;
    }

    /// The calls since the last `take`, one line each: `write sessions/main.jsonl`,
    /// `rename sessions/.main.meta.json.<1> -> sessions/main.meta.json`… Paths are relative
    /// to the folder; a temp file's random tail is `<n>`, numbered in order of creation.
    pub(crate) fn take(&self) -> Vec<String> {
        let mut log = lock(&self.log);
        let ops = std::mem::take(&mut log.ops);
        let show = |p: &Path| self.show(p, &log.temps);
        ops.iter()
            .map(|op| match op {
                Op::CreateTemp(p) => format!("create {}", show(p)),
                Op::Write(p) => format!("write {}", show(p)),
                Op::SyncData(p) => format!("fdatasync {}", show(p)),
                Op::SyncAll(p) => format!("fsync {}", show(p)),
                Op::SetLen(p, len) => format!("truncate {} to {len}", show(p)),
                Op::Rename(a, b) => format!("rename {} -> {}", show(a), show(b)),
                Op::HardLink(a, b) => format!("link {} -> {}", show(a), show(b)),
                Op::SyncDir(p) => format!("fsync dir {}", show(p)),
                Op::Remove(p) => format!("remove {}", show(p)),
            })
            .collect()
    }

    fn show(&self, path: &Path, temps: &[PathBuf]) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let shown = match temps.iter().position(|t| t == path) {
            Some(i) => {
                let name = rel.file_name().unwrap_or_default().to_string_lossy();
                // tempfile's random tail is six characters.
                let stem = name.get(..name.len().saturating_sub(6)).unwrap_or(&name);
                rel.with_file_name(format!("{stem}<{}>", i + 1))
            }
            None => rel.to_owned(),
        };
        match shown.to_string_lossy() {
            s if s.is_empty() => ".".to_string(),
            s => s.into_owned(),
        }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        lock(&ACTIVE).retain(|(_, log)| !Arc::ptr_eq(log, &self.log));
    }
}
