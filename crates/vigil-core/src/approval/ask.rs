//! Deciding one request under the policy, and asking: the `approval_requested` card (and a
//! notification for a run nobody watches), the wait for the answer, its timeout or the
//! run's Stop, and "always" remembered after the answer.
//!
//! Must never: wait on a question nobody can answer, or leave a card open after its run ended.

use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use vigil_protocol::{ApprovalDecision, ApprovalKind, ApprovalPolicy, Event, NotificationKind, Source};

use super::rules::prefix_of;
use super::{Approvals, Request, Verdict};
use crate::events::Emitter;
use crate::shell::{self, Analysis};

impl Approvals {
    /// Decides; under `ask` with someone at the screen, asks and waits for the answer
    /// (or for `cancel`, which denies). A run nobody watches is denied at once.
    pub async fn check(&self, request: Request, emitter: &Emitter, now_ms: i64, cancel: &CancellationToken) -> Verdict {
        self.check_away(request, emitter, now_ms, cancel, None).await
    }

    /// [`Self::check`] for a run nobody watches that may still ask (`away: Some(timeout)`:
    /// a continuation, a routine, a woken heartbeat): the question goes to its conversation
    /// and to a notification with Allow once / Deny / Open, and waits up to `timeout`, then
    /// denies. `away: None` keeps deny-at-once for runs that must not leave questions (the
    /// heartbeat's interval polls).
    pub async fn check_away(
        &self,
        request: Request,
        emitter: &Emitter,
        now_ms: i64,
        cancel: &CancellationToken,
        away: Option<Duration>,
    ) -> Verdict {
        let policy = self.policy();
        let what = match request.kind {
            ApprovalKind::Exec if request.outside_sandbox => {
                format!("the command `{}` outside the sandbox", shell::visible(&request.subject))
            }
            ApprovalKind::Exec => format!("the command `{}`", shell::visible(&request.subject)),
            ApprovalKind::ReadOutside => format!("reading {} (outside the workspace)", request.subject),
            ApprovalKind::WriteOutside => format!("changing {} (outside the workspace)", request.subject),
            ApprovalKind::SteerFile => format!("changing {}, a file that steers every future run", request.subject),
            ApprovalKind::ProcessInput => {
                format!("typing into the running command `{}`", shell::visible(&request.subject))
            }
            ApprovalKind::McpCall => match &request.mcp {
                Some(m) => format!(
                    "the tool `{}` of the MCP server `{}`",
                    shell::visible(&m.tool),
                    shell::visible(&m.server)
                ),
                None => format!("the MCP tool `{}`", shell::visible(&request.subject)),
            },
        };
        // The command line is read once per decision: parsing it is most of what one costs.
        let line = match request.kind {
            ApprovalKind::Exec | ApprovalKind::ProcessInput => shell::analyze(&request.subject),
            _ => Analysis::Unprovable(String::new()),
        };
        let covered = self.covered(&request, &line);
        // Outside the sandbox with nobody at the screen (bubblewrap cannot start): no policy
        // lets that through on its own. The user is asked if the run may ask, else refused.
        let unwatched_outside = request.outside_sandbox && !request.interactive;
        match policy {
            // Full-auto never asks and never leaves the box: outside the sandbox (asked for,
            // or because bubblewrap cannot start) or a write outside the workspace and the
            // folders the user added is refused; the user changes the policy to allow it.
            ApprovalPolicy::FullAuto if request.kind == ApprovalKind::Exec && unwatched_outside => {
                return Self::nobody_to_ask(emitter, &what)
            }
            ApprovalPolicy::FullAuto if request.kind == ApprovalKind::Exec && request.outside_sandbox => {
                return Verdict::Denied(format!(
                    "Denied: {what}: full-auto runs commands only inside the sandbox. The user can switch the approval policy to `ask` in Settings and approve this one command."
                ))
            }
            ApprovalPolicy::FullAuto
                if request.kind == ApprovalKind::WriteOutside && !self.in_added_folder(&request.subject) =>
            {
                return Verdict::Denied(format!(
                    "Denied: {what}: full-auto changes files only in the workspace and the folders the user added in Settings → Approvals. The user can add the folder, or switch the approval policy to `ask` and approve this change."
                ))
            }
            ApprovalPolicy::Ask if unwatched_outside => {}
            ApprovalPolicy::ReadOnly | ApprovalPolicy::Allowlist if unwatched_outside => {
                return Verdict::Denied(format!(
                    "Denied: {what}: nobody is at the screen, and this approval policy never asks."
                ))
            }
            ApprovalPolicy::FullAuto => return Verdict::Allowed,
            ApprovalPolicy::ReadOnly if request.kind == ApprovalKind::McpCall => {
                return match request.mcp.as_ref().is_some_and(|m| m.read_only) {
                    true => Verdict::Allowed,
                    false => Verdict::Denied(format!(
                        "Denied: {what}: its server does not mark it read-only, and the approval policy is read-only; ask the user to change it in Settings."
                    )),
                };
            }
            ApprovalPolicy::ReadOnly if request.kind == ApprovalKind::Exec && request.outside_sandbox => {
                return Verdict::Denied(format!(
                    "Denied: {what}: under the read-only policy commands run only in the read-only sandbox; ask the user to change the policy in Settings."
                ))
            }
            ApprovalPolicy::ReadOnly if request.kind == ApprovalKind::Exec => {
                return match self.read_only_command(&request, &line) {
                    Ok(()) => Verdict::ReadOnly,
                    Err(why) => Verdict::Denied(format!(
                        "Denied: {what} ({why}). The approval policy is read-only; ask the user to change it in Settings."
                    )),
                };
            }
            ApprovalPolicy::ReadOnly
                if matches!(
                    request.kind,
                    ApprovalKind::WriteOutside | ApprovalKind::ProcessInput | ApprovalKind::SteerFile
                ) =>
            {
                return Verdict::Denied(format!(
                    "Denied: {what}. The approval policy is read-only; ask the user to change it in Settings."
                ))
            }
            // Covered by the read-only list alone (no remembered rule needed): read-only box.
            _ if covered.is_ok()
                && request.kind == ApprovalKind::Exec
                && !request.outside_sandbox
                && self.read_only_command(&request, &line).is_ok() =>
            {
                return Verdict::ReadOnly
            }
            _ if covered.is_ok() => return Verdict::Allowed,
            // Nobody can be asked, but this run started the process with a command the gate
            // let through: its own follow-up input goes on (an installer's "y", a REPL it opened).
            _ if request.kind == ApprovalKind::ProcessInput && request.started_here && !request.interactive => {
                return Verdict::Allowed
            }
            ApprovalPolicy::Allowlist => {
                let why = covered.err().unwrap_or_default();
                return Verdict::Denied(format!(
                    "Denied: {what} is not on the allowlist ({why}). The user can approve it with \"always\" when the policy is `ask`."
                ));
            }
            // Reading outside the workspace under read-only asks like any other policy.
            ApprovalPolicy::Ask | ApprovalPolicy::ReadOnly => {}
        }
        let timeout = match (request.interactive, away) {
            (true, _) => None,
            (false, Some(timeout)) => Some(timeout),
            (false, None) => return Self::nobody_to_ask(emitter, &what),
        };
        let (parts, unprovable) = self.card_parts(&request, &line);
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        {
            // Under the lock `stop_asking` takes: a question is either denied here or
            // waiting where it will deny it.
            let mut pending = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner());
            if self.inner.unanswerable.load(std::sync::atomic::Ordering::SeqCst) {
                drop(pending);
                return Self::nobody_to_ask(emitter, &what);
            }
            pending.insert(id.clone(), tx);
        }
        let expires_at = timeout.map(|t| now_ms.saturating_add(t.as_millis() as i64));
        emitter.emit(
            Source::Agent,
            Event::ApprovalRequested {
                approval_id: id.clone(),
                kind: request.kind,
                prefix: match request.outside_sandbox {
                    true => String::new(),
                    false => prefix_of(request.kind, &request.subject),
                },
                command: shell::visible(&request.subject),
                cwd: request.cwd.clone(),
                outside_sandbox: request.outside_sandbox,
                env: request.env.iter().map(|e| shell::visible(e)).collect(),
                parts,
                unprovable,
                exec_run: request.exec_run,
                mcp: request.mcp.as_ref().map(|m| vigil_protocol::McpCallCard {
                    server: shell::visible(&m.server),
                    tool: shell::visible(&m.tool),
                    arguments: shell::visible(&serde_json::to_string_pretty(&m.arguments).unwrap_or_default()),
                    read_only: m.read_only,
                }),
                expires_at,
            },
        );
        if timeout.is_some() {
            // Nobody is at the screen: the question also goes out as a notification whose
            // buttons answer it (Allow once, Deny; "always" is only on the card).
            emitter.emit(
                Source::System,
                Event::Notification {
                    kind: NotificationKind::Approval,
                    title: "Vigil needs your approval".into(),
                    body: format!("A task running on its own wants to run {what}."),
                    event_id: None,
                    process_id: None,
                    approval_id: Some(id.clone()),
                    target_session_id: emitter.session_id().map(str::to_string),
                    message_ts: None,
                },
            );
        }
        // From here the card is up: dropped unanswered (its tool call aborted when the run
        // stopped), it is resolved all the same, or it would ask for ever.
        let mut open = OpenQuestion {
            approvals: self,
            id: id.clone(),
            emitter,
            unattended: timeout.is_some(),
            resolved: false,
        };
        let unanswered = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let (decision, ended) = tokio::select! {
            d = rx => (d.unwrap_or(ApprovalDecision::Deny), None),
            _ = cancel.cancelled() => {
                self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                (ApprovalDecision::Deny, Some(Unanswered::RunEnded))
            }
            _ = unanswered => {
                self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                (ApprovalDecision::Deny, Some(Unanswered::TimedOut))
            }
        };
        open.resolve(decision, ended.is_some());
        match decision {
            ApprovalDecision::Approve => Verdict::Allowed,
            ApprovalDecision::Always if request.outside_sandbox => Verdict::Allowed,
            ApprovalDecision::Always => {
                if let Err(e) = self.remember(&request, now_ms) {
                    tracing::warn!("could not save the approval: {e}");
                }
                Verdict::Allowed
            }
            ApprovalDecision::Deny if ended == Some(Unanswered::RunEnded) => {
                Verdict::Denied(format!("Not run: {what} was still waiting for an answer when the run was stopped."))
            }
            ApprovalDecision::Deny if ended == Some(Unanswered::TimedOut) => Verdict::Denied(format!(
                "Denied: {what} needed the user's approval, and nobody answered within {} (they were asked in the conversation and by a notification). Go on without it, or leave the question for the user.",
                spoken_duration(timeout.unwrap_or_default())
            )),
            ApprovalDecision::Deny => Verdict::Denied(format!("The user denied {what}.")),
        }
    }

    /// Deny-at-once for a run that must not ask, with a notification saying so.
    fn nobody_to_ask(emitter: &Emitter, what: &str) -> Verdict {
        emitter.emit(
            Source::System,
            Event::notice(
                NotificationKind::Approval,
                "Vigil needs your approval",
                format!("A background task wanted to run {what}; it was denied because nobody was asked."),
            ),
        );
        Verdict::Denied(format!(
            "Denied: {what} needs the user's approval and this run has nobody to ask. Ask the user in the conversation instead."
        ))
    }

    /// From now on nobody answers (the headless runner's input ended): every question
    /// waiting is denied, and later ones are denied at once, so what was asked can finish.
    pub fn stop_asking(&self) {
        let waiting: Vec<_> = {
            let mut pending = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner());
            self.inner.unanswerable.store(true, std::sync::atomic::Ordering::SeqCst);
            pending.drain().collect()
        };
        for (_, tx) in waiting {
            let _ = tx.send(ApprovalDecision::Deny);
        }
    }

    /// Delivers the user's answer; false if nothing waits under `id` (already answered).
    pub fn answer(&self, id: &str, decision: ApprovalDecision) -> bool {
        let waiting = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        waiting.is_some_and(|tx| tx.send(decision).is_ok())
    }
}

/// A question on screen until [`Self::resolve`]d; dropped before that (its run stopped), it
/// leaves the pending answers and resolves its card as ended unanswered.
struct OpenQuestion<'a> {
    approvals: &'a Approvals,
    id: String,
    emitter: &'a Emitter,
    /// Asked by a run nobody watches.
    unattended: bool,
    resolved: bool,
}

impl OpenQuestion<'_> {
    /// Emits `approval_resolved`. `unanswered`: nobody answered (its time ran out, its run
    /// ended). Such a question from a run nobody watches expired; in the user's own turn it is
    /// their Stop, a denial.
    fn resolve(&mut self, decision: ApprovalDecision, unanswered: bool) {
        self.resolved = true;
        self.emitter.emit(
            Source::User,
            Event::ApprovalResolved {
                approval_id: self.id.clone(),
                decision,
                expired: unanswered && self.unattended,
            },
        );
    }
}

impl Drop for OpenQuestion<'_> {
    fn drop(&mut self) {
        if !self.resolved {
            let pending = &self.approvals.inner.pending;
            pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
            self.resolve(ApprovalDecision::Deny, true);
        }
    }
}

/// Why a question ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unanswered {
    /// Its own timeout passed.
    TimedOut,
    /// The run that asked was stopped first.
    RunEnded,
}

/// "1 h", "30 min", "45 s": how long an unattended question waited.
pub fn spoken_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s if s >= 1 => format!("{s} s"),
        _ => format!("{} ms", d.as_millis()),
    }
}
