//! Which folders the file triggers need watched and which routine a changed path belongs
//! to: each path or glob resolved against the workspace (or taken as it is inside a folder
//! the user added), the folder before its first wildcard watched.
//!
//! Must never: watch a path outside the workspace and the user's folders, nor fire on
//! `HEARTBEAT.md` (Vigil writes it on every run: a trigger on it would fire itself).

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use glob::{MatchOptions, Pattern};
use vigil_protocol::Trigger;

use super::shape::DEFAULT_DEBOUNCE_MS;
use crate::routines::Routine;

/// One routine's file trigger, resolved.
#[derive(Debug, Clone)]
pub struct FileWatch {
    pub id: String,
    pub patterns: Vec<Pattern>,
    /// Folders to watch, and whether their subfolders too.
    pub dirs: Vec<(PathBuf, bool)>,
    pub debounce: Duration,
    /// The paths as written, for "Watching `logs/`".
    pub shown: Vec<String>,
}

const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

impl FileWatch {
    /// Whether `path` (absolute) is one of this trigger's.
    pub fn matches(&self, path: &Path) -> bool {
        self.patterns.iter().any(|p| p.matches_path_with(path, OPTIONS))
    }
}

fn has_meta(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// The file triggers of live routines, resolved; routines whose paths cannot be watched
/// come back with the reason instead.
pub fn file_watches(
    routines: &[Routine],
    workspace: &Path,
    folders: &[PathBuf],
) -> (Vec<FileWatch>, Vec<(String, String)>) {
    let mut watches = Vec::new();
    let mut problems = Vec::new();
    for r in routines.iter().filter(|r| r.live()) {
        let Some(Trigger::File { paths, debounce_ms }) = &r.trigger else {
            continue;
        };
        let mut w = FileWatch {
            id: r.id.clone(),
            patterns: Vec::new(),
            dirs: Vec::new(),
            debounce: Duration::from_millis(u64::from(debounce_ms.unwrap_or(DEFAULT_DEBOUNCE_MS))),
            shown: paths.clone(),
        };
        let mut problem = None;
        for p in paths.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
            match resolve(p, workspace, folders) {
                Ok((pattern, dir, deep)) => {
                    w.patterns.push(pattern);
                    w.dirs.push((dir, deep));
                }
                Err(e) => problem = Some(e),
            }
        }
        match problem {
            Some(e) => problems.push((r.id.clone(), e)),
            None => watches.push(w),
        }
    }
    (watches, problems)
}

/// A path or glob as an absolute pattern, the folder to watch for it, and whether deep.
fn resolve(p: &str, workspace: &Path, folders: &[PathBuf]) -> Result<(Pattern, PathBuf, bool), String> {
    let written = Path::new(p);
    if written.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(format!("\"{p}\" leaves its folder"));
    }
    let full = if written.is_absolute() {
        if !std::iter::once(workspace)
            .chain(folders.iter().map(PathBuf::as_path))
            .any(|f| written.starts_with(f))
        {
            return Err(format!(
                "\"{p}\" is outside the workspace and the folders you added (Settings → Approvals)"
            ));
        }
        written.to_path_buf()
    } else {
        workspace.join(written)
    };
    // Normalised: no trailing slash, no `.`.
    let full: PathBuf = full.components().filter(|c| !matches!(c, Component::CurDir)).collect();
    // The folder before the first wildcard.
    let mut base = PathBuf::new();
    let mut rest = false;
    for c in full.components() {
        if has_meta(&c.as_os_str().to_string_lossy()) {
            rest = true;
            break;
        }
        base.push(c);
    }
    let text = full.to_string_lossy().into_owned();
    let (pattern, dir, deep) = if rest {
        let deep = text.contains("**") || full.strip_prefix(&base).map_or(0, |r| r.components().count()) > 1;
        (text, base, deep)
    } else if p.ends_with('/') || full.is_dir() {
        // A folder: everything under it.
        let dir = full.clone();
        (format!("{}/**/*", Pattern::escape(&dir.to_string_lossy())), dir, true)
    } else {
        let dir = full
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| workspace.to_path_buf());
        (Pattern::escape(&text), dir, false)
    };
    let pattern = Pattern::new(&pattern).map_err(|e| format!("\"{p}\" is not a valid glob: {e}"))?;
    Ok((pattern, dir, deep))
}

/// Whether a changed path may fire anything: not the task file, not inside a skipped folder
/// of the workspace (where the workspace itself lies is no reason: a project under
/// `~/target/` is watched like any other).
pub fn may_fire(path: &Path, workspace: &Path) -> bool {
    if path == workspace.join("HEARTBEAT.md") {
        return false;
    }
    let inside = path.strip_prefix(workspace).unwrap_or(path);
    !inside
        .components()
        .any(|c| matches!(c.as_os_str().to_str(), Some(".git" | "node_modules" | "target")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routine(paths: &[&str]) -> Routine {
        let mut r = Routine::new("w".into(), "W".into(), 0);
        r.trigger = Some(Trigger::File {
            paths: paths.iter().map(|s| s.to_string()).collect(),
            debounce_ms: None,
        });
        r
    }

    #[test]
    fn only_skipped_folders_inside_the_workspace_stop_a_fire() {
        let ws = Path::new("/home/u/target/project");
        assert!(may_fire(&ws.join("notes/plan.md"), ws));
        assert!(!may_fire(&ws.join("target/debug/x"), ws));
        assert!(!may_fire(&ws.join("sub/.git/index"), ws));
        assert!(!may_fire(&ws.join("HEARTBEAT.md"), ws));
    }

    #[test]
    fn globs_folders_and_files_match_what_a_user_means_and_nothing_outside() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join("logs/old")).unwrap();
        let (w, problems) = file_watches(&[routine(&["notes/*.md", "logs/", "todo.txt"])], ws.path(), &[]);
        assert!(problems.is_empty());
        let w = &w[0];
        let at = |p: &str| w.matches(&ws.path().join(p));
        assert!(at("notes/a.md") && at("logs/app.log") && at("logs/old/x.log") && at("todo.txt"));
        assert!(!at("notes/deep/a.md") && !at("notes/a.txt") && !at("todo.txt.bak") && !at("other.md"));
        let (_, problems) = file_watches(&[routine(&["/etc/*"])], ws.path(), &[]);
        assert!(problems[0].1.contains("outside the workspace"));
        assert!(!may_fire(&ws.path().join("HEARTBEAT.md"), ws.path()));
    }
}
