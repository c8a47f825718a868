//! File helpers the file tools share: recognising binary files, and turning I/O errors into
//! sentences the model can act on. Their writes go through [`crate::durable::write_atomic`].
use std::io;
use std::path::Path;

use super::path::ResolvedPath;
use super::truncate::group_digits;

/// How much of a file is sniffed for NUL bytes, as git and grep do.
pub const SNIFF_BYTES: usize = 8 * 1024;

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

/// The largest file [`read_text`] loads whole (`edit` works on the whole text and its diff).
pub const MAX_WHOLE_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The whole of a text file, or a message saying why it cannot be had.
pub fn read_text(path: &ResolvedPath) -> Result<String, String> {
    let mut file = path.open().map_err(|e| io_message("read", path, &e))?;
    let meta = file.metadata().map_err(|e| io_message("read", path, &e))?;
    if meta.is_dir() {
        return Err(format!("{} is a folder, not a file.", path.display));
    }
    if meta.len() > MAX_WHOLE_FILE_BYTES {
        return Err(format!(
            "{} is {} bytes, more than the {} bytes `edit` loads whole. Read it by window with `read` (offset, limit), and change it with a command (sed -i, a script) instead.",
            path.display,
            group_digits(meta.len()),
            group_digits(MAX_WHOLE_FILE_BYTES)
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    io::Read::read_to_end(&mut file, &mut bytes).map_err(|e| io_message("read", path, &e))?;
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

/// For a write to the workspace's `HEARTBEAT.md`: refuses a change to its `## Tasks` block
/// (routines change through the routine tools, which validate and announce them); the
/// checks above the block are the agent's to write.
pub fn keep_task_block(path: &ResolvedPath, workspace: &Path, new_text: &str) -> Result<(), String> {
    let heartbeat = workspace
        .canonicalize()
        .map(|w| w.join(crate::workspace::heartbeat_file::HEARTBEAT_FILE))
        .is_ok_and(|h| h == path.abs);
    if !heartbeat {
        return Ok(());
    }
    let mut current = String::new();
    if let Ok(mut file) = path.open() {
        let _ = io::Read::read_to_string(&mut file, &mut current);
    }
    if crate::routines::store::same_tasks(&current, new_text) {
        return Ok(());
    }
    Err(format!(
        "{} was not changed: its ## Tasks block holds the routines, which change only through routine_add, routine_update and routine_remove (they check schedules, zones, the limit and duplicates). Keep the block exactly as it is and edit only the checks above it, or use those tools.",
        path.display
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_binary_kinds_are_named() {
        assert_eq!(sniff_kind(b"\x89PNG\r\n\x1a\n...."), Some("a PNG image"));
        assert_eq!(sniff_kind(b"RIFF\0\0\0\0WEBPVP8 "), Some("a WebP image"));
        assert_eq!(sniff_kind(b"hello"), None);
    }
}
