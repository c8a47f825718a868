//! Where a read-only command's files are: [`Reach`] says whether every file the command may
//! open — each word [`options::files`] finds — lies inside the workspace.

use std::path::{Component, Path, PathBuf};

use super::{options, SimpleCommand};

/// Where a command's files may be: the workspace, with the command's folder, both with
/// their symlinks resolved once for all the simple commands of a line.
pub struct Reach {
    /// `None` when the workspace cannot be resolved or the folder lies outside it: then no
    /// argument counts as inside.
    inside: Option<(PathBuf, PathBuf)>,
}

impl Reach {
    pub fn new(cwd: &Path, workspace: &Path) -> Self {
        let inside = canonical(workspace)
            .zip(canonical(cwd))
            .filter(|(root, cwd)| cwd.starts_with(root));
        Self { inside }
    }

    /// Whether every file `c` may open lies inside the workspace, resolved from the
    /// command's folder with symbolic links followed: its operands and the files its options
    /// name. A `~` fails the check.
    pub fn reads_inside(&self, c: &SimpleCommand) -> bool {
        let Some((root, cwd)) = &self.inside else {
            return false;
        };
        let Ok(files) = options::files(c) else {
            return false;
        };
        files
            .paths
            .iter()
            .all(|word| inside(root, cwd, word).is_some_and(|real| !(files.no_folders && real.is_dir())))
    }
}

/// `word`, an argument, as the program will open it from `cwd`, if that is inside `root`.
fn inside(root: &Path, cwd: &Path, word: &str) -> Option<PathBuf> {
    if word.starts_with('~') {
        return None;
    }
    canonical(&cwd.join(word)).filter(|real| real.starts_with(root))
}

/// `p` with `.` and `..` resolved, and symbolic links too for the longest part that exists.
fn canonical(p: &Path) -> Option<PathBuf> {
    let mut lexical = PathBuf::new();
    for part in p.components() {
        match part {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return Some(rest.iter().rev().fold(real, |acc: PathBuf, part| acc.join(part)));
        }
        rest.push(existing.file_name()?.to_owned());
        existing = existing.parent()?;
    }
}
