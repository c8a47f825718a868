//! Running a claimed routine outside the heartbeat: isolated jobs in their own session
//! `job_<routine>_<run>` (seed 003 §4.6 Path B) with a timeout, deterministic kinds that
//! produce their text without the model (falling back to the model path when they cannot),
//! delivery of the result to the conversation's mailbox with a card and a notification,
//! and the archive and retention of finished job sessions.
//!
//! A job's first tool call that changes something (`exec`, `write`, `edit`, …) is written
//! into its claim in the task block before it runs and after the approval gate let it
//! through ([`JobEffects`]; a denied call changed nothing): a job cut off after that — a crash, a kill, its timeout — ends `unknown`, is not retried, and the user is
//! told once and decides (Retry / Dismiss). One cut off before it changed anything is
//! retried as usual.
//!
//! Must never: run a job whose routine it did not claim; leave a claim without
//! [`Scheduler::finish`]; let a job's failure reach another routine; run a tool that
//! changes something before its evidence is written.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;
use vigil_protocol::{Event, NotificationKind, RoutineRun, RunOutcome, Scope, Source, StopReason};

use super::model::{Routine, KIND_TIME_REMINDER};
use super::scheduler::{Claimed, RunResult, Scheduler};
use super::Ran;
use crate::run::deliver::{deliver, summarize, Delivery, Target};
use crate::run::{Attendance, RunKind, RunRequest, RunResult as RunOutput};
use crate::session::{SessionType, PRIMARY_SESSION};

/// How long a timed-out job gets to stop after its cancellation, before it is let go.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// The job session's addition to the system prompt (seed 003 §4.6 `JobContextStrategy`).
pub const JOB_SECTION: &str = "## Scheduled job\n\
You are running a scheduled routine on your own, in a session of its own; nobody is watching this session. \
Do the task in the next message completely, using tools as needed. Commands that need the user's approval \
are denied here: find another way or say what the user should do. When you are done, reply with the result: \
the first line is a one-sentence summary for a notification, details follow.";

/// `job_<routine>_<run>`, with the routine id cut to what a session id allows.
pub fn job_session_id(routine_id: &str, run_id: &str) -> String {
    let safe = super::safe_name(routine_id, 80);
    format!("job_{safe}_{run_id}")
}

/// A routine's task as a run's message states it: the title, then the description if any.
pub(super) fn task_of(r: &Routine) -> String {
    if r.description.trim().is_empty() {
        r.title.clone()
    } else {
        format!("{}\n\n{}", r.title, r.description)
    }
}

/// The job's user message.
fn job_prompt(c: &Claimed) -> String {
    let r = &c.routine;
    let task = task_of(r);
    let told = super::catch_up::told_words(r)
        .map(|t| format!("\n\n{t}"))
        .unwrap_or_default();
    format!("Scheduled routine \"{}\" is due. The task:\n\n{task}{told}", r.id)
}

/// "exec: make deploy": what a tool call that changes something does, briefly.
fn effect_words(tool: &str, input: &serde_json::Value) -> String {
    let what = ["command", "path", "action", "id", "title"]
        .iter()
        .find_map(|k| input.get(*k).and_then(|v| v.as_str()));
    match what {
        Some(w) => {
            let mut short: String = w.chars().take(80).collect();
            if short.len() < w.len() {
                short.push('…');
            }
            format!("{tool}: {short}")
        }
        None => tool.to_string(),
    }
}

/// The [`crate::agent::EffectWatch`] of one job: before its first tool call that changes
/// something runs, writes what it is into the routine's claim (`side_effect`), so that a
/// crash or a kill from then on leaves the evidence on disk.
pub(super) struct JobEffects {
    scheduler: Scheduler,
    routine_id: String,
    run_id: String,
    /// Set once written; later calls wait for the first write, then go.
    first: tokio::sync::OnceCell<String>,
}

impl JobEffects {
    /// What the job did first that changes something, if it did.
    fn fired(&self) -> Option<String> {
        self.first.get().cloned()
    }
}

#[async_trait::async_trait]
impl crate::agent::EffectWatch for JobEffects {
    async fn before_effect(&self, tool: &str, input: &serde_json::Value) {
        self.first
            .get_or_init(|| async {
                let words = effect_words(tool, input);
                let written = self
                    .scheduler
                    .deps()
                    .store
                    .update(|entries| {
                        let mine = entries
                            .iter_mut()
                            .filter_map(|e| e.routine.as_mut().ok())
                            .find(|r| r.id == self.routine_id && r.run_id.as_deref() == Some(self.run_id.as_str()));
                        if let Some(r) = mine {
                            r.side_effect.get_or_insert_with(|| words.clone());
                        }
                        Ok(())
                    })
                    .await;
                if let Err(e) = written {
                    // The run goes on; only a crash right now would be retried blindly.
                    tracing::warn!(
                        "routine {}: could not record its first change ({words}): {e}",
                        self.routine_id
                    );
                }
                words
            })
            .await;
    }
}

/// The text of a deterministic kind, or why it cannot be made.
fn deterministic_text(c: &Claimed, now_ms: i64, zone: &str) -> Result<String, String> {
    let r = &c.routine;
    match r.kind.as_deref() {
        Some(KIND_TIME_REMINDER) => {
            let tz = super::schedule::parse_zone(r.timezone.as_deref().unwrap_or(zone))?;
            let at = DateTime::<Utc>::from_timestamp_millis(now_ms)
                .ok_or("the clock is out of range")?
                .with_timezone(&tz);
            let what = if r.description.trim().is_empty() || r.description.trim() == r.title.trim() {
                r.title.trim().to_string()
            } else {
                format!("{} — {}", r.title.trim(), r.description.trim())
            };
            if what.is_empty() {
                return Err("the reminder has no text".into());
            }
            Ok(format!(
                "Reminder: {what} (it is {}, {})",
                at.format("%H:%M"),
                tz.name()
            ))
        }
        Some(other) => Err(format!("unknown deterministic kind \"{other}\"")),
        None => Err("no kind".into()),
    }
}

impl Scheduler {
    /// A deterministic run: the text without the model, delivered; on failure the model
    /// path by the routine's mode, and a log line.
    pub(super) async fn run_deterministic(&self, c: Claimed) {
        let now = self.deps().clock.now_ms();
        match deterministic_text(&c, now, &self.config().default_zone) {
            Ok(text) => {
                let session = format!("routine_{}", c.routine.id);
                let delivered = self.deliver(&session, &c, "reminder", "Vigil: reminder", &text).await;
                let result = match delivered {
                    Ok(()) => RunResult::Ok {
                        summary: Some(summarize(&text)),
                    },
                    Err(error) => RunResult::Failed {
                        outcome: RunOutcome::Failed,
                        error,
                    },
                };
                let ran = Ran {
                    deterministic: true,
                    ..Ran::default()
                };
                self.finish(&c, result, ran).await;
            }
            Err(why) => {
                tracing::warn!(
                    "routine {}: the deterministic path failed ({why}); running it through the model instead",
                    c.routine.id
                );
                let mut c = c;
                c.routine.kind = None;
                match c.routine.execution_mode {
                    vigil_protocol::ExecutionMode::Inline => self.queue_inline(vec![c]),
                    vigil_protocol::ExecutionMode::Isolated => self.run_isolated(c).await,
                }
            }
        }
    }

    /// An isolated job: its own session, the job prompt, the timeout; the result delivered.
    pub(super) async fn run_isolated(&self, c: Claimed) {
        let host = self.shared.host.read().unwrap_or_else(|e| e.into_inner()).clone();
        let Some(host) = host else {
            let result = RunResult::Failed {
                outcome: RunOutcome::Failed,
                error: "jobs cannot run yet (the runtime has not started its background work)".into(),
            };
            return self.finish(&c, result, Ran::default()).await;
        };
        let session = job_session_id(&c.routine.id, &c.run_id);
        self.shared.job_sessions.fetch_add(1, Ordering::Relaxed);
        let cancel = CancellationToken::new();
        let effects = Arc::new(JobEffects {
            scheduler: self.clone(),
            routine_id: c.routine.id.clone(),
            run_id: c.run_id.clone(),
            first: Default::default(),
        });
        let mut req = RunRequest {
            run_id: c.run_id.clone(),
            deadline: Some(cancel.clone()),
            ..RunRequest::new(
                session.clone(),
                RunKind::Job {
                    routine_id: c.routine.id.clone(),
                },
                job_prompt(&c),
                Attendance::Away,
            )
        };
        req.extras.system_section = Some(JOB_SECTION.into());
        req.extras.effects = Some(crate::agent::Effects(effects.clone()));
        req.extras.cache_hour = back_within_the_hour(&c, &self.config().default_zone);
        let timeout = Duration::from_secs(c.routine.timeout_seconds.max(1) as u64);
        let job = host.run(req);
        tokio::pin!(job);
        let outcome = tokio::select! {
            o = &mut job => Some(o),
            _ = tokio::time::sleep(timeout) => {
                cancel.cancel();
                let _ = tokio::time::timeout(STOP_GRACE, &mut job).await;
                None
            }
        };
        // What the turn used, whatever became of it; a turn cut off by the timeout is let go
        // before it reports.
        let usage = outcome.as_ref().and_then(|o| o.usage);
        let result = match outcome {
            None => RunResult::Failed {
                outcome: RunOutcome::TimedOut,
                error: format!("timed out after {} s", timeout.as_secs()),
            },
            Some(RunOutput {
                stop_reason: StopReason::Error | StopReason::Cancelled,
                error,
                ..
            }) => RunResult::Failed {
                outcome: RunOutcome::Failed,
                error: error.unwrap_or_else(|| "the job's turn failed".into()),
            },
            Some(done) => {
                let reply = done.reply_text();
                let text = if reply.trim().is_empty() {
                    format!("{} finished (no summary).", c.routine.title)
                } else {
                    reply
                };
                match self
                    .deliver(&session, &c, "job_completed", "Vigil: routine finished", &text)
                    .await
                {
                    Ok(()) => RunResult::Ok {
                        summary: Some(summarize(&text)),
                    },
                    Err(error) => RunResult::Failed {
                        outcome: RunOutcome::Failed,
                        error,
                    },
                }
            }
        };
        let result = match (result, effects.fired()) {
            // Cut off after it changed something: retrying could do it twice.
            (RunResult::Failed { error, .. }, Some(effect)) => RunResult::Failed {
                outcome: RunOutcome::Unknown,
                error: format!("{error}, after it had started to change something ({effect})"),
            },
            (result, _) => result,
        };
        if let RunResult::Failed {
            outcome: RunOutcome::Unknown,
            error,
        } = &result
        {
            self.tell_unknown_now(&c, &session, error).await;
        } else if let RunResult::Failed { error, .. } = &result {
            // Only the last attempt is announced; earlier ones are retried quietly.
            if c.routine.retry >= c.routine.max_retry {
                let text = format!("{} failed: {error}", c.routine.title);
                let _ = self
                    .deliver(&session, &c, "job_failed", "Vigil: a routine failed", &text)
                    .await;
            }
        }
        let ran = Ran {
            session_id: Some(session.clone()),
            deterministic: false,
            usage,
        };
        self.finish(&c, result, ran).await;
        self.archive(&session).await;
    }

    /// Tells the user, once, about a run recovered as `unknown` at a start or after a stuck
    /// run: it had changed something when it was cut off, so it is not retried.
    pub(super) async fn tell_unknown(&self, r: &Routine, run: &RoutineRun) {
        let c = Claimed {
            routine: r.clone(),
            run_id: run.run_id.clone(),
            due_at: run.due_at.unwrap_or(0),
            started_at: run.started_at,
            by_trigger: false,
        };
        let why = run.error.clone().unwrap_or_default();
        let session = job_session_id(&r.id, &run.run_id);
        let what = run.side_effect.as_deref().unwrap_or("something");
        self.tell_unknown_now(
            &c,
            &session,
            &format!("{why}, after it had started to change something ({what})"),
        )
        .await;
    }

    async fn tell_unknown_now(&self, c: &Claimed, session: &str, error: &str) {
        let text = format!(
            "\"{}\" was cut off ({error}). Whether it did its work is unknown, so it is not run again on its own: \
             check, then retry or dismiss it in the routine's history.",
            c.routine.title
        );
        if let Err(e) = self
            .deliver(session, c, "job_unknown", "Vigil: a routine was cut off", &text)
            .await
        {
            tracing::warn!("could not tell about routine {}: {e}", c.routine.id);
        }
    }

    /// Emits the one notification that sums up what a wake-up found: "3 routines missed
    /// while the computer slept; 1 ran now". `late` holds, for each routine that fell due
    /// while Vigil could not run it, whether it runs now; `away` says why.
    pub(super) fn tell_late(&self, late: &[bool], away: super::catch_up::Away) {
        if late.is_empty() {
            return;
        }
        let body = super::catch_up::summary(late.len(), late.iter().filter(|ran| **ran).count(), away);
        tracing::info!("{body}");
        if !self.host().is_none_or(|h| h.notifications()) {
            return;
        }
        self.deps().emitter.for_session(PRIMARY_SESSION, Scope::Primary).emit(
            Source::Scheduler,
            Event::notice(NotificationKind::Routine, "Vigil: missed routines", body),
        );
    }

    /// Delivers a routine's result (see [`crate::run::deliver`]); one copy per run.
    pub(super) async fn deliver(
        &self,
        source: &str,
        c: &Claimed,
        event_type: &str,
        title: &str,
        text: &str,
    ) -> Result<(), String> {
        let deps = self.deps();
        let notify = self.host().is_none_or(|h| h.notifications());
        let delivery = Delivery {
            from: source.to_string(),
            run_id: Some(c.run_id.clone()),
            event_type: event_type.into(),
            title: title.into(),
            text: text.to_string(),
            source: Source::Scheduler,
            notify: notify.then_some(if c.by_trigger {
                NotificationKind::Monitor
            } else {
                NotificationKind::Routine
            }),
            target: Target::Mailbox {
                dedupe_key: Some(format!("routine:{}:{}", c.routine.id, c.run_id)),
            },
        };
        deliver(&deps.meta, &deps.emitter, deps.clock.now_ms(), delivery).await
    }

    /// Marks a finished job session archived (seed 003 §12 Phase 2) and applies retention:
    /// archived job sessions older than the retention time, or beyond the newest
    /// `job_retention_count`, are deleted.
    async fn archive(&self, session: &str) {
        let deps = self.deps();
        let now = deps.clock.now_ms();
        if deps.meta.transcripts().exists(session).unwrap_or(false) {
            let marked = deps
                .meta
                .update_atomic_async(session, |m| {
                    m.extra.insert("archived_at".into(), now.into());
                })
                .await;
            if let Err(e) = marked {
                tracing::warn!("could not archive job session {session}: {e}");
            }
        }
        let Ok(listed) = deps.meta.list() else { return };
        let mut jobs: Vec<_> = listed
            .sessions
            .into_iter()
            .filter(|m| m.session_type == SessionType::Job && m.extra.contains_key("archived_at"))
            .collect();
        jobs.sort_by_key(|m| std::cmp::Reverse(m.updated_at));
        let keep_for = self.config().job_retention.as_millis() as i64;
        for (i, m) in jobs.iter().enumerate() {
            let old = now - m.updated_at > keep_for;
            if old || i >= self.config().job_retention_count {
                if let Err(e) = deps.meta.delete(&m.id) {
                    tracing::warn!("could not delete old job session {}: {e}", m.id);
                }
            }
        }
    }

    /// Tells the user, once, about a routine the agent registered on its own (seed 003
    /// §12 Phase 4).
    pub(super) async fn announce(&self, r: &super::Routine) {
        let when = super::view::describe(r, &self.config().default_zone);
        let (title, text) = if r.suggested {
            (
                "Vigil suggests a routine",
                format!(
                    "I suggest a routine: \"{}\" ({when}). It is off: turn it on under Routines if you want it, or remove it.",
                    r.title
                ),
            )
        } else {
            (
                "Vigil added a routine",
                format!(
                    "I added a routine on my own: \"{}\" ({when}). You can pause or delete it under Routines.",
                    r.title
                ),
            )
        };
        let c = Claimed {
            routine: r.clone(),
            run_id: super::model::short_id(),
            due_at: 0,
            started_at: 0,
            by_trigger: false,
        };
        if let Err(e) = self
            .deliver(
                &crate::heartbeat::session_id(crate::heartbeat::AGENT),
                &c,
                "routine_added",
                title,
                &text,
            )
            .await
        {
            tracing::warn!("could not announce routine {}: {e}", r.id);
        }
    }
}

/// Whether the routine's next due time is less than an hour after this one: then its job's
/// stable prefix (the same for every job) is cached for an hour, for the next to read.
fn back_within_the_hour(c: &Claimed, default_zone: &str) -> bool {
    let zone = c.routine.timezone.as_deref().unwrap_or(default_zone);
    let Ok(spec) = super::schedule::Spec::parse(c.routine.schedule_text(), zone) else {
        return false;
    };
    let anchor = c.routine.created_at.unwrap_or(c.due_at);
    spec.next_after(c.due_at, anchor)
        .is_some_and(|next| next.saturating_sub(c.due_at) < 3_600_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routines::Routine;

    #[test]
    fn job_session_ids_are_valid_session_ids() {
        assert_eq!(job_session_id("daily_hn", "a1b2c3d4"), "job_daily_hn_a1b2c3d4");
        assert_eq!(job_session_id("héllo wörld", "r"), "job_h_llo_w_rld_r");
    }

    #[test]
    fn a_time_reminder_needs_no_model_and_says_the_time() {
        let mut r = Routine::new("water".into(), "Drink water".into(), 0);
        r.kind = Some(KIND_TIME_REMINDER.into());
        r.timezone = Some("Europe/Berlin".into());
        let c = Claimed {
            routine: r,
            run_id: "r".into(),
            due_at: 0,
            started_at: 0,
            by_trigger: false,
        };
        // 2026-02-12T08:00Z is 09:00 in Berlin.
        assert_eq!(
            deterministic_text(&c, 1_770_883_200_000, "UTC").unwrap(),
            "Reminder: Drink water (it is 09:00, Europe/Berlin)"
        );
        let mut bad = c.clone();
        bad.routine.kind = Some("horoscope".into());
        assert!(deterministic_text(&bad, 0, "UTC")
            .unwrap_err()
            .contains("unknown deterministic kind"));
    }
}
