//! # sandbox::pin
//!
//! Every folder or file bwrap binds is opened here once, in the launcher, and handed to
//! bwrap as that open descriptor (`--bind-fd` / `--ro-bind-fd`): what Vigil checked and
//! showed on a card (a real path, every symlink resolved) is what gets bound. Each source
//! is opened with `O_PATH`, its path read back from the kernel (`/proc/self/fd`) and
//! compared with the path Vigil gave; a symlink put anywhere on that path since Vigil
//! resolved it (a command in the workspace swapping a folder for a link to `~`) makes the
//! two differ, and the sandbox is not started. bwrap binds the descriptor's own object,
//! checks it once more after the mount, and closes the descriptor before the command runs.
//!
//! Must never: bind a path that resolves anywhere but where Vigil said; pass a bwrap
//! option it does not know the arity of (an unknown one is refused, so a new option added
//! to the mounts is listed here first).

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

/// The first descriptor number given to a pinned source: above the launcher's own
/// (10–14) and anything a small process holds.
const FIRST_PIN_FD: RawFd = 100;

/// How many values each bwrap option Vigil's mounts use takes.
fn arity(option: &OsStr) -> Option<usize> {
    Some(match option.to_str()? {
        "--bind" | "--ro-bind" | "--symlink" => 2,
        "--dev" | "--proc" | "--tmpfs" | "--remount-ro" | "--chdir" | "--cap-drop" | "--cap-add" => 1,
        "--unshare-user" | "--unshare-pid" | "--unshare-ipc" | "--unshare-net" | "--die-with-parent"
        | "--new-session" | "--as-pid-1" => 0,
        _ => return None,
    })
}

/// bwrap's options up to `--`, each `--bind`/`--ro-bind` turned into its `-fd` form on a
/// descriptor opened here (kept open, inheritable, for bwrap); the rest as they were.
pub(super) fn pin(rest: &[OsString]) -> Result<Vec<OsString>, String> {
    let mut out = Vec::with_capacity(rest.len());
    let mut next_fd = FIRST_PIN_FD;
    let mut i = 0;
    while i < rest.len() {
        let option = &rest[i];
        if option == "--" {
            out.extend_from_slice(&rest[i..]);
            return Ok(out);
        }
        let n = arity(option).ok_or_else(|| format!("unknown bwrap option {}", option.to_string_lossy()))?;
        let values = rest
            .get(i + 1..i + 1 + n)
            .ok_or_else(|| format!("{} needs {n} values", option.to_string_lossy()))?;
        match option.to_str() {
            // A host socket covered with an empty file (`mounts`) that is gone since it was
            // listed: nothing is left to cover, and bwrap, finding no file to mount on in
            // the read-only root, would refuse to start the sandbox at all.
            Some("--ro-bind") if values[0] == "/dev/null" && std::fs::symlink_metadata(&values[1]).is_err() => {}
            Some(kind @ ("--bind" | "--ro-bind")) => {
                let fd = open_exactly(Path::new(&values[0]))?;
                place(fd, next_fd)?;
                out.push(format!("{kind}-fd").into());
                out.push(next_fd.to_string().into());
                out.push(values[1].clone());
                next_fd += 1;
            }
            _ => {
                out.push(option.clone());
                out.extend_from_slice(values);
            }
        }
        i += 1 + n;
    }
    Err("no `--` before the command".into())
}

/// `path` opened as a location (`O_PATH`), refused unless the kernel names what it opened
/// by that same path: a symlink anywhere on it, or a path Vigil did not resolve, differs.
fn open_exactly(path: &Path) -> Result<OwnedFd, String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let opened = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if opened != path {
        return Err(format!(
            "{} now leads to {}: it changed after it was checked",
            path.display(),
            opened.display()
        ));
    }
    Ok(fd)
}

/// Puts `fd` at `target`, inheritable (bwrap reads it after its `exec`).
pub(super) fn place(fd: OwnedFd, target: RawFd) -> Result<(), String> {
    if fd.as_raw_fd() == target {
        rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::empty()).map_err(|e| e.to_string())?;
        std::mem::forget(fd);
        return Ok(());
    }
    // SAFETY: `target` is a number this process reserves for bwrap; whatever was there
    // (nothing, in a process Vigil started) is replaced, and the new one is leaked on
    // purpose: it must stay open across the `exec`.
    let mut slot = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(target) };
    let placed = rustix::io::dup2(&fd, &mut slot);
    std::mem::forget(slot);
    placed.map_err(|e| format!("descriptor {target}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_path_through_a_symlink_is_not_bound() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("target")).unwrap();
        std::os::unix::fs::symlink(real.join("target"), real.join("link")).unwrap();
        let err = open_exactly(&real.join("link")).unwrap_err();
        assert!(err.contains("changed after it was checked"), "{err}");
        assert!(open_exactly(&real.join("target")).is_ok());
    }

    #[test]
    fn a_cover_for_a_socket_that_is_gone_is_left_out_and_one_still_there_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        let there = real.join("there.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&there).unwrap();
        let gone = real.join("gone.sock");
        let there_s = there.to_str().unwrap();
        let gone_s = gone.to_str().unwrap();
        let out = pin(&os(&[
            "--ro-bind",
            "/dev/null",
            gone_s,
            "--ro-bind",
            "/dev/null",
            there_s,
            "--",
            "true",
        ]))
        .unwrap();
        let out: Vec<String> = out.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(
            !out.iter().any(|a| a == gone_s),
            "a vanished socket is still covered: {out:?}"
        );
        let at = out
            .iter()
            .position(|a| a == there_s)
            .expect("the live socket is covered");
        assert_eq!(out[at - 2], "--ro-bind-fd", "{out:?}");
        assert_eq!(out[out.len() - 2..], ["--", "true"]);
    }

    #[test]
    fn an_unknown_option_is_refused_and_the_command_is_kept() {
        let err = pin(&os(&["--overlay", "/a", "/b", "/c", "--", "true"])).unwrap_err();
        assert!(err.contains("--overlay"), "{err}");
        let kept = pin(&os(&["--tmpfs", "/tmp", "--", "--bind", "x"])).unwrap();
        assert_eq!(kept, os(&["--tmpfs", "/tmp", "--", "--bind", "x"]));
    }
}
