//! Where a path the model gave actually points, and whether a tool may touch it.
//!
//! This is the one gate every file tool goes through, so the approval policy for paths
//! outside the workspace can hook in here later without touching the tools.
//!
//! The check is made on the real path (symlinks resolved) and the tools then open exactly
//! that path without following any symlink on it ([`ResolvedPath::open`],
//! [`ResolvedPath::pinned`]), so neither a link inside the workspace nor a folder swapped
//! for a link between the check and the open (by one of the agent's own commands) can lead
//! a read or a write elsewhere: the open fails instead.

use std::io;
use std::path::{Component, Path, PathBuf};
use vigil_protocol::ApprovalKind;

/// Why a path was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// The model sent an empty path. Recover: send a file path.
    #[error("The path is empty; give a file path relative to the workspace {workspace}.")]
    Empty { workspace: PathBuf },
    /// The path leads outside the workspace (directly, via `..`, or via a symlink). Recover:
    /// work on files inside the workspace.
    #[error(
        "{requested} is outside the workspace {workspace}{via}; only files inside it can be read or changed.",
        via = via_link(requested, resolved)
    )]
    OutsideWorkspace {
        requested: String,
        /// Where it really points, symlinks resolved; what an approval would be asked for.
        resolved: PathBuf,
        workspace: PathBuf,
    },
    /// A symlink on the way points at something missing, so where a write would land cannot
    /// be checked. Recover: use the link's target path, or remove the link.
    #[error("{requested} goes through the symbolic link {link}, whose target does not exist; refusing to follow it.")]
    BrokenLink { requested: String, link: PathBuf },
    /// The workspace folder itself is missing or unreadable. Recover: the user fixes the
    /// workspace setting; the model cannot.
    #[error("The workspace folder {workspace} cannot be used: {source}")]
    Workspace {
        workspace: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A folder on the way could not be inspected (permissions). Recover: another path.
    #[error("Could not check {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn via_link(requested: &str, resolved: &Path) -> String {
    if Path::new(requested) == resolved {
        String::new()
    } else {
        format!(" (it resolves to {})", resolved.display())
    }
}

/// A path a tool may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// Absolute, symlinks resolved as far as the path exists; what to open.
    pub abs: PathBuf,
    /// Relative to the workspace (`.` for the workspace itself); what to show the model.
    pub display: String,
}

impl ResolvedPath {
    /// The file, opened for reading at exactly `abs`: a folder on the way swapped for a
    /// symlink since the path was checked (by one of the agent's own commands, racing) makes
    /// the open fail instead of reading where the link leads.
    pub fn open(&self) -> io::Result<std::fs::File> {
        crate::beneath::open_exact(&self.abs, rustix::fs::OFlags::RDONLY).map(Into::into)
    }

    /// The folder that holds it, opened at exactly its checked path and held, and a path to
    /// the file through that open folder (`/proc/self/fd/N/name`): a write made through it
    /// lands in that folder even if its path is swapped for a link meanwhile.
    pub fn pinned(&self) -> io::Result<Pinned> {
        let (Some(parent), Some(name)) = (self.abs.parent(), self.abs.file_name()) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no folder holds it"));
        };
        let dir = crate::beneath::open_exact(parent, rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY)?;
        let path = Path::new("/proc/self/fd")
            .join(std::os::fd::AsRawFd::as_raw_fd(&dir).to_string())
            .join(name);
        Ok(Pinned { _dir: dir, path })
    }
}

/// A file's path through its open folder; valid while this lives.
pub struct Pinned {
    _dir: std::os::fd::OwnedFd,
    pub path: PathBuf,
}

/// Resolves `raw` (relative to `workspace`, or absolute) and refuses it unless it lies inside
/// the workspace once `..` and symlinks are accounted for. The path itself need not exist.
pub fn resolve_path(workspace: &Path, raw: &str) -> Result<ResolvedPath, PathError> {
    let root = workspace.canonicalize().map_err(|source| PathError::Workspace {
        workspace: workspace.to_path_buf(),
        source,
    })?;
    if raw.trim().is_empty() {
        return Err(PathError::Empty {
            workspace: root.clone(),
        });
    }
    let lexical = normalize(&workspace.join(raw));
    let abs = canonicalize_existing(&lexical, raw)?;
    match abs.strip_prefix(&root) {
        Ok(rel) => {
            let display = if rel.as_os_str().is_empty() {
                ".".to_string()
            } else {
                rel.display().to_string()
            };
            Ok(ResolvedPath { abs, display })
        }
        Err(_) => Err(PathError::OutsideWorkspace {
            requested: raw.to_string(),
            resolved: abs,
            workspace: root,
        }),
    }
}

/// The workspace's own files that steer every future run: the prompt files and the
/// heartbeat's checklist and task block.
fn steers_runs(workspace: &Path, abs: &Path) -> bool {
    let root = workspace.canonicalize().unwrap_or_else(|_| workspace.to_path_buf());
    let (Some(parent), Some(name)) = (abs.parent(), abs.file_name().and_then(|n| n.to_str())) else {
        return false;
    };
    (parent == root || parent == workspace)
        && (crate::workspace::PROMPT_FILES.iter().any(|(f, _)| *f == name)
            || name == crate::workspace::heartbeat_file::HEARTBEAT_FILE)
}

/// [`resolve_path`] for a tool call: a path outside the workspace is put to the turn's
/// approval gate (reading and changing are asked about separately) and used if allowed.
/// Without a gate, outside paths are refused. The error is the text the model sees.
pub async fn resolve_for(ctx: &super::ToolContext, raw: &str, write: bool) -> Result<ResolvedPath, String> {
    let resolved = resolve_path(&ctx.workspace, raw);
    if let (Some(data_dir), Ok(ResolvedPath { abs, .. }) | Err(PathError::OutsideWorkspace { resolved: abs, .. })) =
        (&ctx.data_dir, &resolved)
    {
        if in_data_dir(abs, data_dir, &ctx.workspace) {
            return Err(data_dir_refusal(raw, abs));
        }
    }
    match (resolved, &ctx.gate) {
        // A file every future prompt (or the routines) is built from: shown to the gate as
        // such, asked under `ask`, whoever's run it is.
        (Ok(p), Some(gate)) if write && steers_runs(&ctx.workspace, &p.abs) => {
            let shown = p.abs.display().to_string();
            match gate
                .check(ApprovalKind::SteerFile, &shown, None, &[], false, None)
                .await
            {
                crate::approval::Verdict::Allowed | crate::approval::Verdict::ReadOnly => Ok(p),
                crate::approval::Verdict::Denied(why) => Err(why),
            }
        }
        (Ok(p), _) => Ok(p),
        (Err(PathError::OutsideWorkspace { resolved, .. }), Some(gate)) => {
            let kind = if write {
                ApprovalKind::WriteOutside
            } else {
                ApprovalKind::ReadOutside
            };
            let shown = resolved.display().to_string();
            match gate.check(kind, &shown, None, &[], false, None).await {
                crate::approval::Verdict::Allowed | crate::approval::Verdict::ReadOnly => Ok(ResolvedPath {
                    abs: resolved,
                    display: shown,
                }),
                crate::approval::Verdict::Denied(why) => Err(why),
            }
        }
        (Err(e), _) => Err(e.to_string()),
    }
}

/// Whether a file tool's call (its `path`) changes a file only once the gate allowed it:
/// a path outside the workspace, which [`resolve_for`] puts to the gate first.
pub fn change_asks_gate(input: &serde_json::Value, workspace: &Path) -> bool {
    let raw = input.get("path").and_then(|p| p.as_str()).unwrap_or_default();
    matches!(resolve_path(workspace, raw), Err(PathError::OutsideWorkspace { .. }))
}

/// Whether `abs` (symlinks resolved) lies in Vigil's data folder `data_dir`, outside the
/// workspace (which may lie inside it: the default does). Both folders are compared with
/// their symlinks resolved, so no spelling of the path reaches the data folder.
pub fn in_data_dir(abs: &Path, data_dir: &Path, workspace: &Path) -> bool {
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| normalize(p));
    let (data, workspace) = (real(data_dir), real(workspace));
    let abs = real(abs);
    let workspace_inside = workspace.starts_with(&data) && workspace != data;
    abs.starts_with(&data) && !(workspace_inside && abs.starts_with(&workspace))
}

/// What the agent is told when a path leads into the data folder: a refusal no approval
/// changes, so it does not ask the user.
pub fn data_dir_refusal(raw: &str, abs: &Path) -> String {
    let via = via_link(raw, abs);
    format!(
        "{raw}{via} is in Vigil's own data folder (settings, approvals, keys, conversations), which no tool may read or change under any approval policy. Do not ask the user to allow it."
    )
}

/// Removes `.` and applies `..` without touching the disk; `..` at the root stays at the root.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Canonicalises the longest part of `path` that exists and appends the rest, which cannot
/// contain links because it does not exist yet.
fn canonicalize_existing(path: &Path, raw: &str) -> Result<PathBuf, PathError> {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        // symlink_metadata, not exists(): a dangling link "does not exist" to exists(), and
        // writing through it would create its target wherever it points.
        match existing.symlink_metadata() {
            Ok(_) => break,
            // NotADirectory: a file sits where a folder should be; the caller says so
            // better once it tries to use the path.
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => {
                let Some(name) = existing.file_name() else {
                    break;
                };
                rest.push(name.to_os_string());
                if !existing.pop() {
                    break;
                }
            }
            Err(source) => return Err(PathError::Io { path: existing, source }),
        }
    }
    let mut abs = match existing.canonicalize() {
        Ok(p) => p,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(PathError::BrokenLink {
                requested: raw.to_string(),
                link: existing,
            })
        }
        Err(source) => return Err(PathError::Io { path: existing, source }),
    };
    abs.extend(rest.iter().rev());
    Ok(abs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        (dir, root)
    }

    #[test]
    fn relative_absolute_and_dotdot_paths_inside_resolve() {
        let (_d, root) = ws();
        for (raw, display) in [
            ("a.txt", "a.txt"),
            ("src/../src/./new/b.rs", "src/new/b.rs"),
            (".", "."),
        ] {
            let got = resolve_path(&root, raw).unwrap();
            assert_eq!(got.display, display);
            assert_eq!(got.abs, root.join(display).components().collect::<PathBuf>());
        }
        let abs = root.join("src/x.rs");
        assert_eq!(resolve_path(&root, abs.to_str().unwrap()).unwrap().abs, abs);
    }

    #[test]
    fn paths_outside_are_refused_with_a_clear_message() {
        let (_d, root) = ws();
        let err = resolve_path(&root, "../secret.txt").unwrap_err();
        assert!(matches!(err, PathError::OutsideWorkspace { .. }));
        let parent = root.parent().unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "../secret.txt is outside the workspace {}{}; only files inside it can be read or changed.",
                root.display(),
                format_args!(" (it resolves to {})", parent.join("secret.txt").display())
            )
        );
        let err = resolve_path(&root, "/etc/passwd").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "/etc/passwd is outside the workspace {}; only files inside it can be read or changed.",
                root.display()
            )
        );
        assert!(matches!(resolve_path(&root, "  "), Err(PathError::Empty { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_pointing_outside_are_refused_even_when_dangling() {
        let (_d, root) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x"), root.join("file")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("gone"), root.join("dangling")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("inside")).unwrap();

        for raw in ["out/x", "out/new.txt", "file"] {
            let err = resolve_path(&root, raw).unwrap_err();
            assert!(matches!(err, PathError::OutsideWorkspace { .. }), "{raw}: {err}");
        }
        assert!(matches!(
            resolve_path(&root, "dangling"),
            Err(PathError::BrokenLink { .. })
        ));
        assert_eq!(resolve_path(&root, "inside/a.rs").unwrap().display, "src/a.rs");
    }

    /// A folder swapped for a link to a secret between the path's check and the read: the
    /// read fails instead of returning what the link leads to.
    #[test]
    fn a_folder_swapped_for_a_link_after_the_check_is_not_read_through() {
        let (_d, root) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("notes.txt"), "SECRET").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/notes.txt"), "mine").unwrap();
        let path = resolve_path(&root, "sub/notes.txt").unwrap();
        assert_eq!(crate::tools::files::read_text(&path).unwrap(), "mine");
        std::fs::rename(root.join("sub"), root.join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("sub")).unwrap();
        let read = crate::tools::files::read_text(&path);
        assert!(read.is_err(), "read through the swapped link: {read:?}");
    }
}
