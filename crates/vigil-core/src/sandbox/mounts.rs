//! # sandbox::mounts
//!
//! The bwrap command line of each kind of sandbox (ordinary and read-only): what is bound,
//! hidden and made read-only, in the order bwrap applies it, and the task file's bind.
//!
//! Must never: make the data folder visible, a hidden secret readable, a folder writable
//! that is not the workspace or one the user added, or a place that runs the user's code
//! later (autostart, shell start-up files) writable unless the user added it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::{bound_folders, real, Layout};

/// The mounts, in the order bwrap applies them: later mounts cover earlier ones, so the
/// data folder is hidden after the writable folders are bound (a writable folder inside it
/// is dropped), and the workspace is bound again if it lies inside the data folder.
pub(super) fn arguments(bwrap: &Path, layout: &Layout) -> Vec<OsString> {
    if layout.read_only {
        return read_only_arguments(bwrap, layout);
    }
    let data = real(&layout.data_dir);
    let workspace = real(&layout.workspace);
    let mut args: Vec<OsString> = vec![bwrap.into()];
    let mut push = |a: &[&std::ffi::OsStr]| args.extend(a.iter().map(|s| s.to_os_string()));
    push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    push(&["--dev".as_ref(), "/dev".as_ref()]);
    push(&["--proc".as_ref(), "/proc".as_ref()]);
    push(&["--tmpfs".as_ref(), "/tmp".as_ref()]);
    push(&["--tmpfs".as_ref(), "/var/tmp".as_ref()]);
    // Granted sockets: this sandbox may make Unix sockets, so every other one the host
    // listens on goes first: `/run` empty, the rest covered by an empty file.
    let granted = layout.sockets();
    if !granted.is_empty() {
        push(&["--tmpfs".as_ref(), "/run".as_ref()]);
        if std::fs::symlink_metadata("/var/run").is_ok_and(|m| m.is_dir()) {
            push(&["--tmpfs".as_ref(), "/var/run".as_ref()]);
        }
        for socket in host_sockets().iter().filter(|s| !granted.contains(s)) {
            push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), socket.as_os_str()]);
        }
    }
    let writable = bound_folders(layout);
    let inside_data = |p: &Path| p.starts_with(&data) && !(workspace.starts_with(&data) && p.starts_with(&workspace));
    for w in writable
        .iter()
        .filter(|w| w.is_dir() && !w.starts_with(&data) && !data.starts_with(w))
    {
        push(&["--bind".as_ref(), w.as_os_str(), w.as_os_str()]);
    }
    // An empty folder in its place, made read-only once the workspace (if it lies inside)
    // has its mount point there: nothing a command writes can look like Vigil's files.
    push(&["--tmpfs".as_ref(), data.as_os_str()]);
    for w in writable
        .iter()
        .filter(|w| w.is_dir() && w.starts_with(&data) && !inside_data(w))
    {
        push(&["--bind".as_ref(), w.as_os_str(), w.as_os_str()]);
    }
    push(&["--remount-ro".as_ref(), data.as_os_str()]);
    // What runs the user's own programs at their next login or shell, inside a writable
    // folder (a workspace that holds the home): read-only, unless the user added it.
    for at in protected(layout, &writable).iter().filter(|at| !at.starts_with(&data)) {
        push(&["--ro-bind".as_ref(), at.as_os_str(), at.as_os_str()]);
    }
    // HEARTBEAT.md's task block registers routines: no command may create, replace, rename,
    // link over or change it. Bound read-only onto itself (a rename or unlink of a mount
    // point fails with EBUSY, a write with EROFS); when absent, an empty one is made first,
    // which reads as absent does (no tasks). A bind lasts only while the path names the
    // bound inode: a rename over the file on the host detaches it in every standing sandbox,
    // where a command still running would then write the new file. So Vigil rewrites it in
    // place (`durable::in_place`, journaled), and the bind stays attached and current. A
    // standing sandbox whose bind shows another file (replaced by another program, an editor
    // saving by rename) takes no new command: see `zygote`.
    if let Some(file) = task_file(layout) {
        push(&["--ro-bind".as_ref(), file.as_os_str(), file.as_os_str()]);
    }
    // The secrets of $HOME, empty: a folder becomes an empty read-only one, a file reads as
    // empty. After the writable folders, so a folder the user added cannot uncover them.
    for hidden in layout.settings.hidden_paths(layout.home.as_deref()) {
        let Ok(meta) = std::fs::symlink_metadata(&hidden) else {
            continue; // not there: nothing to read
        };
        let at = real(&hidden);
        if at.starts_with(&data) {
            continue; // hidden with the data folder already
        }
        if meta.is_dir() || at.is_dir() {
            push(&["--tmpfs".as_ref(), at.as_os_str()]);
            // A socket granted inside a hidden folder (Docker Desktop's, in ~/.docker) is
            // bound before the empty folder is made read-only.
            for socket in granted.iter().filter(|s| s.starts_with(&at)) {
                push(&["--bind".as_ref(), socket.as_os_str(), socket.as_os_str()]);
            }
            push(&["--remount-ro".as_ref(), at.as_os_str()]);
        } else {
            push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), at.as_os_str()]);
        }
    }
    for socket in &granted {
        push(&["--bind".as_ref(), socket.as_os_str(), socket.as_os_str()]);
    }
    namespaces(&mut args, layout);
    args
}

/// The path sockets the host listens on (`/proc/net/unix`), outside `/run` and the
/// temporary folders (replaced whole in the sandbox), that are there to cover.
fn host_sockets() -> Vec<PathBuf> {
    let Ok(table) = std::fs::read_to_string("/proc/net/unix") else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = table
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().nth(7))
        .filter(|p| p.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| {
            !["/run", "/var/run", "/tmp", "/var/tmp"]
                .iter()
                .any(|t| p.starts_with(t))
        })
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Places under `$HOME` that run code for the user later: the desktop's autostart and the
/// systemd user units (in `.config`), shells' start-up files, `~/.local/bin` (on `PATH`),
/// git's own configuration (hooks and pagers it names run in every repository).
const PROTECTED: &[&str] = &[
    ".config",
    ".local/share",
    ".local/bin",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".pam_environment",
    ".xprofile",
    ".xsessionrc",
    ".gitconfig",
];

/// The protected places that exist inside one of the `writable` folders (strictly: a
/// workspace that is `~/.config` itself was chosen as such) and inside none the user added
/// in Settings.
fn protected(layout: &Layout, writable: &[PathBuf]) -> Vec<PathBuf> {
    let Some(home) = layout.home.as_deref() else {
        return Vec::new();
    };
    let added: Vec<PathBuf> = layout.settings.writable.iter().map(|p| real(p)).collect();
    PROTECTED
        .iter()
        .map(|rel| home.join(rel))
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
        .map(|p| real(&p))
        .filter(|at| writable.iter().any(|w| at.starts_with(w) && at != w))
        .filter(|at| !added.iter().any(|a| at.starts_with(a)))
        .collect()
}

/// The end of every sandbox's command line. A user namespace of its own and no
/// capabilities in it, whoever runs Vigil: bwrap keeps every capability when started by
/// root, and with `CAP_SYS_ADMIN` a command could unmount the empty folder over the data
/// folder and read what lies beneath. The network namespace (always a private one) comes
/// from the launcher.
fn namespaces(args: &mut Vec<OsString>, layout: &Layout) {
    let cwd = real(&layout.cwd);
    let tail: [&std::ffi::OsStr; 9] = [
        "--unshare-user".as_ref(),
        "--cap-drop".as_ref(),
        "ALL".as_ref(),
        "--unshare-pid".as_ref(),
        "--unshare-ipc".as_ref(),
        "--die-with-parent".as_ref(),
        "--chdir".as_ref(),
        cwd.as_os_str(),
        "--".as_ref(),
    ];
    args.extend(tail.iter().map(|s| s.to_os_string()));
}

/// `<workspace>/HEARTBEAT.md` as the sandbox binds it, made empty first when absent; `None`
/// when it is a symlink (the user's own arrangement: Vigil reads no task file through a
/// link) or the workspace is not there.
fn task_file(layout: &Layout) -> Option<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = real(&layout.workspace).join(crate::workspace::heartbeat_file::HEARTBEAT_FILE);
    match std::fs::symlink_metadata(&file) {
        Ok(m) if m.is_file() => Some(file),
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let made = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&file);
            match made {
                Ok(_) => Some(file),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => task_file(layout),
                Err(_) => None,
            }
        }
        Err(_) => None,
    }
}

/// The real workspace and its `HEARTBEAT.md`, for a sandbox that binds the file (every
/// one but the read-only sandbox).
pub(super) fn task_file_pin(layout: &Layout) -> Option<(PathBuf, PathBuf)> {
    if layout.read_only {
        return None;
    }
    let ws = real(&layout.workspace);
    let file = ws.join(crate::workspace::heartbeat_file::HEARTBEAT_FILE);
    Some((ws, file))
}

/// The task file's identity now (device, inode, and its change time, since a file deleted
/// and made again often gets the same inode number): a standing sandbox bound another one.
#[cfg(target_os = "linux")]
pub(super) fn task_file_id(layout: &Layout) -> Option<TaskFileId> {
    use std::os::unix::fs::MetadataExt;
    let file = real(&layout.workspace).join(crate::workspace::heartbeat_file::HEARTBEAT_FILE);
    std::fs::symlink_metadata(file)
        .ok()
        .map(|m| (m.dev(), m.ino(), m.ctime(), m.ctime_nsec()))
}

pub(super) type TaskFileId = (u64, u64, i64, i64);

/// The system's own folders, seen read-only in the read-only sandbox (a symlink such as
/// merged-usr's `/bin -> usr/bin` is made as the same symlink).
const SYSTEM_FOLDERS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/var/lib",
    "/var/cache",
];

/// The read-only sandbox: an empty root, the system's folders, the workspace, the command's
/// folder and the user's added folders bound read-only (the data folder never, the
/// workspace alone when it lies inside it), the secrets hidden as everywhere, the root made
/// read-only last. The private `/tmp` and `/var/tmp` stay writable: they vanish with the
/// command and reach nothing.
fn read_only_arguments(bwrap: &Path, layout: &Layout) -> Vec<OsString> {
    let data = real(&layout.data_dir);
    let workspace = real(&layout.workspace);
    let mut args: Vec<OsString> = vec![bwrap.into()];
    let mut push = |a: &[&std::ffi::OsStr]| args.extend(a.iter().map(|s| s.to_os_string()));
    for folder in SYSTEM_FOLDERS.iter().map(Path::new) {
        match std::fs::symlink_metadata(folder) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(folder) {
                    push(&["--symlink".as_ref(), target.as_os_str(), folder.as_os_str()]);
                }
            }
            Ok(m) if m.is_dir() => push(&["--ro-bind".as_ref(), folder.as_os_str(), folder.as_os_str()]),
            _ => {}
        }
    }
    push(&["--dev".as_ref(), "/dev".as_ref()]);
    push(&["--proc".as_ref(), "/proc".as_ref()]);
    push(&["--tmpfs".as_ref(), "/tmp".as_ref()]);
    push(&["--tmpfs".as_ref(), "/var/tmp".as_ref()]);
    let inside_data = |p: &Path| p.starts_with(&data) && !p.starts_with(&workspace);
    for f in bound_folders(layout)
        .iter()
        .filter(|f| f.is_dir() && !inside_data(f) && !data.starts_with(f))
    {
        push(&["--ro-bind".as_ref(), f.as_os_str(), f.as_os_str()]);
    }
    for hidden in layout.settings.hidden_paths(layout.home.as_deref()) {
        let at = real(&hidden);
        let shown = bound_folders(layout).iter().any(|f| at.starts_with(f));
        if !shown || at.starts_with(&data) {
            continue;
        }
        match std::fs::metadata(&at) {
            Ok(m) if m.is_dir() => push(&[
                "--tmpfs".as_ref(),
                at.as_os_str(),
                "--remount-ro".as_ref(),
                at.as_os_str(),
            ]),
            Ok(_) => push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), at.as_os_str()]),
            Err(_) => {}
        }
    }
    push(&["--remount-ro".as_ref(), "/".as_ref()]);
    namespaces(&mut args, layout);
    args
}
