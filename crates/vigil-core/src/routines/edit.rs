//! Changing routines on purpose — the agent's tools and the editor alike: create (with
//! validation, defaults, `infer_execution_mode`, duplicate refusal and the soft limit),
//! update, remove, run now, pause / resume. Every change is one locked write of the task
//! block, then `routines_changed` and a poke to the scheduler loop.
//!
//! Must never: accept a schedule or zone the scheduler could not use; write a routine
//! without an explicit zone.

use vigil_protocol::{ExecutionMode, RoutineDraft, RoutineSource, RoutineState};

use super::model::{self, Routine, DEFAULT_JOB_TIMEOUT_SECONDS, DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS};
use super::schedule::Spec;
use super::scheduler::Scheduler;
use super::store::{Entry, Refusal, StoreError};
pub use super::validate::validate;

/// Active routines the agent may have before `routine_add` refuses (seed 003 §14: 20).
pub const SOFT_LIMIT: usize = 20;
/// How long a removed routine can be restored; after that the next removal deletes it for
/// good, with its run history, so the block does not grow without end.
pub const REMOVED_KEPT_MS: i64 = 30 * 24 * 3600 * 1000;

fn rejected(msg: impl Into<String>) -> StoreError {
    StoreError::Rejected(Refusal::new(msg))
}

/// A refusal the editor shows at `field`.
fn rejected_at(field: &'static str, msg: impl Into<String>) -> StoreError {
    StoreError::Rejected(Refusal::at(field, msg))
}

/// A lower-case, underscore id from a title (`daily_hn_check`), unique in `taken`.
fn new_id(title: &str, taken: &[&str]) -> String {
    let mut slug = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.ends_with('_') && !slug.is_empty() {
            slug.push('_');
        }
        if slug.len() >= 40 {
            break;
        }
    }
    let slug = slug.trim_end_matches('_').to_string();
    let base = if slug.is_empty() {
        format!("routine_{}", super::model::short_id())
    } else {
        slug
    };
    let mut id = base.clone();
    let mut n = 2;
    while taken.contains(&id.as_str()) {
        id = format!("{base}_{n}");
        n += 1;
    }
    id
}

fn normalized(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

fn check_kind(kind: Option<&str>) -> Result<(), StoreError> {
    match kind {
        None | Some(model::KIND_TIME_REMINDER) => Ok(()),
        Some(k) => Err(rejected_at(
            "kind",
            format!(
                "unknown kind \"{k}\"; the deterministic kinds are: {}",
                model::KIND_TIME_REMINDER
            ),
        )),
    }
}

/// A routine in use, to change; a removed one is refused until restored.
fn find<'a>(entries: &'a mut [Entry], id: &str) -> Result<&'a mut Routine, StoreError> {
    let r = find_any(entries, id)?;
    if r.removed_at.is_some() {
        return Err(rejected(format!("routine \"{id}\" was removed; restore it first")));
    }
    Ok(r)
}

/// A routine, removed or not.
fn find_any<'a>(entries: &'a mut [Entry], id: &str) -> Result<&'a mut Routine, StoreError> {
    match entries.iter_mut().find(|e| e.id() == Some(id)) {
        Some(Entry { routine: Ok(r), .. }) => Ok(r),
        Some(Entry { routine: Err(p), .. }) => Err(rejected(format!(
            "routine \"{id}\" cannot be read ({p}); fix it in HEARTBEAT.md or remove it"
        ))),
        None => Err(rejected(format!(
            "there is no routine \"{id}\"; list the routines to see their ids"
        ))),
    }
}

impl Scheduler {
    /// Creates a routine. `enforce_limit` applies the soft limit (the agent's tools); the
    /// user's own additions only get a warning. Returns the routine and any warnings.
    pub async fn create(
        &self,
        draft: RoutineDraft,
        source: RoutineSource,
        enforce_limit: bool,
    ) -> Result<(Routine, Vec<String>), StoreError> {
        self.make(draft, source, enforce_limit, false).await
    }

    /// A routine the daily reflection found, suggested to the user: off until they turn it
    /// on. Refused when a similar routine exists in any state, removed ones included, so a
    /// suggestion the user declined is not made again.
    pub async fn suggest(&self, mut draft: RoutineDraft) -> Result<Routine, StoreError> {
        draft.enabled = Some(false);
        draft.allow_duplicate = false;
        Ok(self.make(draft, RoutineSource::HeartbeatReflect, true, true).await?.0)
    }

    async fn make(
        &self,
        draft: RoutineDraft,
        source: RoutineSource,
        enforce_limit: bool,
        suggested: bool,
    ) -> Result<(Routine, Vec<String>), StoreError> {
        let now = self.deps().clock.now_ms();
        let zone = self.config().default_zone.clone();
        let title = draft.title.as_deref().map(str::trim).unwrap_or("").to_string();
        if title.is_empty() {
            return Err(rejected_at("title", "a routine needs a title"));
        }
        check_kind(draft.kind.as_deref())?;
        let description = draft.description.clone().unwrap_or_default();
        let timezone = draft.timezone.clone().filter(|z| !z.trim().is_empty()).unwrap_or(zone);
        let (trigger, check, action) = crate::watch::shape::merged(None, &draft).map_err(|(f, m)| rejected_at(f, m))?;
        // A fire runs as a job unless asked otherwise (`execution_mode: inline`: a turn in
        // the conversation that made it).
        let mut draft = draft;
        if trigger.is_some() && draft.execution_mode.is_none() {
            draft.execution_mode = Some(ExecutionMode::Isolated);
        }
        let conversation = self.conversation_of(draft.conversation_id.as_deref())?;
        let timeout = match (draft.timeout_seconds, draft.execution_mode) {
            (Some(t), _) => t,
            (None, Some(ExecutionMode::Isolated)) => DEFAULT_JOB_TIMEOUT_SECONDS,
            (None, _) => DEFAULT_TIMEOUT_SECONDS,
        };
        if timeout == 0 || timeout > MAX_TIMEOUT_SECONDS {
            return Err(rejected_at(
                "timeout_seconds",
                format!("timeout_seconds must be between 1 and {MAX_TIMEOUT_SECONDS}"),
            ));
        }
        let mode = draft
            .execution_mode
            .unwrap_or_else(|| model::infer_execution_mode(timeout, &description));
        let schedule = draft.schedule.clone().filter(|s| !s.trim().is_empty());
        // A routine a file, output, URL or webhook wakes has no due time.
        let first = match trigger {
            Some(_) => None,
            None => Some(
                validate(schedule.as_deref(), draft.next_run_at, &timezone, now, now)
                    .map_err(StoreError::Rejected)?
                    .1,
            ),
        };
        let result = self
            .deps()
            .store
            .edit(|entries| {
                let mut warnings = Vec::new();
                let active: Vec<&Routine> = entries
                    .iter()
                    .filter_map(|e| e.routine.as_ref().ok())
                    .filter(|r| r.active())
                    .collect();
                if !draft.allow_duplicate {
                    let all: Vec<&Routine> = entries.iter().filter_map(|e| e.routine.as_ref().ok()).collect();
                    let compared = if suggested { &all } else { &active };
                    let same = compared.iter().find(|r| {
                        normalized(&r.title) == normalized(&title)
                            || (!description.trim().is_empty()
                                && normalized(&r.description) == normalized(&description)
                                && r.schedule_text() == schedule.as_deref().map(str::trim)
                                && r.trigger == trigger
                                && r.check == check)
                    });
                    if let Some(r) = same {
                        return Err(rejected_at("title", format!(
                            "a similar routine exists: \"{}\" (id {}, {}); update it instead, or pass allow_duplicate: true",
                            r.title,
                            r.id,
                            r.schedule_text().unwrap_or("one-time")
                        )));
                    }
                }
                if active.len() >= SOFT_LIMIT {
                    let msg = format!(
                        "there are already {} active routines (the soft limit is {SOFT_LIMIT}); remove or pause some first",
                        active.len()
                    );
                    if enforce_limit {
                        return Err(rejected(msg));
                    }
                    warnings.push(msg);
                }
                let taken: Vec<&str> = entries.iter().filter_map(|e| e.id()).collect();
                let mut r = Routine::new(new_id(&title, &taken), title.clone(), now);
                r.description = description.clone();
                r.schedule = schedule.clone();
                r.timezone = Some(timezone.clone());
                r.execution_mode = mode;
                r.wake_mode = draft.wake_mode.unwrap_or_default();
                r.catch_up = draft.catch_up.unwrap_or_default();
                r.source = source;
                r.enabled = draft.enabled.unwrap_or(true);
                r.next_run_at = first;
                r.trigger = trigger.clone();
                r.check = check.clone();
                r.action = action;
                r.conversation = conversation.clone();
                r.timeout_seconds = timeout;
                r.max_retry = draft.max_retry.unwrap_or(model::DEFAULT_MAX_RETRY);
                r.kind = draft.kind.clone();
                r.suggested = suggested;
                entries.push(Entry::new(r.clone()));
                Ok((r, warnings))
            })
            .await?;
        self.changed();
        self.poke();
        Ok(result)
    }

    /// The conversation a new routine records as the one that made it: `None` for the main
    /// one (written as nothing); a conversation that does not exist is refused.
    fn conversation_of(&self, id: Option<&str>) -> Result<Option<String>, StoreError> {
        let Some(id) = id
            .map(str::trim)
            .filter(|id| !id.is_empty() && *id != crate::session::PRIMARY_SESSION)
        else {
            return Ok(None);
        };
        let is_conversation = crate::session::meta::type_from_id(id) == crate::session::SessionType::Primary;
        if !is_conversation || self.deps().meta.load(id).is_err() {
            return Err(rejected_at(
                "conversation_id",
                format!("there is no conversation \"{id}\""),
            ));
        }
        Ok(Some(id.to_string()))
    }

    /// Changes the fields `changes` names. A new schedule, zone or time recomputes the next
    /// run; a finished or failed routine given a new time is pending again.
    pub async fn update_routine(&self, id: &str, changes: RoutineDraft) -> Result<Routine, StoreError> {
        let now = self.deps().clock.now_ms();
        check_kind(changes.kind.as_deref())?;
        let r = self
            .deps()
            .store
            .edit(|entries| {
                let r = find(entries, id)?;
                if let Some(t) = changes.title.as_deref().map(str::trim) {
                    if t.is_empty() {
                        return Err(rejected_at("title", "a routine needs a title"));
                    }
                    r.title = t.to_string();
                }
                if let Some(d) = &changes.description {
                    r.description = d.clone();
                }
                if let Some(m) = changes.execution_mode {
                    r.execution_mode = m;
                }
                if let Some(w) = changes.wake_mode {
                    r.wake_mode = w;
                }
                if let Some(c) = changes.catch_up {
                    r.catch_up = c;
                }
                if let Some(t) = changes.timeout_seconds {
                    if t == 0 || t > MAX_TIMEOUT_SECONDS {
                        return Err(rejected_at(
                            "timeout_seconds",
                            format!("timeout_seconds must be between 1 and {MAX_TIMEOUT_SECONDS}"),
                        ));
                    }
                    r.timeout_seconds = t;
                }
                if let Some(m) = changes.max_retry {
                    r.max_retry = m;
                }
                if let Some(e) = changes.enabled {
                    r.enabled = e;
                    // Turned on, a suggestion is the user's routine like any other.
                    r.suggested &= !e;
                }
                if changes.kind.is_some() {
                    r.kind = changes.kind.clone().filter(|k| !k.is_empty());
                }
                let (trigger, check, action) =
                    crate::watch::shape::merged(Some(r), &changes).map_err(|(f, m)| rejected_at(f, m))?;
                let woken = trigger.is_some();
                let was_woken = r.triggered();
                (r.trigger, r.check, r.action) = (trigger, check, action);
                if woken {
                    r.schedule = None;
                    r.next_run_at = None;
                }
                let timing = changes.schedule.is_some()
                    || changes.timezone.is_some()
                    || changes.next_run_at.is_some()
                    || was_woken;
                if timing && !woken {
                    let schedule = match &changes.schedule {
                        Some(s) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
                        None => r.schedule.clone(),
                    };
                    let zone = changes.timezone.clone().or(r.timezone.clone()).unwrap_or_default();
                    let once_at = changes
                        .next_run_at
                        .or(if schedule.is_none() { r.next_run_at } else { None });
                    let anchor = r.created_at.unwrap_or(now);
                    let (_, first) =
                        validate(schedule.as_deref(), once_at, &zone, now, anchor).map_err(StoreError::Rejected)?;
                    r.schedule = schedule;
                    r.timezone = Some(zone);
                    if r.state != RoutineState::Running {
                        r.next_run_at = Some(first);
                        r.retry = 0;
                        r.due_at = None;
                        r.missed_count = 0;
                        r.missed_from = None;
                        r.error_message = None;
                        r.state = RoutineState::Pending;
                    }
                }
                Ok(r.clone())
            })
            .await?;
        self.changed();
        self.poke();
        Ok(r)
    }

    /// Removes a routine: it stops (a run in progress finishes) and stays in the block,
    /// marked, with its run log, until [`Self::restore`] or a `hard` removal. `hard`, or an
    /// unreadable entry (which cannot carry the mark), deletes it and its run log for good.
    /// Routines removed more than [`REMOVED_KEPT_MS`] ago are deleted on the way.
    pub async fn remove(&self, id: &str, hard: bool) -> Result<Option<Routine>, StoreError> {
        let now = self.deps().clock.now_ms();
        let (removed, deleted) = self
            .deps()
            .store
            .edit(|entries| {
                let i = entries.iter().position(|e| e.id() == Some(id)).ok_or_else(|| {
                    rejected(format!(
                        "there is no routine \"{id}\"; list the routines to see their ids"
                    ))
                })?;
                let mut deleted = Vec::new();
                let removed = match &mut entries[i].routine {
                    Ok(r) if !hard => {
                        r.removed_at.get_or_insert(now);
                        Some(r.clone())
                    }
                    _ => {
                        deleted.push(id.to_string());
                        entries.remove(i).routine.ok()
                    }
                };
                entries.retain(|e| match &e.routine {
                    Ok(r) if r.removed_at.is_some_and(|at| now - at > REMOVED_KEPT_MS) => {
                        deleted.push(r.id.clone());
                        false
                    }
                    _ => true,
                });
                Ok((removed, deleted))
            })
            .await?;
        for id in &deleted {
            self.deps().runlog.remove(id);
        }
        self.changed();
        Ok(removed)
    }

    /// Brings a removed routine back as it was (paused stays paused). A recurring one whose
    /// time passed meanwhile moves to its next time instead of running the missed one.
    pub async fn restore(&self, id: &str) -> Result<Routine, StoreError> {
        self.change_one(id, true, |r, now, zone| {
            if r.removed_at.take().is_some() && r.enabled {
                skip_missed(r, now, zone)?;
            }
            Ok(())
        })
        .await
    }

    /// Runs a routine now, outside its schedule (the schedule is unchanged): it becomes
    /// due, and the next tick — started here — claims it like any other.
    pub async fn run_now(&self, id: &str) -> Result<(), StoreError> {
        let now = self.deps().clock.now_ms();
        self.deps()
            .store
            .edit(|entries| {
                let r = find(entries, id)?;
                if r.state == RoutineState::Running {
                    return Err(rejected(format!("routine \"{id}\" is running now")));
                }
                if !r.enabled {
                    return Err(rejected(format!("routine \"{id}\" is paused; resume it first")));
                }
                start_now(r, now);
                Ok(())
            })
            .await?;
        self.tick().await;
        Ok(())
    }

    /// The user's answer to a run that ended `unknown` (it was cut off after it changed
    /// something): `retry` runs the routine now, outside its schedule; otherwise it is
    /// dismissed (a one-shot counts as done). Refused if `run_id` is not the run waiting.
    pub async fn resolve_unknown(&self, id: &str, run_id: &str, retry: bool) -> Result<(), StoreError> {
        let now = self.deps().clock.now_ms();
        self.deps()
            .store
            .edit(|entries| {
                let r = find(entries, id)?;
                if r.unknown_run.as_ref().is_none_or(|u| u.run_id != run_id) {
                    return Err(rejected(format!(
                        "run {run_id} of routine \"{id}\" is not waiting for a decision"
                    )));
                }
                r.unknown_run = None;
                r.error_message = None;
                if retry {
                    if r.state == RoutineState::Running {
                        return Err(rejected(format!("routine \"{id}\" is running now")));
                    }
                    if !r.enabled {
                        return Err(rejected(format!("routine \"{id}\" is paused; resume it first")));
                    }
                    start_now(r, now);
                } else if !r.recurring() && r.state == RoutineState::Failed {
                    r.state = RoutineState::Done;
                }
                Ok(())
            })
            .await?;
        self.changed();
        if retry {
            self.tick().await;
        }
        Ok(())
    }

    /// Pauses or resumes. Resuming a recurring routine whose time passed while paused moves
    /// it to its next time instead of running the missed one.
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<Routine, StoreError> {
        self.change_one(id, false, |r, now, zone| {
            if enabled && !r.enabled {
                skip_missed(r, now, zone)?;
            }
            r.enabled = enabled;
            r.suggested &= !enabled;
            Ok(())
        })
        .await
    }

    /// One locked change `f(routine, now, default zone)` to routine `id` (a removed one only
    /// with `removed`), then `routines_changed` and a poke to the loop.
    async fn change_one(
        &self,
        id: &str,
        removed: bool,
        f: impl FnOnce(&mut Routine, i64, &str) -> Result<(), StoreError>,
    ) -> Result<Routine, StoreError> {
        let now = self.deps().clock.now_ms();
        let zone = self.config().default_zone.clone();
        let r = self
            .deps()
            .store
            .edit(|entries| {
                let r = if removed {
                    find_any(entries, id)?
                } else {
                    find(entries, id)?
                };
                f(r, now, &zone)?;
                Ok(r.clone())
            })
            .await?;
        self.changed();
        self.poke();
        Ok(r)
    }
}

/// Makes a routine due now, outside its schedule (run now, retry): a due time of its own,
/// so the scheduled ones stay as they are.
fn start_now(r: &mut Routine, now: i64) {
    r.state = RoutineState::Pending;
    r.next_run_at = Some(now);
    r.due_at = Some(now);
    r.retry = 0;
    r.missed_count = 0;
    r.missed_from = None;
}

/// A recurring routine coming back (resumed, restored) whose time passed while it was out
/// moves to its next time instead of running the missed one.
fn skip_missed(r: &mut Routine, now: i64, default_zone: &str) -> Result<(), StoreError> {
    if r.recurring() && r.next_run_at.is_some_and(|t| t <= now) {
        let spec = Spec::parse(r.schedule_text(), r.timezone.as_deref().unwrap_or(default_zone))
            .map_err(|m| rejected_at("schedule", m))?;
        r.next_run_at = spec.next_after(now, r.created_at.unwrap_or(now));
        r.due_at = None;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_slugs_and_unique() {
        assert_eq!(new_id("Check Hacker News!", &[]), "check_hacker_news");
        assert_eq!(new_id("Drink water", &["drink_water"]), "drink_water_2");
        assert!(new_id("喝水", &[]).starts_with("routine_"));
    }

    #[test]
    fn validation_catches_what_the_scheduler_could_not_use_and_names_the_field() {
        let now = 1_770_000_000_000;
        let refused = |r: Result<(Spec, i64), Refusal>| r.unwrap_err();
        let r = refused(validate(None, None, "UTC", now, now));
        assert!(r.message.contains("give a schedule"));
        assert_eq!(r.field, Some("schedule"));
        let r = refused(validate(Some("0 9 * * *"), None, "Mars/Base", now, now));
        assert!(r.message.contains("IANA"));
        assert_eq!(r.field, Some("timezone"));
        let r = refused(validate(None, Some(now - 3_600_000), "UTC", now, now));
        assert!(r.message.contains("in the past"));
        assert_eq!(r.field, Some("next_run_at"));
        let r = refused(validate(Some("61 9 * * *"), None, "UTC", now, now));
        assert!(r.message.contains("minute"), "{r}");
        assert_eq!(r.field, Some("schedule"));
        assert_eq!(
            refused(validate(Some("900d"), None, "UTC", now, now)).field,
            Some("schedule")
        );
        assert_eq!(validate(None, Some(now + 5), "UTC", now, now).unwrap().1, now + 5);
        assert_eq!(validate(Some("1h"), None, "UTC", now, now).unwrap().1, now + 3_600_000);
    }
}
