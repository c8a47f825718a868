//! Continuations: when a command that a conversation's agent started in the background
//! ends, that conversation's own agent gets a turn with its whole history and the exit
//! notice (seed 000 §7's system event + wake, applied per conversation). Exits within
//! [`MERGE_WINDOW`] share one turn; a turn already running takes them in at its next step
//! (see [`crate::run::Lane`]); a chain of continuations without a user message stops at the
//! limit and says so. The reply reaches the user as one notification, unless it only says
//! there is nothing to tell.
//!
//! Must never: run a continuation while the conversation's lane is busy, lose a notice (a
//! refused continuation leaves the notices in the mailbox for the next turn), or ask the
//! user through anything but the gate (continuations ask and wait, see `Attendance::Away`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use vigil_protocol::{
    Event, Message, MessageKind, NotificationKind, Scope, Source, DEFAULT_APPROVAL_TIMEOUT_SECS,
    DEFAULT_CONTINUATION_LIMIT,
};

use super::lanes::{sessions_changed, Conversations};
use super::Base;
use crate::events::Emitter;
use crate::run::deliver::{deliver, is_silent, Delivery, Target};
use crate::run::{Attendance, Budget, RunKind, RunRequest, Runner};
use crate::session::{MailboxEvent, MetaStore};
use crate::system_events::SystemEvent;

/// Exits in one conversation this close together share one continuation (seed 004 §2's
/// wake coalescing).
pub const MERGE_WINDOW: Duration = Duration::from_millis(250);

/// What the model is asked after the notices.
pub const CONTINUATION_PROMPT: &str = "A background command you started in this conversation has ended (see the \
notice above). If the task has a next step, carry on with it. Otherwise tell the user the result in a sentence or \
two. If there is nothing worth telling, reply exactly NO_REPLY.";

/// The limits of acting alone, set from the desktop settings.
pub(super) struct Autonomy {
    /// Continuations in a row without a user message; 0: never.
    limit: AtomicU32,
    /// How long an unattended run waits for an approval, in milliseconds.
    approval_timeout_ms: AtomicU64,
    /// Conversations whose continuation waits out the merge window. `std` lock: held for an
    /// insert or a remove.
    merging: Mutex<HashSet<String>>,
}

impl Default for Autonomy {
    fn default() -> Self {
        Self {
            limit: AtomicU32::new(DEFAULT_CONTINUATION_LIMIT),
            approval_timeout_ms: AtomicU64::new(DEFAULT_APPROVAL_TIMEOUT_SECS * 1000),
            merging: Mutex::new(HashSet::new()),
        }
    }
}

impl Autonomy {
    /// Continuations in a row without a user message; 0: never.
    pub(super) fn limit(&self) -> u32 {
        self.limit.load(Ordering::Relaxed)
    }

    /// Applies the limits of acting alone at once: continuations in a row (0: never) and how
    /// long an unattended approval waits.
    pub(super) fn set(&self, continuation_limit: u32, approval_timeout: Duration) {
        self.limit.store(continuation_limit, Ordering::Relaxed);
        self.approval_timeout_ms
            .store(approval_timeout.as_millis() as u64, Ordering::Relaxed);
    }

    /// How long an unattended run waits for an approval.
    pub(super) fn approval_timeout(&self) -> Duration {
        Duration::from_millis(self.approval_timeout_ms.load(Ordering::Relaxed))
    }

    /// Marks `session_id` as waiting out the merge window; false if it already was.
    pub(super) fn start_merge(&self, session_id: &str) -> bool {
        self.merging
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(session_id.to_string())
    }

    /// The merge window of `session_id` is over.
    pub(super) fn end_merge(&self, session_id: &str) {
        self.merging
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(session_id);
    }
}

/// Whether a conversation may continue once more.
pub(super) enum Admission {
    Go,
    /// Continuing on its own is off (globally or here).
    Off,
    /// The chain reached `limit`; `first` says whether this is the moment it did.
    Limit {
        limit: u32,
        first: bool,
    },
}

/// The message a continuation turn starts with: the notices, then the question.
pub(super) fn continuation_text(events: &[SystemEvent]) -> String {
    let mut text = events
        .iter()
        .map(|e| format!("System: {}", e.text))
        .collect::<Vec<_>>()
        .join("\n");
    text.push_str("\n\n");
    text.push_str(CONTINUATION_PROMPT);
    text
}

/// Counts one more continuation, or says why not (one atomic metadata update).
pub(super) async fn admit(meta: &MetaStore, autonomy: &Autonomy, session_id: &str) -> Admission {
    let global = autonomy.limit();
    let admitted = meta
        .update_atomic_async(session_id, move |m| {
            let limit = m.continuation_limit.unwrap_or(global);
            if limit == 0 {
                Admission::Off
            } else if m.continuations >= limit {
                let first = !m.stopped_at_limit;
                m.stopped_at_limit = true;
                Admission::Limit { limit, first }
            } else {
                m.continuations += 1;
                Admission::Go
            }
        })
        .await;
    match admitted {
        Ok((_, admission)) => admission,
        Err(e) => {
            tracing::warn!("could not count a continuation of {session_id}: {e}");
            Admission::Off
        }
    }
}

/// One continuation turn in `lane` (already marked busy). Returns whether the
/// conversation may go on after it (it ran and succeeded).
pub(super) async fn run_continuation(
    conversations: &Conversations,
    base: &Base,
    budget: &Budget,
    autonomy: &Autonomy,
    runner: &dyn Runner,
    session_id: &str,
    run_id: &str,
) -> bool {
    let events = conversations.system_events.drain(session_id);
    if events.is_empty() {
        return false;
    }
    if budget.spent() {
        // No model call: the notices wait for the user's next message, and the chat says why.
        leave_for_next_turn(conversations, session_id, &events).await;
        stopped_for_budget(conversations, base, session_id).await;
        return false;
    }
    match admit(&conversations.meta, autonomy, session_id).await {
        Admission::Go => {}
        Admission::Off => {
            leave_for_next_turn(conversations, session_id, &events).await;
            announce_exits(&base.emitter, session_id, &events);
            return false;
        }
        Admission::Limit { limit, first } => {
            leave_for_next_turn(conversations, session_id, &events).await;
            if first {
                stopped_at_limit(conversations, base, session_id, limit).await;
            } else {
                announce_exits(&base.emitter, session_id, &events);
            }
            return false;
        }
    }
    sessions_changed(conversations, base, Ok(()));
    let mut req = RunRequest {
        run_id: run_id.to_string(),
        ..RunRequest::new(
            session_id,
            RunKind::Continuation,
            continuation_text(&events),
            Attendance::Away,
        )
    };
    req.extras.message_kind = MessageKind::SystemEvent;
    req.extras.source = Some(Source::Background);
    let result = runner.run(req).await;
    if !result.went_well() {
        // The notices are in the transcript; the user still hears that the command ended.
        announce_exits(&base.emitter, session_id, &events);
        return false;
    }
    if let Some(reply) = result.reply.filter(|m| !is_silent(&m.text())) {
        notify_reply(conversations, base, session_id, &reply).await;
    }
    true
}

/// A routine's job session continues inside its job: a background turn that may ask and
/// wait, whose answer is delivered as the routine's result (the mailbox of the main
/// conversation, a card and a notification).
pub(super) async fn continue_job(
    conversations: &Conversations,
    base: &Base,
    autonomy: &Autonomy,
    runner: &dyn Runner,
    session_id: &str,
) {
    let events = conversations.system_events.drain(session_id);
    if events.is_empty() {
        return;
    }
    let admitted = admit(&conversations.meta, autonomy, session_id).await;
    if !matches!(admitted, Admission::Go) {
        return announce_exits(&base.emitter, session_id, &events);
    }
    let mut req = RunRequest::new(
        session_id,
        RunKind::JobContinuation,
        continuation_text(&events),
        Attendance::Away,
    );
    req.extras.message_kind = MessageKind::SystemEvent;
    req.extras.source = Some(Source::Background);
    let run_id = req.run_id.clone();
    let result = runner.run(req).await;
    if !result.went_well() {
        return announce_exits(&base.emitter, session_id, &events);
    }
    let reply = result.reply_text();
    if !is_silent(&reply) {
        deliver_job_reply(conversations, base, session_id, &run_id, &reply).await;
    }
}

/// A job continuation's answer, delivered like the job's own result.
pub(super) async fn deliver_job_reply(
    conversations: &Conversations,
    base: &Base,
    session_id: &str,
    run_id: &str,
    reply: &str,
) {
    let delivery = Delivery {
        from: session_id.to_string(),
        run_id: Some(run_id.to_string()),
        event_type: "job_completed".into(),
        title: "Vigil: routine finished".into(),
        text: reply.to_string(),
        source: Source::Background,
        notify: Some(NotificationKind::Routine),
        target: Target::Mailbox { dedupe_key: None },
    };
    let now = base.clock.now_ms();
    if let Err(e) = deliver(&conversations.meta, &base.emitter, now, delivery).await {
        tracing::warn!("could not deliver a job's continuation: {e}");
    }
}

/// One notification for a continuation's answer: its first line; a click opens the
/// conversation at that message.
pub(super) async fn notify_reply(conversations: &Conversations, base: &Base, session_id: &str, reply: &Message) {
    let title = conversations
        .meta
        .load(session_id)
        .map(|l| l.meta.title)
        .unwrap_or_else(|_| "Vigil".into());
    let delivery = Delivery {
        from: session_id.to_string(),
        run_id: None,
        event_type: "continuation".into(),
        title,
        text: reply.text(),
        source: Source::Background,
        notify: Some(NotificationKind::Process),
        target: Target::Conversation {
            session_id: session_id.to_string(),
            message_ts: Some(reply.ts),
        },
    };
    let now = base.clock.now_ms();
    if let Err(e) = deliver(&conversations.meta, &base.emitter, now, delivery).await {
        tracing::warn!("could not tell of {session_id}'s continuation: {e}");
    }
}

/// The raw exit notification, when no continuation tells the user.
pub(super) fn announce_exits(emitter: &Emitter, session_id: &str, events: &[SystemEvent]) {
    let failed = events.iter().any(|e| !e.text.starts_with("Exec completed"));
    let title = match (events.len(), failed) {
        (1, false) => "A background command finished".to_string(),
        (1, true) => "A background command failed".to_string(),
        (n, _) => format!("{n} background commands ended"),
    };
    let body: String = events
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
        .chars()
        .take(300)
        .collect();
    emitter.for_session(session_id, Scope::Primary).emit(
        Source::Exec,
        Event::Notification {
            kind: NotificationKind::Process,
            title,
            body,
            event_id: None,
            process_id: None,
            approval_id: None,
            target_session_id: Some(session_id.to_string()),
            message_ts: None,
        },
    );
}

/// Notices a refused continuation did not show go to the mailbox, which the next turn
/// reads (and which survives a restart), instead of waking the conversation again.
pub(super) async fn leave_for_next_turn(conversations: &Conversations, session_id: &str, events: &[SystemEvent]) {
    for e in events {
        let event = MailboxEvent {
            event_id: uuid::Uuid::new_v4().to_string(),
            source: "exec".into(),
            summary: e.text.lines().next().unwrap_or_default().to_string(),
            detail: Some(e.text.clone()),
            created_at: e.ts,
            event_type: "exec_completed".into(),
            ..MailboxEvent::default()
        };
        if let Err(err) = conversations.meta.deposit(session_id, event).await {
            tracing::warn!("could not keep an exit notice for {session_id}: {err}");
            conversations.system_events.restore(session_id, vec![e.clone()]);
        }
    }
}

/// Today's budget for background work is spent: the chat says the conversation did not
/// continue (the budget's one notification is the heartbeat's).
pub(super) async fn stopped_for_budget(conversations: &Conversations, base: &Base, session_id: &str) {
    let text = "Vigil did not continue on its own: today's token budget for background work is spent. \
The notice is kept for your next message; background work resumes tomorrow or when the budget is raised."
        .to_string();
    let mut message = Message::user_text(text, base.clock.now_ms());
    message.kind = MessageKind::SystemEvent;
    if let Err(e) = conversations.store.append_async(session_id, &message).await {
        return tracing::warn!("could not save the budget notice of {session_id}: {e}");
    }
    base.emitter
        .for_session(session_id, Scope::Primary)
        .emit(Source::Background, Event::MessageAppended { message });
}

/// The chain reached its limit: said once in the chat and by a notification.
pub(super) async fn stopped_at_limit(conversations: &Conversations, base: &Base, session_id: &str, limit: u32) {
    let text = format!(
        "Vigil stopped continuing on its own after {limit} turns in a row without a message from you. \
The latest notice is kept for your next message; send one to carry on."
    );
    let mut message = Message::user_text(text.clone(), base.clock.now_ms());
    message.kind = MessageKind::SystemEvent;
    let emitter = base.emitter.for_session(session_id, Scope::Primary);
    if let Err(e) = conversations.store.append_async(session_id, &message).await {
        tracing::warn!("could not save the limit notice of {session_id}: {e}");
    } else {
        emitter.emit(
            Source::Background,
            Event::MessageAppended {
                message: message.clone(),
            },
        );
    }
    emitter.emit(
        Source::Background,
        Event::Notification {
            kind: NotificationKind::Process,
            title: "Vigil stopped continuing on its own".into(),
            body: text,
            event_id: None,
            process_id: None,
            approval_id: None,
            target_session_id: Some(session_id.to_string()),
            message_ts: Some(message.ts),
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_carries_each_notice_in_the_seed_form() {
        let e = |t: &str| SystemEvent {
            text: t.into(),
            kind: crate::system_events::SystemEventKind::ExecFinished,
            ts: 0,
        };
        let text = continuation_text(&[
            e("Exec completed (a1, code 0) :: done-A"),
            e("Exec failed (b2, signal 9)"),
        ]);
        assert!(
            text.starts_with("System: Exec completed (a1, code 0) :: done-A\nSystem: Exec failed (b2, signal 9)\n\n")
        );
        assert!(text.ends_with(CONTINUATION_PROMPT));
    }
}
