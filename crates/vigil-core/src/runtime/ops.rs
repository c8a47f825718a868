//! The protocol's ops, each handed to the part of the runtime that owns it.
//!
//! Must never: block the caller: each op answers by an event, from a spawned task when it
//! has to wait.

use vigil_protocol::{ErrorKind, Op};

use super::lanes::sessions_changed;
use super::{mcp, processes, routines, turns, watching, Runtime};
use crate::session::{SessionError, SessionType, PRIMARY_SESSION};

/// Takes one op for `rt` ([`Runtime::submit`]); returns at once. Each arm picks the owner
/// of the op and hands it over.
pub(super) fn submit(rt: &Runtime, op: Op) {
    let i = &rt.inner;
    let changed = |done| sessions_changed(&i.conversations, &i.base, done);
    match op {
        Op::UserMessage {
            text,
            session_id,
            attachments,
        } => {
            let session_id = session_id.unwrap_or_else(|| PRIMARY_SESSION.to_string());
            if attachments.is_empty() {
                turns::start_turn(rt, session_id, text.into());
            } else {
                turns::send_with_attachments(rt, session_id, text, attachments);
            }
        }
        Op::Interrupt { session_id } => {
            let session_id = session_id.unwrap_or_else(|| PRIMARY_SESSION.to_string());
            if let Some(lane) = i.conversations.lanes.get(&session_id) {
                lane.lock().cancel.cancel();
            }
        }
        Op::CreateSession { title } => {
            let title = title
                .filter(|t| !t.trim().is_empty())
                .unwrap_or_else(|| "New conversation".into());
            let done = i
                .conversations
                .meta
                .create(title.trim(), SessionType::Primary)
                .map(|_| ());
            changed(done);
        }
        Op::RenameSession { session_id, title } => {
            let done = if title.trim().is_empty() {
                Err(SessionError::InvalidTitle)
            } else {
                i.conversations.meta.rename(&session_id, title.trim()).map(|_| ())
            };
            changed(done);
        }
        Op::DeleteSession { session_id } => {
            let busy = i.conversations.lanes.is_busy(&session_id);
            let done = if busy {
                Err(SessionError::Busy(session_id.clone()))
            } else {
                i.conversations.meta.delete(&session_id)
            };
            if done.is_ok() {
                i.conversations.lanes.remove(&session_id);
            }
            changed(done);
        }
        Op::Approval { id, decision } => {
            if !i.agent.approvals.answer(&id, decision) {
                i.base.report(
                    ErrorKind::InvalidOp,
                    format!("No approval request {id} is waiting (already answered or cancelled)."),
                );
            }
        }
        Op::StartProcess { command, cwd } => process_op(rt, processes::ProcessOp::Start { command, cwd }),
        Op::ProcessInput { process_id, data } => process_op(rt, processes::ProcessOp::Input { id: process_id, data }),
        Op::ProcessKill { process_id } => process_op(rt, processes::ProcessOp::Kill { id: process_id }),
        Op::ProcessResize { process_id, cols, rows } => process_op(
            rt,
            processes::ProcessOp::Resize {
                id: process_id,
                cols,
                rows,
            },
        ),
        Op::Shutdown => i.life.shutdown.cancel(),
        Op::Wake { reason } => i.unattended.request_wake(reason),
        Op::ListRoutines => routine_op(rt, routines::RoutineOp::List),
        Op::AddRoutine { routine } => routine_op(rt, routines::RoutineOp::Add(routine)),
        Op::UpdateRoutine { id, changes } => routine_op(rt, routines::RoutineOp::Update(id, changes)),
        Op::RemoveRoutine { id, hard } => routine_op(rt, routines::RoutineOp::Remove(id, hard.unwrap_or(false))),
        Op::RestoreRoutine { id } => routine_op(rt, routines::RoutineOp::Restore(id)),
        Op::RunRoutine { id } => routine_op(rt, routines::RoutineOp::Run(id)),
        Op::SetRoutineEnabled { id, enabled } => routine_op(rt, routines::RoutineOp::Enable(id, enabled)),
        Op::RetryRoutineRun { id, run_id } => routine_op(rt, routines::RoutineOp::Resolve(id, run_id, true)),
        Op::DismissRoutineRun { id, run_id } => routine_op(rt, routines::RoutineOp::Resolve(id, run_id, false)),
        Op::TrustHeartbeatFile => routine_op(rt, routines::RoutineOp::Trust),
        Op::ApproveRoutine { id } => watching::approve_op(&i.unattended.watch, &i.unattended.routines, &i.base, &id),
        Op::Health => rt.report_health(),
        Op::SearchHistory { query } => {
            crate::history::wire::answer(i.conversations.history.as_ref(), &i.base.emitter, query)
        }
        Op::ListMcpServers => mcp_op(rt, mcp::McpOp::List),
        Op::AddMcpServers { json, secret } => mcp_op(rt, mcp::McpOp::Add(json, secret)),
        Op::RemoveMcpServer { name } => mcp_op(rt, mcp::McpOp::Remove(name)),
        Op::SetMcpServerTrusted { name, trusted } => mcp_op(rt, mcp::McpOp::Trust(name, trusted)),
        Op::RestartMcpServer { name } => mcp_op(rt, mcp::McpOp::Restart(name)),
        Op::WindowInput => i.away.window_input(),
        Op::Channels { op } => i.away.channels.op(op),
        Op::SetContinuationLimit { session_id, limit } => {
            let done = i
                .conversations
                .meta
                .update_atomic(&session_id, |m| {
                    m.continuation_limit = limit;
                    m.stopped_at_limit = false;
                })
                .map(|_| ());
            changed(done);
        }
    }
}

fn process_op(rt: &Runtime, op: processes::ProcessOp) {
    let i = &rt.inner;
    i.processes.op(&i.base, &i.life, i.agent.workspace.root(), op);
}

fn routine_op(rt: &Runtime, op: routines::RoutineOp) {
    let i = &rt.inner;
    routines::op(&i.unattended.routines, &i.base, &i.life, op);
}

fn mcp_op(rt: &Runtime, op: mcp::McpOp) {
    let i = &rt.inner;
    mcp::op(&i.mcp, &i.base, &i.life, op);
}
