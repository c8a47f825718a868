//! The turn loop: the part of the runtime that re-enters itself. A user's message starts a
//! turn in its lane; what queued meanwhile runs next; a job whose command ended continues
//! after its run; a command's exit continues its conversation after the merge window. Each
//! of these spawns onto the runtime's tasks and comes back here, so its functions take the
//! handle ([`Runtime`]) and clone it into what they spawn; everything else they do is a call
//! into the owner that holds the state ([`lanes`], [`continuation`], [`processes`],
//! [`activity`]). The one inherent `impl Runtime` is `api.rs`; this file is where a call
//! site's `turns::` prefix leads.
//!
//! Must never: run two turns in one lane at once, or start one after shutdown began.

use std::sync::Arc;

use futures_util::FutureExt as _;
use vigil_protocol::{Attachment, Scope, StopReason, WakeReason};

use super::continuation;
use super::lanes::{self, Input};
use super::process_table::{stopped_notice, Running};
use super::processes::{self, ExitRoute};
use super::{activity, attachments, Runtime};
use crate::agent::UserInput;
use crate::run::start::Context;
use crate::run::{Attendance, Lane, RunKind, RunRequest, RunResult, Runner};
use crate::session::meta::type_from_id;
use crate::session::SessionType;
use crate::system_events::SystemEventKind;

/// Starts `req` (see [`crate::run::start`]) with what this runtime has now. A job whose
/// command ended after its turn's last step continues.
async fn run(rt: &Runtime, req: RunRequest) -> RunResult {
    let i = &rt.inner;
    let activity = || activity_changed(rt);
    let ctx = Context {
        store: &i.conversations.store,
        meta: &i.conversations.meta,
        emitter: &i.base.emitter,
        clock: &i.base.clock,
        approvals: &i.agent.approvals,
        workspace: &i.agent.workspace,
        data_dir: &i.base.data_dir,
        notices: &i.conversations.system_events,
        lanes: &i.conversations.lanes,
        budget: &i.unattended.budget,
        shutdown: &i.life.shutdown,
        tools: i.agent.tools(&i.mcp),
        client: i.agent.client(),
        config: i.agent.config(),
        approval_timeout: i.unattended.autonomy.approval_timeout(),
        processes: i.processes.registry(),
        activity: &activity,
    };
    let job = req.kind.scope() == Scope::Job;
    let routine = matches!(req.kind, RunKind::Routine { .. });
    let session_id = req.session_id.clone();
    let result = crate::run::start::run(&ctx, req).await;
    if job && !result.locked && !i.conversations.system_events.peek(&session_id).is_empty() {
        continue_after_merge(rt, &session_id);
    }
    if routine && !result.locked {
        answer_queued(rt, &session_id);
    }
    result
}

/// After a routine's turn in a conversation: the user's messages that came too late to
/// steer it start their own turn.
fn answer_queued(rt: &Runtime, session_id: &str) {
    let i = &rt.inner;
    let lane = i.conversations.lanes.lane(session_id);
    {
        let mut state = lane.lock();
        if state.busy || state.queue.is_empty() {
            return;
        }
        state.busy = true;
        state.scope = Some(Scope::Primary);
        state.cancel = i.life.shutdown.child_token();
    }
    activity_changed(rt);
    if let Some(next) = lanes::after_turn(&i.conversations, &i.base, &i.life, session_id, &lane, true) {
        spawn_lane(rt, session_id.to_string(), lane, next);
    }
}

/// The user's message: a turn in its lane, or queued behind the running one.
pub(super) fn start_turn(rt: &Runtime, session_id: String, input: UserInput) {
    let i = &rt.inner;
    let heartbeat = &i.unattended.heartbeat;
    let Some((lane, input)) = lanes::user_message(&i.conversations, &i.base, &i.life, heartbeat, &session_id, input)
    else {
        return;
    };
    activity_changed(rt);
    spawn_lane(rt, session_id, lane, Input::User(input));
}

/// Prepares and stores `attachments` with `session_id`, then sends the message.
pub(super) fn send_with_attachments(rt: &Runtime, session_id: String, text: String, attachments: Vec<Attachment>) {
    let this = rt.clone();
    rt.inner.life.tasks.spawn(async move {
        let (store, base) = (&this.inner.conversations.store, &this.inner.base);
        match attachments::prepare(store, &base.data_dir, &session_id, &attachments).await {
            Ok(images) => start_turn(&this, session_id, UserInput { text, images }),
            Err(message) => attachments::refused(&base.emitter, &session_id, message),
        }
    });
}

/// Runs `first` in `lane` (already marked busy), then whatever queued meanwhile: the
/// user's messages, or a continuation when notices wait.
fn spawn_lane(rt: &Runtime, session_id: String, lane: Arc<Lane>, first: Input) {
    let this = rt.clone();
    rt.inner.life.tasks.spawn(async move {
        let i = &this.inner;
        let mut next = Some(first);
        while let Some(input) = next.take() {
            let run_id = uuid::Uuid::new_v4().to_string();
            let turn = async {
                match input {
                    Input::User(input) => {
                        let stop = run_turn(&this, &session_id, &run_id, input).await;
                        !matches!(stop, StopReason::Error | StopReason::Cancelled)
                    }
                    Input::Continuation => {
                        let (budget, autonomy) = (&i.unattended.budget, &i.unattended.autonomy);
                        continuation::run_continuation(
                            &i.conversations,
                            &i.base,
                            budget,
                            autonomy,
                            &this,
                            &session_id,
                            &run_id,
                        )
                        .await
                    }
                }
            };
            let went_well = match std::panic::AssertUnwindSafe(turn).catch_unwind().await {
                Ok(went_well) => went_well,
                Err(panic) => {
                    lanes::turn_panicked(&i.base.emitter, &session_id, &run_id, panic.as_ref());
                    false
                }
            };
            // Also after a panic: the lane is freed, so the conversation is not stuck
            // "working" with every later message queued behind a turn that is gone.
            next = lanes::after_turn(&i.conversations, &i.base, &i.life, &session_id, &lane, went_well);
        }
        activity_changed(&this);
    });
}

async fn run_turn(rt: &Runtime, session_id: &str, run_id: &str, input: UserInput) -> StopReason {
    #[cfg(test)]
    if input.text == super::tests::PLANTED_BUG {
        panic!("a planted bug");
    }
    let req = RunRequest {
        run_id: run_id.to_string(),
        ..RunRequest::new(session_id, RunKind::User, input, Attendance::User)
    };
    run(rt, req).await.stop_reason
}

/// Tells the sleep inhibitor how many things run now.
pub(super) fn activity_changed(rt: &Runtime) {
    let i = &rt.inner;
    activity::changed(&i.away, &i.conversations.lanes, &i.processes);
}

/// An agent's command the last run did not see end (a quit, a crash): its conversation
/// hears of it and may continue; the heartbeat's waits for its next run.
pub(super) fn command_left(rt: &Runtime, r: &Running) {
    let notice = stopped_notice(r);
    if type_from_id(&r.owner) == SessionType::Primary {
        match rt.inner.conversations.meta.load(&r.owner) {
            Ok(_) => continue_after_exit(rt, &r.owner, &notice),
            Err(e) => tracing::info!("not announced: {e}"),
        }
    } else {
        rt.enqueue_system_event(&r.owner, &notice, SystemEventKind::ExecFinished);
    }
}

/// A backgrounded command ended: routed by [`processes::exit_route`].
pub(super) fn exit_notice(rt: &Runtime, owner: &str, process_id: &str, text: &str) {
    let enabled = rt.inner.unattended.heartbeat_view().settings.enabled;
    match processes::exit_route(owner, enabled) {
        ExitRoute::Continue => continue_after_exit(rt, owner, text),
        ExitRoute::WakeHeartbeat => {
            rt.enqueue_system_event(owner, text, SystemEventKind::ExecFinished);
            tracing::info!(process_id, "the heartbeat's command ended: waking the heartbeat");
            rt.inner.unattended.request_wake(WakeReason::ExecEvent);
        }
        ExitRoute::Announce { queue } => {
            if queue {
                rt.enqueue_system_event(owner, text, SystemEventKind::ExecFinished);
            }
            processes::announce_exit(&rt.inner.base.emitter, process_id, text);
        }
    }
}

/// A conversation's background command ended: its notice is queued for the
/// conversation, and after the merge window its agent continues (or a turn already
/// running there takes the notice in).
fn continue_after_exit(rt: &Runtime, session_id: &str, text: &str) {
    rt.enqueue_system_event(session_id, text, SystemEventKind::ExecFinished);
    continue_after_merge(rt, session_id);
}

/// After the merge window, continues `session_id` with what its queue holds then.
fn continue_after_merge(rt: &Runtime, session_id: &str) {
    if !rt.inner.unattended.autonomy.start_merge(session_id) {
        return;
    }
    let this = rt.clone();
    let session_id = session_id.to_string();
    rt.inner.life.tasks.spawn(async move {
        tokio::time::sleep(continuation::MERGE_WINDOW).await;
        this.inner.unattended.autonomy.end_merge(&session_id);
        continue_now(&this, session_id);
    });
}

/// Starts a continuation in `session_id` if notices wait and its lane is free; a busy
/// lane takes them in at the running turn's next step, or right after it.
fn continue_now(rt: &Runtime, session_id: String) {
    let i = &rt.inner;
    if i.life.shutdown.is_cancelled() || i.conversations.system_events.peek(&session_id).is_empty() {
        return;
    }
    // Deleted meanwhile (or a job session retention removed): no turn may bring it back.
    if let Err(e) = i.conversations.meta.load(&session_id) {
        tracing::info!("not continuing {session_id}: {e}");
        let events = i.conversations.system_events.drain(&session_id);
        return continuation::announce_exits(&i.base.emitter, &session_id, &events);
    }
    if type_from_id(&session_id) == SessionType::Job {
        if i.conversations.lanes.lane(&session_id).lock().busy {
            return;
        }
        let this = rt.clone();
        i.life.tasks.spawn(async move {
            let i = &this.inner;
            continuation::continue_job(&i.conversations, &i.base, &i.unattended.autonomy, &this, &session_id).await
        });
        return;
    }
    let Some(lane) = lanes::take_for_continuation(&i.conversations, &i.life, &session_id) else {
        return;
    };
    activity_changed(rt);
    spawn_lane(rt, session_id, lane, Input::Continuation);
}

/// The continuations' runs start like every other: through [`run`].
#[async_trait::async_trait]
impl Runner for Runtime {
    async fn run(&self, req: RunRequest) -> RunResult {
        run(self, req).await
    }
}
