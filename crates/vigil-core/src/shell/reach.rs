//! Where a read-only command's files are: [`Reach`] says whether every file the command may
//! open — each word [`options::files`] finds, and each name its globs become — lies inside
//! the workspace, as the kernel will resolve it.
//!
//! Must never: take a path at its face: `..` is taken from the real folder it follows
//! (`link/..` is the folder above the link's target, not the folder the link is in), and a
//! name that does not exist yet counts as what it says only while no `..` comes after it.

use std::path::{Path, PathBuf};

use super::resolve::resolve;
use super::{glob, options, SimpleCommand};

/// Where a command's files may be: the workspace, with the command's folder, both with
/// their symlinks resolved once for all the simple commands of a line.
pub struct Reach {
    /// `None` when the workspace cannot be resolved or the folder lies outside it: then no
    /// argument counts as inside.
    inside: Option<(PathBuf, PathBuf)>,
}

impl Reach {
    pub fn new(cwd: &Path, workspace: &Path) -> Self {
        let real = |p: &Path| resolve(Path::new("/"), &std::path::absolute(p).ok()?, Path::new("/"));
        let inside = real(workspace)
            .zip(real(cwd))
            .filter(|(root, cwd)| cwd.starts_with(root));
        Self { inside }
    }

    /// Whether every file `c` may open lies inside the workspace, resolved from the
    /// command's folder with symbolic links followed: its operands and the files its options
    /// name, and the names each of its globs expands to now. A `~`, a link that leads
    /// nowhere, and a `..` that steps out of the workspace fail the check.
    pub fn reads_inside(&self, c: &SimpleCommand) -> bool {
        let Some((root, cwd)) = &self.inside else {
            return false;
        };
        let Ok(files) = options::files(c) else {
            return false;
        };
        c.patterns[1..]
            .iter()
            .flatten()
            .all(|p| glob::stays_inside(p, root, cwd))
            && files
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
    resolve(cwd, Path::new(word), root).filter(|real| real.starts_with(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_dot_is_taken_from_the_real_folder() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let ws = top.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(top.join("d")).unwrap();
        std::os::unix::fs::symlink(top.join("d"), ws.join("out")).unwrap();
        std::os::unix::fs::symlink(top.join("gone"), ws.join("dangling")).unwrap();
        let at = |p: &str| resolve(&ws, Path::new(p), &ws);
        assert_eq!(at("sub/../x"), Some(ws.join("x")));
        assert_eq!(at("out/../x"), Some(top.join("x")), "above the link's target");
        assert_eq!(at("sub/../../ws/x"), None, "left and came back");
        assert_eq!(at("new/../x"), None, "`..` after a name that does not exist");
        assert_eq!(at("new/x"), Some(ws.join("new/x")));
        assert_eq!(at("./sub/./y"), Some(ws.join("sub/y")));
        assert_eq!(at("dangling"), None);
        assert_eq!(at("out/x"), Some(top.join("d/x")));
    }
}
