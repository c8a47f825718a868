//! # workspace
//!
//! Owns the agent's workspace folder: the files the agent works on, and the markdown files
//! that shape it (`AGENTS.md`, `SKILLS.md`, `USER.md`, `MEMORY.md`, the four of seed 003
//! §4.4's `WorkspaceLoader`). They are read
//! fresh for every turn, never cached across turns, so an edit shows up in the next turn.
//! `HEARTBEAT.md` has its one owner here, [`heartbeat_file`]: its name, the heartbeat's
//! checklist (the file without the routines' task block) and the template; the routines'
//! store reads and writes the block at the path it gives.
//!
//! Must never: write these files on its own initiative (the user and the agent's tools do;
//! the one exception is [`heartbeat_file`]'s comment-only `HEARTBEAT.md` template,
//! offered once on the first start).

use std::path::{Path, PathBuf};

pub mod checklist;
pub mod heartbeat_file;

/// The files that make up the system prompt, in the order they appear in it.
pub const PROMPT_FILES: [(&str, &str); 4] = [
    ("AGENTS.md", "How you work (AGENTS.md)"),
    ("SKILLS.md", "What you know how to do (SKILLS.md)"),
    ("USER.md", "About the user (USER.md)"),
    ("MEMORY.md", "What you remember (MEMORY.md)"),
];

/// Longest a prompt file may be before it is cut, so one runaway file cannot eat the context.
const MAX_FILE_CHARS: usize = 20_000;

/// The agent's workspace folder.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// The prompt files as read at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptFiles {
    /// (heading, content) of each file that exists and is not empty.
    pub sections: Vec<(String, String)>,
    /// Files that exist but could not be read.
    pub warnings: Vec<String>,
}

impl Workspace {
    /// Opens the folder, creating it for the user alone if missing (the default one lives in
    /// the data directory; a folder the user chose keeps its own permissions).
    pub fn open(root: &Path) -> std::io::Result<Self> {
        crate::durable::create_private_dir_all(root)?;
        Ok(Self {
            root: root.to_path_buf(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Reads the prompt files now, each beneath the workspace (a symlink in a prompt file's
    /// place is refused, never followed: it could lead into Vigil's data folder). A missing
    /// file is simply absent from the prompt.
    pub fn prompt_files(&self) -> PromptFiles {
        use crate::beneath::BeneathError;
        let mut out = PromptFiles::default();
        for (name, heading) in PROMPT_FILES {
            let path = self.root.join(name);
            let read = crate::beneath::read(&self.root, name)
                .and_then(|b| String::from_utf8(b).map_err(|e| BeneathError::Io(std::io::Error::other(e))));
            match read {
                Ok(text) => {
                    let text = text.trim();
                    if text.is_empty() {
                        continue;
                    }
                    let mut body: String = text.chars().take(MAX_FILE_CHARS).collect();
                    if body.len() < text.len() {
                        body.push_str(&format!("\n[… {name} is longer; the rest was cut to fit]"));
                    }
                    out.sections.push((heading.to_string(), body));
                }
                Err(BeneathError::Missing) => {}
                Err(e) => out.warnings.push(format!("could not read {}: {e}", path.display())),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_present_files_in_a_fixed_order_and_skips_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        std::fs::write(dir.path().join("MEMORY.md"), "likes tea\n").unwrap();
        std::fs::write(dir.path().join("AGENTS.md"), "be terse").unwrap();
        std::fs::write(dir.path().join("USER.md"), "  \n").unwrap();
        std::fs::write(dir.path().join("SKILLS.md"), "## Deploys\nrun make deploy").unwrap();
        let files = ws.prompt_files();
        assert_eq!(
            files.sections,
            vec![
                ("How you work (AGENTS.md)".to_string(), "be terse".to_string()),
                (
                    "What you know how to do (SKILLS.md)".to_string(),
                    "## Deploys\nrun make deploy".to_string()
                ),
                ("What you remember (MEMORY.md)".to_string(), "likes tea".to_string()),
            ]
        );
    }
}
