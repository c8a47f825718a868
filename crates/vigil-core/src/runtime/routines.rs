//! The runtime's side of routines: the scheduler's access to lanes and clients for isolated
//! jobs, the core API the routine editor uses (list, create, update, delete, run now, pause,
//! history, schedule preview), and the routine ops of the protocol.

use vigil_protocol::{
    ErrorKind, Event, HeartbeatChecks, RoutineDraft, RoutineRun, RoutineSource, RoutineView, RoutinesView,
    SchedulePreview, Source,
};

use super::Runtime;
use crate::routines::view::{routine_view, with_last_run};
use crate::routines::{Scheduler, StoreError};
use crate::workspace::heartbeat_file::is_effectively_empty;

impl Runtime {
    /// The scheduler (routines, claims, the timing loop).
    pub fn scheduler(&self) -> &Scheduler {
        &self.inner.unattended.routines
    }

    /// The routine list and the state of `HEARTBEAT.md`'s task block.
    pub fn routines(&self) -> RoutinesView {
        self.inner.unattended.routines.view()
    }

    fn routine_view(&self, r: &crate::routines::Routine) -> RoutineView {
        let v = routine_view(
            r,
            &self.inner.unattended.routines.config().default_zone,
            self.inner.base.clock.now_ms(),
        );
        with_last_run(v, &self.inner.unattended.routines.deps().runlog)
    }

    /// Creates a routine as the user's (`source: manual`). Over the soft limit it is still
    /// created, with a warning.
    pub async fn add_routine(&self, draft: RoutineDraft) -> Result<(RoutineView, Vec<String>), StoreError> {
        let (r, warnings) = self
            .inner
            .unattended
            .routines
            .create(draft, RoutineSource::Manual, false)
            .await?;
        Ok((self.routine_view(&r), warnings))
    }

    pub async fn update_routine(&self, id: &str, changes: RoutineDraft) -> Result<RoutineView, StoreError> {
        let r = self.inner.unattended.routines.update_routine(id, changes).await?;
        Ok(self.routine_view(&r))
    }

    /// Removes a routine so it can be restored; `hard` deletes it and its history for good.
    pub async fn remove_routine(&self, id: &str, hard: bool) -> Result<(), StoreError> {
        self.inner.unattended.routines.remove(id, hard).await.map(|_| ())
    }

    /// Brings a removed routine back.
    pub async fn restore_routine(&self, id: &str) -> Result<RoutineView, StoreError> {
        let r = self.inner.unattended.routines.restore(id).await?;
        Ok(self.routine_view(&r))
    }

    /// Runs a routine now; its schedule is unchanged.
    pub async fn run_routine_now(&self, id: &str) -> Result<(), StoreError> {
        self.inner.unattended.routines.run_now(id).await
    }

    /// The user's answer to a run whose outcome is unknown: run the routine again now
    /// (`retry`), or leave it (dismiss).
    pub async fn resolve_routine_run(&self, id: &str, run_id: &str, retry: bool) -> Result<(), StoreError> {
        self.inner.unattended.routines.resolve_unknown(id, run_id, retry).await
    }

    /// Pauses (`false`) or resumes (`true`).
    pub async fn set_routine_enabled(&self, id: &str, enabled: bool) -> Result<RoutineView, StoreError> {
        let r = self.inner.unattended.routines.set_enabled(id, enabled).await?;
        Ok(self.routine_view(&r))
    }

    /// The routine's latest runs (bounded), oldest first.
    pub fn routine_history(&self, id: &str) -> Vec<RoutineRun> {
        self.inner.unattended.routines.history(id)
    }

    /// The tray's line about what runs next: "Next: Disk check at 09:15", in the user's zone.
    pub fn next_routine_line(&self) -> String {
        let zone = &self.inner.unattended.routines.config().default_zone;
        crate::routines::view::next_routine_line(&self.routines().routines, self.inner.base.clock.now_ms(), zone)
    }

    /// "every weekday at 09:00, Europe/Berlin" and the next three runs, or why the schedule
    /// cannot be used (the same validation as the agent's tools).
    pub fn preview_schedule(
        &self,
        schedule: Option<&str>,
        next_run_at: Option<i64>,
        timezone: Option<&str>,
    ) -> Result<SchedulePreview, crate::routines::Refusal> {
        self.inner.unattended.routines.preview(schedule, next_run_at, timezone)
    }

    /// The free-text checks of `HEARTBEAT.md` (everything but the routines' section).
    pub fn heartbeat_checks(&self) -> Result<HeartbeatChecks, StoreError> {
        let store = &self.inner.unattended.routines.deps().store;
        Ok(checks_view(store.checks()?, &store.path()))
    }

    /// Replaces the checks (see [`crate::routines::RoutineStore::save_checks`]).
    pub async fn save_heartbeat_checks(&self, expected: &str, text: &str) -> Result<HeartbeatChecks, StoreError> {
        let store = &self.inner.unattended.routines.deps().store;
        let saved = store.save_checks(expected, text).await?;
        Ok(checks_view(saved, &store.path()))
    }

    /// Replaces a corrupted task block with `.heartbeat_snapshot.json` (the broken file is
    /// kept as `HEARTBEAT.md.corrupt`); returns how many routines came back.
    pub async fn restore_routines_from_snapshot(&self) -> Result<usize, StoreError> {
        let n = self.inner.unattended.routines.deps().store.restore_snapshot().await?;
        self.inner.unattended.routines.changed();
        self.inner.unattended.routines.poke();
        Ok(n)
    }

    /// The user's Trust of a held `HEARTBEAT.md` (replaced while a sandboxed command ran):
    /// the file as it is now is trusted, and its routines run.
    pub async fn trust_heartbeat_file(&self) -> Result<RoutinesView, StoreError> {
        self.inner.unattended.routines.deps().store.trust_file().await?;
        self.inner.unattended.routines.changed();
        self.inner.unattended.routines.poke();
        Ok(self.routines())
    }

    /// The protocol's routine ops: answered by `routines_changed`, or an `error`.
    pub(super) fn routine_op(&self, op: RoutineOp) {
        let this = self.clone();
        self.inner.life.tasks.spawn(async move {
            let done = match op {
                RoutineOp::List => Ok(()),
                RoutineOp::Add(d) => this.add_routine(d).await.map(|(_, warnings)| {
                    for w in warnings {
                        this.report(ErrorKind::InvalidOp, w);
                    }
                }),
                RoutineOp::Update(id, d) => this.update_routine(&id, d).await.map(|_| ()),
                RoutineOp::Remove(id, hard) => this.remove_routine(&id, hard).await,
                RoutineOp::Restore(id) => this.restore_routine(&id).await.map(|_| ()),
                RoutineOp::Run(id) => this.run_routine_now(&id).await,
                RoutineOp::Enable(id, on) => this.set_routine_enabled(&id, on).await.map(|_| ()),
                RoutineOp::Resolve(id, run_id, retry) => this.resolve_routine_run(&id, &run_id, retry).await,
                RoutineOp::Trust => this.trust_heartbeat_file().await.map(|_| ()),
            };
            match done {
                Ok(()) => this.inner.base.emitter.emit(
                    Source::Scheduler,
                    Event::RoutinesChanged {
                        routines: this.routines(),
                    },
                ),
                Err(e) => this.report(ErrorKind::InvalidOp, e.to_string()),
            }
        });
    }
}

/// A routine op from the protocol.
pub(super) enum RoutineOp {
    List,
    Add(RoutineDraft),
    Update(String, RoutineDraft),
    Remove(String, bool),
    Restore(String),
    Run(String),
    Enable(String, bool),
    /// A routine, its `unknown` run, and whether to retry it (else dismiss).
    Resolve(String, String, bool),
    /// The user's Trust of a held `HEARTBEAT.md`.
    Trust,
}

fn checks_view(text: String, path: &std::path::Path) -> HeartbeatChecks {
    let exists = path.exists();
    HeartbeatChecks {
        exists,
        // No file is as good as an empty one: interval heartbeats skip the model call.
        effectively_empty: !exists || is_effectively_empty(&text),
        text,
        path: path.display().to_string(),
    }
}
