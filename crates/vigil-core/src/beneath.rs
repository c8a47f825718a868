//! # beneath
//!
//! Opens a file *beneath* a folder: the kernel resolves the name relative to the folder's
//! handle and refuses a symlink anywhere in it or a `..` out of it (`openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, Linux 5.6+; on an older kernel, or elsewhere, a
//! single name opened with `O_NOFOLLOW`). For the files that steer every run (the prompt
//! files, `HEARTBEAT.md`): a symlink planted in their place (into Vigil's data folder, say)
//! is refused, not followed, and no race between a check and the open can swap it.
//!
//! Must never: follow a symlink, or leave the folder.

use std::io::Read;
use std::path::Path;

/// Why a file beneath a folder could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    /// It is not there: treat as absent.
    #[error("not found")]
    Missing,
    /// A symlink (or a path leaving the folder): refused. The user replaces the link with the
    /// file itself.
    #[error("it is a symbolic link (or leads out of its folder); only a plain file is read")]
    Link,
    /// Any other failure (permissions, a folder in its place).
    #[error("{0}")]
    Io(std::io::Error),
}

/// Reads `name` (a relative path) beneath `root`.
pub fn read(root: &Path, name: &str) -> Result<Vec<u8>, BeneathError> {
    let mut file = open(root, name)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(BeneathError::Io)?;
    Ok(bytes)
}

/// Opens `name` beneath `root` for reading.
pub fn open(root: &Path, name: &str) -> Result<std::fs::File, BeneathError> {
    use rustix::fs::{Mode, OFlags};
    use rustix::io::Errno;
    let classify = |e: Errno| match e {
        Errno::NOENT => BeneathError::Missing,
        Errno::LOOP | Errno::XDEV => BeneathError::Link,
        e => BeneathError::Io(e.into()),
    };
    let dir = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(classify)?;
    let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY;
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::ResolveFlags;
        let how = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(&dir, name, flags, Mode::empty(), how) {
            Ok(fd) => return Ok(fd.into()),
            Err(Errno::NOSYS) => {} // a kernel before 5.6: the single-name way below
            Err(e) => return Err(classify(e)),
        }
    }
    if name.contains('/') {
        return Err(BeneathError::Link);
    }
    rustix::fs::openat(&dir, name, flags | OFlags::NOFOLLOW, Mode::empty())
        .map(Into::into)
        .map_err(classify)
}

/// Opens `abs` (a path with every symlink already resolved, checked by the caller) without
/// following a symlink anywhere on it: what opens is what lies at that path now, or the open
/// fails with `ELOOP` (a folder on the way swapped for a link since the check). On a kernel
/// before 5.6, only the last name is kept from being a link.
pub fn open_exact(abs: &Path, flags: rustix::fs::OFlags) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    // openat2 refuses any flag beside `O_PATH` but the few that mean something with it.
    let flags = match flags.contains(OFlags::PATH) {
        true => flags | OFlags::CLOEXEC,
        false => flags | OFlags::CLOEXEC | OFlags::NOCTTY,
    };
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::ResolveFlags;
        let how = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        match rustix::fs::openat2(rustix::fs::CWD, abs, flags, Mode::empty(), how) {
            Err(rustix::io::Errno::NOSYS) => {}
            done => return done.map_err(Into::into),
        }
    }
    rustix::fs::open(abs, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_file_is_read_and_a_link_or_an_escape_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (root, outside) = (dir.path().join("ws"), dir.path().join("secret"));
        std::fs::create_dir(&root).unwrap();
        std::fs::write(&outside, "key").unwrap();
        std::fs::write(root.join("MEMORY.md"), "remember").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("USER.md")).unwrap();
        std::os::unix::fs::symlink("MEMORY.md", root.join("AGENTS.md")).unwrap();
        assert_eq!(read(&root, "MEMORY.md").unwrap(), b"remember");
        assert!(matches!(read(&root, "USER.md"), Err(BeneathError::Link)));
        assert!(
            matches!(read(&root, "AGENTS.md"), Err(BeneathError::Link)),
            "even a link inside"
        );
        assert!(matches!(read(&root, "../secret"), Err(BeneathError::Link)));
        assert!(matches!(read(&root, "SKILLS.md"), Err(BeneathError::Missing)));
    }
}
