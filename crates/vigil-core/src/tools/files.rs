//! File helpers the file tools share: the one atomic whole-file write, recognising binary
//! files, and turning I/O errors into sentences the model can act on.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use super::path::ResolvedPath;
use super::truncate::group_digits;

/// How much of a file is sniffed for NUL bytes, as git and grep do.
pub const SNIFF_BYTES: usize = 8 * 1024;

/// Whether [`write_atomic`] made a new file or replaced one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    Created,
    Replaced,
}

/// Replaces `path` with `bytes` so that a crash leaves either the old file or the new one:
/// a temp file in the same folder (rename is only atomic within a file system), fsync,
/// rename over the target, then fsync the folder so the rename itself survives a crash.
///
/// An existing file keeps its permission bits; a new one gets the usual umask-filtered
/// `0o666`, like any other editor would give it. A read-only file is refused, not replaced.
/// Ownership and hard links are not preserved: the result is a new inode owned by us.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<Written> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path has no parent folder"))?;
    let existing = match fs::metadata(path) {
        Ok(meta) => Some(meta.permissions()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if existing.as_ref().is_some_and(|p| p.readonly()) {
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, "the file is read-only"));
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix(crate::leftovers::TEMP_PREFIX);
    #[cfg(unix)]
    if existing.is_none() {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    // Dropped on any early return, which deletes the temp file: nothing is left behind.
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if let Some(perms) = &existing {
        tmp.as_file().set_permissions(perms.clone())?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(match existing {
        Some(_) => Written::Replaced,
        None => Written::Created,
    })
}

#[cfg(unix)]
fn sync_dir(dir: &Path) {
    // Best effort: the data is already safe in the renamed file; this only makes the new
    // name durable, and some file systems refuse to fsync a folder.
    if let Ok(d) = fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) {}

/// What a binary file looks like, from its first bytes; `None` when not recognised.
pub fn sniff_kind(head: &[u8]) -> Option<&'static str> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"%PDF", "a PDF document"),
        (
            b"PK\x03\x04",
            "a ZIP archive (or a zip-based format like .docx, .xlsx, .jar)",
        ),
        (b"\x1f\x8b", "a gzip archive"),
        (b"\x7fELF", "an ELF executable or library"),
        (b"MZ", "a Windows executable"),
        (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
        (b"\xca\xfe\xba\xbe", "a Mach-O universal binary or Java class"),
        (b"\0asm", "a WebAssembly module"),
        (b"SQLite format 3\0", "an SQLite database"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
        (b"\xff\xfe", "UTF-16 text (only UTF-8 is supported)"),
        (b"\xfe\xff", "UTF-16 text (only UTF-8 is supported)"),
    ];
    if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        return Some("a WebP image");
    }
    MAGIC
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map(|&(_, kind)| kind)
}

/// The refusal for a file that is not UTF-8 text.
pub fn binary_message(path: &ResolvedPath, size: u64, head: &[u8], detail: &str) -> String {
    let kind = sniff_kind(head).unwrap_or(detail);
    format!(
        "{} is not a text file ({} bytes; {kind}). Only UTF-8 text files can be read or edited.",
        path.display,
        group_digits(size)
    )
}

/// Why `head` is not text: NUL bytes, or `None` if it may be.
pub fn nul_in(head: &[u8]) -> Option<&'static str> {
    head.contains(&0).then_some("it contains NUL bytes, so it looks binary")
}

/// An I/O failure on `path` as a sentence for the model, naming the file.
pub fn io_message(action: &str, path: &ResolvedPath, e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => format!("File not found: {} (looked for {}).", path.display, path.abs.display()),
        io::ErrorKind::PermissionDenied => {
            format!("Permission denied: could not {action} {} ({e}).", path.display)
        }
        _ => format!("Could not {action} {}: {e}.", path.display),
    }
}

/// The whole of a text file, or a message saying why it cannot be had.
pub fn read_text(path: &ResolvedPath) -> Result<String, String> {
    let meta = fs::metadata(&path.abs).map_err(|e| io_message("read", path, &e))?;
    if meta.is_dir() {
        return Err(format!("{} is a folder, not a file.", path.display));
    }
    let bytes = fs::read(&path.abs).map_err(|e| io_message("read", path, &e))?;
    let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some(why) = nul_in(head) {
        return Err(binary_message(path, meta.len(), head, why));
    }
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        let head = &bytes[..bytes.len().min(SNIFF_BYTES)];
        binary_message(
            path,
            meta.len(),
            head,
            &format!("not valid UTF-8 at byte {}", group_digits(at as u64)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".vigil-tmp-"))
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

    #[test]
    fn known_binary_kinds_are_named() {
        assert_eq!(sniff_kind(b"\x89PNG\r\n\x1a\n...."), Some("a PNG image"));
        assert_eq!(sniff_kind(b"RIFF\0\0\0\0WEBPVP8 "), Some("a WebP image"));
        assert_eq!(sniff_kind(b"hello"), None);
    }
}
