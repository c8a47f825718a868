//! A file trigger's evidence: which paths changed, and for small text files what changed in
//! them, as a unified diff against the copy seen before. Bounded everywhere: the copies kept,
//! each diff, the whole evidence.
//!
//! Must never: keep a copy of a file over [`MAX_FILE`] or more than [`MAX_KEPT`] in all;
//! put binary bytes into the evidence.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A text file is diffed when it is at most this big.
pub const MAX_FILE: u64 = 64 * 1024;
/// The copies kept for diffs, in all.
pub const MAX_KEPT: usize = 4 * 1024 * 1024;
/// One file's diff in the evidence.
pub const MAX_DIFF: usize = 2 * 1024;
/// The whole evidence of one fire.
pub const MAX_EVIDENCE: usize = 8 * 1024;

/// The last copy of each small text file a trigger watches.
#[derive(Default)]
pub struct Copies {
    files: HashMap<PathBuf, String>,
    kept: usize,
}

fn read_text(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

impl Copies {
    /// Remembers `path` as it is now (when small, text, and room is left).
    pub fn keep(&mut self, path: &Path) {
        if let Some(text) = read_text(path) {
            self.put(path, text);
        }
    }

    fn put(&mut self, path: &Path, text: String) {
        if let Some(old) = self.files.remove(path) {
            self.kept -= old.len();
        }
        if self.kept + text.len() <= MAX_KEPT {
            self.kept += text.len();
            self.files.insert(path.to_path_buf(), text);
        }
    }

    /// What happened to `path` since it was last seen, in a line and a bounded diff; its
    /// copy is brought up to date.
    pub fn change(&mut self, path: &Path, shown: &str) -> String {
        let before = self.files.get(path).cloned();
        let now = read_text(path);
        let exists = path.exists();
        let text = match (&before, &now, exists) {
            (_, _, false) => format!("{shown}: removed"),
            (Some(a), Some(b), true) if a == b => format!("{shown}: written, same content"),
            (Some(a), Some(b), true) => {
                let diff = similar::TextDiff::from_lines(a.as_str(), b.as_str())
                    .unified_diff()
                    .context_radius(2)
                    .to_string();
                format!("{shown}: changed\n{}", super::check::cut(&diff, MAX_DIFF))
            }
            (None, Some(b), true) => {
                let head: String = b.lines().take(20).collect::<Vec<_>>().join("\n");
                format!(
                    "{shown}: created or changed (no earlier copy); it begins:\n{}",
                    super::check::cut(&head, MAX_DIFF)
                )
            }
            (_, None, true) => format!("{shown}: changed (not a small text file; no diff)"),
        };
        match now {
            Some(t) => self.put(path, t),
            None => {
                if let Some(old) = self.files.remove(path) {
                    self.kept -= old.len();
                }
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_text_file_shows_its_diff_and_a_big_one_only_that_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.md");
        std::fs::write(&f, "one\ntwo\n").unwrap();
        let mut c = Copies::default();
        c.keep(&f);
        std::fs::write(&f, "one\nthree\n").unwrap();
        let e = c.change(&f, "a.md");
        assert!(e.contains("-two") && e.contains("+three"), "{e}");
        std::fs::write(&f, "x".repeat(MAX_FILE as usize + 1)).unwrap();
        assert!(c.change(&f, "a.md").contains("no diff"));
        std::fs::remove_file(&f).unwrap();
        assert_eq!(c.change(&f, "a.md"), "a.md: removed");
    }
}
