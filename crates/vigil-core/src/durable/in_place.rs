//! # durable::in_place
//!
//! Owns rewriting a file *in place* (the same inode) so that a crash never leaves it torn:
//! the new content is first made durable in a journal somewhere else ([`write_atomic`]),
//! then written over the file (from the start, cut to its length, fsync'd), then the journal
//! is removed. [`recover`] finishes a rewrite a crash interrupted; a reader that may meet a
//! rewrite half done takes the journal's text instead ([`pending`]).
//!
//! Why in place: `HEARTBEAT.md` is bound read-only onto itself in every sandbox, standing
//! ones included. A rename over it on the host detaches that bind in every other mount
//! namespace (the kernel's rule since 3.18), so a command still running in a standing
//! sandbox would then see the workspace's own, writable, entry: the new file, which it could
//! change. Written in place, the bound inode stays the file, read-only in there and current.
//!
//! Must never: follow a symlink at the target; remove the journal before the file is
//! fsync'd; replay a journal written for another file (the journal names its target); keep
//! the journal where a sandboxed command can write (the caller puts it in the data folder).

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::{remove_file, set_len, sync_all, sync_dir, write_all, write_atomic, Written};

/// Rewrites `path` with `bytes`, keeping its inode (or creates it); `journal` is a file
/// name in a folder only Vigil writes. A read-only file is refused, as [`write_atomic`]
/// refuses it. The caller holds whatever lock orders the file's writers.
pub fn write_in_place(path: &Path, journal: &Path, bytes: &[u8]) -> io::Result<Written> {
    let existed = match fs::symlink_metadata(path) {
        Ok(m) if m.permissions().readonly() => {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only"))
        }
        Ok(_) => true,
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(e),
    };
    let mut record = path.as_os_str().as_encoded_bytes().to_vec();
    record.push(b'\n');
    record.extend_from_slice(bytes);
    if let Some(dir) = journal.parent() {
        super::create_private_dir_all(dir)?;
    }
    write_atomic(journal, &record)?;
    overwrite(path, bytes)?;
    remove_journal(journal)?;
    Ok(if existed { Written::Replaced } else { Written::Created })
}

/// Finishes a rewrite of `path` that a crash interrupted: when `journal` holds one for this
/// very path, its content is written over the file and the journal removed. Returns whether
/// there was one to finish. A journal for another path (the workspace moved) is left alone.
pub fn recover(path: &Path, journal: &Path) -> io::Result<bool> {
    let Some(bytes) = pending(path, journal) else {
        return Ok(false);
    };
    overwrite(path, &bytes)?;
    remove_journal(journal)?;
    Ok(true)
}

/// The text a rewrite of `path` now in progress (or cut short by a crash) is writing, from
/// its journal: what a reader should take instead of the file, which may be half written.
pub fn pending(path: &Path, journal: &Path) -> Option<Vec<u8>> {
    let record = fs::read(journal).ok()?;
    let split = record.iter().position(|b| *b == b'\n')?;
    (record[..split] == *path.as_os_str().as_encoded_bytes()).then(|| record[split + 1..].to_vec())
}

/// Writes `bytes` from the start of the file, cuts it there and fsyncs it. Never through a
/// symlink: a link in the file's place is refused (`ELOOP`).
fn overwrite(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o666)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    write_all(&mut file, path, bytes)?;
    set_len(&file, path, bytes.len() as u64)?;
    sync_all(&file, path)
}

fn remove_journal(journal: &Path) -> io::Result<()> {
    match remove_file(journal) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // Best effort: a journal that comes back after a power cut replays the same bytes.
    if let Some(dir) = journal.parent() {
        let _ = sync_dir(dir);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_keeps_its_inode_and_a_left_journal_is_replayed_once_for_its_own_file() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let (file, journal) = (dir.path().join("HEARTBEAT.md"), dir.path().join("j"));
        assert_eq!(
            write_in_place(&file, &journal, b"- a long first line\n").unwrap(),
            Written::Created
        );
        let ino = fs::metadata(&file).unwrap().ino();
        assert_eq!(write_in_place(&file, &journal, b"- b\n").unwrap(), Written::Replaced);
        assert_eq!(fs::read(&file).unwrap(), b"- b\n");
        assert_eq!(fs::metadata(&file).unwrap().ino(), ino, "the same inode");
        assert!(!journal.exists());

        // A crash between the journal and the end of the rewrite: the file is torn.
        fs::write(&file, b"- c\nng first line\n").unwrap();
        let mut record = file.as_os_str().as_encoded_bytes().to_vec();
        record.extend_from_slice(b"\n- c\n");
        fs::write(&journal, &record).unwrap();
        assert!(
            !recover(&dir.path().join("other.md"), &journal).unwrap(),
            "not its file"
        );
        assert!(recover(&file, &journal).unwrap());
        assert_eq!(fs::read(&file).unwrap(), b"- c\n");
        assert!(!recover(&file, &journal).unwrap(), "once");
        assert_eq!(fs::metadata(&file).unwrap().ino(), ino);
    }

    #[test]
    fn a_symlink_in_the_files_place_is_refused_and_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("approvals.json");
        fs::write(&target, b"{}").unwrap();
        let file = dir.path().join("HEARTBEAT.md");
        std::os::unix::fs::symlink(&target, &file).unwrap();
        assert!(write_in_place(&file, &dir.path().join("j"), b"- x\n").is_err());
        assert_eq!(fs::read(&target).unwrap(), b"{}");
    }
}
