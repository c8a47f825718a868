//! What several benches share: the statistics they print, this process's CPU time, the
//! machine's load (printed beside figures taken on a shared machine), and a temporary folder
//! outside `/tmp` (a workspace under `/tmp` gets no standing sandbox).
//!
//! Each bench takes what it needs (`mod common;`); the rest is unused there.
#![allow(dead_code)]

use std::time::Duration;

pub fn p99(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 99 / 100).min(v.len() - 1)]
}

pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// This process's CPU time so far, user and system.
pub fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is always valid.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// The load averages (1, 5, 15 minutes) as `/proc/loadavg` gives them, for the figures'
/// context; "?" where it cannot be read.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into())
}

/// A temporary folder outside /tmp (in the target folder, or under ~/.cache when that is in
/// /tmp too).
pub fn outside_tmp() -> tempfile::TempDir {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target.starts_with("/tmp") || target.starts_with("/var/tmp") {
        let home = std::env::var_os("HOME").map_or_else(|| std::path::PathBuf::from("/root"), Into::into);
        home.join(".cache").join("vigil-bench")
    } else {
        target.to_path_buf()
    };
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}
