//! Starting a run: the one place where a [`RunRequest`] becomes a turn. In order: the lane
//! (taken here for background runs; a conversation's is taken by the conversation), the
//! mailbox and notices a conversation takes in, the client, the approval gate and the
//! sandbox for who is watching, the turn, then the finish: what was taken in acknowledged or
//! given back, the commands of a run ended by its deadline killed, the lane freed, the tokens
//! charged to the budget, the reply found.
//!
//! Must never: leave a lane taken after a run, also one that panicked; charge the user's own
//! turns to the background budget; acknowledge mailbox events a failed turn never showed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::FutureExt as _;
use tokio_util::sync::CancellationToken;
use vigil_protocol::{ErrorKind, Event, EventEnvelope, Scope, Source, StopReason, Usage};

use super::lane::{Lane, Lanes};
use super::request::{last_reply, Attendance, RunKind, RunRequest, RunResult};
use super::Budget;
use crate::agent::{background_updates, AgentConfig, Turn, TurnExtras};
use crate::approval::Approvals;
use crate::clock::Clock;
use crate::events::{Emitter, EventSink};
use crate::provider::ModelClient;
use crate::session::{MetaStore, SessionStore, SessionType, PRIMARY_SESSION};
use crate::system_events::{self, SystemEvent, SystemEvents};
use crate::tools::ToolRegistry;
use crate::workspace::Workspace;

/// What a run is started with, lent by the runtime for the length of the run.
pub struct Context<'a> {
    pub store: &'a SessionStore,
    pub meta: &'a MetaStore,
    pub emitter: &'a Emitter,
    pub clock: &'a Arc<dyn Clock>,
    pub approvals: &'a Approvals,
    pub workspace: &'a Workspace,
    pub data_dir: &'a Path,
    pub notices: &'a SystemEvents,
    pub lanes: &'a Lanes,
    pub budget: &'a Budget,
    pub shutdown: &'a CancellationToken,
    /// The tools now (built-ins, `exec`/`process` once the registry runs, MCP's).
    pub tools: ToolRegistry,
    /// The configured client (`None`: no provider).
    pub client: Option<ModelClient>,
    pub config: AgentConfig,
    /// How long an unattended question waits.
    pub approval_timeout: Duration,
    /// The process registry, once it runs: what a run ended by its deadline started is killed.
    pub processes: Option<&'a crate::exec::RegistryHandle>,
    /// Told when a lane turns busy or free (the sleep inhibitor counts them).
    pub activity: &'a (dyn Fn() + Send + Sync),
}

/// Runs `req` to its end. See the module head for the order of things.
pub async fn run(ctx: &Context<'_>, req: RunRequest) -> RunResult {
    let scope = req.kind.scope();
    // A routine's job needs the model: it waits for tomorrow (or a higher budget) once
    // today's budget for background work is spent; its run says why.
    if matches!(req.kind, RunKind::Job { .. } | RunKind::Routine { .. }) && ctx.budget.spent() {
        return RunResult::failed(
            "budget: today's token budget for background work is spent; the routine did not run (it resumes tomorrow or when the budget is raised)",
        );
    }
    let lane = ctx.lanes.lane(&req.session_id);
    let cancel = if req.kind.in_conversation() {
        lane.lock().cancel.clone()
    } else {
        match lane.try_take(scope, ctx.shutdown, req.deadline.clone()) {
            Some(cancel) => cancel,
            None => {
                return RunResult {
                    locked: true,
                    ..RunResult::failed(format!("a turn already runs in {}", req.session_id))
                }
            }
        }
    };
    (ctx.activity)();
    let taken = if req.kind.in_conversation() {
        Some(take_context(ctx, &req.session_id).await)
    } else {
        None
    };
    let before = match req.kind {
        RunKind::User => 0,
        _ => ctx.store.load(&req.session_id).map(|l| l.messages.len()).unwrap_or(0),
    };
    let tap = Arc::new(Tap {
        inner: ctx.emitter.sink(),
        last: Mutex::default(),
    });
    let emitter = ctx
        .emitter
        .with_sink(tap.clone())
        .for_run(&req.session_id, scope, &req.run_id);
    let mut extras = req.extras;
    if let Some(taken) = &taken {
        extras.context_sections.splice(0..0, taken.sections.iter().cloned());
    }
    let client = match (ctx.client.clone(), req.model) {
        (Some(c), Some(model)) => {
            let mut config = c.config().clone();
            config.model = model;
            ModelClient::new(config, ctx.clock.clone()).ok()
        }
        (c, None) => c,
        (None, Some(_)) => None,
    };
    let turn = turn(
        ctx,
        &req.session_id,
        lane.as_ref(),
        client,
        emitter.clone(),
        cancel.clone(),
        extras,
        req.attendance,
    );
    let started = turn.started.clone();
    // A panic ends the run as an error; the lane must be freed all the same, or every later
    // run in it would fail as "busy".
    let stop_reason = match std::panic::AssertUnwindSafe(turn.run(req.input)).catch_unwind().await {
        Ok(stop) => stop,
        Err(panic) => {
            let why = crate::tools::panic_text(panic.as_ref());
            tracing::error!(session = req.session_id, "a run panicked: {why}");
            panicked(&emitter, &why);
            StopReason::Error
        }
    };
    if req.deadline.as_ref().is_some_and(|d| d.is_cancelled()) && !ctx.shutdown.is_cancelled() {
        kill_started(ctx, &req.session_id, &started).await;
    }
    if let Some(taken) = taken {
        finish_context(ctx, &req.session_id, stop_reason, taken).await;
    }
    if matches!(req.kind, RunKind::Routine { .. }) {
        // The user's messages sent too late to steer it start their own turn after it
        // (the runtime's), never dropped.
        lane.free();
        (ctx.activity)();
    } else if !req.kind.in_conversation() {
        lane.release();
        (ctx.activity)();
    }
    let seen = std::mem::take(&mut *tap.last.lock().unwrap_or_else(|e| e.into_inner()));
    if let (Some(used), true) = (seen.usage, req.kind.is_background()) {
        ctx.budget.charge(used);
    }
    let reply = match req.kind {
        RunKind::User => None,
        _ => ctx
            .store
            .load(&req.session_id)
            .ok()
            .and_then(|l| last_reply(l.messages, before)),
    };
    RunResult {
        stop_reason,
        error: seen.error,
        error_kind: seen.error_kind,
        locked: false,
        usage: seen.usage,
        reply,
    }
}

/// A bug ended a run by panicking: the user is told (and the window stops showing it as
/// running); every message it saved is on disk, since each is appended as it ends.
pub fn panicked(emitter: &Emitter, why: &str) {
    emitter.emit(
        Source::System,
        Event::Error {
            kind: ErrorKind::Internal,
            message: format!(
                "Vigil hit an internal error and stopped this reply ({why}). What was said so far is kept; send your message again to carry on."
            ),
        },
    );
    emitter.emit(
        Source::Agent,
        Event::TurnFinished {
            stop_reason: StopReason::Error,
            usage: Default::default(),
            detail: None,
        },
    );
}

/// A turn of `session_id` with the runtime's stores, tools, workspace and approval policy;
/// `attendance` says who can answer its questions.
#[allow(clippy::too_many_arguments)]
fn turn<'a>(
    ctx: &'a Context<'_>,
    session_id: &'a str,
    lane: &'a Lane,
    client: Option<ModelClient>,
    emitter: Emitter,
    cancel: CancellationToken,
    extras: TurnExtras,
    attendance: Attendance,
) -> Turn<'a> {
    let interactive = attendance == Attendance::User;
    // The heartbeat's and the jobs' sessions have no place in the window: their questions go
    // to the main conversation, which the routines and the heartbeat report to.
    let asks_in = match crate::session::meta::type_from_id(session_id) {
        SessionType::Primary => emitter.clone(),
        _ => emitter.for_session(PRIMARY_SESSION, Scope::Primary),
    };
    let gate = crate::approval::TurnGate {
        approvals: ctx.approvals.clone(),
        workspace: ctx.workspace.root().to_path_buf(),
        emitter: asks_in,
        cancel: cancel.clone(),
        interactive,
        away: (attendance == Attendance::Away).then_some(ctx.approval_timeout),
        now_ms: ctx.clock.now_ms(),
    };
    Turn {
        session_id,
        // Whose processes a run starts and sees: its session's. A conversation's exits
        // continue that conversation; the heartbeat's stay with the heartbeat.
        process_owner: session_id,
        store: ctx.store,
        client,
        tools: ctx.tools.clone(),
        gate: Some(Arc::new(gate)),
        data_dir: Some(ctx.data_dir.to_path_buf()),
        started: Default::default(),
        sandbox: Some(crate::sandbox::TurnSandbox {
            sandbox: ctx.approvals.sandbox(),
            settings: ctx.approvals.sandbox_settings().for_routine(extras.routine.as_deref()),
            data_dir: ctx.data_dir.to_path_buf(),
            attended: interactive,
            home: std::env::var_os("HOME").map(PathBuf::from),
        }),
        workspace: ctx.workspace.clone(),
        emitter,
        clock: ctx.clock.clone(),
        cancel,
        steer: lane,
        config: ctx.config.clone(),
        extras,
    }
}

/// What a conversation's turn took in before it ran, to acknowledge or give back after.
struct Taken {
    mailbox_ids: Vec<String>,
    events: Vec<SystemEvent>,
    sections: Vec<String>,
}

/// Claims the mailbox's updates for this turn (seed 003 §4.5 `prepare_drain`: left in place,
/// but not shown to another process's turn meanwhile) and takes the queued system events.
async fn take_context(ctx: &Context<'_>, session_id: &str) -> Taken {
    let mailbox = match ctx.meta.prepare_drain(session_id).await {
        Ok(mailbox) => mailbox,
        Err(e) => {
            tracing::warn!("could not read the mailbox of {session_id}: {e}");
            vec![]
        }
    };
    let events = ctx.notices.drain(session_id);
    let sections = background_updates(&mailbox)
        .into_iter()
        .chain(system_events::context_section(&events))
        .collect();
    Taken {
        mailbox_ids: mailbox.into_iter().map(|e| e.event_id).collect(),
        events,
        sections,
    }
}

/// After the turn: success acknowledges exactly the mailbox events it was shown (seed 003
/// §4.5 `ack_drain`); failure leaves them and puts the system events back.
async fn finish_context(ctx: &Context<'_>, session_id: &str, stop: StopReason, taken: Taken) {
    let succeeded = !matches!(stop, StopReason::Error | StopReason::Cancelled);
    if !succeeded {
        ctx.notices.restore(session_id, taken.events);
    }
    let updated = if succeeded && !taken.mailbox_ids.is_empty() {
        ctx.meta.ack_drain(session_id, &taken.mailbox_ids).await.map(|_| true)
    } else if !taken.mailbox_ids.is_empty() {
        ctx.meta
            .release_drain(session_id, &taken.mailbox_ids)
            .await
            .map(|_| false)
    } else {
        ctx.meta.update_atomic_async(session_id, |_| ()).await.map(|_| false)
    };
    match updated {
        Ok(true) => ctx.emitter.for_session(session_id, Scope::Primary).emit(
            Source::System,
            Event::BackgroundUpdatesRead {
                event_ids: taken.mailbox_ids,
            },
        ),
        Ok(false) => {}
        Err(e) => tracing::warn!("could not update the metadata of {session_id}: {e}"),
    }
}

/// Kills what a run ended by its deadline started and left running. Quietly: the run that
/// would hear of it is over, and its record says it was ended.
async fn kill_started(ctx: &Context<'_>, session_id: &str, started: &crate::tools::StartedHere) {
    let Some(registry) = ctx.processes else { return };
    let ids: Vec<String> = started
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect();
    let owner = session_id;
    for id in ids {
        if let Err(e) = registry.kill(owner, &id).await {
            tracing::warn!(
                session = session_id,
                "could not stop process {id} of a run past its deadline: {e}"
            );
        }
    }
}

/// What the run's events said: its last error and its tokens.
#[derive(Default)]
struct Seen {
    error: Option<String>,
    error_kind: Option<ErrorKind>,
    usage: Option<Usage>,
}

/// Forwards every event and remembers what the result reports.
struct Tap {
    inner: Arc<dyn EventSink>,
    /// `std` lock: set from inside `emit`, read after the turn.
    last: Mutex<Seen>,
}

impl EventSink for Tap {
    fn emit(&self, event: EventEnvelope) {
        match &event.event {
            Event::Error { message, kind } => {
                let mut seen = self.last.lock().unwrap_or_else(|e| e.into_inner());
                (seen.error, seen.error_kind) = (Some(message.clone()), Some(*kind));
            }
            Event::TurnFinished { usage, .. } => {
                self.last.lock().unwrap_or_else(|e| e.into_inner()).usage = Some(*usage);
            }
            _ => {}
        }
        self.inner.emit(event);
    }
}
