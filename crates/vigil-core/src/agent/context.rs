//! The context strategy: what goes into the system prompt (stable: identity, tools, the
//! workspace prompt files) and what goes into the user message (volatile: the time,
//! background updates). Keeping the system prompt byte-identical from turn to turn lets
//! providers reuse their prompt cache; only a change to the workspace files changes it.

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
/// transcripts) can tell it from what the user typed.
pub fn volatile_context(now_ms: i64, updates: &[String]) -> String {
    let mut out = format!("<context>\nCurrent time: {}", format_time(now_ms));
    if !updates.is_empty() {
        out.push_str("\nBackground updates since the last message:");
        for u in updates {
            out.push_str("\n- ");
            out.push_str(u);
        }
    }
    out.push_str("\n</context>");
    out
}

/// The user's local time with its UTC offset, to the minute: what a person would say.
fn format_time(ms: i64) -> String {
    match chrono::DateTime::from_timestamp_millis(ms) {
        Some(t) => t
            .with_timezone(&chrono::Local)
            .format("%A %Y-%m-%d %H:%M (UTC%:z)")
            .to_string(),
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
        assert!(t.contains("(UTC"), "{t}");
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
