//! The protocol's ops, each handed to the part of the runtime that owns it.
//!
//! Must never: block the caller: each op answers by an event, from a spawned task when it
//! has to wait.

use vigil_protocol::{ErrorKind, Op};

use super::{mcp, processes, routines, Runtime};
use crate::session::{SessionError, SessionType, PRIMARY_SESSION};

impl Runtime {
    /// Takes one op; returns at once.
    pub fn submit(&self, op: Op) {
        match op {
            Op::UserMessage {
                text,
                session_id,
                attachments,
            } => {
                let session_id = session_id.unwrap_or_else(|| PRIMARY_SESSION.to_string());
                if attachments.is_empty() {
                    self.start_turn(session_id, text.into());
                } else {
                    self.send_with_attachments(session_id, text, attachments);
                }
            }
            Op::Interrupt { session_id } => {
                let session_id = session_id.unwrap_or_else(|| PRIMARY_SESSION.to_string());
                if let Some(lane) = self.lane_if_exists(&session_id) {
                    lane.lock().cancel.cancel();
                }
            }
            Op::CreateSession { title } => {
                let title = title
                    .filter(|t| !t.trim().is_empty())
                    .unwrap_or_else(|| "New conversation".into());
                let done = self
                    .inner
                    .conversations
                    .meta
                    .create(title.trim(), SessionType::Primary)
                    .map(|_| ());
                self.sessions_changed(done);
            }
            Op::RenameSession { session_id, title } => {
                let done = if title.trim().is_empty() {
                    Err(SessionError::InvalidTitle)
                } else {
                    self.inner
                        .conversations
                        .meta
                        .rename(&session_id, title.trim())
                        .map(|_| ())
                };
                self.sessions_changed(done);
            }
            Op::DeleteSession { session_id } => {
                let busy = self.is_busy(&session_id);
                let done = if busy {
                    Err(SessionError::Busy(session_id.clone()))
                } else {
                    self.inner.conversations.meta.delete(&session_id)
                };
                if done.is_ok() {
                    self.inner.conversations.lanes.remove(&session_id);
                }
                self.sessions_changed(done);
            }
            Op::Approval { id, decision } => {
                if !self.inner.agent.approvals.answer(&id, decision) {
                    self.report(
                        ErrorKind::InvalidOp,
                        format!("No approval request {id} is waiting (already answered or cancelled)."),
                    );
                }
            }
            Op::StartProcess { command, cwd } => self.process_op(processes::ProcessOp::Start { command, cwd }),
            Op::ProcessInput { process_id, data } => {
                self.process_op(processes::ProcessOp::Input { id: process_id, data })
            }
            Op::ProcessKill { process_id } => self.process_op(processes::ProcessOp::Kill { id: process_id }),
            Op::ProcessResize { process_id, cols, rows } => self.process_op(processes::ProcessOp::Resize {
                id: process_id,
                cols,
                rows,
            }),
            Op::Shutdown => self.inner.life.shutdown.cancel(),
            Op::Wake { reason } => self.request_wake(reason),
            Op::ListRoutines => self.routine_op(routines::RoutineOp::List),
            Op::AddRoutine { routine } => self.routine_op(routines::RoutineOp::Add(routine)),
            Op::UpdateRoutine { id, changes } => self.routine_op(routines::RoutineOp::Update(id, changes)),
            Op::RemoveRoutine { id, hard } => self.routine_op(routines::RoutineOp::Remove(id, hard.unwrap_or(false))),
            Op::RestoreRoutine { id } => self.routine_op(routines::RoutineOp::Restore(id)),
            Op::RunRoutine { id } => self.routine_op(routines::RoutineOp::Run(id)),
            Op::SetRoutineEnabled { id, enabled } => self.routine_op(routines::RoutineOp::Enable(id, enabled)),
            Op::RetryRoutineRun { id, run_id } => self.routine_op(routines::RoutineOp::Resolve(id, run_id, true)),
            Op::DismissRoutineRun { id, run_id } => self.routine_op(routines::RoutineOp::Resolve(id, run_id, false)),
            Op::ApproveRoutine { id } => self.approve_routine_op(&id),
            Op::TrustHeartbeatFile => self.routine_op(routines::RoutineOp::Trust),
            Op::Health => self.report_health(),
            Op::SearchHistory { query } => crate::history::wire::answer(
                self.inner.conversations.history.as_ref(),
                &self.inner.base.emitter,
                query,
            ),
            Op::ListMcpServers => self.mcp_op(mcp::McpOp::List),
            Op::AddMcpServers { json, secret } => self.mcp_op(mcp::McpOp::Add(json, secret)),
            Op::RemoveMcpServer { name } => self.mcp_op(mcp::McpOp::Remove(name)),
            Op::SetMcpServerTrusted { name, trusted } => self.mcp_op(mcp::McpOp::Trust(name, trusted)),
            Op::RestartMcpServer { name } => self.mcp_op(mcp::McpOp::Restart(name)),
            Op::WindowInput => self.window_input(),
            Op::Channels { op } => self.inner.away.channels.op(op),
            Op::SetContinuationLimit { session_id, limit } => {
                let done = self
                    .inner
                    .conversations
                    .meta
                    .update_atomic(&session_id, |m| {
                        m.continuation_limit = limit;
                        m.stopped_at_limit = false;
                    })
                    .map(|_| ());
                self.sessions_changed(done);
            }
        }
    }
}
