//! The heartbeat's words (seed 002 §3): the poll prompt, the exec-event and cron prompts,
//! and the section the heartbeat session's system prompt carries.

use crate::system_events::{SystemEvent, SystemEventKind};

/// The default poll (seed 002 §3.1); `Current time: …` is appended when sent.
pub const DEFAULT_PROMPT: &str = "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly.\n\
Do not infer or repeat old tasks from prior chats.\n\
If nothing needs attention, reply HEARTBEAT_OK.";

/// Sent when a background command finished (seed 002 §3.3).
pub const EXEC_EVENT_PROMPT: &str = "An async command you ran earlier has completed. The result is shown in \
the system messages above. Please relay the command output to the user in a helpful way. If the command \
succeeded, share the relevant output. If it failed, explain what went wrong.";

/// The cron prompt around the reminder's text (seed 002 §3.3).
pub fn cron_prompt(reminder: &str) -> String {
    format!(
        "A scheduled reminder has been triggered. The reminder content is:\n\n{reminder}\n\nPlease relay this reminder to the user in a helpful and friendly way."
    )
}

/// The poll with the time appended (seed 002 §3.1).
pub fn heartbeat_prompt(prompt: &str, current_time_line: &str) -> String {
    format!("{prompt}\n{current_time_line}")
}

/// The heartbeat section of the heartbeat session's system prompt (seed 002 §3.2). It
/// depends only on the configured prompt, so it is byte-stable between runs.
pub fn system_section(prompt: &str) -> String {
    format!(
        "## Heartbeats\n\
Heartbeat prompt: {prompt}\n\
If you receive a heartbeat poll (a user message matching the heartbeat prompt above), and there is nothing that needs attention, reply exactly:\n\
HEARTBEAT_OK\n\
Vigil treats a leading/trailing \"HEARTBEAT_OK\" as a heartbeat ack (and may discard it).\n\
If something needs attention, do NOT include \"HEARTBEAT_OK\"; reply with the alert text instead."
    )
}

/// Which prompt a run sends, decided by what is queued for it: finished commands first
/// (the user is waiting for them), then reminders and routines due now (the cron prompt),
/// else the poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptKind {
    ExecEvent,
    Cron(String),
    Poll,
}

impl PromptKind {
    /// `due`: the routines due now, one line each.
    pub fn choose(events: &[SystemEvent], due: &[String]) -> Self {
        if events.iter().any(|e| e.kind == SystemEventKind::ExecFinished) {
            return PromptKind::ExecEvent;
        }
        let reminders: Vec<&str> = events
            .iter()
            .filter(|e| e.kind == SystemEventKind::Cron)
            .map(|e| e.text.as_str())
            .chain(due.iter().map(String::as_str))
            .collect();
        if reminders.is_empty() {
            PromptKind::Poll
        } else {
            PromptKind::Cron(reminders.join("\n"))
        }
    }

    /// The user-message text of the run.
    pub fn text(&self, poll: &str, current_time_line: &str) -> String {
        match self {
            PromptKind::ExecEvent => EXEC_EVENT_PROMPT.to_string(),
            PromptKind::Cron(reminder) => cron_prompt(reminder),
            PromptKind::Poll => heartbeat_prompt(poll, current_time_line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: SystemEventKind, text: &str) -> SystemEvent {
        SystemEvent {
            text: text.into(),
            kind,
            ts: 0,
        }
    }

    #[test]
    fn texts_are_openclaws() {
        assert_eq!(
            heartbeat_prompt(DEFAULT_PROMPT, "Current time: 2026-02-25 17:30 (Asia/Shanghai)"),
            "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly.\nDo not infer or repeat old tasks from prior chats.\nIf nothing needs attention, reply HEARTBEAT_OK.\nCurrent time: 2026-02-25 17:30 (Asia/Shanghai)"
        );
        assert!(cron_prompt("drink water").contains("The reminder content is:\n\ndrink water\n\nPlease relay"));
        let section = system_section(DEFAULT_PROMPT);
        assert!(section.starts_with("## Heartbeats\nHeartbeat prompt: Read HEARTBEAT.md"));
        assert!(section.contains("reply exactly:\nHEARTBEAT_OK\n"));
    }

    #[test]
    fn exec_events_pick_their_prompt_then_reminders_then_the_poll() {
        use SystemEventKind::*;
        assert_eq!(PromptKind::choose(&[], &[]), PromptKind::Poll);
        assert_eq!(PromptKind::choose(&[event(Other, "x")], &[]), PromptKind::Poll);
        assert_eq!(
            PromptKind::choose(&[event(Cron, "water"), event(Cron, "stretch")], &[]),
            PromptKind::Cron("water\nstretch".into())
        );
        assert_eq!(
            PromptKind::choose(&[event(Cron, "water"), event(ExecFinished, "done")], &[]),
            PromptKind::ExecEvent
        );
        // Routines due now are reminders too.
        assert_eq!(
            PromptKind::choose(&[], &["Drink water".into(), "Stretch: stand up".into()]),
            PromptKind::Cron("Drink water\nStretch: stand up".into())
        );
    }
}
