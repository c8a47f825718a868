//! The editor's view of the routines: each routine with its plain-language schedule, its
//! next three runs and anything that stops it from running; the schedule preview the
//! editor shows while typing (the same validation as the tools); run histories.
//!
//! Must never: write anything.

use vigil_protocol::{Event, ParseStatus, RoutineRun, RoutineView, RoutinesView, SchedulePreview, Source};

use super::model::Routine;
use super::schedule::Spec;
use super::scheduler::Scheduler;
use super::store::Parsed;
use super::store::Refusal;
use super::validate::validate;

/// How many upcoming runs a view lists.
pub const PREVIEW_RUNS: usize = 3;

/// "every weekday at 09:00, Europe/Berlin", or why the schedule cannot be read.
pub fn describe(r: &Routine, default_zone: &str) -> String {
    if let Some(words) = woken_by_trigger(r) {
        return words.into();
    }
    match Spec::parse(r.schedule_text(), r.timezone.as_deref().unwrap_or(default_zone)) {
        Ok(spec) => spec.describe(once_at(r)),
        Err(_) => format!("\"{}\" (invalid)", r.schedule_text().unwrap_or("")),
    }
}

/// A routine woken by a file, an output line, a URL or a webhook has no clock: said so,
/// not "once (no time set)" (its row says what it watches).
fn woken_by_trigger(r: &Routine) -> Option<&'static str> {
    use vigil_protocol::Trigger;
    match r.trigger {
        None | Some(Trigger::Schedule) => None,
        Some(_) => Some("No clock: runs when its trigger fires"),
    }
}

/// When a one-shot runs, or ran: a finished one has no next time, only its last.
fn once_at(r: &Routine) -> Option<i64> {
    r.next_run_at.or(r.last_run_at)
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
            let words = woken_by_trigger(r).map_or_else(|| spec.describe(once_at(r)), str::to_string);
            (words, runs, None)
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
        wake_mode: r.wake_mode,
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
        // The run log's to tell: [`with_last_run`].
        last_run: None,
        removed_at: r.removed_at,
        catch_up: r.catch_up,
        unknown_run: r.unknown_run.as_ref().map(|u| u.run_id.clone()),
        suggested: r.suggested,
        trigger: r.trigger.clone(),
        check: r.check.clone(),
        action: r.action,
        // The watcher's to tell: [`with_last_run`].
        watch: None,
        // The conversations' to tell: `runs_in`.
        runs_in: None,
    }
}

/// `v` with its latest run from the run log.
pub fn with_last_run(mut v: RoutineView, runlog: &super::RunLog) -> RoutineView {
    v.last_run = runlog.last_run(&v.id);
    v.watch = runlog.watch(&v.id);
    v
}

/// Where a fired routine's inline turns run, for its row ("in: …"): the title of the
/// conversation that made it, or, that one deleted, that its fires run as jobs. `None` for
/// a routine whose runs are jobs, notifications or heartbeat turns.
fn runs_in(r: &Routine, meta: &crate::session::MetaStore) -> Option<String> {
    use vigil_protocol::{Action, ExecutionMode, Trigger};
    let fired = !matches!(r.trigger, None | Some(Trigger::Schedule));
    if !fired || r.execution_mode != ExecutionMode::Inline || r.action == Some(Action::Notify) {
        return None;
    }
    let id = r.conversation.as_deref().unwrap_or(crate::session::PRIMARY_SESSION);
    Some(match meta.load(id) {
        Ok(loaded) => loaded.meta.title,
        Err(_) => "a deleted conversation (its fires run as jobs)".into(),
    })
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
                held: None,
            }
        }
    };
    let (status, error) = match &state.parsed {
        Parsed::Empty => (ParseStatus::Empty, None),
        Parsed::Corrupted(e) => (ParseStatus::Corrupted, Some(e.clone())),
        Parsed::Ok { .. } => (ParseStatus::Ok, None),
    };
    // While the block is corrupted, the last good routines: the ones that run. While the file
    // is held, its own (none of them runs): for the user to review before trusting it.
    let listed = if state.held { &state.parsed } else { state.routines() };
    let mut routines: Vec<RoutineView> = listed
        .entries()
        .iter()
        .map(|e| match &e.routine {
            Ok(r) => {
                let mut v = with_last_run(routine_view(r, zone, now), &s.deps().runlog);
                v.runs_in = runs_in(r, &s.deps().meta);
                v
            }
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
    // The checklist's machine checks, after them (they run on the heartbeat's interval).
    for r in super::checklist::routines(&state.text, now) {
        routines.push(with_last_run(routine_view(&r, zone, now), &s.deps().runlog));
    }
    RoutinesView {
        status,
        error,
        routines,
        held: state.held.then(|| super::store::trust::HELD_MESSAGE.to_string()),
    }
}

/// Describes and previews a schedule as the editor types it, with the tools' validation.
pub fn preview(
    schedule: Option<&str>,
    next_run_at: Option<i64>,
    timezone: &str,
    now: i64,
) -> Result<SchedulePreview, Refusal> {
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
    /// Emits `routines_changed`.
    pub fn changed(&self) {
        let view = routines_view(self, self.now());
        self.shared
            .deps
            .emitter
            .emit(Source::Scheduler, Event::RoutinesChanged { routines: view });
    }

    /// The routine list, for the editor.
    pub fn view(&self) -> RoutinesView {
        routines_view(self, self.deps().clock.now_ms())
    }

    /// A routine's latest runs, oldest first. A run's `session_id` is kept only while that
    /// transcript is (job sessions are deleted by retention): the pane's "Open transcript"
    /// never opens an empty conversation.
    pub fn history(&self, id: &str) -> Vec<RoutineRun> {
        let transcripts = self.deps().meta.transcripts();
        let mut runs = self.deps().runlog.history(id);
        for run in &mut runs {
            if let Some(session) = &run.session_id {
                if !transcripts.exists(session).unwrap_or(false) {
                    run.session_id = None;
                }
            }
        }
        runs
    }

    /// [`preview`] at the clock's now, defaulting the zone to the user's.
    pub fn preview(
        &self,
        schedule: Option<&str>,
        next_run_at: Option<i64>,
        timezone: Option<&str>,
    ) -> Result<SchedulePreview, Refusal> {
        let zone = timezone
            .filter(|z| !z.trim().is_empty())
            .unwrap_or(&self.config().default_zone);
        preview(schedule, next_run_at, zone, self.deps().clock.now_ms())
    }
}

/// The tray's line about what runs next, in `zone` (the user's): "Next: Disk check at 09:15"
/// today, "Next: Disk check Tue 09:15" within a week, else with the date.
pub fn next_routine_line(routines: &[RoutineView], now_ms: i64, zone: &str) -> String {
    use chrono::TimeZone;
    if routines.iter().all(|r| r.removed_at.is_some()) {
        return "No routines".into();
    }
    let next = routines
        .iter()
        .filter(|r| r.enabled && r.removed_at.is_none() && r.problem.is_none())
        .filter_map(|r| Some((r.next_runs.first().copied().or(r.next_run_at)?, r)))
        .min_by_key(|(at, _)| *at);
    let Some((at, r)) = next else {
        return "No routine scheduled".into();
    };
    let tz: chrono_tz::Tz = zone.parse().unwrap_or(chrono_tz::UTC);
    let (Some(when), Some(now)) = (
        tz.timestamp_millis_opt(at).single(),
        tz.timestamp_millis_opt(now_ms).single(),
    ) else {
        return format!("Next: {}", r.title);
    };
    let days = (when.date_naive() - now.date_naive()).num_days();
    let time = match days {
        ..=0 => when.format("at %H:%M").to_string(),
        1..=6 => when.format("%a %H:%M").to_string(),
        _ => when.format("%b %-d, %H:%M").to_string(),
    };
    format!("Next: {} {time}", r.title)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(title: &str, enabled: bool, next: Option<i64>) -> RoutineView {
        RoutineView {
            id: title.to_lowercase(),
            title: title.into(),
            enabled,
            next_run_at: next,
            next_runs: next.into_iter().collect(),
            ..serde_json::from_value(serde_json::json!({
                "id": "x", "title": "x", "description": "", "timezone": "UTC", "execution_mode": "inline", "wake_mode": "now",
                "source": "manual", "enabled": true, "state": "pending", "timeout_seconds": 60, "retry": 0,
                "max_retry": 3, "created_at": 0, "schedule_description": "", "next_runs": []
            }))
            .unwrap()
        }
    }

    #[test]
    fn the_tray_names_the_next_enabled_routine_in_the_users_zone() {
        // 2026-11-22 08:00 UTC, a Sunday.
        let now = 1_795_334_400_000;
        let hour = 3_600_000;
        assert_eq!(next_routine_line(&[], now, "UTC"), "No routines");
        let paused = view("Paused", false, Some(now + hour));
        assert_eq!(
            next_routine_line(std::slice::from_ref(&paused), now, "UTC"),
            "No routine scheduled"
        );
        let rs = [
            paused,
            view("Water", true, Some(now + 2 * hour)),
            view("Report", true, Some(now + 30 * hour)),
        ];
        assert_eq!(next_routine_line(&rs, now, "UTC"), "Next: Water at 10:00");
        assert_eq!(next_routine_line(&rs, now, "Europe/Berlin"), "Next: Water at 11:00");
        assert_eq!(next_routine_line(&rs[2..], now, "UTC"), "Next: Report Mon 14:00");
        assert_eq!(
            next_routine_line(&[view("Later", true, Some(now + 400 * hour))], now, "UTC"),
            "Next: Later Dec 9, 00:00"
        );
    }
}
