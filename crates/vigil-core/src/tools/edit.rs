//! `edit`: replace exact text in a file, atomically, and show the change as a diff.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use similar::{ChangeTag, TextDiff};

use super::files::{io_message, keep_task_block, read_text};
use super::path::{resolve_for, ResolvedPath};
use super::truncate::{counted, truncate_head_tail};
use super::{blocking, parse_args, Tool, ToolContext, ToolOutput};
use crate::durable::write_atomic;
use crate::provider::ToolSpec;

/// The longest diff returned; a `replace_all` over a big file can change every line.
const MAX_DIFF_CHARS: usize = 30_000;
/// How long the diff may take before `similar` settles for a coarser one.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);
/// Match lines named when `old_text` is not unique.
const MAX_LINES_NAMED: usize = 10;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old_text: String,
    new_text: String,
    #[serde(default)]
    replace_all: bool,
}

/// The built-in `edit` tool.
pub struct EditTool;

#[async_trait::async_trait]
impl Tool for EditTool {
    fn asks_gate_first(&self, input: &serde_json::Value, workspace: &std::path::Path) -> bool {
        super::path::change_asks_gate(input, workspace)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit".into(),
            description: "Replace exact text in an existing text file in the workspace. \
                `old_text` must match the file exactly, character for character, including \
                indentation, whitespace and line breaks; copy it from `read` output without \
                the line-number prefixes. It must occur exactly once unless `replace_all` is \
                true: include a few surrounding lines to make it unique. The file is \
                rewritten atomically. Returns a unified diff of the change. To create a file \
                or replace all of it, use `write`."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file to edit, relative to the workspace or absolute inside it."
                    },
                    "old_text": {
                        "type": "string",
                        "description": "The exact text to replace. Must not be empty."
                    },
                    "new_text": {
                        "type": "string",
                        "description": "The text to put in its place (may be empty to delete old_text)."
                    },
                    "replace_all": {
                        "type": "boolean",
                        "description": "Replace every occurrence instead of requiring exactly one. Default false."
                    }
                },
                "required": ["path", "old_text", "new_text"],
                "additionalProperties": false
            }),
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let args: EditArgs = match parse_args(&self.spec(), input) {
            Ok(args) => args,
            Err(out) => return out,
        };
        if args.old_text.is_empty() {
            return ToolOutput::error(
                "old_text is empty; give the exact text to replace. To create a file or \
                 replace all of it, use `write`.",
            );
        }
        if args.old_text == args.new_text {
            return ToolOutput::error("old_text and new_text are the same; nothing would change.");
        }
        let path = match resolve_for(ctx, &args.path, true).await {
            Ok(p) => p,
            Err(message) => return ToolOutput::error(message),
        };
        let workspace = ctx.workspace.clone();
        blocking("edit", move || match edit_file(&path, &args, &workspace) {
            Ok(report) => ToolOutput::ok(report),
            Err(msg) => ToolOutput::error(msg),
        })
        .await
    }
}

fn edit_file(path: &ResolvedPath, args: &EditArgs, workspace: &Path) -> Result<String, String> {
    let content = read_text(path).map_err(|msg| {
        if msg.starts_with("File not found") {
            format!("{msg} To create it, use `write`.")
        } else {
            msg
        }
    })?;

    // `read` shows CRLF lines without their `\r`, so the model sends `\n`; match the
    // file's own line endings rather than fail on an invisible difference.
    let crlf_pair;
    let mut pairs = vec![(args.old_text.as_str(), args.new_text.as_str())];
    if content.contains("\r\n") && args.old_text.contains('\n') && !args.old_text.contains('\r') {
        crlf_pair = (args.old_text.replace('\n', "\r\n"), args.new_text.replace('\n', "\r\n"));
        pairs.push((&crlf_pair.0, &crlf_pair.1));
    }
    let Some((old, new, at)) = pairs.into_iter().find_map(|(old, new)| {
        let at: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
        (!at.is_empty()).then_some((old, new, at))
    }) else {
        return Err(not_found(path, &content, &args.old_text));
    };

    if at.len() > 1 && !args.replace_all {
        let mut lines: Vec<String> = at
            .iter()
            .take(MAX_LINES_NAMED)
            .map(|&i| line_of(&content, i).to_string())
            .collect();
        if at.len() > MAX_LINES_NAMED {
            lines.push("…".into());
        }
        return Err(format!(
            "old_text occurs {} times in {} (at lines {}). Include more surrounding lines to \
             make it unique, or set replace_all to true to change every occurrence.",
            at.len(),
            path.display,
            lines.join(", ")
        ));
    }
    let updated = if args.replace_all {
        content.replace(old, new)
    } else {
        content.replacen(old, new, 1)
    };
    keep_task_block(path, workspace, &updated)?;
    let pinned = path.pinned().map_err(|e| io_message("write", path, &e))?;
    write_atomic(&pinned.path, updated.as_bytes()).map_err(|e| io_message("write", path, &e))?;

    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(&content, &updated);
    let (mut added, mut removed) = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{}", path.display), &format!("b/{}", path.display))
        .to_string();
    Ok(format!(
        "Edited {}: replaced {} (+{added} −{removed} lines).\n\n{}",
        path.display,
        counted(at.len(), "occurrence"),
        truncate_head_tail(&unified, MAX_DIFF_CHARS)
    ))
}

/// 1-based line of byte `i`.
fn line_of(content: &str, i: usize) -> usize {
    content[..i].matches('\n').count() + 1
}

/// Why `old` was not found, with the likeliest cause when one can be seen.
fn not_found(path: &ResolvedPath, content: &str, old: &str) -> String {
    let mut msg = format!("old_text was not found in {}.", path.display);
    if has_line_numbers(old) {
        msg.push_str(
            " It seems to start its lines with line numbers from `read` output; those are \
             not part of the file, so leave them out.",
        );
    } else if let Some(line) = whitespace_match(content, old) {
        msg.push_str(&format!(
            " Text that differs from it only in whitespace starts at line {line}; copy it \
             exactly as `read` shows it (tabs vs spaces, trailing spaces and line breaks \
             matter)."
        ));
    } else {
        msg.push_str(
            " Read the file again and copy the text exactly, including indentation and \
             line breaks.",
        );
    }
    msg
}

/// Whether every non-blank line of `text` starts like `   12\t`.
fn has_line_numbers(text: &str) -> bool {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty()).peekable();
    lines.peek().is_some()
        && lines.all(|l| {
            let l = l.trim_start_matches(' ');
            let digits = l.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && l[digits..].starts_with('\t')
        })
}

/// The line where `old` occurs in `content` once runs of whitespace count as one space.
fn whitespace_match(content: &str, old: &str) -> Option<usize> {
    let (needle, _) = squash(old);
    let needle = needle.trim();
    if needle.is_empty() {
        return None;
    }
    let (hay, origin) = squash(content);
    let at = hay.find(needle)?;
    Some(line_of(content, origin[at]))
}

/// `text` with each run of whitespace replaced by one space, and for every byte of the
/// result the byte of `text` it came from.
fn squash(text: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(text.len());
    let mut origin = Vec::with_capacity(text.len());
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
                origin.push(i);
            }
            in_space = true;
        } else {
            out.push(c);
            origin.extend(std::iter::repeat_n(i, c.len_utf8()));
            in_space = false;
        }
    }
    (out, origin)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::Path;

    const FILE: &str = "a\nb\nc\nd\ne\nf\ng\nh\n";

    async fn edit(dir: &Path, input: serde_json::Value) -> ToolOutput {
        EditTool.run(input, &ToolContext::new(dir)).await
    }

    fn ws(content: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("f.txt"), content).unwrap();
        dir
    }

    fn on_disk(d: &tempfile::TempDir) -> String {
        fs::read_to_string(d.path().join("f.txt")).unwrap()
    }

    #[tokio::test]
    async fn a_unique_match_is_replaced_and_shown_as_a_unified_diff() {
        let d = ws(FILE);
        let out = edit(
            d.path(),
            json!({"path": "f.txt", "old_text": "d\n", "new_text": "D1\nD2\n"}),
        )
        .await;
        let want = "Edited f.txt: replaced 1 occurrence (+2 −1 lines).\n\n\
                    --- a/f.txt\n+++ b/f.txt\n@@ -1,7 +1,8 @@\n a\n b\n c\n-d\n+D1\n+D2\n e\n f\n g\n";
        assert_eq!(out, ToolOutput::ok(want));
        assert_eq!(on_disk(&d), "a\nb\nc\nD1\nD2\ne\nf\ng\nh\n");
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temp files left behind");
    }

    #[tokio::test]
    async fn several_matches_need_more_context_or_replace_all() {
        let d = ws("x = 1\ny = 2\nx = 1\n");
        let args = json!({"path": "f.txt", "old_text": "x = 1", "new_text": "x = 3"});
        assert_eq!(
            edit(d.path(), args.clone()).await,
            ToolOutput::error(
                "old_text occurs 2 times in f.txt (at lines 1, 3). Include more surrounding \
                 lines to make it unique, or set replace_all to true to change every occurrence."
            )
        );
        assert_eq!(on_disk(&d), "x = 1\ny = 2\nx = 1\n");

        let mut all = args;
        all["replace_all"] = json!(true);
        let out = edit(d.path(), all).await;
        assert!(
            out.content
                .starts_with("Edited f.txt: replaced 2 occurrences (+2 −2 lines).\n\n--- a/f.txt\n"),
            "{}",
            out.content
        );
        assert_eq!(on_disk(&d), "x = 3\ny = 2\nx = 3\n");
    }

    #[tokio::test]
    async fn text_not_found_says_why_when_it_can() {
        let d = ws("fn main() {\n    let x = 1;\n}\n");
        let cases = [
            (
                "let y = 2;",
                "old_text was not found in f.txt. Read the file again and copy the text \
                 exactly, including indentation and line breaks.",
            ),
            (
                "fn main() {\n  let x = 1;",
                "old_text was not found in f.txt. Text that differs from it only in \
                 whitespace starts at line 1; copy it exactly as `read` shows it (tabs vs \
                 spaces, trailing spaces and line breaks matter).",
            ),
            (
                "     2\t    let x = 1;",
                "old_text was not found in f.txt. It seems to start its lines with line \
                 numbers from `read` output; those are not part of the file, so leave them out.",
            ),
        ];
        for (old, want) in cases {
            let out = edit(d.path(), json!({"path": "f.txt", "old_text": old, "new_text": "z"})).await;
            assert_eq!(out, ToolOutput::error(want));
        }
        assert_eq!(on_disk(&d), "fn main() {\n    let x = 1;\n}\n");
    }

    #[tokio::test]
    async fn empty_or_identical_text_and_missing_files_are_refused() {
        let d = ws(FILE);
        let out = edit(d.path(), json!({"path": "f.txt", "old_text": "", "new_text": "x"})).await;
        assert!(out.is_error && out.content.starts_with("old_text is empty"));
        let out = edit(d.path(), json!({"path": "f.txt", "old_text": "a", "new_text": "a"})).await;
        assert!(out.is_error && out.content.contains("the same"));
        let out = edit(d.path(), json!({"path": "new.txt", "old_text": "a", "new_text": "b"})).await;
        assert!(out.is_error && out.content.starts_with("File not found: new.txt"));
        assert!(out.content.ends_with("To create it, use `write`."));
        let out = edit(d.path(), json!({"path": "f.txt", "old_text": "a"})).await;
        assert!(out
            .content
            .starts_with("Invalid arguments for `edit`: missing field `new_text`."));
        assert_eq!(on_disk(&d), FILE);
    }

    #[tokio::test]
    async fn crlf_files_match_text_sent_with_plain_newlines() {
        let d = ws("one\r\ntwo\r\nthree\r\n");
        let out = edit(
            d.path(),
            json!({"path": "f.txt", "old_text": "one\ntwo", "new_text": "1\n2"}),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(on_disk(&d), "1\r\n2\r\nthree\r\n");
    }
}
