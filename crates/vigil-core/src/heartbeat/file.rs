//! `HEARTBEAT.md`: the checks the user wants run on every heartbeat. Read fresh for every
//! run. A file with nothing but blank lines, headings, empty list items and comments is
//! *effectively empty*: interval runs skip the model call (seed 002 §6). A missing file is
//! not empty: the prompt says "if it exists", and the model decides. The routines' task block
//! ([`crate::routines::store`]) is left out: the scheduler hands due routines over itself.

use std::path::{Path, PathBuf};

/// The file name in the workspace (OpenClaw's `DEFAULT_HEARTBEAT_FILENAME`).
pub const HEARTBEAT_FILE: &str = "HEARTBEAT.md";

/// Longest file passed to the model; a longer one is cut with a note.
const MAX_CHARS: usize = 20_000;

/// What the file held at the moment it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeartbeatFile {
    Missing,
    /// Present, but nothing in it is a task.
    EffectivelyEmpty,
    /// The file's text (cut to a sane length).
    Tasks(String),
}

/// Why the file could not be used. The message is for the user; the heartbeat keeps going.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeartbeatFileError {
    /// Permissions, a folder in its place, a disk error. Recover: fix the file.
    #[error("could not read {}: {source}", .path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Not UTF-8 text (or holds NUL bytes). Recover: save it as plain text.
    #[error("{} is not a text file (it has binary or non-UTF-8 content); save it as plain UTF-8 text", .path.display())]
    Binary { path: PathBuf },
}

/// Reads `<workspace>/HEARTBEAT.md` now.
pub fn read(workspace: &Path) -> Result<HeartbeatFile, HeartbeatFileError> {
    let path = workspace.join(HEARTBEAT_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HeartbeatFile::Missing),
        Err(source) => return Err(HeartbeatFileError::Unreadable { path, source }),
    };
    if bytes.contains(&0) {
        return Err(HeartbeatFileError::Binary { path });
    }
    let text = String::from_utf8(bytes).map_err(|_| HeartbeatFileError::Binary { path: path.clone() })?;
    // The routines' JSON block reaches the model as `## Due Tasks`, not as text to follow.
    let text = crate::routines::store::strip_block(&text);
    if is_effectively_empty(&text) {
        return Ok(HeartbeatFile::EffectivelyEmpty);
    }
    let text = text.trim();
    let mut body: String = text.chars().take(MAX_CHARS).collect();
    if body.len() < text.len() {
        body.push_str(&format!("\n[… {HEARTBEAT_FILE} is longer; the rest was cut to fit]"));
    }
    Ok(HeartbeatFile::Tasks(body))
}

/// True when no line is a task: only blank lines, Markdown headings (`# …`), empty list
/// items (`-`, `* [ ]`), and comments (`<!-- … -->`, across lines too).
pub fn is_effectively_empty(text: &str) -> bool {
    strip_comments(text).lines().all(|line| {
        let line = line.trim();
        line.is_empty() || is_heading(line) || is_empty_list_item(line)
    })
}

/// Removes `<!-- … -->`; an unclosed comment runs to the end (as Markdown renders it).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start + 4..].find("-->") {
            Some(end) => {
                // Keep the line breaks so line structure stays.
                let inner = &rest[start..start + 4 + end + 3];
                out.extend(inner.chars().filter(|&c| c == '\n'));
                rest = &rest[start + 4 + end + 3..];
            }
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// `#`…`######` followed by a space or nothing.
fn is_heading(line: &str) -> bool {
    let hashes = line.chars().take_while(|&c| c == '#').count();
    (1..=6).contains(&hashes) && line[hashes..].chars().next().is_none_or(char::is_whitespace)
}

/// `-`, `*`, `+`, `1.` with nothing after it, or only an empty checkbox (`[ ]`, `[x]`).
fn is_empty_list_item(line: &str) -> bool {
    let rest = if let Some(r) = line.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        match line[digits..].strip_prefix(['.', ')']) {
            Some(r) if digits > 0 => r,
            _ => return false,
        }
    };
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return false;
    }
    let rest = rest.trim();
    rest.is_empty() || matches!(rest, "[ ]" | "[x]" | "[X]" | "[]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openclaws_template_is_effectively_empty() {
        let template = "# HEARTBEAT.md\n\n# Keep this file empty (or with only comments) to skip heartbeat API calls.\n# Add tasks below when you want the agent to check something periodically.\n";
        assert!(is_effectively_empty(template));
    }

    #[test]
    fn blank_headings_empty_items_and_comments_are_empty() {
        for text in [
            "",
            "   \n\t\n",
            "## Checks\n### Later\n",
            "-\n* \n+\n- [ ]\n* [x]\n1.\n2)\n",
            "<!-- check the disk -->\n",
            "# Tasks\n<!--\n- check disk usage\n- look at the logs\n-->\n\n- [ ]\n",
            "<!-- unclosed comment\n- a task inside it\n",
        ] {
            assert!(is_effectively_empty(text), "{text:?}");
        }
    }

    #[test]
    fn any_real_line_is_a_task() {
        for text in [
            "- if disk usage is over 80 %, tell me\n",
            "# Checks\ncheck the logs",
            "#hashtag is not a heading",
            "- [ ] water the plants",
            "1. back up notes",
            "-- dashes are text",
            "<!-- c --> but this is text",
            "####### seven hashes is text",
        ] {
            assert!(!is_effectively_empty(text), "{text:?}");
        }
    }

    #[test]
    fn missing_is_not_empty_and_bad_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), HeartbeatFile::Missing);
        let path = dir.path().join(HEARTBEAT_FILE);
        std::fs::write(&path, "# HEARTBEAT.md\n\n").unwrap();
        assert_eq!(read(dir.path()).unwrap(), HeartbeatFile::EffectivelyEmpty);
        std::fs::write(&path, "\n- check disk\n").unwrap();
        assert_eq!(read(dir.path()).unwrap(), HeartbeatFile::Tasks("- check disk".into()));
        std::fs::write(&path, b"\x89PNG\r\n\x1a\n\0\0").unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(err.contains("not a text file"), "{err}");
        std::fs::write(&path, b"caf\xe9").unwrap();
        assert!(matches!(read(dir.path()), Err(HeartbeatFileError::Binary { .. })));
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let err = read(dir.path()).unwrap_err().to_string();
        assert!(err.starts_with("could not read"), "{err}");
    }
}
