//! The runtime's side of routine triggers (issue 33): the watcher built over the scheduler,
//! the approvals' sandbox and the workspace, started with the background work, and the
//! `approve_routine` op.
//!
//! Must never: read the sandbox once and keep it (the watcher asks the approvals each
//! time, so a changed setting applies to the next check), or start before the registry
//! does (output triggers read it).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use vigil_protocol::{ErrorKind, Event, RoutinesView, Source};

use super::processes::Processes;
use super::{Base, Life};
use crate::approval::Approvals;
use crate::heartbeat::Heartbeat;
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

/// Starts the watcher with the background work, once the process registry runs (output
/// triggers read it); a checklist every heartbeat interval.
pub(super) fn start(watch: &Watch, processes: &Processes, heartbeat: &Heartbeat, life: &Life) {
    let watch = watch.clone();
    if let Some(registry) = processes.registry() {
        watch.set_processes(registry.clone());
    }
    let heartbeat = heartbeat.clone();
    watch.set_checklist_every(Arc::new(move || heartbeat.interval()));
    life.background.spawn(watch.run(life.shutdown.clone()));
}

/// The user approved routine `id`'s check or URL as it is written now (the card showed
/// what runs, how often, with what access); a pause by the rate limit ends with it.
pub(super) fn approve(watch: &Watch, scheduler: &Scheduler, id: &str) -> Result<RoutinesView, String> {
    watch.approve(id)?;
    Ok(scheduler.view())
}

/// The `approve_routine` op: answered by `routines_changed`, or an `error`.
pub(super) fn approve_op(watch: &Watch, scheduler: &Scheduler, base: &Base, id: &str) {
    match approve(watch, scheduler, id) {
        Ok(routines) => base
            .emitter
            .emit(Source::Scheduler, Event::RoutinesChanged { routines }),
        Err(e) => base.report(ErrorKind::InvalidOp, e),
    }
}
