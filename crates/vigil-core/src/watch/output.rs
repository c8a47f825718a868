//! Output triggers' eyes: a running process's output read line by line, terminal escapes
//! taken out, each line matched against the routine's pattern; the matched line and the
//! [`CONTEXT_BEFORE`] lines before it are the evidence. Matches closer together than
//! [`OUTPUT_DEBOUNCE`] are one fire.
//!
//! The process is one the routine owns: either a running process of the routine's own
//! conversation named by its id (the 8 hex characters the `exec` tool gave it), followed
//! while it lives, or a command the
//! routine starts itself once the user approved it (in the unattended sandbox, started
//! again at the next start of Vigil).
//!
//! Must never: keep more than [`MAX_LINE`] characters of a line or [`CONTEXT_BEFORE`]
//! lines per process and routine, however much a process prints without a newline; keep
//! more than [`MAX_EVIDENCE`] bytes of evidence waiting for a fire; start a command that
//! was not approved as written.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use regex::Regex;
use vigil_protocol::Trigger;

use crate::routines::Routine;

/// Characters kept of one line (the rest of a longer line is dropped until its newline).
pub const MAX_LINE: usize = 2048;
/// Lines before a match that go with it as evidence.
pub const CONTEXT_BEFORE: usize = 3;
/// Matches closer together than this are one fire.
pub const OUTPUT_DEBOUNCE: Duration = Duration::from_millis(250);
/// Evidence kept for one fire; later matches are counted, not kept.
pub const MAX_EVIDENCE: usize = 4096;

/// What an output trigger follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A running process, by its id.
    Process(String),
    /// A command the routine starts itself.
    Command(String),
}

/// Whether `process` names a process by id (the `exec` tool's 8 hex characters) rather
/// than a command to start.
pub fn is_process_id(process: &str) -> bool {
    process.len() == 8
        && process
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// One live routine's output trigger, compiled.
#[derive(Debug, Clone)]
pub struct OutputWatch {
    pub id: String,
    pub target: Target,
    pub pattern: Regex,
    /// The conversation whose processes a [`Target::Process`] may be (the routine's).
    pub owner: String,
}

/// The output triggers of live routines (a pattern that does not compile is left out: the
/// shape check refused it already).
pub fn output_watches(routines: &[Routine]) -> Vec<OutputWatch> {
    routines
        .iter()
        .filter(|r| r.live())
        .filter_map(|r| {
            let Some(Trigger::Output { process, pattern }) = &r.trigger else {
                return None;
            };
            let pattern = regex::RegexBuilder::new(pattern).size_limit(1 << 20).build().ok()?;
            let process = process.trim();
            let target = if is_process_id(process) {
                Target::Process(process.to_string())
            } else {
                Target::Command(process.to_string())
            };
            Some(OutputWatch {
                id: r.id.clone(),
                target,
                pattern,
                owner: r
                    .conversation
                    .clone()
                    .unwrap_or_else(|| crate::session::PRIMARY_SESSION.to_string()),
            })
        })
        .collect()
}

/// Where the escape-sequence parser is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Esc {
    #[default]
    Text,
    /// After ESC.
    Start,
    /// In a CSI (`ESC [`): until a final byte.
    Csi,
    /// In an OSC, DCS or similar string: until BEL or `ESC \`.
    Str,
    /// ESC inside a string (maybe its end).
    StrEnd,
}

/// One process's output as lines, for one routine: bounded whatever the process prints.
#[derive(Debug, Default)]
pub struct Lines {
    esc: Esc,
    /// The line so far (at most [`MAX_LINE`] characters).
    line: String,
    chars: usize,
    /// Bytes of a UTF-8 character cut between two chunks.
    partial: Vec<u8>,
    before: VecDeque<String>,
}

impl Lines {
    /// Feeds raw terminal bytes; calls `found` with the evidence of every matching line.
    pub fn feed(&mut self, raw: &[u8], pattern: &Regex, mut found: impl FnMut(String)) {
        let mut bytes = std::mem::take(&mut self.partial);
        bytes.extend_from_slice(raw);
        let (text, rest) = match std::str::from_utf8(&bytes) {
            Ok(t) => (t.to_string(), Vec::new()),
            Err(e) if e.error_len().is_none() => {
                let cut = e.valid_up_to();
                (
                    String::from_utf8_lossy(&bytes[..cut]).into_owned(),
                    bytes[cut..].to_vec(),
                )
            }
            Err(_) => (String::from_utf8_lossy(&bytes).into_owned(), Vec::new()),
        };
        self.partial = rest;
        for c in text.chars() {
            self.esc = match (self.esc, c) {
                (Esc::Text, '\u{1b}') => Esc::Start,
                (Esc::Text, '\n') => {
                    self.end_line(pattern, &mut found);
                    Esc::Text
                }
                (Esc::Text, c) if c.is_control() && c != '\t' => Esc::Text,
                (Esc::Text, c) => {
                    if self.chars < MAX_LINE {
                        self.line.push(c);
                        self.chars += 1;
                    }
                    Esc::Text
                }
                (Esc::Start, '[') => Esc::Csi,
                (Esc::Start, ']' | 'P' | '_' | '^' | 'X') => Esc::Str,
                (Esc::Start, _) => Esc::Text,
                (Esc::Csi, '\u{40}'..='\u{7e}') => Esc::Text,
                (Esc::Csi, _) => Esc::Csi,
                (Esc::Str, '\u{7}') => Esc::Text,
                (Esc::Str, '\u{1b}') => Esc::StrEnd,
                (Esc::Str, _) => Esc::Str,
                (Esc::StrEnd, '\\') => Esc::Text,
                (Esc::StrEnd, _) => Esc::Str,
            };
        }
    }

    fn end_line(&mut self, pattern: &Regex, found: &mut impl FnMut(String)) {
        let line = std::mem::take(&mut self.line);
        self.chars = 0;
        let line = line.trim_end().to_string();
        if pattern.is_match(&line) {
            let mut evidence: Vec<&str> = self.before.iter().map(String::as_str).collect();
            evidence.push(&line);
            found(evidence.join("\n"));
            self.before.clear();
            return;
        }
        if self.before.len() == CONTEXT_BEFORE {
            self.before.pop_front();
        }
        self.before.push_back(line);
    }
}

/// The evidence waiting for one routine's fire, bounded.
#[derive(Debug, Default)]
pub struct Pending {
    pub text: String,
    /// Matches that did not fit.
    pub more: usize,
}

impl Pending {
    pub fn add(&mut self, process: &str, evidence: &str) {
        let part = format!("Output of process {process} matched:\n{evidence}");
        if self.text.len() + part.len() + 2 > MAX_EVIDENCE {
            self.more += 1;
            return;
        }
        if !self.text.is_empty() {
            self.text.push_str("\n\n");
        }
        self.text.push_str(&part);
    }

    pub fn finish(self) -> String {
        match self.more {
            0 => self.text,
            n => format!("{}\n\n({n} more matching lines not shown)", self.text),
        }
    }
}

/// Each (routine, process) pair's lines.
#[derive(Default)]
pub struct Followed {
    pub lines: HashMap<(String, String), Lines>,
    pub pending: HashMap<String, Pending>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(chunks: &[&[u8]], pattern: &str) -> Vec<String> {
        let re = Regex::new(pattern).unwrap();
        let mut lines = Lines::default();
        let mut out = Vec::new();
        for c in chunks {
            lines.feed(c, &re, |e| out.push(e));
        }
        out
    }

    #[test]
    fn a_matching_line_comes_with_the_lines_before_it_and_colours_do_not_hide_it() {
        let out = scan(
            &[
                b"starting\nlistening on :3000\nGET / 200\n\x1b[31mERR",
                b"OR\x1b[0m db timeout\r\nGET / 200\n",
            ],
            "ERROR|panicked",
        );
        assert_eq!(out, vec!["starting\nlistening on :3000\nGET / 200\nERROR db timeout"]);
        assert!(scan(&[b"all good\nstill fine\n"], "ERROR").is_empty());
        // A character cut between two chunks is whole again.
        let out = scan(&[b"\xe2\x9c", b"\x97 panicked\n"], "panicked");
        assert_eq!(out, vec!["✗ panicked"]);
    }

    #[test]
    fn a_flood_without_newlines_keeps_a_bounded_line() {
        let re = Regex::new("ERROR").unwrap();
        let mut lines = Lines::default();
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..64 {
            lines.feed(&chunk, &re, |_| panic!("no line ended"));
        }
        assert!(lines.line.len() <= MAX_LINE * 4);
        let mut out = Vec::new();
        lines.feed(b"\nERROR at last\n", &re, |e| out.push(e));
        assert_eq!(out.len(), 1);
        assert!(out[0].len() < MAX_LINE + 100, "{}", out[0].len());
    }

    #[test]
    fn ids_and_commands_are_told_apart() {
        assert!(is_process_id("0a1b2c3d"));
        assert!(!is_process_id("npm run dev"));
        assert!(!is_process_id("0A1B2C3D"));
        assert!(!is_process_id("0a1b2c3"));
    }
}
