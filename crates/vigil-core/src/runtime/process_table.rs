//! The persisted process table: which commands run now, whose they are, and since when, so
//! that a quit or a crash leaves a trace. At the next start every command that was still
//! running gets its notice in its conversation (and a continuation, if the conversation
//! allows it); one the user started from the panel gets a line in the panel.
//!
//! Must never: lose the table to a torn write (atomic rewrite), or announce a command twice
//! (the table is emptied once its notices are queued).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use tokio_util::sync::CancellationToken;

use crate::exec::{ChannelExecEvents, ExecEvents, ExitStatus, ProcessInfo};

/// One running command, as the table keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Running {
    pub id: String,
    pub owner: String,
    pub command: String,
    pub cwd: String,
    pub pid: Option<u32>,
    /// Milliseconds since the Unix epoch.
    pub started_at: i64,
}

impl From<&ProcessInfo> for Running {
    fn from(p: &ProcessInfo) -> Self {
        Self {
            id: p.id.clone(),
            owner: p.owner.clone(),
            command: p.command.clone(),
            cwd: p.cwd.display().to_string(),
            pid: p.pid,
            started_at: p.started_at,
        }
    }
}

/// The table on disk: `<data dir>/exec/running.json`.
pub(super) struct ProcessTable {
    path: PathBuf,
    /// Id → command. Only the exec event loop touches it, one event at a time.
    running: BTreeMap<String, Running>,
}

impl ProcessTable {
    pub(super) fn path(data_dir: &Path) -> PathBuf {
        data_dir.join("exec").join("running.json")
    }

    /// Takes what the last run left (the commands it did not see end) and starts empty.
    /// An unreadable table is reported and set aside, not fatal.
    pub(super) fn open(data_dir: &Path) -> (Self, Vec<Running>) {
        let path = Self::path(data_dir);
        let left = match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Vec<Running>>(&bytes) {
                Ok(left) => left,
                Err(e) => {
                    tracing::warn!(
                        "{} could not be read ({e}); the commands it listed are not announced",
                        path.display()
                    );
                    vec![]
                }
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => vec![],
            Err(e) => {
                tracing::warn!("could not read {}: {e}", path.display());
                vec![]
            }
        };
        (
            Self {
                path,
                running: BTreeMap::new(),
            },
            left,
        )
    }

    /// How many commands run now.
    pub(super) fn len(&self) -> usize {
        self.running.len()
    }

    pub(super) fn started(&mut self, p: &ProcessInfo) {
        self.running.insert(p.id.clone(), Running::from(p));
        self.save();
    }

    pub(super) fn ended(&mut self, id: &str) {
        if self.running.remove(id).is_some() {
            self.save();
        }
    }

    /// Writes the table (also to empty it once the last run's commands were announced).
    pub(super) fn save(&self) {
        let rows: Vec<&Running> = self.running.values().collect();
        let written = serde_json::to_vec_pretty(&rows)
            .map_err(std::io::Error::other)
            .and_then(|json| {
                crate::durable::make_private_dir(self.path.parent().unwrap_or(Path::new(".")))?;
                crate::durable::write_atomic(&self.path, &json)
            });
        if let Err(e) = written {
            tracing::warn!("could not save the process table {}: {e}", self.path.display());
        }
    }
}

/// The registry's events, with the table written before each start or end is passed on (and
/// before the registry's call returns): a crash a moment after a command started still finds
/// it on disk. A start costs one atomic rewrite of a small file; starts are rare next to
/// output, which passes straight through.
pub(super) struct Recording {
    table: std::sync::Mutex<ProcessTable>,
    forward: ChannelExecEvents,
    /// Set when Vigil stops: ends caused by the stop are kept, so the next start tells
    /// each command's owner.
    stopping: CancellationToken,
}

impl Recording {
    pub(super) fn new(table: ProcessTable, forward: ChannelExecEvents, stopping: CancellationToken) -> Self {
        Self {
            table: std::sync::Mutex::new(table),
            forward,
            stopping,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, ProcessTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many commands run now.
    pub(super) fn running(&self) -> usize {
        self.table().len()
    }
}

impl ExecEvents for Recording {
    fn started(&self, info: &ProcessInfo) {
        self.table().started(info);
        self.forward.started(info);
    }

    fn output(&self, process_id: &str, owner: &str, raw: &[u8]) {
        self.forward.output(process_id, owner, raw);
    }

    fn exited(&self, process_id: &str, owner: &str, exit: &ExitStatus, tail: &str) {
        if !self.stopping.is_cancelled() {
            self.table().ended(process_id);
        }
        self.forward.exited(process_id, owner, exit, tail);
    }

    fn exit_notice(&self, owner: &str, process_id: &str, text: &str) {
        self.forward.exit_notice(owner, process_id, text);
    }
}

/// The notice a conversation gets for a command that was running when Vigil stopped.
pub(super) fn stopped_notice(r: &Running) -> String {
    format!(
        "Exec ended ({}) :: `{}` was running when Vigil stopped and was ended",
        r.id,
        crate::shell::visible(&r.command)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(id: &str) -> ProcessInfo {
        ProcessInfo {
            id: id.into(),
            owner: "main".into(),
            command: "make test".into(),
            cwd: "/w".into(),
            pid: Some(42),
            pty: true,
            pty_fallback: None,
            started_at: 7,
            ended_at: None,
            state: crate::exec::ProcessState::Running,
            exit: None,
            backgrounded: true,
            error: None,
        }
    }

    #[test]
    fn what_was_running_at_a_stop_is_found_once_by_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        let (mut table, left) = ProcessTable::open(dir.path());
        assert!(left.is_empty());
        table.started(&info("a1"));
        table.started(&info("b2"));
        table.ended("a1");
        drop(table); // a crash: nothing else is written
        let (table, left) = ProcessTable::open(dir.path());
        assert_eq!(left.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["b2"]);
        assert_eq!(
            stopped_notice(&left[0]),
            "Exec ended (b2) :: `make test` was running when Vigil stopped and was ended"
        );
        table.save();
        let (_, again) = ProcessTable::open(dir.path());
        assert!(again.is_empty(), "announced once");
    }

    #[test]
    fn a_broken_table_is_set_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = ProcessTable::path(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"{not json").unwrap();
        let (_, left) = ProcessTable::open(dir.path());
        assert!(left.is_empty());
    }
}
