//! `remember`: adds one dated line to the workspace's `MEMORY.md`, the file the user already
//! reads and edits and every future prompt includes. Because it steers every future run, the
//! change goes to the gate as a steering-file change with the line itself in the question
//! (asked under `ask`, and in a run nobody watches), exactly as `write`/`edit` of the file.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use vigil_protocol::ApprovalKind;

use super::{blocking, parse_args, Tool, ToolContext, ToolOutput};
use crate::clock::Clock;
use crate::provider::ToolSpec;

const FILE: &str = "MEMORY.md";
/// A note is a line, not a document.
const MAX_CHARS: usize = 500;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    note: String,
}

/// The built-in `remember` tool.
pub struct RememberTool {
    clock: Arc<dyn Clock>,
    /// Two notes at once must both land: each read-append-replace holds it.
    writing: Arc<std::sync::Mutex<()>>,
}

impl RememberTool {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            writing: Arc::default(),
        }
    }
}

/// `- 2026-11-28: <note on one line>`, or why the note cannot be one.
fn line_for(note: &str, now_ms: i64) -> Result<String, String> {
    let one_line = note.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return Err("The note is empty: say what to remember.".into());
    }
    if one_line.chars().count() > MAX_CHARS {
        return Err(format!(
            "The note is over {MAX_CHARS} characters: keep one fact per note, in one sentence."
        ));
    }
    let day = chrono::DateTime::from_timestamp_millis(now_ms)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default();
    Ok(format!("- {day}: {one_line}"))
}

#[async_trait::async_trait]
impl Tool for RememberTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "remember".into(),
            description: "Add a dated one-line note to MEMORY.md, which the user can read and \
                edit and which is part of every future prompt. For lasting facts the user \
                wants kept (\"the staging server is at …\"), not for a task's scratch work. The \
                user may be asked first."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "note": {"type": "string", "description": "The fact, in one sentence."}
                },
                "required": ["note"],
                "additionalProperties": false
            }),
        }
    }

    fn asks_gate_first(&self, _input: &serde_json::Value, _workspace: &std::path::Path) -> bool {
        true
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let args: Args = match parse_args(&self.spec(), input) {
            Ok(a) => a,
            Err(out) => return out,
        };
        let line = match line_for(&args.note, self.clock.now_ms()) {
            Ok(l) => l,
            Err(e) => return ToolOutput::error(e),
        };
        let path = match super::resolve_path(&ctx.workspace, FILE) {
            Ok(p) => p,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        if let Some(gate) = &ctx.gate {
            let shown = format!("{} (adding the line \"{line}\")", path.abs.display());
            match gate
                .check(ApprovalKind::SteerFile, &shown, None, &[], false, None)
                .await
            {
                crate::approval::Verdict::Allowed | crate::approval::Verdict::ReadOnly => {}
                crate::approval::Verdict::Denied(why) => return ToolOutput::error(why),
            }
        }
        let writing = Arc::clone(&self.writing);
        blocking("remember", move || {
            let _one = writing.lock().unwrap_or_else(|e| e.into_inner());
            let pinned = match path.pinned() {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(format!("Could not open the workspace for {FILE}: {e}")),
            };
            let mut text = match std::fs::read_to_string(&pinned.path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return ToolOutput::error(format!("Could not read {FILE}: {e}")),
            };
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&line);
            text.push('\n');
            match crate::durable::write_atomic(&pinned.path, text.as_bytes()) {
                Ok(_) => ToolOutput::ok(format!("Added to {FILE}: {line}")),
                Err(e) => ToolOutput::error(format!("Could not write {FILE}: {e}")),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Verdict;
    use std::sync::Mutex;

    /// A gate that records what it was asked and answers as told.
    struct Asked(Mutex<Vec<(ApprovalKind, String)>>, bool);

    #[async_trait::async_trait]
    impl super::super::Gate for Asked {
        async fn check(
            &self,
            kind: ApprovalKind,
            subject: &str,
            _: Option<&str>,
            _: &[String],
            _: bool,
            _: Option<vigil_protocol::ExecRun>,
        ) -> Verdict {
            self.0.lock().unwrap().push((kind, subject.to_string()));
            if self.1 {
                Verdict::Allowed
            } else {
                Verdict::Denied("Denied by the user.".into())
            }
        }
        async fn check_input(&self, _: &str, _: &str, _: bool) -> Verdict {
            Verdict::Denied("no".into())
        }
        async fn check_mcp(&self, _: &str, _: &crate::approval::McpAsk) -> Verdict {
            Verdict::Denied("no".into())
        }
    }

    fn tool() -> RememberTool {
        // 2026-11-28T10:00:00Z
        RememberTool::new(Arc::new(crate::clock::ManualClock::new(1_795_860_000_000)))
    }

    /// The note lands as a dated line after what the user wrote, after the gate was asked
    /// about exactly that line as a change to a steering file; a denial leaves the file.
    #[tokio::test]
    async fn a_note_is_asked_with_its_line_and_appended_dated() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("MEMORY.md"), "likes tea").unwrap();
        let gate = Arc::new(Asked(Mutex::default(), true));
        let ctx = ToolContext {
            gate: Some(gate.clone()),
            ..ToolContext::new(dir.path())
        };
        let out = tool().run(json!({"note": "staging is at\n10.0.0.5"}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok("Added to MEMORY.md: - 2026-11-28: staging is at 10.0.0.5")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("MEMORY.md")).unwrap(),
            "likes tea\n- 2026-11-28: staging is at 10.0.0.5\n"
        );
        let asked = gate.0.lock().unwrap().clone();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].0, ApprovalKind::SteerFile);
        assert!(
            asked[0].1.contains("\"- 2026-11-28: staging is at 10.0.0.5\""),
            "{}",
            asked[0].1
        );

        let deny = ToolContext {
            gate: Some(Arc::new(Asked(Mutex::default(), false))),
            ..ToolContext::new(dir.path())
        };
        let out = tool().run(json!({"note": "something else"}), &deny).await;
        assert_eq!(out, ToolOutput::error("Denied by the user."));
        assert!(!std::fs::read_to_string(dir.path().join("MEMORY.md"))
            .unwrap()
            .contains("something else"));
    }
}
