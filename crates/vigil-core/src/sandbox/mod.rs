//! # sandbox
//!
//! Runs the agent's commands inside bubblewrap (`bwrap`, Debian's `bubblewrap`) on Linux:
//! the whole file system read-only, the workspace, the command's folder and the folders the
//! user added writable, `/tmp` private to the command, Vigil's data folder replaced by an
//! empty one (its settings, approvals, keys and conversations are not there to read), and,
//! when the user switched it off, no network. Process groups, PTYs, signals and exit codes
//! pass through: bwrap does not start a new session, so the command stays in the group the
//! registry kills, and `--die-with-parent` takes the sandbox down with it.
//!
//! Commands start in a long-lived sandbox per layout ([`zygote`]) where they can: a fork
//! inside it costs a fraction of a bwrap start. A bwrap of their own is the fallback, with
//! the same mounts.
//!
//! [`pins`] records which `HEARTBEAT.md` each writable sandbox bound and while it lives, so
//! the routine store can tell a file another program replaced under a running sandbox.
//!
//! [`Sandbox::probe`] checks once that bwrap exists and can start here (user namespaces),
//! and the answer is what Settings shows. [`explain_refusal`] turns a command's "Read-only
//! file system" or a refused connection into a sentence the agent can act on.
//!
//! Must never: run a command unsandboxed because the sandbox failed (the caller decides,
//! and unattended runs then refuse); make the data folder visible; add a writable folder the
//! user did not choose.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use mounts::{arguments, task_file_pin};
#[cfg(target_os = "linux")]
use mounts::{task_file_id, TaskFileId};

#[cfg(target_os = "linux")]
pub mod launch;
mod mounts;
#[cfg(target_os = "linux")]
mod pin;
#[cfg(target_os = "linux")]
pub mod pins;
mod probe;
#[cfg(target_os = "linux")]
pub mod zygote;

/// What the user chose for the sandbox (Settings → Approvals), kept with the approval rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSettings {
    /// The user's own turns' commands may use the network (on by default: package installs
    /// and `git fetch` need it). Never the host's loopback services or sockets.
    #[serde(default = "yes")]
    pub network: bool,
    /// Commands of runs nobody watches (heartbeat, routine jobs, continuations) may use the
    /// network: off by default, so a prompt-injected run cannot send what it read.
    #[serde(default)]
    pub unattended_network: bool,
    /// Paths shown empty in every sandbox (`~` is the user's home): where credentials live.
    #[serde(default = "default_hidden")]
    pub hidden: Vec<String>,
    /// Folders writable besides the workspace and the command's folder. Package caches such
    /// as `~/.cargo` or `~/.npm` are not writable by default: a command that can write them
    /// can plant code that later runs outside the sandbox (a cached crate, an npm script).
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// Routines whose jobs may use the network when runs nobody watches may not (the user's
    /// grant, per routine, in Settings → Approvals; never the agent's: the routine tools
    /// cannot set it, and it lives in the data folder no command can reach).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_routines: Vec<String>,
    /// Unix sockets the user's own turns' commands may connect to (docker's, say): such a
    /// sandbox may make Unix sockets, sees an empty `/run`, and finds every other socket the
    /// host listens on covered. Never for runs nobody watches, nor the read-only sandbox.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sockets: Vec<PathBuf>,
    /// Set only for a routine's check (`crate::watch::check`) when the user granted that
    /// routine the network: the read-only sandbox then gets one (never the host's loopback
    /// or sockets). Never saved, never set for anything else.
    #[serde(skip)]
    pub check_network: bool,
}

fn yes() -> bool {
    true
}

/// The secrets of `$HOME` every sandbox shows empty unless the user edits the list:
/// credentials, keys, tokens, keyrings, browser and mail profiles.
pub const DEFAULT_HIDDEN: &[&str] = &[
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.password-store",
    "~/.local/share/keyrings",
    "~/.pki",
    "~/.mozilla",
    "~/.thunderbird",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.config/microsoft-edge",
    "~/.config/evolution",
    "~/.local/share/evolution",
    "~/.npmrc",
    "~/.pypirc",
    "~/.cargo/credentials.toml",
    "~/.config/hub",
];

fn default_hidden() -> Vec<String> {
    DEFAULT_HIDDEN.iter().map(|s| s.to_string()).collect()
}

impl Default for SandboxSettings {
    fn default() -> Self {
        Self {
            network: true,
            unattended_network: false,
            hidden: default_hidden(),
            writable: Vec::new(),
            network_routines: Vec::new(),
            sockets: Vec::new(),
            check_network: false,
        }
    }
}

impl SandboxSettings {
    /// The settings a run of `routine`'s job works under: its network grant, if the user
    /// gave one, lets its commands use the network though runs nobody watches may not.
    pub fn for_routine(mut self, routine: Option<&str>) -> Self {
        if routine.is_some_and(|r| self.network_routines.iter().any(|g| g == r)) {
            self.unattended_network = true;
        }
        self
    }

    /// The hidden list as absolute paths, `~` taken as `home`.
    pub fn hidden_paths(&self, home: Option<&Path>) -> Vec<PathBuf> {
        self.hidden
            .iter()
            .filter_map(|h| match (h.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => Some(home.join(rest)),
                (Some(_), None) => None,
                (None, _) if h.starts_with('/') => Some(PathBuf::from(h)),
                (None, _) => None,
            })
            .collect()
    }
}

/// Whether bubblewrap can run here, probed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    Ready {
        bwrap: PathBuf,
    },
    /// Why not, in words for Settings and for the agent.
    Unavailable(String),
}

/// The sandbox: where bwrap is (probed lazily, once) and how to wrap a command.
/// The standing zygotes by bwrap command line (and kind of run), each with the identity of
/// the task file its sandbox bound read-only.
#[cfg(target_os = "linux")]
type Zygotes = HashMap<Vec<OsString>, (Option<TaskFileId>, Arc<zygote::Zygote>)>;

#[derive(Clone)]
pub struct Sandbox {
    availability: Arc<OnceLock<Availability>>,
    /// The zygote helper's path, looked up and resolved once; `None` when it is not there.
    helper: Arc<OnceLock<Option<PathBuf>>>,
    /// One zygote per bwrap command line and kind of run, with the identity of the task file
    /// its sandbox bound read-only.
    #[cfg(target_os = "linux")]
    zygotes: Arc<Mutex<Zygotes>>,
    /// How long a zygote with nothing to do stays.
    idle_exit: Duration,
}

/// How to start one command in the sandbox: in a zygote when there is one for its layout,
/// else (or when that fails) with a bwrap of its own.
#[derive(Debug, Clone)]
pub struct Wrapped {
    /// The launcher, then bwrap's command line up to and including `--`.
    pub args: Vec<OsString>,
    #[cfg(target_os = "linux")]
    pub zygote: Option<Arc<zygote::Zygote>>,
    /// The real workspace and its `HEARTBEAT.md` when bound (not in the read-only sandbox).
    pub task_file: Option<(PathBuf, PathBuf)>,
}

/// A sandbox's record that it bound `HEARTBEAT.md` as it was, held until dropped ([`pins`]).
#[cfg(target_os = "linux")]
pub type Pinned = Option<pins::PinGuard>;
#[cfg(not(target_os = "linux"))]
pub type Pinned = ();

impl Wrapped {
    /// A bwrap of its own per command (benchmarks compare the two).
    pub fn without_zygote(mut self) -> Self {
        #[cfg(target_os = "linux")]
        {
            self.zygote = None;
        }
        self
    }

    /// Records that a bwrap of its own is about to bind the task file as it is now; keep
    /// the result until its process is reaped. (A zygote records its own, while it runs.)
    pub fn pin(&self) -> Pinned {
        #[cfg(target_os = "linux")]
        return self.task_file.as_ref().map(|(ws, file)| pins::hold(ws, file));
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    /// Probes on first use.
    pub fn new() -> Self {
        Self {
            availability: Arc::new(OnceLock::new()),
            helper: Arc::new(OnceLock::new()),
            #[cfg(target_os = "linux")]
            zygotes: Arc::new(Mutex::new(HashMap::new())),
            #[cfg(target_os = "linux")]
            idle_exit: zygote::IDLE_EXIT,
            #[cfg(not(target_os = "linux"))]
            idle_exit: Duration::ZERO,
        }
    }

    /// Zygotes that leave after `idle` with nothing to do (tests; the default is 5 minutes).
    pub fn with_idle_exit(mut self, idle: Duration) -> Self {
        self.idle_exit = idle;
        self
    }

    /// Zygotes run this helper (instead of the one found beside the program).
    pub fn with_helper(self, helper: PathBuf) -> Self {
        let _ = self.helper.set(Some(real(&helper)));
        self
    }

    /// A sandbox that is not available, for `why` (tests; a platform without bwrap).
    pub fn unavailable(why: impl Into<String>) -> Self {
        let s = Self::new();
        let _ = s.availability.set(Availability::Unavailable(why.into()));
        s
    }

    /// Finds `bwrap` on `PATH` and starts it once with the namespaces commands will use.
    /// Blocks for a few milliseconds the first time.
    pub fn availability(&self) -> Availability {
        self.availability.get_or_init(probe::probe).clone()
    }

    /// How to run a command in `layout`; why not when bwrap or the helper that hands it its
    /// socket filter is not available.
    pub fn wrap(&self, layout: &Layout) -> Result<Wrapped, String> {
        let bwrap = match self.availability() {
            Availability::Ready { bwrap } => bwrap,
            Availability::Unavailable(why) => return Err(why),
        };
        let Some(helper) = self.helper() else {
            return Err(
                "the sandbox's helper (vigil-sandbox, beside Vigil's program) is missing; reinstall Vigil".into(),
            );
        };
        let mut args = launcher(&helper, layout.network(), !layout.sockets().is_empty());
        args.extend(arguments(&bwrap, layout));
        Ok(Wrapped {
            task_file: task_file_pin(layout),
            #[cfg(target_os = "linux")]
            zygote: self.zygote(&helper, &bwrap, layout),
            args,
        })
    }

    /// The helper, looked up and resolved once.
    fn helper(&self) -> Option<PathBuf> {
        #[cfg(target_os = "linux")]
        return self
            .helper
            .get_or_init(|| zygote::find_helper().map(|p| real(&p)))
            .clone();
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// Where slirp4netns is, for Settings; `None` when runs with the network get none.
    pub fn network_helper() -> Option<PathBuf> {
        #[cfg(target_os = "linux")]
        return launch::find_slirp();
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// The zygote for `layout`, when the helper is there and the layout allows one: every
    /// writable folder outside `/tmp`, `/var/tmp` and `/dev/shm` (each command's private ones
    /// would cover it), the helper outside all of them, and the command's folder inside one
    /// of them (the zygote's mounts are made once, for the layout, not per command).
    #[cfg(target_os = "linux")]
    fn zygote(&self, helper: &Path, bwrap: &Path, layout: &Layout) -> Option<Arc<zygote::Zygote>> {
        let writable = bound_folders(layout);
        let under_tmp = |p: &Path| ["/tmp", "/var/tmp", "/dev/shm"].iter().any(|t| p.starts_with(t));
        // The helper keeps capabilities: a command that could replace its file would run its
        // own program with them at the next start.
        if !layout.read_only && writable.iter().any(|w| helper.starts_with(w)) {
            return None;
        }
        let cwd = real(&layout.cwd);
        let covered = std::iter::once(real(&layout.workspace))
            .chain(layout.settings.writable.iter().map(|p| real(p)))
            .any(|w| cwd.starts_with(w));
        if writable.iter().any(|w| under_tmp(w)) || !covered {
            return None;
        }
        // The zygote's own folder is the workspace; each command goes to its own.
        let shared = Layout {
            cwd: layout.workspace.clone(),
            ..layout.clone()
        };
        let mut args = launcher(helper, shared.network(), !shared.sockets().is_empty());
        args.extend(arguments(bwrap, &shared));
        args.pop(); // "--": the zygote adds what it runs
        let mut key = args.clone();
        key.push(if layout.attended { "attended" } else { "unattended" }.into());
        // After the arguments: they make the task file when it is absent.
        let pinned = if layout.read_only { None } else { task_file_id(layout) };
        let mut zygotes = self.zygotes.lock().unwrap_or_else(|p| p.into_inner());
        match zygotes.get(&key) {
            Some((bound, zygote)) if *bound == pinned => Some(zygote.clone()),
            // New, or its bind shows a task file since replaced: a new one. The old one ends
            // when its last command has (the helper drains on a closed socket).
            _ => {
                let zygote = Arc::new(
                    zygote::Zygote::new(helper.to_path_buf(), args, self.idle_exit).pinning(task_file_pin(layout)),
                );
                zygotes.insert(key, (pinned, zygote.clone()));
                Some(zygote)
            }
        }
    }
}

fn real(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The workspace and the user's extra folders that exist, resolved: writable, or in the
/// read-only sandbox (with the command's folder) the only folders outside the system's it
/// sees. The command's folder is never made writable by running there: outside the
/// workspace and the added folders a command sees it read-only (`workdir: "~"` must not
/// make the home writable).
fn bound_folders(layout: &Layout) -> Vec<PathBuf> {
    let mut folders = vec![real(&layout.workspace)];
    if layout.read_only {
        folders.push(real(&layout.cwd));
    }
    folders.extend(layout.settings.writable.iter().map(|p| real(p)).filter(|p| p.is_dir()));
    folders.dedup();
    folders
}

/// What one turn's `exec` needs to sandbox its commands.
#[derive(Clone)]
pub struct TurnSandbox {
    pub sandbox: Sandbox,
    pub settings: SandboxSettings,
    pub data_dir: PathBuf,
    /// Someone is at the screen (a user turn): leaving the sandbox can be asked about.
    /// Unattended runs (heartbeat, routine jobs) always run sandboxed, or not at all.
    pub attended: bool,
    /// `$HOME`, for the hidden list's `~`.
    pub home: Option<PathBuf>,
}

/// Where a sandboxed command may write, and what it may not see.
#[derive(Debug, Clone)]
pub struct Layout {
    pub workspace: PathBuf,
    /// The command's folder: writable too (it was approved with the command).
    pub cwd: PathBuf,
    /// Hidden: an empty folder stands in its place.
    pub data_dir: PathBuf,
    pub settings: SandboxSettings,
    /// Someone is at the screen. Commands of attended and of unattended runs never share a
    /// sandbox (a zygote's commands can see each other).
    pub attended: bool,
    /// `$HOME`, for the hidden list's `~`.
    pub home: Option<PathBuf>,
    /// The read-only sandbox: nothing writable, no network, only the system's folders, the
    /// workspace and the folders the user added visible (for commands allowed without
    /// asking because they only read).
    pub read_only: bool,
}

impl Layout {
    /// The Unix sockets granted to this sandbox, resolved, that are sockets now: the user's
    /// grants in their own turns' ordinary sandbox; none elsewhere.
    pub fn sockets(&self) -> Vec<PathBuf> {
        use std::os::unix::fs::FileTypeExt;
        if !self.attended || self.read_only {
            return Vec::new();
        }
        let mut found: Vec<PathBuf> = self
            .settings
            .sockets
            .iter()
            .map(|p| real(p))
            .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_socket()))
            .collect();
        found.dedup();
        found
    }

    /// Whether this run's commands get a network (never the host's loopback or sockets).
    pub fn network(&self) -> bool {
        if self.read_only {
            return self.settings.check_network;
        }
        match self.attended {
            true => self.settings.network,
            false => self.settings.unattended_network,
        }
    }
}

/// `vigil-sandbox launch [--unix] [--net <slirp4netns>] --`: what goes before bwrap's
/// command line (see [`launch`]). With no slirp4netns installed a run that may use the
/// network gets none. `--unix` lets the sandbox make Unix sockets (for granted ones).
fn launcher(helper: &Path, network: bool, unix: bool) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![helper.into(), "launch".into()];
    if unix {
        args.push("--unix".into());
    }
    #[cfg(target_os = "linux")]
    if let Some(slirp) = network.then(launch::find_slirp).flatten() {
        args.extend(["--net".into(), slirp.into()]);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = network;
    args.push("--".into());
    args
}

/// A note for the agent when a sandboxed command's output shows the sandbox refused
/// something: which path could not be written, or that the network is off, and that the
/// user can allow it. `None` when nothing in the output points at the sandbox.
pub fn explain_refusal(output: &str, layout: &Layout) -> Option<String> {
    let mut notes = Vec::new();
    if let Some(line) = output.lines().find(|l| l.contains("Read-only file system")) {
        let path = refused_path(line).map(|p| format!(" ({p})")).unwrap_or_default();
        if layout.read_only {
            return Some(format!(
                "The read-only sandbox refused a write{path}: this command ran without asking because it only reads, so nothing is writable and there is no network. A command that must change files is asked for (or allowed by the user's rules) and runs in the ordinary sandbox."
            ));
        }
        notes.push(format!(
            "The sandbox refused a write{path}: only the workspace {} and the folders the user added in Settings → Approvals are writable (running a command in another folder does not make it writable), and /tmp is private to the command.",
            layout.workspace.display()
        ));
    }
    let offline = [
        "Network is unreachable",
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Name or service not known",
    ];
    if offline.iter().any(|m| output.contains(m)) {
        if !layout.network() && layout.attended {
            notes.push("The sandbox has no network: the user switched \"your own turns' commands may use the network\" off in Settings → Approvals.".into());
        } else if !layout.network() {
            notes.push("The sandbox has no network: runs nobody watches get none unless the user switches \"runs nobody watches may use the network\" on in Settings → Approvals, or ticks this routine under \"routines that may use the network\" there (for a routine's job).".into());
        } else if Sandbox::network_helper().is_none() {
            notes.push("The sandbox has no network: slirp4netns, which gives it one, is not installed (Debian package `slirp4netns`).".into());
        }
    }
    if notes.is_empty() {
        return None;
    }
    notes.push("Do not look for a way around it: ask the user to allow it (add the folder or switch the network on in Settings → Approvals), or to approve running this one command outside the sandbox (`exec` with `sandbox: false`).".into());
    Some(notes.join(" "))
}

/// The path in a "Read-only file system" error: the quoted one (`touch: cannot touch
/// '/x': …`), else the word before the colon (`bash: /x: Read-only file system`).
fn refused_path(line: &str) -> Option<String> {
    let before = line.split("Read-only file system").next()?;
    for quote in ['\'', '"', '‘', '`'] {
        let mut parts = before.split(quote);
        if let (Some(_), Some(p), Some(_)) = (parts.next(), parts.next(), parts.next()) {
            if p.starts_with('/') || p.starts_with('~') || p.starts_with('.') {
                return Some(p.to_string());
            }
        }
    }
    before
        .split(':')
        .map(str::trim)
        .rfind(|w| w.starts_with('/'))
        .map(str::to_string)
}

#[cfg(test)]
mod tests;
