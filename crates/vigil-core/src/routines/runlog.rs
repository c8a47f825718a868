//! Each routine's run history: `<data>/routines/runs/<id>.jsonl`, one [`RoutineRun`] per
//! line, appended whole; bounded to the latest [`KEEP`] runs (trimmed with an atomic
//! rewrite once it holds twice that).
//!
//! The latest run of each routine is kept in memory too, for the routine list, which is
//! rebuilt on every change: it is read from a file only when the file changed (another
//! process sharing the data folder may have run the routine).
//!
//! Must never: let a history grow without bound, or fail a run because its log could not
//! be written (that is logged and the run goes on).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use vigil_protocol::RoutineRun;

use crate::durable::write_atomic;

/// Runs kept per routine.
pub const KEEP: usize = 50;

/// The run logs of one data directory; cheap to clone.
#[derive(Clone)]
pub struct RunLog {
    dir: PathBuf,
    /// `std` lock: serialises appends and trims in this process; never held across an await.
    lock: Arc<Mutex<()>>,
    /// Per routine: the latest run, and the file's length and time it was read from.
    last: Arc<Mutex<HashMap<String, LastRun>>>,
    /// `std` lock: how each routine's trigger and check are doing (`crate::watch` writes it,
    /// the routine list reads it). In memory: fires today start again at a restart.
    watch: Arc<Mutex<HashMap<String, vigil_protocol::WatchStatus>>>,
}

#[derive(Clone)]
struct LastRun {
    stamp: Option<(u64, SystemTime)>,
    run: Option<RoutineRun>,
}

/// The length and modification time of `path`, or `None` if it cannot be read.
fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

impl RunLog {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.join("routines").join("runs"),
            lock: Arc::default(),
            last: Arc::default(),
            watch: Arc::default(),
        }
    }

    /// Sets how `routine_id`'s trigger and check are doing.
    pub fn set_watch(&self, routine_id: &str, status: vigil_protocol::WatchStatus) {
        let mut w = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        w.insert(routine_id.to_string(), status);
    }

    /// How `routine_id`'s trigger and check are doing, if it has either.
    pub fn watch(&self, routine_id: &str) -> Option<vigil_protocol::WatchStatus> {
        self.watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(routine_id)
            .cloned()
    }

    fn file(&self, routine_id: &str) -> PathBuf {
        let safe = super::safe_name(routine_id, 100);
        self.dir.join(format!("{safe}.jsonl"))
    }

    /// Appends one run.
    pub fn record(&self, run: &RoutineRun) {
        if let Err(e) = self.try_record(run) {
            tracing::warn!("could not write the run log of routine {}: {e}", run.routine_id);
        }
        let entry = LastRun {
            stamp: stamp(&self.file(&run.routine_id)),
            run: Some(run.clone()),
        };
        self.lock_last().insert(run.routine_id.clone(), entry);
    }

    /// The latest run, from memory unless the file changed since it was last read.
    pub fn last_run(&self, routine_id: &str) -> Option<RoutineRun> {
        let path = self.file(routine_id);
        let now = stamp(&path);
        if let Some(known) = self.lock_last().get(routine_id) {
            if known.stamp == now {
                return known.run.clone();
            }
        }
        let run = self.history(routine_id).pop();
        let entry = LastRun {
            stamp: now,
            run: run.clone(),
        };
        self.lock_last().insert(routine_id.to_string(), entry);
        run
    }

    fn lock_last(&self) -> std::sync::MutexGuard<'_, HashMap<String, LastRun>> {
        self.last.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn try_record(&self, run: &RoutineRun) -> std::io::Result<()> {
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        crate::durable::create_private_dir_all(&self.dir)?;
        let path = self.file(&run.routine_id);
        let mut line = serde_json::to_string(run).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&path)?;
        f.write_all(line.as_bytes())?;
        drop(f);
        let text = std::fs::read_to_string(&path)?;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        if lines.len() >= 2 * KEEP {
            let mut kept = lines[lines.len() - KEEP..].join("\n");
            kept.push('\n');
            write_atomic(&path, kept.as_bytes())?;
        }
        Ok(())
    }

    /// The latest runs, oldest first (at most [`KEEP`]); unreadable lines are skipped.
    pub fn history(&self, routine_id: &str) -> Vec<RoutineRun> {
        let Ok(text) = std::fs::read_to_string(self.file(routine_id)) else {
            return vec![];
        };
        let runs: Vec<RoutineRun> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        runs[runs.len().saturating_sub(KEEP)..].to_vec()
    }

    /// Forgets a routine's history.
    pub fn remove(&self, routine_id: &str) {
        let _ = std::fs::remove_file(self.file(routine_id));
        self.lock_last().remove(routine_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_protocol::{ExecutionMode, RunOutcome};

    fn run(i: i64) -> RoutineRun {
        RoutineRun {
            run_id: format!("r{i}"),
            routine_id: "water".into(),
            mode: ExecutionMode::Inline,
            due_at: Some(i),
            started_at: i,
            finished_at: i,
            outcome: RunOutcome::Ok,
            session_id: None,
            summary: None,
            error: None,
            deterministic: false,
            due_count: 1,
            last_due_at: None,
            side_effect: None,
            usage: None,
            evidence: None,
        }
    }

    #[test]
    fn a_run_logged_before_runs_named_their_session_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::new(dir.path());
        crate::durable::create_private_dir_all(&log.dir).unwrap();
        let old = r#"{"run_id":"r0","routine_id":"water","mode":"isolated","due_at":5,"started_at":5,"finished_at":6,"outcome":"ok","summary":"Drank.","error":null,"deterministic":false}"#;
        std::fs::write(log.file("water"), format!("{old}\n")).unwrap();
        log.record(&RoutineRun {
            session_id: Some("job_water_r1".into()),
            ..run(1)
        });
        let h = log.history("water");
        let seen: Vec<_> = h.iter().map(|r| (r.run_id.as_str(), r.session_id.as_deref())).collect();
        assert_eq!(seen, [("r0", None), ("r1", Some("job_water_r1"))]);
        assert_eq!(h[0].summary.as_deref(), Some("Drank."));
    }

    #[test]
    fn the_history_is_bounded_and_keeps_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let log = RunLog::new(dir.path());
        for i in 0..(3 * KEEP as i64) {
            log.record(&run(i));
        }
        let h = log.history("water");
        assert_eq!(h.len(), KEEP);
        assert_eq!(h.last().unwrap().run_id, format!("r{}", 3 * KEEP - 1));
        let lines = std::fs::read_to_string(log.file("water")).unwrap().lines().count();
        assert!(lines < 2 * KEEP, "{lines}");
        log.remove("water");
        assert!(log.history("water").is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn the_run_folders_are_the_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        RunLog::new(dir.path()).record(&run(1));
        for sub in ["routines", "routines/runs"] {
            let mode = std::fs::metadata(dir.path().join(sub)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{sub}");
        }
    }

    #[test]
    fn the_last_run_follows_runs_recorded_here_and_by_another_process() {
        let dir = tempfile::tempdir().unwrap();
        let here = RunLog::new(dir.path());
        let other = RunLog::new(dir.path());
        assert!(here.last_run("water").is_none());
        here.record(&run(1));
        assert_eq!(here.last_run("water").unwrap().run_id, "r1");
        // Another process sharing the data folder: its own memory, the same file.
        other.record(&run(2));
        assert_eq!(here.last_run("water").unwrap().run_id, "r2");
        here.remove("water");
        assert!(here.last_run("water").is_none());
        assert!(other.last_run("water").is_none(), "the file is gone for both");
    }
}
