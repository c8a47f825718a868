//! `write`: create or replace a whole file, atomically.

use std::fs;

use serde::Deserialize;
use serde_json::json;

use super::files::{io_message, keep_task_block};
use super::path::{resolve_for, ResolvedPath};
use super::truncate::counted;
use super::{blocking, parse_args, Tool, ToolContext, ToolOutput};
use crate::durable::{write_atomic, Written};
use crate::provider::ToolSpec;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

/// The built-in `write` tool.
pub struct WriteTool;

#[async_trait::async_trait]
impl Tool for WriteTool {
    fn asks_gate_first(&self, input: &serde_json::Value, workspace: &std::path::Path) -> bool {
        super::path::change_asks_gate(input, workspace)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write".into(),
            description: "Create a file in the workspace, or replace all of an existing \
                file, with the given content. Missing parent folders are created. The file is \
                replaced as a whole and atomically, so it is never left half-written. To \
                change part of an existing file, use `edit` instead: it is safer and shows \
                a diff. Relative paths are resolved against the workspace folder; paths \
                outside it are refused."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file to write, relative to the workspace (e.g. `notes/todo.md`) or absolute inside it."
                    },
                    "content": {
                        "type": "string",
                        "description": "The complete new content of the file."
                    }
                },
                "required": ["path", "content"],
                "additionalProperties": false
            }),
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let args: WriteArgs = match parse_args(&self.spec(), input) {
            Ok(args) => args,
            Err(out) => return out,
        };
        let path = match resolve_for(ctx, &args.path, true).await {
            Ok(p) => p,
            Err(message) => return ToolOutput::error(message),
        };
        if let Err(msg) = keep_task_block(&path, &ctx.workspace, &args.content) {
            return ToolOutput::error(msg);
        }
        blocking("write", move || match write_file(&path, &args.content) {
            Ok(summary) => ToolOutput::ok(summary),
            Err(msg) => ToolOutput::error(msg),
        })
        .await
    }
}

fn write_file(path: &ResolvedPath, content: &str) -> Result<String, String> {
    if path.abs.is_dir() {
        return Err(format!(
            "{} is a folder; give the path of a file to write.",
            path.display
        ));
    }
    if let Some(parent) = path.abs.parent() {
        fs::create_dir_all(parent).map_err(|e| {
            format!(
                "Could not create the folder for {}: {e}. Is a part of the path an existing file?",
                path.display
            )
        })?;
    }
    // Through the folder as opened at its checked path: a swap since cannot move the write.
    let pinned = path.pinned().map_err(|e| io_message("write", path, &e))?;
    let written = write_atomic(&pinned.path, content.as_bytes()).map_err(|e| io_message("write", path, &e))?;
    let how = match written {
        Written::Created => "new file",
        Written::Replaced => "replaced the existing file",
    };
    Ok(format!(
        "Wrote {} ({}) to {} ({how}).",
        counted(content.len(), "byte"),
        counted(content.lines().count(), "line"),
        path.display
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    async fn write(dir: &Path, input: serde_json::Value) -> ToolOutput {
        WriteTool.run(input, &ToolContext::new(dir)).await
    }

    fn all_files(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                out.extend(all_files(&e.path()).into_iter().map(|f| format!("{name}/{f}")));
            } else {
                out.push(name);
            }
        }
        out.sort();
        out
    }

    #[tokio::test]
    async fn creates_folders_then_replaces_leaving_no_temp_files() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            write(d.path(), json!({"path": "a/b/c.txt", "content": "one\ntwo\n"})).await,
            ToolOutput::ok("Wrote 8 bytes (2 lines) to a/b/c.txt (new file).")
        );
        assert_eq!(
            write(d.path(), json!({"path": "a/b/c.txt", "content": "é"})).await,
            ToolOutput::ok("Wrote 2 bytes (1 line) to a/b/c.txt (replaced the existing file).")
        );
        assert_eq!(fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(), "é");
        assert_eq!(all_files(d.path()), ["a/b/c.txt"]);
    }

    #[tokio::test]
    async fn folders_files_in_the_way_and_outside_paths_are_refused() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("dir")).unwrap();
        fs::write(d.path().join("file"), "x").unwrap();
        assert_eq!(
            write(d.path(), json!({"path": "dir", "content": ""})).await,
            ToolOutput::error("dir is a folder; give the path of a file to write.")
        );
        let out = write(d.path(), json!({"path": "file/inner.txt", "content": ""})).await;
        assert!(out.is_error);
        assert!(out
            .content
            .starts_with("Could not create the folder for file/inner.txt"));

        let out = write(d.path(), json!({"path": "../escaped.txt", "content": "x"})).await;
        assert!(out.content.contains("is outside the workspace"), "{}", out.content);
        assert!(!d.path().parent().unwrap().join("escaped.txt").exists());
        assert_eq!(all_files(d.path()), ["file"]);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn writing_through_a_link_to_outside_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let d = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let out = write(d.path(), json!({"path": "out/x.txt", "content": "x"})).await;
        assert!(out.is_error && out.content.contains("outside the workspace"));
        assert!(!outside.path().join("x.txt").exists());
    }

    /// A folder swapped for a link to outside between the path's check and the write: the
    /// write does not follow the link (it fails, or lands in the folder that was checked).
    #[cfg(unix)]
    #[test]
    fn a_folder_swapped_for_a_link_after_the_check_does_not_lead_the_write_out() {
        let outside = tempfile::tempdir().unwrap();
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let path = crate::tools::path::resolve_path(d.path(), "sub/x.txt").unwrap();
        std::fs::rename(d.path().join("sub"), d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("sub")).unwrap();
        let result = write_file(&path, "planted");
        assert!(
            !outside.path().join("x.txt").exists(),
            "the write followed the link: {result:?}"
        );
        assert!(result.is_err(), "{result:?}");

        // Swapped after the folder was opened: the write lands in the folder that was checked.
        std::fs::remove_file(d.path().join("sub")).unwrap();
        std::fs::rename(d.path().join("moved"), d.path().join("sub")).unwrap();
        let pinned = path.pinned().unwrap();
        std::fs::rename(d.path().join("sub"), d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("sub")).unwrap();
        crate::durable::write_atomic(&pinned.path, b"kept").unwrap();
        assert!(!outside.path().join("x.txt").exists());
        assert_eq!(std::fs::read_to_string(d.path().join("moved/x.txt")).unwrap(), "kept");
    }
}
