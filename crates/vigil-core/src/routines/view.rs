//! The editor's view of the routines: each routine with its plain-language schedule, its
//! next three runs and anything that stops it from running; the schedule preview the
//! editor shows while typing (the same validation as the tools); run histories.
//!
//! Must never: write anything.

use vigil_protocol::{ParseStatus, RoutineRun, RoutineView, RoutinesView, SchedulePreview};

use super::edit::validate;
use super::model::Routine;
use super::schedule::Spec;
use super::scheduler::Scheduler;
use super::store::Parsed;

/// How many upcoming runs a view lists.
pub const PREVIEW_RUNS: usize = 3;

/// "every weekday at 09:00, Europe/Berlin", or why the schedule cannot be read.
pub fn describe(r: &Routine, default_zone: &str) -> String {
    match Spec::parse(r.schedule_text(), r.timezone.as_deref().unwrap_or(default_zone)) {
        Ok(spec) => spec.describe(r.next_run_at),
        Err(_) => format!("\"{}\" (invalid)", r.schedule_text().unwrap_or("")),
    }
}

pub fn routine_view(r: &Routine, default_zone: &str, now: i64) -> RoutineView {
    let zone = r.timezone.clone().unwrap_or_else(|| default_zone.to_string());
    let spec = Spec::parse(r.schedule_text(), &zone);
    let (description, next_runs, problem) = match &spec {
        Ok(spec) => {
            let mut runs: Vec<i64> = r.next_run_at.filter(|_| r.active()).into_iter().collect();
            let from = runs.last().copied().unwrap_or(now).max(now);
            if r.recurring() && r.active() {
                runs.extend(spec.preview(from, r.created_at.unwrap_or(now), None, PREVIEW_RUNS));
            }
            runs.dedup();
            runs.truncate(PREVIEW_RUNS);
            (spec.describe(r.next_run_at), runs, None)
        }
        Err(p) => (describe(r, default_zone), vec![], Some(p.clone())),
    };
    RoutineView {
        id: r.id.clone(),
        title: r.title.clone(),
        description: r.description.clone(),
        schedule: r.schedule_text().map(str::to_string),
        timezone: zone,
        execution_mode: r.execution_mode,
        source: r.source,
        enabled: r.enabled,
        state: r.state,
        last_run_at: r.last_run_at,
        next_run_at: r.next_run_at,
        timeout_seconds: r.timeout_seconds,
        retry: r.retry,
        max_retry: r.max_retry,
        error_message: r.error_message.clone(),
        created_at: r.created_at.unwrap_or(now),
        kind: r.kind.clone(),
        schedule_description: description,
        next_runs,
        problem,
    }
}

/// The whole list, with the file's state.
pub fn routines_view(s: &Scheduler, now: i64) -> RoutinesView {
    let zone = &s.config().default_zone;
    let state = match s.deps().store.read() {
        Ok(state) => state,
        Err(e) => {
            return RoutinesView {
                status: ParseStatus::Corrupted,
                error: Some(e.to_string()),
                routines: vec![],
            }
        }
    };
    let (status, error) = match &state.parsed {
        Parsed::Empty => (ParseStatus::Empty, None),
        Parsed::Corrupted(e) => (ParseStatus::Corrupted, Some(e.clone())),
        Parsed::Ok { .. } => (ParseStatus::Ok, None),
    };
    let routines = state
        .parsed
        .entries()
        .iter()
        .map(|e| match &e.routine {
            Ok(r) => routine_view(r, zone, now),
            Err(p) => {
                let id = e.id().unwrap_or("?").to_string();
                let mut r = Routine::new(id.clone(), id, now);
                r.timezone = Some(zone.clone());
                let mut v = routine_view(&r, zone, now);
                v.title = e.raw.get("title").and_then(|t| t.as_str()).unwrap_or(&v.id).to_string();
                v.enabled = false;
                v.next_runs.clear();
                v.next_run_at = None;
                v.problem = Some(p.clone());
                v
            }
        })
        .collect();
    RoutinesView {
        status,
        error,
        routines,
    }
}

/// Describes and previews a schedule as the editor types it, with the tools' validation.
pub fn preview(
    schedule: Option<&str>,
    next_run_at: Option<i64>,
    timezone: &str,
    now: i64,
) -> Result<SchedulePreview, String> {
    let (spec, first) = validate(schedule, next_run_at, timezone, now, now)?;
    let mut next_runs = vec![first];
    next_runs.extend(spec.preview(first, now, None, PREVIEW_RUNS - 1));
    next_runs.truncate(PREVIEW_RUNS);
    Ok(SchedulePreview {
        description: spec.describe(next_run_at),
        timezone: spec.tz.name().to_string(),
        next_runs,
    })
}

impl Scheduler {
    /// The routine list, for the editor.
    pub fn view(&self) -> RoutinesView {
        routines_view(self, self.deps().clock.now_ms())
    }

    /// A routine's latest runs, oldest first.
    pub fn history(&self, id: &str) -> Vec<RoutineRun> {
        self.deps().runlog.history(id)
    }

    /// [`preview`] at the clock's now, defaulting the zone to the user's.
    pub fn preview(
        &self,
        schedule: Option<&str>,
        next_run_at: Option<i64>,
        timezone: Option<&str>,
    ) -> Result<SchedulePreview, String> {
        let zone = timezone
            .filter(|z| !z.trim().is_empty())
            .unwrap_or(&self.config().default_zone);
        preview(schedule, next_run_at, zone, self.deps().clock.now_ms())
    }
}
