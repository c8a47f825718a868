//! File triggers' eyes: one inotify instance over the folders the file triggers name, read
//! on tokio's reactor, that says which paths changed. Folders made later under a watched
//! folder are watched as they appear.
//!
//! Why inotify through rustix rather than the `notify` crate: the scheduler already watches
//! the task file this way (`routines::alarm`), rustix is already built, Vigil runs on Linux
//! only, and this needs no thread of its own (notify's inotify backend runs one) — an idle
//! watcher is a descriptor in the reactor and costs nothing.
//!
//! Must never: watch outside the roots it was given; watch more than [`MAX_DIRS`] folders
//! (the user's inotify limit is shared with every other program); follow a symlink to a folder.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, ReadFlags, WatchFlags};
use rustix::io::Errno;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Folders watched at most, over all file triggers.
pub const MAX_DIRS: usize = 2000;
/// Folders never descended into: build output and version control churn.
const SKIPPED: &[&str] = &[".git", "node_modules", "target", ".cache"];

/// One inotify instance and its folders.
pub struct Files {
    fd: AsyncFd<OwnedFd>,
    /// Watch descriptor → folder, and whether its subfolders are watched too.
    dirs: HashMap<i32, (PathBuf, bool)>,
}

/// What a read found.
pub struct Seen {
    pub paths: Vec<PathBuf>,
    /// Events were lost (the queue overflowed): every trigger should look again.
    pub overflow: bool,
}

impl Files {
    pub fn new() -> io::Result<Self> {
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)?;
        // SAFETY: an `OwnedFd` is open and names the same file description until it is
        // dropped, which the `AsyncFd` owning it does last.
        let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into_parts().1)?;
        Ok(Self {
            fd,
            dirs: HashMap::new(),
        })
    }

    /// Watches `dir`, and with `deep` every folder under it (up to [`MAX_DIRS`] in all).
    pub fn watch(&mut self, dir: &Path, deep: bool) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            if self.dirs.len() >= MAX_DIRS {
                tracing::warn!(
                    "file triggers watch {MAX_DIRS} folders already; {} is not watched",
                    d.display()
                );
                return;
            }
            if self.dirs.values().any(|(p, _)| *p == d) {
                continue;
            }
            let flags = WatchFlags::CLOSE_WRITE
                | WatchFlags::MOVED_TO
                | WatchFlags::MOVED_FROM
                | WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MODIFY
                | WatchFlags::ONLYDIR
                | WatchFlags::DONT_FOLLOW;
            match inotify::add_watch(self.fd.get_ref(), &d, flags) {
                Ok(wd) => {
                    self.dirs.insert(wd, (d.clone(), deep));
                }
                Err(e) => {
                    tracing::debug!("{} is not watched: {e}", d.display());
                    continue;
                }
            }
            if deep {
                let Ok(entries) = std::fs::read_dir(&d) else { continue };
                for e in entries.flatten() {
                    let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                    let name = e.file_name();
                    if is_dir && !SKIPPED.iter().any(|s| OsStr::new(s) == name) {
                        stack.push(e.path());
                    }
                }
            }
        }
    }

    /// How many folders are watched.
    pub fn len(&self) -> usize {
        self.dirs.len()
    }

    /// Whether no folder is watched.
    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// Waits for events and returns the paths they name (folders made under a deep watch
    /// are watched on the way).
    pub async fn next_changes(&mut self) -> io::Result<Seen> {
        let mut seen = Seen {
            paths: Vec::new(),
            overflow: false,
        };
        let mut new_dirs = Vec::new();
        {
            let mut ready = self.fd.readable().await?;
            let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
            let mut reader = inotify::Reader::new(self.fd.get_ref(), &mut buf);
            loop {
                match reader.next() {
                    Ok(event) => {
                        let flags = event.events();
                        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                            seen.overflow = true;
                            continue;
                        }
                        if flags.contains(ReadFlags::IGNORED) {
                            self.dirs.remove(&event.wd());
                            continue;
                        }
                        let Some((dir, deep)) = self.dirs.get(&event.wd()) else {
                            continue;
                        };
                        let Some(name) = event.file_name() else { continue };
                        let path = dir.join(OsStr::from_bytes(name.to_bytes()));
                        if flags.contains(ReadFlags::ISDIR) {
                            if *deep && flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
                                new_dirs.push(path);
                            }
                            continue;
                        }
                        seen.paths.push(path);
                    }
                    Err(Errno::AGAIN) => {
                        ready.clear_ready();
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        for d in new_dirs {
            self.watch(&d, true);
        }
        seen.paths.sort();
        seen.paths.dedup();
        Ok(seen)
    }
}
