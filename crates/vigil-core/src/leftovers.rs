//! # leftovers
//!
//! Temp files that a write cut off by a crash or SIGKILL leaves beside the file it was
//! replacing: `.vigil-tmp-XXXXXX` from [`crate::durable::write_atomic`], and
//! `.<name>.XXXXXX` from `atomic-write-file` (between linking its unnamed file and the
//! rename). Loading never reads them, but nothing else removes them, so after enough crashes
//! they pile up. [`sweep`] removes them once at start, off the start's path.
//!
//! Must never: remove a file a live writer is still using (the app and the headless runner
//! may share a data folder, so only files untouched for [`STALE_AFTER`] go); remove anything
//! in the user's workspace but a file with Vigil's own prefix at its top level; follow a
//! symbolic link.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A temp file untouched this long belongs to no write in progress: a write takes
/// milliseconds.
pub const STALE_AFTER: Duration = Duration::from_secs(60 * 60);

/// The prefix of [`crate::durable::write_atomic`]'s temp files.
pub const TEMP_PREFIX: &str = ".vigil-tmp-";

/// Folders below the data folder are ours; deeper than this there is nothing we write.
const MAX_DEPTH: usize = 4;

/// Removes stale temp files: anywhere in `data_dir` (except inside `workspace`, if it lies
/// there), and with Vigil's prefix at the top of `workspace`. Returns what was removed.
pub fn sweep(data_dir: &Path, workspace: &Path, now: SystemTime) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    if workspace != data_dir {
        walk(data_dir, workspace, 0, now, &mut removed);
    }
    remove_stale(workspace, now, |name| name.starts_with(TEMP_PREFIX), &mut removed);
    removed
}

/// Starts [`sweep`] on a thread of its own and logs what it removed.
pub fn sweep_in_background(data_dir: &Path, workspace: &Path) {
    let (data_dir, workspace) = (data_dir.to_path_buf(), workspace.to_path_buf());
    let spawned = std::thread::Builder::new()
        .name("vigil-leftovers".into())
        .spawn(move || {
            let removed = sweep(&data_dir, &workspace, SystemTime::now());
            if !removed.is_empty() {
                tracing::info!(count = removed.len(), "removed temp files left by interrupted writes");
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("could not start the temp file sweep: {e}");
    }
}

/// A temp name of either writer.
fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX) || is_atomic_write_file_name(name)
}

/// `.<name>.XXXXXX`, six ASCII letters or digits: atomic-write-file's temp name for `<name>`.
fn is_atomic_write_file_name(name: &str) -> bool {
    let Some(rest) = name.strip_prefix('.') else {
        return false;
    };
    match rest.rsplit_once('.') {
        Some((base, suffix)) => {
            !base.is_empty() && suffix.len() == 6 && suffix.bytes().all(|b| b.is_ascii_alphanumeric())
        }
        None => false,
    }
}

fn walk(dir: &Path, workspace: &Path, depth: usize, now: SystemTime, removed: &mut Vec<PathBuf>) {
    if dir == workspace {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        // `file_type` does not follow links: a linked folder is not walked, a link not removed.
        match entry.file_type() {
            Ok(t) if t.is_dir() && depth < MAX_DEPTH => walk(&entry.path(), workspace, depth + 1, now, removed),
            Ok(t) if t.is_file() => remove_if_stale(&entry, now, is_temp_name, removed),
            _ => {}
        }
    }
}

/// Removes the regular files in `dir` (not below) whose name `matches` and that are stale.
fn remove_stale(dir: &Path, now: SystemTime, matches: impl Fn(&str) -> bool, removed: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        // A link is never a regular file here: `file_type` does not follow it.
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            remove_if_stale(&entry, now, &matches, removed);
        }
    }
}

/// Removes `entry`, a regular file, if its name `matches` and it is stale.
fn remove_if_stale(
    entry: &std::fs::DirEntry,
    now: SystemTime,
    matches: impl Fn(&str) -> bool,
    removed: &mut Vec<PathBuf>,
) {
    if !entry.file_name().to_str().is_some_and(matches) {
        return;
    }
    let modified = entry.metadata().and_then(|m| m.modified()).ok();
    let age = modified.and_then(|m| now.duration_since(m).ok());
    if age.is_some_and(|a| a >= STALE_AFTER) && std::fs::remove_file(entry.path()).is_ok() {
        removed.push(entry.path());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &Path, age: Duration) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let f = std::fs::File::create(path).unwrap();
        f.set_modified(SystemTime::now() - age).unwrap();
    }

    const OLD: Duration = Duration::from_secs(2 * 60 * 60);
    const FRESH: Duration = Duration::from_secs(5);

    #[test]
    fn stale_temp_files_of_both_writers_go_and_everything_else_stays() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let ws = data.join("workspace");
        let gone = [
            data.join("wake/.state.json.aB3x9Z"),
            data.join(".approvals.json.000000"),
            data.join("routines/runs/.vigil-tmp-Qw12er"),
            ws.join(".vigil-tmp-zzzzzz"),
        ];
        let kept = [
            // Still being written by another process, perhaps.
            data.join("wake/.state.json.fresh1"),
            data.join("sessions/main.jsonl"),
            data.join("sessions/.hidden"),
            data.join(".state.json.toolong1"),
            data.join(".state.json.sh0rt"),
            // The user's files, however they are named.
            ws.join(".config.abc123"),
            ws.join("project/.vigil-tmp-abcdef"),
        ];
        for p in &gone {
            file(p, OLD);
        }
        for p in &kept {
            file(p, if p.ends_with(".state.json.fresh1") { FRESH } else { OLD });
        }
        let mut removed = sweep(&data, &ws, SystemTime::now());
        removed.sort();
        let mut expected = gone.to_vec();
        expected.sort();
        assert_eq!(removed, expected);
        for p in &kept {
            assert!(p.exists(), "{} was removed", p.display());
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_are_neither_followed_nor_removed() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let elsewhere = root.path().join("elsewhere");
        let target = elsewhere.join(".vigil-tmp-target");
        file(&target, OLD);
        std::fs::create_dir_all(&data).unwrap();
        std::os::unix::fs::symlink(&elsewhere, data.join("linked")).unwrap();
        std::os::unix::fs::symlink(&target, data.join(".vigil-tmp-link01")).unwrap();
        let removed = sweep(&data, &data.join("workspace"), SystemTime::now() + OLD);
        assert!(removed.is_empty(), "{removed:?}");
        assert!(target.exists() && data.join(".vigil-tmp-link01").symlink_metadata().is_ok());
    }

    #[test]
    fn a_workspace_outside_the_data_folder_is_swept_at_its_top_only() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let ws = root.path().join("projects");
        file(&ws.join(".vigil-tmp-top000"), OLD);
        file(&ws.join("deep/.vigil-tmp-deep00"), OLD);
        file(&ws.join(".notes.md.abcdef"), OLD);
        std::fs::create_dir_all(&data).unwrap();
        assert_eq!(sweep(&data, &ws, SystemTime::now()), vec![ws.join(".vigil-tmp-top000")]);
    }
}
