//! The agent's routine tools (seed 003 §8.2): `routine_add`, `routine_list`,
//! `routine_update`, `routine_remove`, and `routine_restore`, the pane's "restore from the
//! snapshot" for a corrupted task block. While the block is corrupted the last good routines
//! keep running and every write through these tools repairs it (the last good routines plus
//! the change, the broken file kept as `HEARTBEAT.md.corrupt`); `routine_restore` repairs it
//! without a change. A bad schedule or zone, a duplicate, or
//! the soft limit comes back as a tool error the model can correct. A routine added in a run
//! nobody watches (the heartbeat, a routine's job) is the agent's own idea:
//! `source: heartbeat_reflect`, announced once; the session type in [`ToolContext`] says
//! which run it is.
//!
//! Must never: bypass the validation of [`super::edit`].

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use vigil_protocol::{CatchUp, ExecutionMode, RoutineDraft, RoutineSource, WakeMode};

use super::model::parse_iso;
use super::scheduler::Scheduler;
use super::view::routine_view;
use crate::provider::ToolSpec;
use crate::session::SessionType;
use crate::tools::{parse_args, Tool, ToolContext, ToolOutput, ToolRegistry};

/// Registers the five routine tools over `scheduler`.
pub fn register(registry: &mut ToolRegistry, scheduler: &Scheduler) {
    for kind in [Kind::Add, Kind::List, Kind::Update, Kind::Remove, Kind::Restore] {
        registry.register(Arc::new(RoutineTool {
            kind,
            scheduler: scheduler.clone(),
        }));
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Add,
    List,
    Update,
    Remove,
    Restore,
}

/// Who made a routine, as the model reads it in `routine_list`.
fn made_by(source: RoutineSource) -> &'static str {
    match source {
        RoutineSource::Manual => "made by the user",
        RoutineSource::Chat => "made by the user, asked in a conversation",
        RoutineSource::HeartbeatReflect => "made by Vigil (you) on your own",
    }
}

fn catch_up_word(c: CatchUp) -> &'static str {
    match c {
        CatchUp::Once => "once",
        CatchUp::Skip => "skip",
        CatchUp::All => "all",
    }
}

/// What the agent should tell the user about a routine with a check or URL.
fn approval_note(r: &super::Routine) -> String {
    let mut note = String::new();
    if r.trigger.is_some() {
        note.push_str(&format!(" — {}", crate::watch::describe_trigger(r)));
    }
    if crate::watch::approval::needs_approval(r) {
        note.push_str(
            " — it waits for the user's approval of its check or URL in Routines (the card shows what runs, how \
             often, with what access); tell them",
        );
    }
    note
}

/// The source of a routine the agent adds in a session of `session_type`.
fn source_for(session_type: SessionType) -> RoutineSource {
    match session_type {
        SessionType::Primary => RoutineSource::Chat,
        SessionType::Heartbeat | SessionType::Job => RoutineSource::HeartbeatReflect,
    }
}

struct RoutineTool {
    kind: Kind,
    scheduler: Scheduler,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Fields {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    schedule: Option<String>,
    #[serde(default)]
    next_run_at: Option<String>,
    #[serde(default)]
    timezone: Option<String>,
    #[serde(default)]
    execution_mode: Option<ExecutionMode>,
    #[serde(default)]
    wake_mode: Option<WakeMode>,
    #[serde(default)]
    catch_up: Option<CatchUp>,
    #[serde(default)]
    timeout_seconds: Option<u32>,
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    trigger: Option<vigil_protocol::Trigger>,
    #[serde(default)]
    check: Option<vigil_protocol::Check>,
    #[serde(default)]
    action: Option<vigil_protocol::Action>,
    #[serde(default)]
    allow_duplicate: Option<bool>,
    #[serde(default)]
    include_disabled: Option<bool>,
    #[serde(default)]
    hard: Option<bool>,
}

impl Fields {
    fn draft(&self) -> Result<RoutineDraft, ToolOutput> {
        let next_run_at = match self.next_run_at.as_deref().filter(|s| !s.trim().is_empty()) {
            Some(s) => Some(parse_iso(s).map_err(|e| ToolOutput::error(format!("`next_run_at`: {e}")))?),
            None => None,
        };
        Ok(RoutineDraft {
            title: self.title.clone(),
            description: self.description.clone(),
            schedule: self.schedule.clone(),
            next_run_at,
            timezone: self.timezone.clone(),
            execution_mode: self.execution_mode,
            wake_mode: self.wake_mode,
            timeout_seconds: self.timeout_seconds,
            max_retry: None,
            enabled: self.enabled,
            kind: self.kind.clone(),
            catch_up: self.catch_up,
            trigger: self.trigger.clone(),
            check: self.check.clone(),
            action: self.action,
            allow_duplicate: self.allow_duplicate.unwrap_or(false),
            conversation_id: None,
        })
    }
}

fn props(kind: Kind) -> serde_json::Value {
    let mut p = json!({
        "title": {"type": "string", "description": "Short name, e.g. \"Drink water\"."},
        "description": {"type": "string", "description": "What to do each time, as an instruction to yourself."},
        "schedule": {"type": "string", "description": "A 5-field cron expression in `timezone` (\"0 9 * * 1-5\" = weekdays 09:00; weekday 0 = Sunday) or an interval (\"30m\", \"2h\", \"1d\"). Omit for a one-time routine."},
        "next_run_at": {"type": "string", "description": "ISO-8601 time with offset: when a one-time routine runs (or a recurring one first runs)."},
        "timezone": {"type": "string", "description": "IANA zone the schedule is read in, e.g. \"Europe/Berlin\". Default: the user's zone."},
        "execution_mode": {"type": "string", "enum": ["inline", "isolated"], "description": "inline: light, runs inside the heartbeat (reminders, quick checks); for a routine with a trigger, each fire is a turn in this conversation. isolated: its own session with tools (fetching, multi-step work). Default: inferred (isolated for a routine with a trigger)."},
        "wake_mode": {"type": "string", "enum": ["now", "next_heartbeat"], "description": "For inline routines: now (default) wakes the heartbeat when due; next_heartbeat waits for the next regular heartbeat and rides along (fewer model calls, less punctual: fine for checks, not for reminders at a set time)."},
        "catch_up": {"type": "string", "enum": ["once", "skip", "all"], "description": "When its time passed while the computer slept or Vigil was not running: once (default) runs it once if at most a day late; skip waits for the next time (for things that only make sense on time); all runs it once, told how many times it missed (for digests that should cover every missed day)."},
        "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Longest a run may take."},
        "kind": {"type": "string", "enum": ["time_reminder"], "description": "time_reminder: a plain reminder delivered without calling the model."},
        "trigger": crate::watch::shape::trigger_schema(),
        "check": {"type": "object", "description": "A command run without the model in a read-only sandbox (nothing writable, no network) each time the routine is woken; the routine acts only when its condition holds, with the output as evidence. Costs nothing while quiet. The user approves the command once before it runs.", "properties": {"command": {"type": "string", "description": "e.g. \"df --output=pcent / | tail -1\""}, "when": {"type": "string", "description": "\"nonzero\" (exit code not 0, the default), \"changed\" (output differs from the last check), or a comparison of the first number in the output: \"> 80\", \">= 1\", \"< 10\", \"== 0\"."}}, "required": ["command"], "additionalProperties": false},
        "action": {"type": "string", "enum": ["agent", "notify"], "description": "agent (default): you run with the evidence. notify: the user gets a notification with the evidence, no model call."}
    });
    match kind {
        Kind::Add => {
            p["allow_duplicate"] = json!({"type": "boolean", "description": "Add even if a similar routine exists."});
        }
        Kind::Update => {
            p["id"] = json!({"type": "string", "description": "The routine's id (from routine_list)."});
            p["enabled"] = json!({"type": "boolean", "description": "false pauses, true resumes."});
        }
        Kind::List => {
            return json!({"include_disabled": {"type": "boolean", "description": "Also list paused, finished, failed and removed routines."}})
        }
        Kind::Restore => return json!({}),
        Kind::Remove => {
            return json!({
                "id": {"type": "string", "description": "The routine's id (from routine_list)."},
                "hard": {"type": "boolean", "description": "Delete it and its run history for good. Default false: it stops and the user can restore it."}
            })
        }
    }
    p
}

#[async_trait::async_trait]
impl Tool for RoutineTool {
    fn changes_things(&self, _input: &serde_json::Value) -> bool {
        !matches!(self.kind, Kind::List)
    }

    fn spec(&self) -> ToolSpec {
        let (name, description, required) = match self.kind {
            Kind::Add => (
                "routine_add",
                "Register a routine: something to do on a schedule (cron or interval), once at a time, or when a \
                 trigger fires (a file changes, an output line, a URL, a webhook), optionally only when a check \
                 command's condition holds (no model call while quiet). Check \
                 routine_list first to avoid duplicates. A new routine starts at its next scheduled time.",
                vec!["title"],
            ),
            Kind::List => (
                "routine_list",
                "List the routines with their schedules, next runs and states.",
                vec![],
            ),
            Kind::Update => (
                "routine_update",
                "Change a routine: any of its fields; `enabled: false` pauses it.",
                vec!["id"],
            ),
            Kind::Remove => (
                "routine_remove",
                "Remove a routine: it stops running and moves to the user's removed routines, where they can \
                 restore it. Pass hard: true only when the user asked to delete it for good.",
                vec!["id"],
            ),
            Kind::Restore => (
                "routine_restore",
                "Only when the task block in HEARTBEAT.md is corrupted (routine_list says so): write the last good \
                 routines (the ones still running) back as a valid block; the broken file is kept as \
                 HEARTBEAT.md.corrupt. Any other routine change repairs it the same way. Tell the user first, unless \
                 they asked for it.",
                vec![],
            ),
        };
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: json!({
                "type": "object",
                "properties": props(self.kind),
                "required": required,
                "additionalProperties": false
            }),
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let f: Fields = match parse_args(&self.spec(), input) {
            Ok(f) => f,
            Err(out) => return out,
        };
        let s = &self.scheduler;
        let zone = s.config().default_zone.clone();
        let now = s.deps().clock.now_ms();
        let line = |r: &super::Routine| {
            let v = routine_view(r, &zone, now);
            let next = v
                .next_run_at
                .map(super::model::iso_string)
                .unwrap_or_else(|| "none".into());
            format!(
                "{} — \"{}\": {} ({:?}, {:?}, next run {next})",
                v.id, v.title, v.schedule_description, v.execution_mode, v.state
            )
        };
        match self.kind {
            Kind::Add => {
                let mut draft = match f.draft() {
                    Ok(d) => d,
                    Err(out) => return out,
                };
                // Made in a conversation: its inline runs are turns there. Made in a run
                // nobody watches (the heartbeat, a job): the main conversation.
                draft.conversation_id = (ctx.session_type == SessionType::Primary).then(|| ctx.owner.clone());
                if let Err(out) = own_process("add", s, draft.trigger.as_ref(), draft.conversation_id.as_deref()).await
                {
                    return out;
                }
                if ctx.suggest_routines {
                    return match s.suggest(draft).await {
                        Ok(r) => ToolOutput::ok(format!(
                            "Suggested routine {} — it is off until the user turns it on under Routines.",
                            line(&r)
                        )),
                        Err(e) => refused("suggest", e),
                    };
                }
                // Not `ctx.owner`: a heartbeat call's owner is the conversation's.
                let source = source_for(ctx.session_type);
                match s.create(draft, source, true).await {
                    Ok((r, _)) => ToolOutput::ok(format!("Added routine {}{}", line(&r), approval_note(&r))),
                    Err(e) => refused("add", e),
                }
            }
            Kind::List => {
                let view = s.view();
                let all = f.include_disabled.unwrap_or(false);
                let mut lines: Vec<String> = view
                    .routines
                    .iter()
                    .filter(|v| all || (v.enabled && v.removed_at.is_none()) || v.problem.is_some())
                    .map(|v| {
                        let next = v
                            .next_run_at
                            .map(super::model::iso_string)
                            .unwrap_or_else(|| "none".into());
                        let mut l = format!(
                            "{} — \"{}\": {} ({:?}, {:?}, next run {next}) — {}",
                            v.id,
                            v.title,
                            v.schedule_description,
                            v.execution_mode,
                            v.state,
                            made_by(v.source)
                        );
                        if let Some(p) = v.problem.as_ref().or(v.error_message.as_ref()) {
                            l.push_str(&format!(" — problem: {p}"));
                        }
                        if v.catch_up != CatchUp::Once {
                            l.push_str(&format!(" — catch-up: {}", catch_up_word(v.catch_up)));
                        }
                        if v.unknown_run.is_some() {
                            l.push_str(" — its last run was cut off after it changed something; the user decides whether to retry it");
                        }
                        if v.suggested {
                            l.push_str(" — suggested by you, not turned on by the user yet");
                        }
                        if let Some(at) = v.removed_at {
                            l.push_str(&format!(" — removed {}", super::model::iso_string(at)));
                        }
                        l
                    })
                    .collect();
                if let Some(e) = view.error {
                    let what_now = if view.routines.is_empty() {
                        "There is no good copy to run or repair from: the user has to fix the JSON."
                    } else {
                        "The routines listed are the last good version and keep running. A change with \
                         routine_add, routine_update or routine_remove repairs the block from them plus the change; \
                         routine_restore repairs it without a change."
                    };
                    lines.insert(
                        0,
                        format!("The task block in HEARTBEAT.md is corrupted: {e}. {what_now}"),
                    );
                }
                if lines.is_empty() {
                    lines.push("No routines.".into());
                }
                ToolOutput::ok(lines.join("\n"))
            }
            Kind::Update => {
                let Some(id) = f.id.clone() else {
                    return ToolOutput::error("`id` is required; use routine_list to find it.");
                };
                let draft = match f.draft() {
                    Ok(d) => d,
                    Err(out) => return out,
                };
                let conversation = s.deps().store.read().ok().and_then(|state| {
                    let routines = state.routines();
                    let r = routines
                        .entries()
                        .iter()
                        .find_map(|e| e.routine.as_ref().ok().filter(|r| r.id == id));
                    r.and_then(|r| r.conversation.clone())
                });
                if let Err(out) = own_process("update", s, draft.trigger.as_ref(), conversation.as_deref()).await {
                    return out;
                }
                match s.update_routine(&id, draft).await {
                    Ok(r) => ToolOutput::ok(format!("Updated routine {}{}", line(&r), approval_note(&r))),
                    Err(e) => refused("update", e),
                }
            }
            Kind::Remove => {
                let Some(id) = f.id.clone() else {
                    return ToolOutput::error("`id` is required; use routine_list to find it.");
                };
                let hard = f.hard.unwrap_or(false);
                match s.remove(&id, hard).await {
                    Ok(_) if hard => ToolOutput::ok(format!("Deleted routine {id} and its run history for good.")),
                    Ok(_) => ToolOutput::ok(format!(
                        "Removed routine {id}: it will not run again; the user can restore it from the Routines pane."
                    )),
                    Err(e) => refused("remove", e),
                }
            }
            Kind::Restore => restore(s).await,
        }
    }
}

/// An output trigger that names a process by id may follow only a running process of the
/// routine's own conversation (`None`: the main one): another conversation's process, or
/// one that ended, is refused with why.
async fn own_process(
    what: &str,
    s: &Scheduler,
    trigger: Option<&vigil_protocol::Trigger>,
    conversation: Option<&str>,
) -> Result<(), ToolOutput> {
    let Some(vigil_protocol::Trigger::Output { process, .. }) = trigger else {
        return Ok(());
    };
    let process = process.trim();
    if !crate::watch::output::is_process_id(process) {
        return Ok(());
    }
    let owner = conversation.unwrap_or(crate::session::PRIMARY_SESSION);
    let running = match s.shared.processes.get() {
        Some(registry) => registry.info(owner, process).await.is_ok_and(|p| p.is_running()),
        None => false,
    };
    if running {
        return Ok(());
    }
    Err(ToolOutput::error(format!(
        "Could not {what} the routine: `trigger.process`: {process} is not a running process of this conversation. \
         An output trigger follows only a process this conversation started (its id from `exec`) while it runs, \
         or a command the routine starts itself (give the command instead of an id)."
    )))
}

/// A write the store refused. A corrupted block is refused only without a good copy to repair
/// it from: the user has to fix the JSON.
fn refused(what: &str, e: super::StoreError) -> ToolOutput {
    let hint = match e {
        super::StoreError::Corrupted(_) => ". There is no good copy to repair it from: ask the user to fix the JSON.",
        _ => "",
    };
    ToolOutput::error(format!("Could not {what} the routine: {e}{hint}"))
}

/// `routine_restore`: refused unless the block is corrupted, so a good block is never
/// replaced by an older copy.
async fn restore(s: &Scheduler) -> ToolOutput {
    let store = &s.deps().store;
    match store.read().map(|state| state.parsed.clone()) {
        Ok(super::Parsed::Corrupted(_)) => {}
        Ok(_) => {
            return ToolOutput::error("The task block in HEARTBEAT.md is not corrupted; there is nothing to restore.")
        }
        Err(e) => return ToolOutput::error(format!("Could not read HEARTBEAT.md: {e}")),
    }
    match store.restore_snapshot().await {
        Ok(n) => {
            s.changed();
            s.poke();
            ToolOutput::ok(format!(
                "Restored {n} routine(s) from {}; the broken file is kept as {}.corrupt. Tell the user.",
                super::store::SNAPSHOT_FILE,
                crate::workspace::heartbeat_file::HEARTBEAT_FILE
            ))
        }
        Err(e) => ToolOutput::error(format!("Could not restore the routines: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_routine_added_where_nobody_watches_is_vigils() {
        assert_eq!(source_for(SessionType::Primary), RoutineSource::Chat);
        assert_eq!(source_for(SessionType::Heartbeat), RoutineSource::HeartbeatReflect);
        assert_eq!(source_for(SessionType::Job), RoutineSource::HeartbeatReflect);
    }
}
