//! The runtime's side of routine triggers (issue 33): the watcher built over the scheduler,
//! the approvals' sandbox and the workspace, started with the background work, and the
//! `approve_routine` op.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use vigil_protocol::{ErrorKind, Event, Source};

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
        &self.inner.watch
    }

    pub(super) fn start_watch(&self) {
        let watch = self.inner.watch.clone();
        self.inner.background.spawn(watch.run(self.inner.shutdown.clone()));
    }

    /// The user approved routine `id`'s check or URL as it is written now.
    pub(super) fn approve_routine(&self, id: &str) {
        match self.inner.watch.approve(id) {
            Ok(()) => self.inner.emitter.emit(
                Source::Scheduler,
                Event::RoutinesChanged {
                    routines: self.routines(),
                },
            ),
            Err(e) => self.report(ErrorKind::InvalidOp, e),
        }
    }
}
