//! The sandbox settings the user changes in Settings → Approvals: the two network switches
//! (the user's own turns; runs nobody watches), the folders hidden from every command, and
//! the extra writable folders. Each setter checks what it is given, writes `approvals.json`
//! and only then puts the change in force, so what runs is always what is on disk.
//!
//! Must never: save part of a refused change; accept a hidden entry the sandbox would read
//! differently from how Settings shows it (a relative path, `..`, `~user`).

use std::path::Path;

use crate::sandbox::{Availability, Sandbox, SandboxSettings};

use super::Approvals;

/// Why a sandbox setting was not changed. Nothing was saved, and the setting in force is
/// the one before.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingError {
    /// What the user typed is refused; the message names the entry and why. Recover:
    /// correct it and save again.
    #[error("{0}")]
    Refused(String),
    /// `approvals.json` could not be written. Recover: make room on the disk or fix the
    /// data folder's permissions, then save again.
    #[error("the approval settings could not be saved: {0}")]
    Storage(#[from] std::io::Error),
}

impl Approvals {
    /// Applies `change` to a copy of the sandbox settings, writes the file with it, and puts
    /// it in force once written. The settings lock is held throughout, so two changes never
    /// interleave (the rules lock is taken inside it, never the other way round).
    fn update_sandbox(&self, change: impl FnOnce(&mut SandboxSettings)) -> std::io::Result<()> {
        let mut settings = self.inner.sandbox_settings.lock().unwrap_or_else(|e| e.into_inner());
        let mut next = settings.clone();
        change(&mut next);
        self.write(self.rules(), next.clone())?;
        *settings = next;
        Ok(())
    }

    /// "Your own turns' commands may use the network"; saved at once.
    pub fn set_sandbox_network(&self, on: bool) -> std::io::Result<()> {
        self.update_sandbox(|s| s.network = on)
    }

    /// "Runs nobody watches may use the network" (heartbeat, routine jobs, continuations);
    /// saved at once.
    pub fn set_sandbox_unattended_network(&self, on: bool) -> std::io::Result<()> {
        self.update_sandbox(|s| s.unattended_network = on)
    }

    /// "This routine may use the network": its jobs' commands get the network though runs
    /// nobody watches may not. Saved at once; for a routine that does not exist (any more)
    /// the grant is kept and does nothing.
    pub fn set_routine_network(&self, routine: &str, on: bool) -> std::io::Result<()> {
        self.update_sandbox(|s| {
            s.network_routines.retain(|r| r != routine);
            if on {
                s.network_routines.push(routine.to_string());
            }
        })
    }

    /// The paths every sandbox shows empty. Each entry is `~/…` (in the home) or a full
    /// path, without `..`; blank lines are skipped, spaces around an entry trimmed, a
    /// trailing `/` and repeated or `.` parts dropped, and repeats kept once. An empty list
    /// is allowed: nothing is hidden then. Saved at once; on a refusal nothing is saved.
    pub fn set_sandbox_hidden(&self, entries: &[String]) -> Result<(), SettingError> {
        let mut hidden: Vec<String> = Vec::new();
        for typed in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let entry = hidden_entry(typed).map_err(SettingError::Refused)?;
            if !hidden.contains(&entry) {
                hidden.push(entry);
            }
        }
        Ok(self.update_sandbox(|s| s.hidden = hidden)?)
    }

    /// The extra writable folders: each a full path to an existing folder that neither is,
    /// holds nor lies in Vigil's data folder. Saved at once; nothing is saved on an error.
    pub fn set_sandbox_writable(&self, folders: &[String]) -> Result<(), String> {
        let data_dir = self.inner.path.parent().unwrap_or(Path::new("/"));
        let mut checked = Vec::new();
        for typed in folders.iter().map(|f| f.trim()).filter(|f| !f.is_empty()) {
            let p = Path::new(typed);
            if !p.is_absolute() || !p.is_dir() {
                return Err(format!("{typed} is not a full path to an existing folder"));
            }
            let (real, data) = (
                p.canonicalize().map_err(|e| e.to_string())?,
                data_dir.canonicalize().map_err(|e| e.to_string())?,
            );
            if real.starts_with(&data) || data.starts_with(&real) {
                return Err(format!(
                    "{typed} holds or lies in Vigil's own data folder, which commands must not reach"
                ));
            }
            checked.push(real);
        }
        checked.dedup();
        self.update_sandbox(|s| s.writable = checked).map_err(|e| e.to_string())
    }

    /// The Unix sockets the user's own turns' commands may connect to: each a full path to
    /// a socket there now, outside Vigil's data folder. Saved at once; nothing is saved on an
    /// error. Runs nobody watches never get them.
    pub fn set_sandbox_sockets(&self, sockets: &[String]) -> Result<(), String> {
        use std::os::unix::fs::FileTypeExt;
        let data_dir = self.inner.path.parent().unwrap_or(Path::new("/"));
        let data = data_dir.canonicalize().unwrap_or_else(|_| data_dir.to_path_buf());
        let mut checked = Vec::new();
        for typed in sockets.iter().map(|f| f.trim()).filter(|f| !f.is_empty()) {
            let p = Path::new(typed);
            let is_socket = std::fs::metadata(p).is_ok_and(|m| m.file_type().is_socket());
            if !p.is_absolute() || !is_socket {
                return Err(format!("{typed} is not a full path to a Unix socket that is there now"));
            }
            let real = p.canonicalize().map_err(|e| e.to_string())?;
            if real.starts_with(&data) {
                return Err(format!(
                    "{typed} lies in Vigil's own data folder, which commands must not reach"
                ));
            }
            if !checked.contains(&real) {
                checked.push(real);
            }
        }
        self.update_sandbox(|s| s.sockets = checked).map_err(|e| e.to_string())
    }

    pub(super) fn sandbox_view(&self) -> vigil_protocol::SandboxView {
        let settings = self.sandbox_settings();
        let problem = match self.sandbox().availability() {
            Availability::Ready { .. } => None,
            Availability::Unavailable(why) => Some(why),
        };
        let network_problem = Sandbox::network_helper().is_none().then(|| {
            "Commands get no network, even where it is allowed: slirp4netns is not installed; install the `slirp4netns` package".to_string()
        });
        vigil_protocol::SandboxView {
            available: problem.is_none(),
            problem,
            network: settings.network,
            unattended_network: settings.unattended_network,
            network_routines: settings.network_routines.clone(),
            network_available: network_problem.is_none(),
            network_problem,
            hidden: settings.hidden,
            default_hidden: crate::sandbox::DEFAULT_HIDDEN.iter().map(|h| h.to_string()).collect(),
            writable: settings.writable.iter().map(|p| p.display().to_string()).collect(),
            sockets: settings.sockets.iter().map(|p| p.display().to_string()).collect(),
        }
    }
}

/// One hidden entry as it is kept (`~/.ssh`, `/srv/secrets`), or why it is refused.
fn hidden_entry(typed: &str) -> Result<String, String> {
    if typed.chars().any(char::is_control) {
        return Err(format!("“{}” contains a control character", typed.escape_debug()));
    }
    let (root, rest) = match typed.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => ("~", rest),
        Some(_) => return Err(format!("{typed} names another user's home; write it as a full path")),
        None if typed.starts_with('/') => ("", typed),
        None => return Err(format!("{typed} is neither in your home (~/…) nor a full path (/…)")),
    };
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") {
        return Err(format!("{typed} contains “..”; write the path without it"));
    }
    if parts.is_empty() {
        let what = if root == "~" {
            "your whole home folder"
        } else {
            "the whole file system"
        };
        return Err(format!("{typed} would hide {what}, the workspace with it"));
    }
    Ok(format!("{root}/{}", parts.join("/")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::DEFAULT_HIDDEN;
    use vigil_protocol::ApprovalPolicy;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// What a restart reads back from `approvals.json`.
    fn reopened(dir: &Path) -> SandboxSettings {
        let (approvals, warnings) = Approvals::open(dir, ApprovalPolicy::Ask);
        assert_eq!(warnings, Vec::<String>::new());
        approvals.sandbox_settings()
    }

    #[test]
    fn unattended_network_is_off_until_switched_on_and_the_switch_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (approvals, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
        assert!(!approvals.sandbox_settings().unattended_network);
        assert!(!approvals.view().sandbox.unattended_network);

        approvals.set_sandbox_unattended_network(true).unwrap();
        assert!(approvals.view().sandbox.unattended_network);
        let expected = SandboxSettings {
            unattended_network: true,
            ..SandboxSettings::default()
        };
        assert_eq!(reopened(dir.path()), expected);

        // The two switches are independent.
        approvals.set_sandbox_network(false).unwrap();
        approvals.set_sandbox_unattended_network(false).unwrap();
        let expected = SandboxSettings {
            network: false,
            ..SandboxSettings::default()
        };
        assert_eq!(reopened(dir.path()), expected);
    }

    #[test]
    fn the_hidden_list_is_tidied_saved_and_read_back_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let (approvals, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
        assert_eq!(approvals.view().sandbox.hidden, strings(DEFAULT_HIDDEN));

        let typed = strings(&["  ~/.ssh/ ", "", "/srv//secrets/./db", "~/.ssh", "~/notes  "]);
        approvals.set_sandbox_hidden(&typed).unwrap();
        let kept = strings(&["~/.ssh", "/srv/secrets/db", "~/notes"]);
        assert_eq!(approvals.sandbox_settings().hidden, kept);
        assert_eq!(reopened(dir.path()).hidden, kept);
        assert_eq!(approvals.view().sandbox.hidden, kept);

        // Nothing hidden is a choice the user may make; Restore defaults brings the list back.
        approvals.set_sandbox_hidden(&[]).unwrap();
        assert_eq!(reopened(dir.path()).hidden, Vec::<String>::new());
        let defaults = approvals.view().sandbox.default_hidden;
        assert_eq!(defaults, strings(DEFAULT_HIDDEN));
        approvals.set_sandbox_hidden(&defaults).unwrap();
        assert_eq!(reopened(dir.path()), SandboxSettings::default());
    }

    #[test]
    fn a_refused_hidden_entry_saves_nothing_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let (approvals, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
        approvals.set_sandbox_hidden(&strings(&["~/.ssh"])).unwrap();
        let on_disk = std::fs::read(dir.path().join("approvals.json")).unwrap();
        let refusals = [
            ("relative/path", "neither in your home (~/…) nor a full path (/…)"),
            ("~/.config/../.ssh", "contains “..”"),
            ("/srv/..", "contains “..”"),
            ("~bob/.ssh", "another user's home"),
            ("~", "your whole home folder"),
            ("~/", "your whole home folder"),
            ("/", "the whole file system"),
            ("/srv/a\0b", "control character"),
        ];
        for (bad, why) in refusals {
            // A good entry before the bad one is not kept either.
            let err = approvals.set_sandbox_hidden(&strings(&["~/.aws", bad])).expect_err(bad);
            assert!(matches!(err, SettingError::Refused(_)), "{bad}: {err:?}");
            assert!(err.to_string().contains(why), "{bad}: {err}");
            assert_eq!(approvals.sandbox_settings().hidden, strings(&["~/.ssh"]), "{bad}");
            assert_eq!(
                std::fs::read(dir.path().join("approvals.json")).unwrap(),
                on_disk,
                "{bad}"
            );
        }
    }

    /// A change that cannot be written is not put in force either: what runs is what a
    /// restart would read.
    #[test]
    fn a_change_that_cannot_be_written_is_not_in_force() {
        let dir = tempfile::tempdir().unwrap();
        let (approvals, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
        // A folder where the file should be: the rename over it fails, whoever runs the test.
        std::fs::create_dir(dir.path().join("approvals.json")).unwrap();
        std::fs::write(dir.path().join("approvals.json/keep"), "x").unwrap();
        assert!(approvals.set_sandbox_unattended_network(true).is_err());
        let err = approvals.set_sandbox_hidden(&strings(&["~/.ssh"])).unwrap_err();
        assert!(matches!(err, SettingError::Storage(_)), "{err:?}");
        assert_eq!(approvals.sandbox_settings(), SandboxSettings::default());
    }

    #[test]
    fn the_view_says_whether_commands_can_have_a_network_here() {
        let dir = tempfile::tempdir().unwrap();
        let (approvals, _) = Approvals::open(dir.path(), ApprovalPolicy::Ask);
        let view = approvals.view().sandbox;
        assert_eq!(view.network_available, Sandbox::network_helper().is_some());
        assert_eq!(view.network_problem.is_some(), !view.network_available);
        if let Some(problem) = view.network_problem {
            assert!(problem.contains("slirp4netns"), "{problem}");
        }
    }
}
