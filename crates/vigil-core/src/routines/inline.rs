//! A fired routine's inline run (issue 33 item 4, `execution_mode: inline`): a turn in the
//! conversation that made the routine ([`super::Routine::conversation`], the main one when
//! it names none), started as a [`RunRequest`] through [`crate::run`] like every other run.
//! The turn's message is the task with the evidence fenced as data (the isolated job's
//! framing, [`super::with_evidence`]); nobody is watching, so it runs under the unattended
//! sandbox and approval rules; its answer is in that conversation, and a notification
//! that opens it there follows the routine results' rules.
//!
//! When the conversation was deleted, the fire runs as an isolated job instead, and its
//! history says so. While the conversation's turn runs (the user's, or this routine's
//! last), the run waits for the lane up to the routine's timeout; fires meanwhile are
//! merged by the watcher into the next run, as for jobs.
//!
//! Must never: hand-build a turn; run in a conversation that no longer exists; put the
//! evidence into the message as instructions.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use vigil_protocol::{MessageKind, NotificationKind, RunOutcome, Source, StopReason};

use super::scheduler::{Claimed, RunResult, Scheduler};
use super::Ran;
use crate::run::deliver::{deliver, is_silent, summarize, Delivery, Target};
use crate::run::{Attendance, RunKind, RunRequest};
use crate::session::PRIMARY_SESSION;

/// How often a run waiting for a busy conversation looks again.
const LANE_RETRY: Duration = Duration::from_millis(200);

/// What the history says of a fire that ran as a job because its conversation was deleted.
pub const CONVERSATION_GONE: &str =
    "The conversation that made this routine was deleted, so this fire ran as an isolated job.";

/// The turn's message: which routine fired and its task (the evidence is fenced in it).
fn inline_prompt(c: &Claimed) -> String {
    let r = &c.routine;
    let task = super::jobs::task_of(r);
    format!(
        "Routine \"{}\" fired (nobody typed this: it runs on its own, in this conversation). The task:\n\n{task}",
        r.id
    )
}

impl Scheduler {
    /// The conversation fired routine `c` runs its inline turn in, while it exists (`None`:
    /// deleted, so the fire runs as a job, [`CONVERSATION_GONE`]).
    pub(super) fn inline_conversation(&self, c: &Claimed) -> Option<String> {
        let conversation = c
            .routine
            .conversation
            .clone()
            .unwrap_or_else(|| PRIMARY_SESSION.to_string());
        self.deps().meta.load(&conversation).is_ok().then_some(conversation)
    }

    /// Runs fired routine `c` inline: a turn in `conversation` ([`Self::inline_conversation`]).
    pub(super) async fn run_in_conversation(&self, c: Claimed, conversation: String) {
        let Some(host) = self.host() else {
            let result = RunResult::Failed {
                outcome: RunOutcome::Failed,
                error: "runs cannot start yet (the runtime has not started its background work)".into(),
            };
            return self.finish(&c, result, Ran::default()).await;
        };
        let timeout = Duration::from_secs(c.routine.timeout_seconds.max(1) as u64);
        let cancel = CancellationToken::new();
        let mut req = RunRequest {
            run_id: c.run_id.clone(),
            deadline: Some(cancel.clone()),
            ..RunRequest::new(
                conversation.clone(),
                RunKind::Routine {
                    routine_id: c.routine.id.clone(),
                },
                inline_prompt(&c),
                Attendance::Away,
            )
        };
        req.extras.message_kind = MessageKind::SystemEvent;
        req.extras.source = Some(Source::Scheduler);
        let ran = async {
            loop {
                let out = host.run(req.clone()).await;
                if !out.locked {
                    return out;
                }
                // The conversation's turn runs: this one follows it.
                tokio::time::sleep(LANE_RETRY).await;
            }
        };
        tokio::pin!(ran);
        let outcome = tokio::select! {
            o = &mut ran => Some(o),
            _ = tokio::time::sleep(timeout) => {
                cancel.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(10), &mut ran).await;
                None
            }
        };
        let usage = outcome.as_ref().and_then(|o| o.usage);
        let result = match outcome {
            None => RunResult::Failed {
                outcome: RunOutcome::TimedOut,
                error: format!(
                    "timed out after {} s (or its conversation stayed busy)",
                    timeout.as_secs()
                ),
            },
            Some(o) if matches!(o.stop_reason, StopReason::Error | StopReason::Cancelled) => RunResult::Failed {
                outcome: RunOutcome::Failed,
                error: o.error.unwrap_or_else(|| "the routine's turn failed".into()),
            },
            Some(o) => {
                let reply = o.reply.clone();
                let text = reply.as_ref().map(|m| m.text()).unwrap_or_default();
                if !is_silent(&text) && !text.trim().is_empty() {
                    self.tell_in(&conversation, &c, &text, reply.map(|m| m.ts)).await;
                }
                RunResult::Ok {
                    summary: Some(summarize(&text)).filter(|s| !s.is_empty()),
                }
            }
        };
        let ran = Ran {
            session_id: Some(conversation),
            deterministic: false,
            usage,
        };
        self.finish(&c, result, ran).await;
    }

    /// The notification of an inline run's answer: it opens the conversation at the reply
    /// (the answer itself is in the transcript already), when notifications are on.
    async fn tell_in(&self, conversation: &str, c: &Claimed, text: &str, message_ts: Option<i64>) {
        let notify = self.host().is_none_or(|h| h.notifications());
        let deps = self.deps();
        let delivery = Delivery {
            from: conversation.to_string(),
            run_id: Some(c.run_id.clone()),
            event_type: "routine_inline".into(),
            title: format!("Vigil: {}", c.routine.title.trim()),
            text: text.to_string(),
            source: Source::Scheduler,
            notify: notify.then_some(NotificationKind::Routine),
            target: Target::Conversation {
                session_id: conversation.to_string(),
                message_ts,
            },
        };
        if let Err(e) = deliver(&deps.meta, &deps.emitter, deps.clock.now_ms(), delivery).await {
            tracing::warn!("routine {}: could not tell of its answer: {e}", c.routine.id);
        }
    }
}
