//! One heartbeat run: preflight in OpenClaw's order (enabled → paused (Vigil's) → active hours, which
//! hold back `interval` runs only → any conversation busy → the run lock (Vigil's) → `HEARTBEAT.md`
//! effectively empty or missing, which skips `interval` runs only), the turn in the heartbeat session,
//! the reply decision, and delivery: mailbox deposit, card, notification.
//!
//! Routines due now (`## Due Tasks`) make the run a cron run: seed 002's cron prompt, and the reply is
//! the routines' result, delivered however short (the `ackMaxChars` rule is for the poll); a bare
//! `HEARTBEAT_OK` is recorded in their run history as acknowledged.
//!
//! Budget: before the model is called, a spent daily token budget for background work skips the run
//! (`budget`, one notification a day); every turn's tokens are added to today's totals and carried
//! on the `heartbeat` event. Idle gate: a quiet interval run after `idleAfterHours` without a user
//! message doubles the interval (the scheduler's [`crate::routines::IntervalTimer`] reads it); an
//! interval run that told the user something resets it, as a user message does.
//!
//! After an interval poll, the daily reflection when one is due ([`super::reflection`]).
//!
//! Retries: a busy conversation or a taken lock is a skip the wake loop retries with back-off; a
//! provider error is retried up to [`super::PROVIDER_RETRIES`] times (the routines it took wait for
//! the retry), then recorded failed.
//!
//! Deadline: a run ends at `runTimeoutMinutes` (10), or sooner at the shortest `timeout_seconds`
//! of the routines it carries ([`super::turn::Deadline`]). The turn is cancelled — its open
//! questions expire, the commands it started are killed — and the run is recorded `timed-out`
//! (its routines `timed_out`, under their retry rules); it is not tried again, so the wake loop
//! is free for the next poll at its time.

use vigil_protocol::{ErrorKind, Event, HeartbeatSkip, HeartbeatStatus, Scope, Source, StopReason, Usage, WakeReason};

use super::prompts::{heartbeat_prompt, system_section, PromptKind};
use super::reply::{self, ReplyDecision};
use super::turn::Deadline;
use super::{run_lock, session_id, DueTask, Heartbeat, AGENT, PROVIDER_RETRIES};
use crate::agent::TurnExtras;
use crate::run::deliver::summarize;
use crate::run::RunKind;
use crate::system_events;
use crate::wake::{PendingWake, WakeOutcome};
use crate::workspace::heartbeat_file::{self as file, HeartbeatFile};

/// How a run ended, before it is recorded.
pub(super) struct Outcome {
    status: HeartbeatStatus,
    skip: Option<HeartbeatSkip>,
    detail: Option<String>,
    /// What the wake loop does next: `Busy` and `Failed` try the run again.
    next: WakeOutcome,
    /// What reached the user, for the run history of the routines it carried.
    delivered: Option<String>,
}

impl Outcome {
    fn skipped(skip: HeartbeatSkip, detail: Option<String>) -> Self {
        let retried = matches!(skip, HeartbeatSkip::RequestsInFlight | HeartbeatSkip::Lock);
        Self {
            status: HeartbeatStatus::Skipped,
            skip: Some(skip),
            detail,
            next: if retried { WakeOutcome::Busy } else { WakeOutcome::Done },
            delivered: None,
        }
    }

    pub(super) fn status(status: HeartbeatStatus) -> Self {
        Self {
            status,
            skip: None,
            detail: None,
            next: WakeOutcome::Done,
            delivered: None,
        }
    }

    pub(super) fn failed(detail: String) -> Self {
        Self {
            detail: Some(detail),
            ..Self::status(HeartbeatStatus::Failed)
        }
    }

    /// Ended at `deadline`; not tried again (the next run comes at its time).
    pub(super) fn timed_out(deadline: &Deadline) -> Self {
        Self {
            detail: Some(deadline.passed()),
            ..Self::status(HeartbeatStatus::TimedOut)
        }
    }
}

/// Provider errors a later try may fix; a rejected key or an unknown model will not be.
fn worth_retrying(kind: Option<ErrorKind>) -> bool {
    matches!(
        kind,
        Some(ErrorKind::RateLimited | ErrorKind::Server | ErrorKind::Network | ErrorKind::Timeout | ErrorKind::Stream)
    )
}

/// A due routine as a line of the cron prompt's reminder content.
fn reminder_line(t: &DueTask) -> String {
    let (title, what) = (t.title.trim(), t.description.trim());
    if what.is_empty() || what == title {
        title.to_string()
    } else {
        format!("{title}: {what}")
    }
}

impl Heartbeat {
    /// Runs (or skips) one wake and records it.
    pub async fn run_once(&self, wake: PendingWake) -> WakeOutcome {
        let mut taken = Vec::new();
        let mut usage = None;
        let outcome = self.preflight_and_run(&wake, &mut taken, &mut usage).await;
        if !taken.is_empty() {
            if let Some(source) = self.due_source() {
                match outcome.next {
                    // The retry takes them again.
                    WakeOutcome::Failed | WakeOutcome::Busy => source.give_back(&taken),
                    WakeOutcome::Done => source.finished(&taken, due_outcome(&outcome), usage),
                }
            }
        }
        let next = outcome.next;
        let interval = wake.effective_reason() == WakeReason::Interval;
        self.record(wake.reason, interval, outcome, usage);
        if interval && next == WakeOutcome::Done {
            if let Some((outcome, usage)) = self.reflect_if_due().await {
                self.record(WakeReason::Reflection, false, outcome, usage);
            }
        }
        next
    }

    /// The heartbeat session's addition to the system prompt: seed 002's section and the
    /// routines' (byte-stable, so every run reads the cached prefix).
    pub(super) fn system_section(&self, config: &super::HeartbeatConfig) -> String {
        match self.due_source().and_then(|d| d.system_section()) {
            Some(extra) => format!("{}\n\n{extra}", system_section(&config.prompt)),
            None => system_section(&config.prompt),
        }
    }

    pub(super) fn due_source(&self) -> Option<std::sync::Arc<dyn super::DueTasks>> {
        self.shared.due_tasks.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `taken` receives the inline routines the run took, answered by the caller.
    /// `usage` receives the tokens of the turn, if one ran.
    async fn preflight_and_run(
        &self,
        wake: &PendingWake,
        taken: &mut Vec<super::DueTask>,
        usage: &mut Option<Usage>,
    ) -> Outcome {
        let deps = &self.shared.deps;
        let config = self.config();
        let now = deps.clock.now_ms();
        if !config.enabled {
            return Outcome::skipped(HeartbeatSkip::Disabled, None);
        }
        if self.is_paused() {
            return Outcome::skipped(
                HeartbeatSkip::Paused,
                Some("Background activity is paused; resume it from the tray menu.".into()),
            );
        }
        let interval = wake.effective_reason() == WakeReason::Interval;
        // Active hours govern the interval poll only: a routine, Check now or a finished
        // command is answered at its time.
        if interval && !config.is_active_at(now) {
            if let Some(source) = self.due_source() {
                source.hand_off();
            }
            return Outcome::skipped(HeartbeatSkip::QuietHours, None);
        }
        if self.shared.host.conversation_busy() {
            return Outcome::skipped(HeartbeatSkip::RequestsInFlight, None);
        }
        let session = session_id(AGENT);
        let _lock = match run_lock::try_take(deps.store.dir(), &session) {
            Ok(Some(lock)) => Some(lock),
            Ok(None) => {
                return Outcome::skipped(
                    HeartbeatSkip::Lock,
                    Some("Another heartbeat run holds the heartbeat's lock; this one is tried again shortly.".into()),
                )
            }
            Err(e) => {
                tracing::warn!("the heartbeat's run lock could not be taken ({e}); running without it");
                None
            }
        };
        let heartbeat_file = file::read(&deps.workspace);
        let queued = deps.events.peek(&session_id(AGENT));
        let source = self.due_source();
        let due = source.as_ref().map(|d| d.due(now)).unwrap_or_default();
        taken.extend(due.iter().cloned());
        let routine_notes = source.as_ref().and_then(|d| d.context());
        let nothing_else = queued.is_empty() && due.is_empty() && routine_notes.is_none();
        if let Err(e) = &heartbeat_file {
            // Said every time: a broken file must not quietly stop the checks in it.
            self.error(
                ErrorKind::Storage,
                format!("The heartbeat could not use {}: {e}", file::HEARTBEAT_FILE),
            );
        }
        if interval && nothing_else {
            match &heartbeat_file {
                // Missing is empty too: a fresh install must not call the model every 30 minutes.
                Ok(f) if f.is_empty() => {
                    return Outcome::skipped(HeartbeatSkip::EmptyHeartbeatFile, None);
                }
                Err(e) => return Outcome::skipped(HeartbeatSkip::HeartbeatFileError, Some(e.to_string())),
                Ok(_) => {}
            }
        }
        if !self.shared.host.has_provider() {
            return Outcome::skipped(
                HeartbeatSkip::NoProvider,
                Some("No provider is configured; open Settings to choose one.".into()),
            );
        }
        if self.budget().spent() {
            return Outcome::skipped(
                HeartbeatSkip::Budget,
                Some(format!(
                    "Today's token budget for background work ({}) is spent; the heartbeat resumes tomorrow or when it is raised.",
                    config.daily_token_budget
                )),
            );
        }

        let events = deps.events.drain(&session_id(AGENT));
        let reminders: Vec<String> = due.iter().map(reminder_line).collect();
        let kind = PromptKind::choose(&events, &reminders);
        let time_line = config.zone.current_time_line(now);
        let mut text = kind.text(&config.prompt, &time_line);
        let checklist = matches!(heartbeat_file, Ok(HeartbeatFile::Tasks(_)));
        if interval && checklist && kind != PromptKind::Poll {
            // The interval poll came with them: its checklist is still asked for.
            text = format!("{text}\n\n{}", heartbeat_prompt(&config.prompt, &time_line));
        }
        let mut sections: Vec<String> = system_events::context_section(&events).into_iter().collect();
        if !due.is_empty() {
            let lines: Vec<String> = due
                .iter()
                .map(|t| format!("- [{}] {}: {}", t.id, t.title, t.description))
                .collect();
            sections.push(format!("## Due Tasks\n{}", lines.join("\n")));
        }
        sections.extend(routine_notes);
        match &heartbeat_file {
            Ok(HeartbeatFile::Tasks(tasks)) => sections.push(format!("## {}\n{tasks}", file::HEARTBEAT_FILE)),
            Err(e) => sections.push(format!("## {}\n(could not be read: {e})", file::HEARTBEAT_FILE)),
            Ok(_) => {}
        }

        let mark = match self.mark(&session) {
            Ok(mark) => mark,
            Err(e) => {
                deps.events.restore(&session_id(AGENT), events);
                return Outcome::failed(e.to_string());
            }
        };
        let extras = TurnExtras {
            context_sections: sections,
            ..TurnExtras::default()
        };
        let deadline = Deadline::of(&config, &due);
        let turned = self
            .heartbeat_turn(&config, RunKind::Heartbeat, text, extras, !interval, &deadline)
            .await;
        let result = turned.result;
        if result.locked {
            // A turn already runs in the heartbeat's session: nothing ran.
            deps.events.restore(&session_id(AGENT), events);
            return Outcome::skipped(HeartbeatSkip::Lock, result.error);
        }
        *usage = result.usage;
        if turned.timed_out {
            // Whatever the turn got to, the events wait for the next run, like a cancelled
            // turn's; a turn let go may still write, so its lines stay.
            deps.events.restore(&session_id(AGENT), events);
            if !turned.let_go {
                self.take_back(&session, &mark).await;
            }
            return Outcome::timed_out(&deadline);
        }
        if matches!(result.stop_reason, StopReason::Error | StopReason::Cancelled) {
            // The model never saw them through: they wait for the next run or turn.
            deps.events.restore(&session_id(AGENT), events);
            self.take_back(&session, &mark).await;
            let detail = result
                .error
                .unwrap_or_else(|| format!("the turn ended: {:?}", result.stop_reason));
            let tries_left = PROVIDER_RETRIES.saturating_sub(wake.failures);
            if result.stop_reason == StopReason::Error && worth_retrying(result.error_kind) && tries_left > 0 {
                let retry = wake.failures + 1;
                return Outcome {
                    next: WakeOutcome::Failed,
                    ..Outcome::failed(format!(
                        "{detail} (trying again shortly: retry {retry} of {PROVIDER_RETRIES})"
                    ))
                };
            }
            return Outcome::failed(detail);
        }
        let reply_text = result.reply_text();
        let exec = kind == PromptKind::ExecEvent;
        // A due routine's result is what the user asked for: however short, it is delivered
        // (the ackMaxChars rule is for the poll's "nothing to report" remarks).
        match reply::decide(&reply_text, config.ack_max_chars, exec || !due.is_empty()) {
            ReplyDecision::OkEmpty => {
                self.take_back(&session, &mark).await;
                Outcome::status(HeartbeatStatus::OkEmpty)
            }
            ReplyDecision::OkToken => {
                self.take_back(&session, &mark).await;
                Outcome::status(HeartbeatStatus::OkToken)
            }
            ReplyDecision::Deliver(text) => {
                // The 24-hour duplicate rule is against a check that keeps raising the same
                // alert (seed 002 §7.2); a due routine is meant to repeat ("drink water" every
                // hour), so a run that carried one is always delivered.
                if !exec && due.is_empty() && self.delivered_recently(&session, &text, now) {
                    self.take_back(&session, &mark).await;
                    return Outcome::skipped(HeartbeatSkip::Duplicate, None);
                }
                match self.deliver(&session, &kind, &text, config.notifications).await {
                    Ok(()) => Outcome {
                        delivered: Some(summarize(&text)),
                        ..Outcome::status(HeartbeatStatus::Sent)
                    },
                    Err(e) => Outcome::failed(format!("could not deliver the heartbeat's message: {e}")),
                }
            }
        }
    }

    fn error(&self, kind: ErrorKind, message: String) {
        tracing::warn!("{message}");
        self.emitter().emit(Source::Heartbeat, Event::Error { kind, message });
    }

    fn emitter(&self) -> crate::events::Emitter {
        self.shared
            .deps
            .emitter
            .for_session(&session_id(AGENT), Scope::Heartbeat)
    }

    /// Counts the outcome, keeps it for the status view, and emits the `heartbeat` event.
    fn record(&self, reason: WakeReason, interval: bool, outcome: Outcome, usage: Option<Usage>) {
        let now = self.shared.deps.clock.now_ms();
        let retrying = outcome.next != WakeOutcome::Done;
        // Quiet: the model ran and had nothing to report. A skip costs nothing and stretches nothing.
        let quiet = matches!(outcome.status, HeartbeatStatus::OkToken | HeartbeatStatus::OkEmpty);
        if interval && quiet {
            self.quiet_interval_run(&self.config());
        }
        // Something found while nobody watched: the gate must not keep it 4 hours from the next look.
        if interval && outcome.status == HeartbeatStatus::Sent {
            self.reset_idle_gate();
        }
        {
            let mut state = self.state();
            let stats = &mut state.stats;
            match outcome.status {
                HeartbeatStatus::Sent => stats.sent += 1,
                HeartbeatStatus::OkToken | HeartbeatStatus::OkEmpty => stats.suppressed += 1,
                // A try that will be repeated is not yet a failed run.
                HeartbeatStatus::Failed if !retrying => stats.failed += 1,
                HeartbeatStatus::TimedOut => stats.failed += 1,
                HeartbeatStatus::Failed | HeartbeatStatus::Skipped => {}
            }
            if let Some(skip) = outcome.skip {
                *stats.skipped.entry(skip.as_str().to_string()).or_default() += 1;
            }
            state.last_run_at = Some(now);
            state.last_reason = Some(reason);
            state.last_status = Some(outcome.status);
            state.last_skip = outcome.skip;
            state.last_detail = outcome.detail.clone();
            state.last_usage = usage;
        }
        self.emitter().emit(
            Source::Heartbeat,
            Event::Heartbeat {
                reason,
                status: outcome.status,
                skip_reason: outcome.skip,
                detail: outcome.detail,
                retrying,
                usage,
            },
        );
    }
}

/// What a run's outcome means for the inline routines it took.
fn due_outcome(outcome: &Outcome) -> super::DueOutcome {
    use super::DueOutcome;
    let detail = || outcome.detail.clone().unwrap_or_default();
    match (outcome.status, outcome.skip) {
        (HeartbeatStatus::Failed, _) => DueOutcome::Failed(detail()),
        (HeartbeatStatus::TimedOut, _) => DueOutcome::TimedOut(detail()),
        (HeartbeatStatus::Skipped, Some(HeartbeatSkip::Duplicate)) => DueOutcome::Done("duplicate".into()),
        (HeartbeatStatus::Skipped, Some(HeartbeatSkip::RequestsInFlight | HeartbeatSkip::Lock)) => {
            DueOutcome::Failed("the heartbeat was busy".into())
        }
        (HeartbeatStatus::Skipped, skip) => {
            DueOutcome::Skipped(skip.map_or("skipped".into(), |s| format!("heartbeat {}", s.as_str())))
        }
        (HeartbeatStatus::Sent, _) => DueOutcome::Delivered(outcome.delivered.clone().unwrap_or_default()),
        (HeartbeatStatus::OkToken | HeartbeatStatus::OkEmpty, _) => DueOutcome::Acknowledged,
    }
}
