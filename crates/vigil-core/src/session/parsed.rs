//! The last few transcripts as parsed, so a turn's model request does not parse the whole
//! conversation again: a load reads and parses only the lines appended since the last one.
//!
//! An entry is trusted only while its file is the same file (device and inode), at least as
//! long as what was parsed, and still holds the same bytes just before the parsed end (the
//! last line parsed): a cut (the heartbeat taking back its lines) followed by new lines, by
//! this process or another, fails that check and the file is read whole, as before. Bounded:
//! [`MAX_ENTRIES`] transcripts of at most [`MAX_BYTES`] each.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use vigil_protocol::Message;

/// Transcripts kept (the conversations in use, the heartbeat's, a job's).
const MAX_ENTRIES: usize = 4;
/// A longer transcript is parsed whole on each load rather than held twice in memory.
const MAX_BYTES: u64 = 8 << 20;
/// How many bytes before the parsed end must be unchanged.
const CHECK_BYTES: usize = 256;

/// Where a transcript file is: its device and inode.
pub(super) type FileId = (u64, u64);

#[derive(Debug, Clone)]
pub(super) struct Parsed {
    pub file: FileId,
    /// Bytes parsed: whole lines, up to a newline.
    pub len: u64,
    /// Lines in those bytes (blank and unreadable ones too): the next line's number.
    pub lines: usize,
    /// The last bytes before `len`, as they were.
    pub check: Vec<u8>,
    /// Shared with the callers of the last load (see `SessionStore::load_shared`).
    pub messages: Arc<Vec<Message>>,
    /// The messages' ids, in the same order.
    pub ids: Arc<Vec<String>>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub(super) struct ParsedCache {
    entries: Arc<Mutex<VecDeque<(String, Parsed)>>>,
}

impl ParsedCache {
    /// Takes the entry for `id` out, if it was parsed from `file`: the loader extends it and
    /// puts it back, with no copy of its messages on the way in (a turn loads once a round).
    pub fn take(&self, id: &str, file: FileId) -> Option<Parsed> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let at = entries.iter().position(|(k, p)| k == id && p.file == file)?;
        entries.remove(at).map(|(_, p)| p)
    }

    pub fn put(&self, id: &str, parsed: Parsed) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|(k, _)| k != id);
        if parsed.len > MAX_BYTES {
            return;
        }
        entries.push_front((id.to_string(), parsed));
        entries.truncate(MAX_ENTRIES);
    }

    pub fn forget(&self, id: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|(k, _)| k != id);
    }
}

/// The last [`CHECK_BYTES`] of `before` followed by `added`.
pub(super) fn check_after(before: &[u8], added: &[u8]) -> Vec<u8> {
    if added.len() >= CHECK_BYTES {
        return added[added.len() - CHECK_BYTES..].to_vec();
    }
    let keep = CHECK_BYTES - added.len();
    let mut check = before[before.len().saturating_sub(keep)..].to_vec();
    check.extend_from_slice(added);
    check
}
