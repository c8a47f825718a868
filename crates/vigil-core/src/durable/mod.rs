//! # durable
//!
//! Owns the file-system calls that make a write survive a power cut, not only a crash of
//! this process: writing the bytes, `fsync`/`fdatasync`, cutting a file, linking, renaming,
//! and fsyncing a folder so a new name lasts. On top of them, the one whole-file replacement
//! ([`write_atomic`], or [`stage`] then [`Staged::commit`] for a caller with a step between):
//! temp file beside the target, data, fsync, rename, fsync the folder; for a file bound into
//! sandboxes, the rewrite that keeps its inode ([`write_in_place`], journaled; `in_place.rs`).
//! And the folders the data lives in, made for the user alone ([`create_private_dir_all`],
//! [`make_private_dir`]).
//!
//! Every durable write goes through here: transcript appends and cuts, metadata commits and
//! their `.bak`, `HEARTBEAT.md` and the routine files, approvals, pending wakes, the key file.
//! That makes these functions a seam: in this crate's unit tests, `recording` notes each
//! call with its path, in order, so a test can assert the durable order. A SIGKILL test
//! cannot: a killed process loses nothing the kernel already holds, fsync'd or not.
//!
//! Must never: decide what is written or when (callers own their formats and locks); skip,
//! reorder or retry a call; cost anything outside tests (the recorder, its statics and every
//! call to it are `#[cfg(test)]`).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

#[cfg(unix)]
pub use in_place::{pending as pending_in_place, recover as recover_in_place, write_in_place};

#[cfg(unix)]
mod in_place;
#[cfg(test)]
mod order_tests;
#[cfg(test)]
pub(crate) mod recording;

#[cfg(test)]
use recording::Op;

/// Tells the test recorder about a call that succeeded. Outside tests it expands to a borrow
/// of the named arguments (so they do not read as unused) and nothing else.
macro_rules! note {
    ($($arg:ident),+ => $op:expr) => {
        #[cfg(test)]
        recording::note($op);
        #[cfg(not(test))]
        let _ = ($(&$arg),+);
    };
}

/// Writes all of `bytes` to `file` (named `path`, for the record).
pub fn write_all(file: &mut File, path: &Path, bytes: &[u8]) -> io::Result<()> {
    file.write_all(bytes)?;
    note!(path => Op::Write(path.to_owned()));
    Ok(())
}

/// `fdatasync`: the data and the size, enough for an append or a cut.
pub fn sync_data(file: &File, path: &Path) -> io::Result<()> {
    #[cfg(test)]
    recording::before_sync(path)?;
    file.sync_data()?;
    note!(path => Op::SyncData(path.to_owned()));
    Ok(())
}

/// `fsync`: the data and all metadata (permissions included), for a file about to be renamed.
pub fn sync_all(file: &File, path: &Path) -> io::Result<()> {
    file.sync_all()?;
    note!(path => Op::SyncAll(path.to_owned()));
    Ok(())
}

/// Cuts (or extends) `file` to `len` bytes; durable only after a [`sync_data`].
pub fn set_len(file: &File, path: &Path, len: u64) -> io::Result<()> {
    file.set_len(len)?;
    note!(path => Op::SetLen(path.to_owned(), len));
    Ok(())
}

/// Renames `from` over `to`; durable only after a [`sync_dir`] of the folder.
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)?;
    note!(from, to => Op::Rename(from.to_owned(), to.to_owned()));
    Ok(())
}

/// A second name `to` for the file `from`; durable only after a [`sync_dir`].
pub fn hard_link(from: &Path, to: &Path) -> io::Result<()> {
    fs::hard_link(from, to)?;
    note!(from, to => Op::HardLink(from.to_owned(), to.to_owned()));
    Ok(())
}

/// Removes the file `path`; durable only after a [`sync_dir`] of the folder.
pub fn remove_file(path: &Path) -> io::Result<()> {
    fs::remove_file(path)?;
    note!(path => Op::Remove(path.to_owned()));
    Ok(())
}

/// fsyncs the folder `dir`, so the names created or renamed in it last. Callers treat a
/// failure as best effort: the data is already safe, and some file systems refuse to fsync
/// a folder.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()?;
        note!(dir => Op::SyncDir(dir.to_owned()));
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Creates `dir` and any missing parents for the user alone (`0700` on unix); folders that
/// exist are left as they are. Every folder of Vigil's data directory is made with it:
/// transcripts, settings, routine runs and logs are nobody else's to read.
pub fn create_private_dir_all(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    {
        fs::create_dir_all(dir)
    }
}

/// Makes the data directory private: created `0700` if missing; if it exists and others
/// may enter it (versions before this one made it `0755`), narrowed to `0700`. Returns
/// whether an existing folder was narrowed. Its subfolders need no change: nobody else can
/// reach them through a private parent.
pub fn make_private_dir(dir: &Path) -> io::Result<bool> {
    create_private_dir_all(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir)?.permissions().mode();
        if mode & 0o077 != 0 {
            fs::set_permissions(dir, fs::Permissions::from_mode(mode & 0o700))?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether [`write_atomic`] made a new file or replaced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Created,
    Replaced,
}

/// Replaces `path` with `bytes` so that a crash or a power cut leaves either the old file or
/// the new one: [`stage`] a temp file named `.vigil-tmp-XXXXXX`, then [`Staged::commit`].
///
/// For files a user may own too (the workspace): a read-only file is refused, not replaced.
/// Ownership and hard links are not preserved: the result is a new inode owned by us.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<Written> {
    if fs::metadata(path).is_ok_and(|m| m.permissions().readonly()) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only"));
    }
    stage(path, bytes, crate::leftovers::TEMP_PREFIX)?.commit()
}

/// The new content of a file, written to a temp file beside it and fsync'd, not yet in
/// place. Dropping it instead of committing deletes the temp file.
#[derive(Debug)]
pub struct Staged {
    tmp: NamedTempFile,
    target: PathBuf,
    existed: bool,
}

/// Writes `bytes` to `<temp_prefix>XXXXXX` in `path`'s folder (rename is only atomic within
/// a file system) and fsyncs it. An existing file's permission bits are copied; a new one
/// gets the usual umask-filtered `0o666`, not a bare temp file's `0o600`.
pub fn stage(path: &Path, bytes: &[u8], temp_prefix: &str) -> io::Result<Staged> {
    let dir = parent(path)?;
    let existing = match fs::metadata(path) {
        Ok(meta) => Some(meta.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(temp_prefix);
    #[cfg(unix)]
    if existing.is_none() {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    // Dropped on any early return, which deletes the temp file: nothing is left behind.
    // In two parts so the file can be written while its path names it. The path part
    // deletes the temp file when dropped, so an early return leaves nothing behind.
    let (mut file, tmp_path) = builder.tempfile_in(dir)?.into_parts();
    note!(tmp_path => Op::CreateTemp(tmp_path.to_path_buf()));
    write_all(&mut file, &tmp_path, bytes)?;
    if let Some(perms) = &existing {
        file.set_permissions(perms.clone())?;
    }
    sync_all(&file, &tmp_path)?;
    Ok(Staged {
        tmp: NamedTempFile::from_parts(file, tmp_path),
        target: path.to_owned(),
        existed: existing.is_some(),
    })
}

impl Staged {
    /// Renames the temp file over the target, then fsyncs the folder so the rename itself
    /// survives a power cut (best effort, see [`sync_dir`]).
    pub fn commit(self) -> io::Result<Written> {
        let Staged { tmp, target, existed } = self;
        #[cfg(test)]
        let tmp_path = tmp.path().to_owned();
        // `persist` is the rename (on Windows it also clears the temp file's attribute).
        tmp.persist(&target).map_err(|e| e.error)?;
        #[cfg(test)]
        recording::note(Op::Rename(tmp_path, target.clone()));
        let _ = sync_dir(parent(&target)?);
        Ok(if existed { Written::Replaced } else { Written::Created })
    }
}

/// Writes `bytes` to `path` only if nothing is there: a whole new file or, when a file
/// already exists (even one created a moment ago by someone else), nothing at all. Returns
/// whether it wrote. For files Vigil offers once and the user owns afterwards.
pub fn create_new(path: &Path, bytes: &[u8]) -> io::Result<bool> {
    if fs::symlink_metadata(path).is_ok() {
        return Ok(false);
    }
    stage(path, bytes, crate::leftovers::TEMP_PREFIX)?.commit_new()
}

impl Staged {
    /// Links the temp file to the target only if the target does not exist (no rename over
    /// it), then fsyncs the folder. `Ok(false)`: something was there; the temp file is gone.
    pub fn commit_new(self) -> io::Result<bool> {
        let Staged { tmp, target, .. } = self;
        #[cfg(test)]
        let tmp_path = tmp.path().to_owned();
        // `persist_noclobber` is link + unlink on unix: atomic, and it fails on an existing name.
        match tmp.persist_noclobber(&target) {
            Ok(_) => {}
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => return Ok(false),
            Err(e) => return Err(e.error),
        }
        #[cfg(test)]
        recording::note(Op::HardLink(tmp_path, target.clone()));
        let _ = sync_dir(parent(&target)?);
        Ok(true)
    }
}

fn parent(path: &Path) -> io::Result<&Path> {
    path.parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no parent folder"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".vigil-tmp-") || n.starts_with(".a.txt."))
            .collect()
    }

    #[test]
    fn atomic_write_creates_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        assert_eq!(write_atomic(&p, b"one").unwrap(), Written::Created);
        assert_eq!(write_atomic(&p, b"two").unwrap(), Written::Replaced);
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn a_staged_write_not_committed_leaves_the_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        fs::write(&p, "old").unwrap();
        let staged = stage(&p, b"new", ".a.txt.").unwrap();
        assert_eq!(leftovers(dir.path()).len(), 1, "the temp file is there while staged");
        drop(staged);
        assert_eq!(fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[test]
    fn create_new_writes_once_and_never_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        assert!(create_new(&p, b"one").unwrap());
        assert!(!create_new(&p, b"two").unwrap());
        assert_eq!(fs::read_to_string(&p).unwrap(), "one");
        // A file that appears between the check and the link is not replaced either.
        let staged = stage(&dir.path().join("b.txt"), b"mine", ".a.txt.").unwrap();
        fs::write(dir.path().join("b.txt"), "theirs").unwrap();
        assert!(!staged.commit_new().unwrap());
        assert_eq!(fs::read_to_string(dir.path().join("b.txt")).unwrap(), "theirs");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_keeps_permissions_and_refuses_read_only_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.sh");
        fs::write(&p, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o750)).unwrap();
        write_atomic(&p, b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o750);

        // A new file gets what any program's new file gets under this umask, not the 0o600
        // of a bare temp file: other programs must be able to read what the agent makes.
        let plain = dir.path().join("plain.txt");
        fs::write(&plain, "x").unwrap();
        let new = dir.path().join("new.txt");
        write_atomic(&new, b"x").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&new), mode(&plain));

        fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).unwrap();
        let err = write_atomic(&p, b"nope").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(fs::read_to_string(&p).unwrap(), "#!/bin/sh\necho hi\n");
        assert_eq!(leftovers(dir.path()), Vec::<String>::new());
    }
}

#[cfg(all(test, unix))]
mod private_dir_tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_folders_are_0700_at_every_level_made_and_an_open_data_dir_is_narrowed() {
        let root = tempfile::tempdir().unwrap();
        let nested = root.path().join("data/routines/runs");
        create_private_dir_all(&nested).unwrap();
        for p in [root.path().join("data"), root.path().join("data/routines"), nested] {
            assert_eq!(mode(&p), 0o700, "{}", p.display());
        }
        // An existing folder is left alone by the first, narrowed by the second.
        let open = root.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir_all(&open).unwrap();
        assert_eq!(mode(&open), 0o755);
        assert!(make_private_dir(&open).unwrap());
        assert_eq!(mode(&open), 0o700);
        assert!(!make_private_dir(&open).unwrap());
        assert!(!make_private_dir(&root.path().join("fresh")).unwrap());
        assert_eq!(mode(&root.path().join("fresh")), 0o700);
    }
}
