//! `HEARTBEAT.md`, its one owner: the checks the user wants run on every heartbeat. Read fresh for every
//! run. A file with nothing but blank lines, headings, empty list items and comments is
//! *effectively empty*: interval runs skip the model call (seed 002 §6). A missing file
//! counts as empty too: an install nobody has set up must not pay for a model call every
//! 30 minutes (the seed's "if it exists" prompt is still what event-driven runs say). The
//! routines' task block ([`crate::routines::store`]) is left out: the scheduler hands due
//! routines over itself, so a file holding only the block is empty for the interval poll.
//!
//! On the first start the seed's comment-only [`TEMPLATE`] is written once
//! ([`write_template_once`]), so the user finds where checks go.
//!
//! Must never: overwrite or re-create the user's file (the template is offered once per data
//! directory, remembered by a marker there, not in the workspace).

use std::path::{Path, PathBuf};

/// The file name in the workspace (OpenClaw's `DEFAULT_HEARTBEAT_FILENAME`).
pub const HEARTBEAT_FILE: &str = "HEARTBEAT.md";

/// Longest file passed to the model; a longer one is cut with a note.
const MAX_CHARS: usize = 20_000;

/// Seed 002 §6's `HEARTBEAT.md`, word for word, then how a line becomes a machine check
/// (issue 33): only comment lines, so it is effectively empty and an interval heartbeat makes
/// no model call until the user adds a check.
pub const TEMPLATE: &str = "# HEARTBEAT.md\n\n# Keep this file empty (or with only comments) to skip heartbeat API calls.\n# Add tasks below when you want the agent to check something periodically.\n#\n# A task the machine can check costs no tokens: write it as a check, for example\n#   - check `df --output=pcent / | tail -1` when > 80: the disk is almost full\n# Vigil runs the command (read-only, once you approve it in Routines) and tells you\n# only when the condition turns true: `when nonzero` (the default), `when changed`,\n# or a bound on the first number in its output (`> 80`, `<= 5`).\n";

/// The marker, in the data directory, that the template was offered: its presence means
/// "never write it again", whatever became of the file since.
pub const TEMPLATE_MARKER: &str = "heartbeat/template-written";

/// What the file held at the moment it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeartbeatFile {
    /// No file: as [`Self::EffectivelyEmpty`] for the interval poll.
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

impl HeartbeatFile {
    /// Whether an interval run has nothing to check (seed 002 §6's skip).
    pub fn is_empty(&self) -> bool {
        matches!(self, HeartbeatFile::Missing | HeartbeatFile::EffectivelyEmpty)
    }
}

/// Writes [`TEMPLATE`] to `<workspace>/HEARTBEAT.md` on the first start of `data_dir`, and
/// never again: once the marker is there, a file the user emptied stays empty and a file
/// the user deleted stays deleted (a missing file costs nothing, and the user removed it on
/// purpose). A file already there (an upgrade, the user's own) is left alone and the marker
/// written. Returns whether the template was written.
pub fn write_template_once(workspace: &Path, data_dir: &Path) -> std::io::Result<bool> {
    let marker = data_dir.join(TEMPLATE_MARKER);
    if std::fs::symlink_metadata(&marker).is_ok() {
        return Ok(false);
    }
    let path = workspace.join(HEARTBEAT_FILE);
    // `create_new`: a file that appears meanwhile (the user, another Vigil) is never replaced.
    let written = crate::durable::create_new(&path, TEMPLATE.as_bytes())?;
    if let Some(dir) = marker.parent() {
        crate::durable::create_private_dir_all(dir)?;
    }
    let note = format!(
        "The {HEARTBEAT_FILE} template was offered once, to {}{}; it is not written again.\n",
        path.display(),
        if written { "" } else { " (a file was already there)" }
    );
    crate::durable::write_atomic(&marker, note.as_bytes())?;
    Ok(written)
}

/// Workspaces whose file is held for the user's Trust (`routines::store::trust`): replaced
/// while a sandboxed command ran, so its checklist is not the user's for sure. Process-wide,
/// as the file is; a `std` lock held for a lookup only.
static HELD: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Marks `workspace`'s file held (its checklist is not read) or released.
pub fn set_held(workspace: &Path, held: bool) {
    let mut list = HELD.lock().unwrap_or_else(|p| p.into_inner());
    list.retain(|w| w != workspace);
    if held {
        list.push(workspace.to_path_buf());
    }
}

fn is_held(workspace: &Path) -> bool {
    HELD.lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|w| w == workspace)
}

/// Reads `<workspace>/HEARTBEAT.md` now. While it is held for the user's Trust, its checks
/// are not given to the heartbeat: it reads as empty.
pub fn read(workspace: &Path) -> Result<HeartbeatFile, HeartbeatFileError> {
    use crate::beneath::BeneathError;
    if is_held(workspace) {
        return Ok(HeartbeatFile::EffectivelyEmpty);
    }
    let path = workspace.join(HEARTBEAT_FILE);
    // Beneath the workspace: a symlink in its place is refused, never followed.
    let bytes = match crate::beneath::read(workspace, HEARTBEAT_FILE) {
        Ok(b) => b,
        Err(BeneathError::Missing) => return Ok(HeartbeatFile::Missing),
        Err(BeneathError::Io(source)) => return Err(HeartbeatFileError::Unreadable { path, source }),
        Err(link @ BeneathError::Link) => {
            return Err(HeartbeatFileError::Unreadable {
                path,
                source: std::io::Error::other(link.to_string()),
            })
        }
    };
    if bytes.contains(&0) {
        return Err(HeartbeatFileError::Binary { path });
    }
    let text = String::from_utf8(bytes).map_err(|_| HeartbeatFileError::Binary { path: path.clone() })?;
    // The routines' JSON block reaches the model as `## Due Tasks`, not as text to follow.
    let text = crate::routines::block::strip_block(&text);
    // Its machine checks (`- check `…``) run without the model (issue 33): not for it.
    let text = super::checklist::without_checks(&text);
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
    fn openclaws_template_is_ours_and_effectively_empty() {
        let seed = "# HEARTBEAT.md\n\n# Keep this file empty (or with only comments) to skip heartbeat API calls.\n# Add tasks below when you want the agent to check something periodically.\n";
        // The seed's words first, then how a line becomes a check (issue 33); all comments.
        assert!(TEMPLATE.starts_with(seed), "{TEMPLATE}");
        assert!(TEMPLATE.contains("- check `df --output=pcent / | tail -1` when > 80"));
        assert!(is_effectively_empty(TEMPLATE));
        assert!(
            super::super::checklist::checks(TEMPLATE).is_empty(),
            "the example is not itself a check"
        );
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
    fn a_file_with_only_the_task_block_is_empty() {
        let routine = crate::routines::Routine::new("r1".into(), "Drink water".into(), 0);
        let entries = [crate::routines::store::Entry::new(routine)];
        for before in ["", TEMPLATE, "# Checks\n<!-- none yet -->\n"] {
            let text = crate::routines::store::render(before, &entries, &Default::default());
            assert!(text.contains("\"Drink water\""), "{text}");
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(HEARTBEAT_FILE), &text).unwrap();
            assert_eq!(read(dir.path()).unwrap(), HeartbeatFile::EffectivelyEmpty, "{text}");
        }
    }

    #[test]
    fn the_template_is_written_once_per_data_dir() {
        let data = tempfile::tempdir().unwrap();
        let ws = data.path().join("workspace");
        std::fs::create_dir(&ws).unwrap();
        let path = ws.join(HEARTBEAT_FILE);
        assert!(write_template_once(&ws, data.path()).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), TEMPLATE);
        assert!(data.path().join(TEMPLATE_MARKER).exists());
        // Emptied, then deleted: neither is undone by a later start.
        std::fs::write(&path, "").unwrap();
        assert!(!write_template_once(&ws, data.path()).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "");
        std::fs::remove_file(&path).unwrap();
        assert!(!write_template_once(&ws, data.path()).unwrap());
        assert!(!path.exists());
        // A file already there on the first start is the user's: kept, and the offer spent.
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join(HEARTBEAT_FILE), "- check disk\n").unwrap();
        assert!(!write_template_once(data.path(), data.path()).unwrap());
        assert_eq!(
            std::fs::read_to_string(data.path().join(HEARTBEAT_FILE)).unwrap(),
            "- check disk\n"
        );
        assert!(data.path().join(TEMPLATE_MARKER).exists());
    }

    #[test]
    fn missing_counts_as_empty_and_bad_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()).unwrap(), HeartbeatFile::Missing);
        assert!(HeartbeatFile::Missing.is_empty() && HeartbeatFile::EffectivelyEmpty.is_empty());
        assert!(!HeartbeatFile::Tasks("- x".into()).is_empty());
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
