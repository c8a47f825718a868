//! The runtime's side of routines: what the routine editor reads beyond the scheduler's own
//! calls (a routine's view with its last run, the checks of `HEARTBEAT.md`, the tray's line),
//! and the routine ops of the protocol. The scheduler ([`Unattended`]'s) holds their state.
//!
//! Must never: hold routine state of its own, or write `HEARTBEAT.md` but through the
//! scheduler's store (which refuses while the file is held for Trust).
//!
//! [`Unattended`]: super::background::Unattended

use vigil_protocol::{ErrorKind, Event, HeartbeatChecks, RoutineDraft, RoutineSource, RoutineView, Source};

use super::{Base, Life};
use crate::clock::Clock;
use crate::routines::view::{routine_view, with_last_run};
use crate::routines::{Scheduler, StoreError};
use crate::workspace::heartbeat_file::is_effectively_empty;

/// A routine as the editor shows it, with its last run.
pub(super) fn view_of(scheduler: &Scheduler, clock: &dyn Clock, r: &crate::routines::Routine) -> RoutineView {
    let v = routine_view(r, &scheduler.config().default_zone, clock.now_ms());
    with_last_run(v, &scheduler.deps().runlog)
}

/// Creates a routine as the user's (`source: manual`). Over the soft limit it is still
/// created, with a warning.
pub(super) async fn add(
    scheduler: &Scheduler,
    clock: &dyn Clock,
    draft: RoutineDraft,
) -> Result<(RoutineView, Vec<String>), StoreError> {
    let (r, warnings) = scheduler.create(draft, RoutineSource::Manual, false).await?;
    Ok((view_of(scheduler, clock, &r), warnings))
}

/// The tray's line about what runs next: "Next: Disk check at 09:15", in the user's zone.
pub(super) fn next_line(scheduler: &Scheduler, clock: &dyn Clock) -> String {
    let zone = &scheduler.config().default_zone;
    crate::routines::view::next_routine_line(&scheduler.view().routines, clock.now_ms(), zone)
}

/// The free-text checks of `HEARTBEAT.md` (everything but the routines' section).
pub(super) fn checks(scheduler: &Scheduler) -> Result<HeartbeatChecks, StoreError> {
    let store = &scheduler.deps().store;
    Ok(checks_view(store.checks()?, &store.path()))
}

/// Replaces the checks (see [`crate::routines::RoutineStore::save_checks`]).
pub(super) async fn save_checks(
    scheduler: &Scheduler,
    expected: &str,
    text: &str,
) -> Result<HeartbeatChecks, StoreError> {
    let store = &scheduler.deps().store;
    let saved = store.save_checks(expected, text).await?;
    Ok(checks_view(saved, &store.path()))
}

/// Replaces a corrupted task block with `.heartbeat_snapshot.json` (the broken file is
/// kept as `HEARTBEAT.md.corrupt`); returns how many routines came back.
pub(super) async fn restore_from_snapshot(scheduler: &Scheduler) -> Result<usize, StoreError> {
    let n = scheduler.deps().store.restore_snapshot().await?;
    scheduler.changed();
    scheduler.poke();
    Ok(n)
}

/// The protocol's routine ops, from a task of their own: answered by `routines_changed`,
/// or an `error`.
pub(super) fn op(scheduler: &Scheduler, base: &Base, life: &Life, op: RoutineOp) {
    let scheduler = scheduler.clone();
    let (emitter, clock) = (base.emitter.clone(), base.clock.clone());
    life.tasks.spawn(async move {
        let s = &scheduler;
        let report = |message: String| {
            emitter.emit(
                Source::System,
                Event::Error {
                    kind: ErrorKind::InvalidOp,
                    message,
                },
            )
        };
        let done = match op {
            RoutineOp::List => Ok(()),
            RoutineOp::Add(d) => add(s, &*clock, d).await.map(|(_, warnings)| {
                for w in warnings {
                    report(w);
                }
            }),
            RoutineOp::Update(id, d) => s.update_routine(&id, d).await.map(|_| ()),
            RoutineOp::Remove(id, hard) => s.remove(&id, hard).await.map(|_| ()),
            RoutineOp::Restore(id) => s.restore(&id).await.map(|_| ()),
            RoutineOp::Run(id) => s.run_now(&id).await,
            RoutineOp::Enable(id, on) => s.set_enabled(&id, on).await.map(|_| ()),
            RoutineOp::Resolve(id, run_id, retry) => s.resolve_unknown(&id, &run_id, retry).await,
            RoutineOp::Trust => trust_file(s).await,
        };
        match done {
            Ok(()) => emitter.emit(Source::Scheduler, Event::RoutinesChanged { routines: s.view() }),
            Err(e) => report(e.to_string()),
        }
    });
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

/// The user's Trust of a held `HEARTBEAT.md` (replaced while a sandboxed command ran): the
/// file as it is now is trusted, and its routines run.
pub(super) async fn trust_file(scheduler: &Scheduler) -> Result<(), StoreError> {
    scheduler.deps().store.trust_file().await?;
    scheduler.changed();
    scheduler.poke();
    Ok(())
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
