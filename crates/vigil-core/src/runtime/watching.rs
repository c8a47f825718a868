//! The runtime's side of routine triggers (issue 33): the watcher built over the scheduler,
//! the approvals' sandbox and the workspace, started with the background work, and the
//! `approve_routine` op.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use vigil_protocol::{ErrorKind, Event, RoutinesView, Source};

use super::Runtime;
use crate::approval::Approvals;
use crate::routines::Scheduler;
use crate::watch::{Watch, WatchDeps};

/// The watcher, with the sandbox and its settings read from the approvals each time.
pub(super) fn watch(scheduler: &Scheduler, data_dir: &Path, workspace: &Path, approvals: &Approvals) -> Watch {
    let approvals = approvals.clone();
    Watch::new(WatchDeps {
        scheduler: scheduler.clone(),
        data_dir: data_dir.to_path_buf(),
        workspace: workspace.to_path_buf(),
        sandbox: Arc::new(move || (approvals.sandbox(), approvals.sandbox_settings())),
        home: std::env::var_os("HOME").map(PathBuf::from),
    })
}

impl Runtime {
    /// The routine triggers' watcher.
    pub fn watch(&self) -> &Watch {
        &self.inner.unattended.watch
    }

    pub(super) fn start_watch(&self) {
        let watch = self.inner.unattended.watch.clone();
        if let Some(registry) = self.processes() {
            watch.set_processes(registry.clone());
        }
        let heartbeat = self.inner.unattended.heartbeat.clone();
        watch.set_checklist_every(Arc::new(move || heartbeat.interval()));
        self.inner
            .life
            .background
            .spawn(watch.run(self.inner.life.shutdown.clone()));
    }

    /// The user approved routine `id`'s check or URL as it is written now (the card showed
    /// what runs, how often, with what access); a pause by the rate limit ends with it.
    pub fn approve_routine(&self, id: &str) -> Result<RoutinesView, String> {
        self.inner.unattended.watch.approve(id)?;
        Ok(self.routines())
    }

    /// The `approve_routine` op: answered by `routines_changed`, or an `error`.
    pub(super) fn approve_routine_op(&self, id: &str) {
        match self.approve_routine(id) {
            Ok(routines) => self
                .inner
                .base
                .emitter
                .emit(Source::Scheduler, Event::RoutinesChanged { routines }),
            Err(e) => self.report(ErrorKind::InvalidOp, e),
        }
    }
}
