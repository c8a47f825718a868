//! What ends the scheduler's sleep besides its own deadlines: the task file changing on disk
//! (a hand edit, another process), and the wall clock reaching a routine's due time even
//! when the machine slept through it or the clock was set.
//!
//! tokio sleeps on the monotonic clock, which stops while the machine is suspended: a
//! routine due at 09:00 on a laptop that slept from 08:00 to 10:00 would wait until 11:00.
//! Without these the loop looks every [`SchedulerConfig::max_nap`] (30 s), a wake-up every
//! 30 s all day in the tray. Linux gives both as file descriptors the loop's `select!` can
//! wait on:
//!
//! - an inotify watch on the task file's folder (editors and our own atomic writes replace
//!   the file, so the folder is watched, and only events naming the file end the wait);
//! - a `CLOCK_REALTIME` timerfd armed at the next due time with `TFD_TIMER_ABSTIME |
//!   TFD_TIMER_CANCEL_ON_SET`: it fires at that wall time, at once on resume if the time
//!   passed while suspended, and is cancelled by any jump of the clock (set by hand, NTP).
//!
//! With both live the loop sleeps until its next deadline ([`Alarm::exact`]). Where either is
//! missing — another OS, a clock that is not the system's (tests), a folder that is gone, an
//! inotify limit — the 30 s look stays. rustix's thin wrappers over the two syscalls are
//! used rather than the `notify` crate, which runs a thread of its own per watcher.
//!
//! [`SchedulerConfig::max_nap`]: super::scheduler::SchedulerConfig::max_nap

use std::ffi::OsString;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use linux::Sources;

/// The task file's watch and the wall-clock timer, each present only when it could be had.
pub(super) struct Alarm {
    dir: PathBuf,
    name: OsString,
    #[cfg(target_os = "linux")]
    sources: Sources,
}

impl Alarm {
    /// Watches `file`; times the wall clock only when `wall` (the clock is the system's).
    pub(super) fn new(file: &Path, wall: bool) -> Self {
        let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
        let name = file.file_name().map(OsString::from).unwrap_or_default();
        #[cfg(target_os = "linux")]
        let sources = Sources::new(&dir, wall);
        #[cfg(not(target_os = "linux"))]
        let _ = wall;
        Self {
            dir,
            name,
            #[cfg(target_os = "linux")]
            sources,
        }
    }

    /// Whether the file is watched and the wall clock timed, so the loop need not look on its
    /// own. A watch lost with its folder (deleted, moved) is taken again here once the folder
    /// is back.
    pub(super) fn exact(&mut self) -> bool {
        #[cfg(target_os = "linux")]
        return self.sources.exact(&self.dir);
        #[cfg(not(target_os = "linux"))]
        false
    }

    /// Returns when the task file changed, the wall clock reached `due_ms` (ms since the
    /// epoch) or jumped. Never returns while neither source exists. Cancel-safe: an event
    /// not yet read stays for the next call.
    pub(super) async fn ring(&mut self, due_ms: Option<i64>) {
        #[cfg(target_os = "linux")]
        return self.sources.ring(&self.name, due_ms).await;
        #[cfg(not(target_os = "linux"))]
        {
            let _ = (due_ms, &self.name);
            std::future::pending().await
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::OsStr;
    use std::io;
    use std::mem::MaybeUninit;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStrExt as _;
    use std::path::Path;

    use rustix::fs::inotify::{self, ReadFlags, WatchFlags};
    use rustix::io::Errno;
    use rustix::time::{Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    /// With nothing due, the timer is still armed (a jump of the clock only cancels an armed
    /// timer), at 2100-01-01.
    const IDLE_ARM_MS: i64 = 4_102_444_800_000;

    pub(super) struct Sources {
        /// The inotify instance, and its folder watch while that is live.
        watch: Option<AsyncFd<OwnedFd>>,
        folder: Option<WatchDescriptor>,
        timer: Option<AsyncFd<OwnedFd>>,
    }

    type WatchDescriptor = i32;

    impl Sources {
        pub(super) fn new(dir: &Path, wall: bool) -> Self {
            let watch = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
                .map_err(io::Error::from)
                .and_then(readable)
                .inspect_err(|e| tracing::warn!("the task file is not watched ({e}): routines look every 30 s"))
                .ok();
            let timer = wall
                .then(|| {
                    rustix::time::timerfd_create(
                        TimerfdClockId::Realtime,
                        TimerfdFlags::CLOEXEC | TimerfdFlags::NONBLOCK,
                    )
                    .map_err(io::Error::from)
                    .and_then(readable)
                    .inspect_err(|e| tracing::warn!("no wall-clock timer ({e}): routines look every 30 s"))
                    .ok()
                })
                .flatten();
            let mut sources = Self {
                watch,
                folder: None,
                timer,
            };
            sources.exact(dir);
            sources
        }

        pub(super) fn exact(&mut self, dir: &Path) -> bool {
            if let (Some(watch), None) = (&self.watch, self.folder) {
                let flags = WatchFlags::CLOSE_WRITE
                    | WatchFlags::MOVED_TO
                    | WatchFlags::MOVED_FROM
                    | WatchFlags::CREATE
                    | WatchFlags::DELETE
                    | WatchFlags::DELETE_SELF
                    | WatchFlags::MOVE_SELF
                    | WatchFlags::ONLYDIR;
                self.folder = inotify::add_watch(watch.get_ref(), dir, flags).ok();
            }
            self.folder.is_some() && self.timer.is_some()
        }

        pub(super) async fn ring(&mut self, name: &OsStr, due_ms: Option<i64>) {
            if let Some(timer) = &self.timer {
                match arm(timer, due_ms) {
                    Ok(()) => {}
                    // The clock jumped (or the machine resumed) since the timer was last read:
                    // it is armed all the same, and the loop looks again now.
                    Err(Errno::CANCELED) => return,
                    Err(e) => {
                        tracing::warn!("the wall-clock timer could not be set ({e}): routines look every 30 s");
                        self.timer = None;
                    }
                }
            }
            let watch = async {
                match (&self.watch, self.folder) {
                    (Some(fd), Some(wd)) => loop {
                        match read_watch(fd, wd, name).await {
                            Ok(Seen::Other) => {}
                            seen => return seen,
                        }
                    },
                    _ => std::future::pending().await,
                }
            };
            let timer = async {
                match &self.timer {
                    Some(fd) => read_timer(fd).await,
                    None => std::future::pending().await,
                }
            };
            let seen = tokio::select! {
                seen = watch => seen,
                read = timer => {
                    if let Err(e) = read {
                        tracing::warn!("the wall-clock timer failed ({e}): routines look every 30 s");
                        self.timer = None;
                    }
                    return;
                }
            };
            match seen {
                Ok(Seen::File | Seen::Other) => {}
                Ok(Seen::FolderGone { moved }) => {
                    // A moved folder keeps its watch (on the folder, now elsewhere): drop it,
                    // and watch whatever is at the path next time.
                    if let (true, Some(fd), Some(wd)) = (moved, &self.watch, self.folder) {
                        let _ = inotify::remove_watch(fd.get_ref(), wd);
                    }
                    self.folder = None;
                }
                Err(e) => {
                    tracing::warn!("the task file's watch failed ({e}): routines look every 30 s");
                    self.watch = None;
                    self.folder = None;
                }
            }
        }
    }

    /// `fd` on tokio's reactor, for reading.
    fn readable(fd: OwnedFd) -> io::Result<AsyncFd<OwnedFd>> {
        // SAFETY: an `OwnedFd` is open and names the same file description until it is
        // dropped, which the `AsyncFd` owning it does last.
        unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(|e| e.into_parts().1)
    }

    /// Arms the timer at `due_ms` on the wall clock (or at [`IDLE_ARM_MS`]), cancelled by a jump.
    fn arm(timer: &AsyncFd<OwnedFd>, due_ms: Option<i64>) -> rustix::io::Result<()> {
        let at = due_ms.unwrap_or(IDLE_ARM_MS).max(1);
        let value = Itimerspec {
            it_interval: Timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: Timespec {
                tv_sec: at.div_euclid(1000),
                tv_nsec: at.rem_euclid(1000) * 1_000_000,
            },
        };
        rustix::time::timerfd_settime(
            timer.get_ref(),
            TimerfdTimerFlags::ABSTIME | TimerfdTimerFlags::CANCEL_ON_SET,
            &value,
        )
        .map(drop)
    }

    /// Waits until the timer expired or was cancelled by a jump of the clock, and clears it.
    async fn read_timer(timer: &AsyncFd<OwnedFd>) -> io::Result<()> {
        loop {
            let mut ready = timer.readable().await?;
            let mut buf = [0u8; 8];
            match rustix::io::read(timer.get_ref(), &mut buf) {
                // Expired, or ECANCELED: the clock jumped. Either way the loop looks again.
                Ok(_) | Err(Errno::CANCELED) => return Ok(()),
                Err(Errno::AGAIN) => ready.clear_ready(),
                Err(e) => return Err(e.into()),
            }
        }
    }

    enum Seen {
        /// An event naming the task file.
        File,
        /// The folder itself went (deleted, unmounted, or `moved` elsewhere).
        FolderGone { moved: bool },
        /// Only other files in the folder.
        Other,
    }

    /// Reads the events waiting on the inotify instance (waiting for some if none are), for
    /// the folder watch `wd` (an earlier watch's last events are old news).
    async fn read_watch(fd: &AsyncFd<OwnedFd>, wd: WatchDescriptor, name: &OsStr) -> io::Result<Seen> {
        let mut ready = fd.readable().await?;
        let mut buf = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(fd.get_ref(), &mut buf);
        let mut seen = Seen::Other;
        loop {
            match reader.next() {
                Ok(event) => {
                    let flags = event.events();
                    if event.wd() != wd && !flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                        continue;
                    }
                    if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED) {
                        return Ok(Seen::FolderGone {
                            moved: flags.contains(ReadFlags::MOVE_SELF),
                        });
                    }
                    // The queue overflowed: the file may have changed among what was lost.
                    if flags.contains(ReadFlags::QUEUE_OVERFLOW)
                        || event
                            .file_name()
                            .is_some_and(|n| OsStr::from_bytes(n.to_bytes()) == name)
                    {
                        seen = Seen::File;
                    }
                }
                Err(Errno::AGAIN) => {
                    ready.clear_ready();
                    return Ok(seen);
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::time::{Duration, Instant};

    use tokio::time::timeout;

    use super::*;
    use crate::clock::{Clock, SystemClock};

    /// Long enough for an event to arrive on a loaded machine …
    const SOON: Duration = Duration::from_secs(5);
    /// … and a wait that should go on through this.
    const QUIET: Duration = Duration::from_millis(300);

    /// A workspace folder holding a task file.
    fn workspace() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("workspace")).unwrap();
        let file = dir.path().join("workspace").join("HEARTBEAT.md");
        std::fs::write(&file, "# Heartbeat\n").unwrap();
        (dir, file)
    }

    #[tokio::test]
    async fn an_edit_of_the_task_file_ends_the_wait_and_other_files_do_not() {
        let (_dir, file) = workspace();
        let folder = file.parent().unwrap();
        let mut alarm = Alarm::new(&file, false);
        assert!(!alarm.exact(), "without the system clock there is no wall-clock timer");
        std::fs::write(folder.join("notes.txt"), "build output").unwrap();
        std::fs::create_dir(folder.join("target")).unwrap();
        assert!(
            timeout(QUIET, alarm.ring(None)).await.is_err(),
            "other files changed, not the task file"
        );
        // Written in place, as `echo >> HEARTBEAT.md` does.
        std::fs::write(&file, "# Heartbeat\n- water the plants\n").unwrap();
        timeout(SOON, alarm.ring(None))
            .await
            .expect("an edit in place ends the wait");
        // Replaced, as editors and Vigil's own atomic writes do.
        std::fs::write(folder.join(".HEARTBEAT.md.swp"), "# Heartbeat\n").unwrap();
        assert!(timeout(QUIET, alarm.ring(None)).await.is_err(), "the editor's own file");
        std::fs::rename(folder.join(".HEARTBEAT.md.swp"), &file).unwrap();
        timeout(SOON, alarm.ring(None))
            .await
            .expect("a file renamed over it ends the wait");
        std::fs::remove_file(&file).unwrap();
        timeout(SOON, alarm.ring(None))
            .await
            .expect("its removal ends the wait");
    }

    #[tokio::test]
    async fn the_wall_clock_reaching_the_due_time_ends_the_wait() {
        let (_dir, file) = workspace();
        let mut alarm = Alarm::new(&file, true);
        assert!(alarm.exact(), "the file watched and the wall clock timed");
        let now = SystemClock.now_ms();
        assert!(
            timeout(QUIET, alarm.ring(Some(now + 3_600_000))).await.is_err(),
            "due in an hour"
        );
        assert!(timeout(QUIET, alarm.ring(None)).await.is_err(), "nothing due");
        let due = SystemClock.now_ms() + 600;
        let started = Instant::now();
        timeout(SOON, alarm.ring(Some(due)))
            .await
            .expect("the due time ends the wait");
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(500), "rang early: {waited:?}");
        assert!(
            SystemClock.now_ms() >= due,
            "rang before the wall clock reached the due time"
        );
        let started = Instant::now();
        timeout(SOON, alarm.ring(Some(due - 60_000)))
            .await
            .expect("a due time passed rings");
        assert!(
            started.elapsed() < Duration::from_millis(200),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_folder_removed_then_made_again_is_watched_again() {
        let (_dir, file) = workspace();
        let folder = file.parent().unwrap().to_path_buf();
        let mut alarm = Alarm::new(&file, true);
        assert!(alarm.exact());
        std::fs::remove_dir_all(&folder).unwrap();
        timeout(SOON, async {
            while alarm.exact() {
                alarm.ring(None).await;
            }
        })
        .await
        .expect("the folder's removal is seen");
        assert!(!alarm.exact(), "nothing to watch: the loop looks on its own again");
        std::fs::create_dir(&folder).unwrap();
        assert!(alarm.exact(), "the folder is back and watched");
        std::fs::write(&file, "# Heartbeat\n").unwrap();
        timeout(SOON, alarm.ring(None))
            .await
            .expect("an edit in the new folder ends the wait");
    }
}
