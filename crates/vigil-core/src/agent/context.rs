//! The context strategy: what goes into the system prompt (stable: identity, tools, the
//! workspace prompt files) and what goes into the user message (volatile: the time,
//! background updates). Keeping the system prompt byte-identical from turn to turn lets
//! providers reuse their prompt cache; only a change to the workspace files changes it.

use vigil_protocol::{ContentBlock, Message, MessageKind, Role};

use crate::workspace::PromptFiles;

/// The fixed part of the system prompt.
const IDENTITY: &str = "You are Vigil, a desktop AI agent working for one user on their own computer. \
You can read, create and change files in your workspace folder with your tools. \
Work step by step: use a tool, look at its result, then decide the next step. \
When you change a file, prefer `edit` with a unique `old_text` over rewriting the whole file. \
Answer clearly and concisely; use Markdown where it helps. \
A user message that starts with [INTERRUPT] was sent while you were working: take it into account at once.";

/// Builds the system prompt from the workspace files. Pure: same files, same bytes.
pub fn system_prompt(files: &PromptFiles, workspace: &str) -> String {
    let mut out = String::from(IDENTITY);
    out.push_str("\n\nYour workspace folder is ");
    out.push_str(workspace);
    out.push_str("; relative paths are resolved there.");
    for (heading, body) in &files.sections {
        out.push_str("\n\n## ");
        out.push_str(heading);
        out.push_str("\n\n");
        out.push_str(body);
    }
    out
}

/// The volatile context sent with a user message, fenced so the model (and tools reading
/// transcripts) can tell it from what the user typed. `sections` (background updates,
/// system events…) come first, then the time.
pub fn volatile_context(now_ms: i64, sections: &[String]) -> String {
    let mut out = String::from("<context>\n");
    for section in sections.iter().filter(|s| !s.trim().is_empty()) {
        out.push_str(section.trim_end());
        out.push_str("\n\n");
    }
    out.push_str("Current time: ");
    out.push_str(&format_time(now_ms));
    out.push_str("\n</context>");
    out
}

/// The last `limit` messages or a few more: the kept part starts at a plain user message,
/// so no tool result loses its call. Summaries are dropped with what they summarise.
pub fn latest(transcript: Vec<Message>, limit: usize) -> Vec<Message> {
    let plain_user = |m: &Message| {
        m.role == Role::User
            && !matches!(m.kind, MessageKind::Summary { .. })
            && !m.content.iter().any(|b| matches!(b, ContentBlock::ToolResult { .. }))
    };
    let from = transcript.len().saturating_sub(limit);
    match (0..=from)
        .rev()
        .find(|&i| i < transcript.len() && plain_user(&transcript[i]))
    {
        Some(start) => transcript.into_iter().skip(start).collect(),
        None => transcript,
    }
}

/// A local date and time to the minute, without the zone (the context names it once).
pub(super) fn short_time(ms: i64) -> String {
    in_local_time(ms, |_, local| local.format("%Y-%m-%d %H:%M").to_string())
}

/// The user's local time with its UTC offset, to the minute: what a person would say.
fn format_time(ms: i64) -> String {
    in_local_time(ms, |t, local| {
        let offset = local.format("UTC%:z").to_string();
        let name = crate::routines::schedule::local_zone_label(t);
        // The label falls back to the offset itself when the zone has no name.
        let zone = if name == offset {
            offset
        } else {
            format!("{name}, {offset}")
        };
        format!("{} ({zone})", local.format("%A %Y-%m-%d %H:%M"))
    })
}

/// `show`n in the user's time zone, or said as it is when `ms` is no date chrono knows.
fn in_local_time(
    ms: i64,
    show: impl FnOnce(chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Local>) -> String,
) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => show(t, t.with_timezone(&chrono::Local)),
        None => format!("{ms} ms since the Unix epoch"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_names_the_weekday_and_offset() {
        let t = format_time(1_795_316_441_578);
        assert!(t.contains("2026-11-2"), "{t}");
        // The offset always, with the zone's name before it when the system names one.
        assert!(t.contains("UTC+") || t.contains("UTC-"), "{t}");
    }

    #[test]
    fn sections_come_before_the_time() {
        let text = volatile_context(0, &["## Background Updates\n- [heartbeat] disk full".into()]);
        assert!(text.starts_with("<context>\n## Background Updates\n- [heartbeat] disk full\n\nCurrent time: "));
        assert!(volatile_context(0, &[]).starts_with("<context>\nCurrent time: "));
    }

    #[test]
    fn the_latest_messages_start_at_a_user_message() {
        let user = |t: &str| Message::user_text(t, 0);
        let reply = |t: &str| Message {
            role: Role::Assistant,
            ..Message::user_text(t, 0)
        };
        let result = Message {
            role: Role::ToolResult,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "c".into(),
                content: "r".into(),
                is_error: false,
            }],
            ..Message::user_text("", 0)
        };
        let t = vec![user("1"), reply("a"), user("2"), reply("call"), result, reply("b")];
        let kept = latest(t.clone(), 2);
        assert_eq!(kept, t[2..].to_vec(), "back to the user message before the tool pair");
        assert_eq!(latest(t.clone(), 100), t);
        assert_eq!(latest(vec![], 3), vec![]);
    }

    #[test]
    fn the_system_prompt_depends_only_on_the_files() {
        let files = PromptFiles {
            sections: vec![("About the user (USER.md)".into(), "Ana".into())],
            warnings: vec![],
        };
        assert_eq!(system_prompt(&files, "/w"), system_prompt(&files.clone(), "/w"));
        assert!(system_prompt(&files, "/w").ends_with("## About the user (USER.md)\n\nAna"));
    }
}
