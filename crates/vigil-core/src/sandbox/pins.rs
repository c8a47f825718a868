//! # sandbox::pins
//!
//! Which `HEARTBEAT.md` each writable sandbox bound read-only, and whether a process still
//! runs there. The bind holds only while the path names the bound file: when another
//! program replaces the file (an editor saving by rename, a delete and create), the kernel
//! detaches the bind in every running sandbox, and a command still running there can write
//! the new file. So the routine store asks here, before it trusts a task file it has not
//! seen: did a sandbox that bound another file have a live process at any time since the
//! file Vigil trusted was last seen in place? (see `routines::store::trust`).
//!
//! Owns: one record per workspace and pinned identity — how many sandboxes holding it are
//! alive (a standing sandbox counts while its bwrap runs; a bwrap of its own while its
//! command does), and when the last of them ended while the file was no longer the one it
//! bound, on a counter ([`now`]) that only grows. A sandbox that ends while its file is still
//! in place never had its bind detached: its life cannot have touched another file.
//!
//! Must never: forget a live sandbox (a guard is released only by its drop, after the
//! process is reaped); say "nothing ran" when in doubt (a pin whose identity could not be
//! read counts as another file).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A file's identity: its device and inode, and its birth time where the file system keeps
/// one (ext4, btrfs, xfs, tmpfs), since a file deleted and made again often gets the same
/// inode number. An in-place write keeps all three; a rename over it or a new file does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    /// Birth time in nanoseconds since the epoch; `None` where the file system has none.
    #[serde(default)]
    pub born: Option<i128>,
}

/// `path`'s identity now, without following a symlink; `None` when there is no file.
pub fn identity(path: &Path) -> Option<FileId> {
    use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
    let st = statx(
        CWD,
        path,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BASIC_STATS | StatxFlags::BTIME,
    )
    .ok()?;
    let born = (st.stx_mask & StatxFlags::BTIME.bits() != 0)
        .then(|| st.stx_btime.tv_sec as i128 * 1_000_000_000 + st.stx_btime.tv_nsec as i128);
    Some(FileId {
        dev: rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        ino: st.stx_ino,
        born,
    })
}

#[derive(Debug, Default)]
struct Record {
    /// Sandboxes holding this pin that are alive now.
    live: usize,
    /// [`now`] when the last of them that ended with the file replaced ended; 0 if none.
    ended: u64,
}

#[derive(Default)]
struct Pins {
    /// The counter [`now`] reads and advances.
    clock: u64,
    /// Per real workspace path, per pinned identity (`None`: unreadable, so any other).
    by_workspace: HashMap<PathBuf, HashMap<Option<FileId>, Record>>,
}

/// Process-wide, as the mounts are: two runtimes on one workspace share its file.
/// A `std` lock, never held across an await or a blocking call.
static PINS: Mutex<Option<Pins>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut Pins) -> R) -> R {
    let mut guard = PINS.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(Pins::default))
}

/// A point on the pins' counter: every later end of a sandbox is after it.
pub fn now() -> u64 {
    with(|p| {
        p.clock += 1;
        p.clock
    })
}

/// A live sandbox in `workspace` that bound `pinned`; released when dropped.
#[derive(Debug)]
pub struct PinGuard {
    workspace: PathBuf,
    file: PathBuf,
    pinned: Option<FileId>,
}

/// Records a sandbox that binds `workspace`'s task file as it is now; hold the guard until
/// its process has ended. Taken before the bind is made, so a file replaced in between is
/// recorded as the older one (the side of caution).
pub fn hold(workspace: &Path, file: &Path) -> PinGuard {
    let pinned = identity(file);
    with(|p| {
        let records = p.by_workspace.entry(workspace.to_path_buf()).or_default();
        records.entry(pinned).or_default().live += 1;
    });
    PinGuard {
        workspace: workspace.to_path_buf(),
        file: file.to_path_buf(),
        pinned,
    }
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        // Looked at before the count drops: a replacement after this look is after its end.
        let detached = self.pinned.is_none() || identity(&self.file) != self.pinned;
        with(|p| {
            p.clock += 1;
            let at = p.clock;
            if let Some(r) = p
                .by_workspace
                .get_mut(&self.workspace)
                .and_then(|records| records.get_mut(&self.pinned))
            {
                r.live = r.live.saturating_sub(1);
                if detached {
                    r.ended = at;
                }
            }
        });
    }
}

/// How many sandboxes in `workspace` that bind its task file are alive now.
pub fn live(workspace: &Path) -> usize {
    with(|p| {
        p.by_workspace
            .get(workspace)
            .map_or(0, |records| records.values().map(|r| r.live).sum())
    })
}

/// Whether a sandbox in `workspace` that bound a file other than `current` had a live
/// process at any time after `since` (a point from [`now`]): then it may have written
/// `current`. Records nothing can matter for any more (ended before `since`) are dropped.
pub fn other_ran_since(workspace: &Path, current: Option<FileId>, since: u64) -> bool {
    with(|p| {
        let Some(records) = p.by_workspace.get_mut(workspace) else {
            return false;
        };
        let ran = records
            .iter()
            .any(|(pinned, r)| (pinned.is_none() || *pinned != current) && (r.live > 0 || r.ended > since));
        records.retain(|_, r| r.live > 0 || r.ended > since);
        ran
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sandbox_of_the_old_file_alive_after_the_last_look_makes_a_new_file_suspect() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let file = ws.join("HEARTBEAT.md");
        std::fs::write(&file, "old").unwrap();
        let old = identity(&file);
        let seen = now();
        let guard = hold(&ws, &file);
        std::fs::write(ws.join("new"), "new").unwrap();
        std::fs::rename(ws.join("new"), &file).unwrap();
        let new = identity(&file);
        assert_ne!(old, new, "a rename gives another identity");
        assert!(other_ran_since(&ws, new, seen), "alive now");
        drop(guard);
        assert!(other_ran_since(&ws, new, seen), "ended after the last look");
        assert!(!other_ran_since(&ws, old, seen), "the file it bound is not suspect");
        let later = now();
        assert!(!other_ran_since(&ws, new, later), "ended before the next look");
    }

    #[test]
    fn a_sandbox_that_ended_with_its_file_in_place_makes_no_later_file_suspect() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let file = ws.join("HEARTBEAT.md");
        std::fs::write(&file, "old").unwrap();
        let seen = now();
        drop(hold(&ws, &file));
        assert_eq!(live(&ws), 0);
        std::fs::write(ws.join("new"), "new").unwrap();
        std::fs::rename(ws.join("new"), &file).unwrap();
        assert!(
            !other_ran_since(&ws, identity(&file), seen),
            "it ended before the replacement"
        );
    }

    #[test]
    fn a_file_deleted_and_made_again_is_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("HEARTBEAT.md");
        std::fs::write(&file, "a").unwrap();
        let first = identity(&file).unwrap();
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, "a").unwrap();
        let second = identity(&file).unwrap();
        if first.born.is_some() {
            assert_ne!(first, second);
        }
    }
}
