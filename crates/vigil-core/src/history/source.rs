//! Indexed messages read back from their transcripts. The index keeps where each message's
//! line is (line number, byte offset, length), not its text: the JSONL is the only copy.
//! A line is used only if it still carries the id the index gave it; otherwise the
//! transcript changed since (the indexer is catching up) and the message is not shown.
//!
//! Must never: show text from a line other than the one indexed under that id.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::extract::extract;
use crate::session::ids::line_id;

/// Where a message's line is in its transcript.
#[derive(Debug, Clone, Copy)]
pub struct Place {
    pub line: u64,
    pub off: u64,
    pub nbytes: u64,
}

/// Transcripts opened once per search (a search reads a few lines of a few files).
pub struct Transcripts<'a> {
    dir: &'a Path,
    open: HashMap<String, Option<File>>,
}

impl<'a> Transcripts<'a> {
    pub fn new(dir: &'a Path) -> Self {
        Self {
            dir,
            open: HashMap::new(),
        }
    }

    /// The message's text as indexed (see [`extract`]), read from its line; `None` if the
    /// line is gone or is no longer the message `id`. A history tool's result (`copy`) reads
    /// as empty, as it is indexed.
    pub fn text(&mut self, session: &str, id: &str, place: Place, copy: bool) -> Option<String> {
        let dir = self.dir;
        let file = self
            .open
            .entry(session.to_string())
            .or_insert_with(|| File::open(dir.join(format!("{session}{}", crate::session::suffix::TRANSCRIPT))).ok())
            .as_ref()?;
        // A bound well above any line Vigil writes: a corrupt row cannot ask for gigabytes.
        if place.nbytes > 64 << 20 {
            return None;
        }
        let mut line = vec![0u8; place.nbytes as usize];
        file.read_exact_at(&mut line, place.off).ok()?;
        if line_id(place.line as usize, &line) != id {
            return None;
        }
        if copy {
            return Some(String::new());
        }
        let message = serde_json::from_slice::<vigil_protocol::Message>(&line).ok()?;
        Some(extract(&message).text)
    }
}
