//! What happened while the user was away, for the "While you were away" card ([`AwaySummary`]).
//!
//! Owns two things: the [`Journal`], which watches the runtime's events on their way out
//! ([`Tap`]) and keeps what a routine's run log does not — turns Vigil ran on its own in a
//! conversation, heartbeat runs, approvals still waiting — and [`summarize`], which turns
//! that, the routines' run logs and the conversation titles into the card's lines for one
//! absence. When an absence begins and ends is [`crate::presence`]'s business.
//!
//! Must never: slow an event down (the tap takes one short `std` lock) or grow without a
//! bound ([`KEEP`] runs of each kind).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use vigil_protocol::{
    AwayKind, AwayLine, AwaySummary, AwayTarget, Event, EventEnvelope, HeartbeatStatus, MessageKind, RoutineRun,
    RunOutcome, Scope, Source, StopReason,
};

use crate::events::EventSink;
use crate::session::PRIMARY_SESSION;

/// Runs of each kind the journal keeps: more than a night away makes.
pub const KEEP: usize = 1000;

/// A quoted summary or error is cut to this many characters.
const QUOTE_CHARS: usize = 120;

/// A turn Vigil ran on its own in a conversation (a continuation).
#[derive(Debug, Clone, PartialEq)]
struct Continuation {
    session_id: String,
    run_id: String,
    /// The notice that started it, for a click to open the conversation there.
    message_ts: Option<i64>,
    started_at: i64,
    finished: Option<(StopReason, i64)>,
    /// The last error it reported.
    error: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
struct HeartbeatRun {
    at: i64,
    status: HeartbeatStatus,
    detail: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
struct Waiting {
    session_id: String,
    command: String,
    asked_at: i64,
}

#[derive(Default)]
struct Records {
    continuations: VecDeque<Continuation>,
    heartbeats: VecDeque<HeartbeatRun>,
    /// Approval id → what waits; removed when answered (or denied for want of an answer).
    waiting: BTreeMap<String, Waiting>,
}

/// What the runtime did that only its events tell. Cheap to clone.
#[derive(Clone, Default)]
pub struct Journal {
    /// `std` lock: held for one insert or one copy, never across an await.
    records: Arc<Mutex<Records>>,
}

impl Journal {
    fn records(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes note of one event on its way out.
    pub fn note(&self, e: &EventEnvelope) {
        let in_conversation = e.scope == Scope::Primary && e.session_id.is_some();
        match &e.event {
            // A continuation's notice is saved first, then its turn starts (`agent::run`).
            Event::MessageAppended { message } if in_conversation && message.kind == MessageKind::SystemEvent => {
                self.continuation(e, Some(message.ts));
            }
            Event::TurnStarted { .. } if in_conversation && e.source == Source::Background => {
                self.continuation(e, None);
            }
            Event::Error { message, .. } => {
                if let Some(c) = self
                    .records()
                    .continuations
                    .iter_mut()
                    .rev()
                    .find(|c| Some(&c.run_id) == e.run_id.as_ref())
                {
                    c.error = Some(message.clone());
                }
            }
            Event::TurnFinished { stop_reason, .. } if e.source == Source::Background => {
                if let Some(c) = self
                    .records()
                    .continuations
                    .iter_mut()
                    .rev()
                    .find(|c| Some(&c.run_id) == e.run_id.as_ref())
                {
                    c.finished = Some((*stop_reason, e.ts));
                }
            }
            Event::Heartbeat {
                status,
                detail,
                retrying: false,
                ..
            } if *status != HeartbeatStatus::Skipped => {
                push(
                    &mut self.records().heartbeats,
                    HeartbeatRun {
                        at: e.ts,
                        status: *status,
                        detail: detail.clone(),
                    },
                );
            }
            Event::ApprovalRequested {
                approval_id, command, ..
            } => {
                let waiting = Waiting {
                    session_id: e.session_id.clone().unwrap_or_else(|| PRIMARY_SESSION.into()),
                    command: command.clone(),
                    asked_at: e.ts,
                };
                self.records().waiting.insert(approval_id.clone(), waiting);
            }
            Event::ApprovalResolved { approval_id, .. } => {
                self.records().waiting.remove(approval_id);
            }
            _ => {}
        }
    }

    fn continuation(&self, e: &EventEnvelope, message_ts: Option<i64>) {
        let (Some(session_id), Some(run_id)) = (&e.session_id, &e.run_id) else {
            return;
        };
        let mut records = self.records();
        if let Some(c) = records.continuations.iter_mut().rev().find(|c| &c.run_id == run_id) {
            c.message_ts = c.message_ts.or(message_ts);
            return;
        }
        push(
            &mut records.continuations,
            Continuation {
                session_id: session_id.clone(),
                run_id: run_id.clone(),
                message_ts,
                started_at: e.ts,
                finished: None,
                error: None,
            },
        );
    }
}

fn push<T>(list: &mut VecDeque<T>, item: T) {
    if list.len() >= KEEP {
        list.pop_front();
    }
    list.push_back(item);
}

/// A sink that lets the journal see every event, then passes it on.
pub struct Tap {
    pub journal: Journal,
    pub inner: Arc<dyn EventSink>,
}

impl EventSink for Tap {
    fn emit(&self, event: EventEnvelope) {
        self.journal.note(&event);
        self.inner.emit(event);
    }
}

/// One routine and its run log.
pub struct RoutineRuns {
    pub id: String,
    pub title: String,
    pub runs: Vec<RoutineRun>,
}

/// The card for an absence from `since` to `back`; `None` when nothing happened and nothing
/// waits. `titles`: the conversations' titles by id.
pub fn summarize(
    since: i64,
    back: i64,
    journal: &Journal,
    routines: &[RoutineRuns],
    titles: &HashMap<String, String>,
) -> Option<AwaySummary> {
    let during = |t: i64| since <= t && t <= back;
    let mut lines = Vec::new();
    for r in routines {
        routine_lines(r, &during, &mut lines);
    }
    let records = journal.records();
    let title_of = |id: &str| match titles.get(id) {
        Some(t) => t.clone(),
        None if id.starts_with("heartbeat") => "Heartbeat".into(),
        None if id.starts_with("job_") => "A routine's job".into(),
        None => "A conversation".into(),
    };
    let mut by_session: BTreeMap<&str, Vec<&Continuation>> = BTreeMap::new();
    for c in records.continuations.iter().filter(|c| during(c.started_at)) {
        by_session.entry(&c.session_id).or_default().push(c);
    }
    for (session, runs) in by_session {
        let target = |c: &Continuation| AwayTarget::Conversation {
            session_id: session.to_string(),
            message_ts: c.message_ts,
            approval_id: None,
        };
        let (failed, ran): (Vec<&Continuation>, Vec<&Continuation>) = runs
            .into_iter()
            .partition(|c| matches!(c.finished, Some((StopReason::Error, _))));
        if let (Some(first), Some(last)) = (ran.first(), ran.last()) {
            lines.push(AwayLine {
                kind: AwayKind::Ran,
                title: title_of(session),
                text: format!("Vigil continued on its own{}", times(ran.len())),
                at: last.finished.map_or(last.started_at, |(_, at)| at),
                target: target(first),
            });
        }
        if let Some(last) = failed.last() {
            let why = last
                .error
                .as_deref()
                .map(|e| format!(": {}", quote(e)))
                .unwrap_or_default();
            lines.push(AwayLine {
                kind: AwayKind::Failed,
                title: title_of(session),
                text: format!("a turn Vigil ran on its own failed{}{why}", times(failed.len())),
                at: last.finished.map_or(last.started_at, |(_, at)| at),
                target: target(last),
            });
        }
    }
    let beats: Vec<&HeartbeatRun> = records.heartbeats.iter().filter(|h| during(h.at)).collect();
    let main = AwayTarget::Conversation {
        session_id: PRIMARY_SESSION.into(),
        message_ts: None,
        approval_id: None,
    };
    let (failed, ran): (Vec<&HeartbeatRun>, Vec<&HeartbeatRun>) =
        beats.into_iter().partition(|h| h.status == HeartbeatStatus::Failed);
    if let Some(last) = ran.last() {
        let sent = ran.iter().filter(|h| h.status == HeartbeatStatus::Sent).count();
        let told = match sent {
            0 => ", nothing to report".to_string(),
            1 => ", reported 1 thing".to_string(),
            n => format!(", reported {n} things"),
        };
        lines.push(AwayLine {
            kind: AwayKind::Ran,
            title: "Heartbeat".into(),
            text: format!("checked{}{told}", times(ran.len())),
            at: last.at,
            target: main.clone(),
        });
    }
    if let Some(last) = failed.last() {
        let why = last
            .detail
            .as_deref()
            .map(|d| format!(": {}", quote(d)))
            .unwrap_or_default();
        lines.push(AwayLine {
            kind: AwayKind::Failed,
            title: "Heartbeat".into(),
            text: format!("failed{}{why}", times(failed.len())),
            at: last.at,
            target: main,
        });
    }
    for (id, w) in &records.waiting {
        lines.push(AwayLine {
            kind: AwayKind::Waiting,
            title: title_of(&w.session_id),
            text: format!("waits for your approval: {}", quote(&w.command)),
            at: w.asked_at,
            target: AwayTarget::Conversation {
                session_id: w.session_id.clone(),
                message_ts: None,
                approval_id: Some(id.clone()),
            },
        });
    }
    drop(records);
    if lines.is_empty() {
        return None;
    }
    lines.sort_by(|a, b| a.kind.cmp(&b.kind).then(b.at.cmp(&a.at)));
    Some(AwaySummary {
        away_since: since,
        back_at: back,
        lines,
    })
}

/// One routine's lines: ran, failed, unknown, missed (each only when it happened).
fn routine_lines(r: &RoutineRuns, during: &dyn Fn(i64) -> bool, lines: &mut Vec<AwayLine>) {
    let runs: Vec<&RoutineRun> = r.runs.iter().filter(|run| during(run.finished_at)).collect();
    let of = |outcomes: &[RunOutcome]| -> Vec<&RoutineRun> {
        runs.iter()
            .copied()
            .filter(|run| outcomes.contains(&run.outcome))
            .collect()
    };
    let mut line = |kind, text: String, last: &RoutineRun| {
        lines.push(AwayLine {
            kind,
            title: r.title.clone(),
            text,
            at: last.finished_at,
            target: AwayTarget::Routine {
                routine_id: r.id.clone(),
            },
        })
    };
    let ran = of(&[RunOutcome::Ok, RunOutcome::Acknowledged]);
    if let Some(last) = ran.last() {
        let said = match (&last.summary, last.outcome) {
            (_, RunOutcome::Acknowledged) => ", nothing to report".to_string(),
            (Some(s), _) if !s.trim().is_empty() => format!(" — the last: {}", quote(s)),
            _ => String::new(),
        };
        line(AwayKind::Ran, format!("ran{}{said}", times(ran.len())), last);
    }
    let failed = of(&[RunOutcome::Failed, RunOutcome::TimedOut, RunOutcome::Interrupted]);
    if let Some(last) = failed.last() {
        let how = match last.outcome {
            RunOutcome::TimedOut => "timed out",
            RunOutcome::Interrupted => "was interrupted",
            _ => "failed",
        };
        let why = last
            .error
            .as_deref()
            .map(|e| format!(": {}", quote(e)))
            .unwrap_or_default();
        let count = if failed.len() > 1 {
            format!(" ({} runs went wrong)", failed.len())
        } else {
            String::new()
        };
        line(AwayKind::Failed, format!("{how}{why}{count}"), last);
    }
    for run in of(&[RunOutcome::Unknown]) {
        let after = run
            .side_effect
            .as_deref()
            .map(|s| format!(" after {}", quote(s)))
            .unwrap_or_default();
        line(
            AwayKind::Unknown,
            format!("was cut off{after}: whether it did its work is unknown — retry or dismiss it"),
            run,
        );
    }
    let missed = of(&[RunOutcome::Missed, RunOutcome::Skipped]);
    if let Some(last) = missed.last() {
        let due: u32 = missed.iter().map(|run| run.due_count.max(1)).sum();
        line(AwayKind::Missed, format!("missed{}", times(due as usize)), last);
    }
}

/// `""`, `" 2 times"`.
fn times(n: usize) -> String {
    if n == 1 {
        String::new()
    } else {
        format!(" {n} times")
    }
}

/// The first line of `text`, at most [`QUOTE_CHARS`] characters.
fn quote(text: &str) -> String {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    if first.chars().count() <= QUOTE_CHARS {
        return first.to_string();
    }
    let mut out: String = first.chars().take(QUOTE_CHARS).collect();
    out.push('…');
    out
}

#[cfg(test)]
#[path = "away_tests.rs"]
mod tests;
