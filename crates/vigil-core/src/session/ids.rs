//! # session::ids
//!
//! Owns the stable id of every transcript message. A message appended now is written with
//! `"id":"m<16 hex>"` as the first field of its line (random, so two Vigils appending to one
//! file cannot collide in practice). A line written before ids existed gets
//! `d<16 hex>` derived from its line number and its bytes: the same on every load, by every
//! reader, and unchanged by the only cuts a transcript ever sees (a torn tail, the
//! heartbeat's pruning of its own last lines), which never move an earlier line.
//!
//! The id is read from the line's first bytes, not from a parsed [`vigil_protocol::Message`]
//! (which has no id field: transcripts are append-only, so a message is never re-encoded).
//! A load hands the ids out beside the messages (`Loaded::ids`), which is how the window
//! opens a search result at its message.
//!
//! Must never: give two lines of one transcript the same id, or change a line's id once
//! written or derived.

use sha2::{Digest, Sha256};

/// What a written id starts with, at the very start of its line.
const PREFIX: &[u8] = br#"{"id":""#;

/// `body` (a serialized message, a JSON object) as a transcript line with a new id first.
pub(crate) fn with_new_id(body: &[u8]) -> Vec<u8> {
    let id = new_id();
    let mut line = Vec::with_capacity(body.len() + id.len() + 10);
    line.extend_from_slice(PREFIX);
    line.extend_from_slice(id.as_bytes());
    line.push(b'"');
    match body {
        [b'{', b'}'] => line.push(b'}'),
        [b'{', rest @ ..] => {
            line.push(b',');
            line.extend_from_slice(rest);
        }
        // Not an object: cannot happen for a `Message`; kept whole rather than mangled.
        other => {
            line.clear();
            line.extend_from_slice(other);
        }
    }
    line.push(b'\n');
    line
}

fn new_id() -> String {
    let bits = uuid::Uuid::new_v4().as_u128() as u64;
    format!("m{bits:016x}")
}

/// The id of the transcript line numbered `line_no` (0-based, counting every line of the
/// file, blank or unreadable ones too) whose bytes, without the newline, are `line`.
pub fn line_id(line_no: usize, line: &[u8]) -> String {
    written_id(line).map_or_else(|| derived_id(line_no, line), str::to_string)
}

/// The id written at the start of the line, if it is one Vigil could have written.
fn written_id(line: &[u8]) -> Option<&str> {
    let rest = line.strip_prefix(PREFIX)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    let id = std::str::from_utf8(&rest[..end]).ok()?;
    let plausible = (2..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    plausible.then_some(id)
}

fn derived_id(line_no: usize, line: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update((line_no as u64).to_le_bytes());
    h.update(line);
    format!("d{}", &hex::encode(h.finalize())[..16])
}

/// Every non-blank line of `bytes` (whole lines of a transcript, from its start) with its
/// line number and id.
pub fn lines_with_ids(bytes: &[u8]) -> impl Iterator<Item = (usize, String, &[u8])> {
    bytes
        .split(|&b| b == b'\n')
        .enumerate()
        .filter(|(_, line)| !line.iter().all(u8::is_ascii_whitespace))
        .map(|(n, line)| (n, line_id(n, line), line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionStore;
    use std::collections::HashSet;
    use vigil_protocol::Message;

    fn ids(path: &std::path::Path) -> Vec<String> {
        let bytes = std::fs::read(path).unwrap();
        lines_with_ids(&bytes).map(|(_, id, _)| id).collect()
    }

    /// Every appended message is written with an id, the line still loads as the message,
    /// and ids differ even for identical messages.
    #[test]
    fn appends_write_distinct_ids_and_still_load() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let m = Message::user_text("same", 1);
        store.append("main", &m).unwrap();
        store.append("main", &m).unwrap();
        let path = dir.path().join("sessions/main.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.lines().all(|l| l.starts_with(r#"{"id":"m"#)), "{text}");
        let got = ids(&path);
        assert_eq!(got.len(), 2);
        assert_ne!(got[0], got[1]);
        assert!(got.iter().all(|id| id.starts_with('m') && id.len() == 17));
        assert_eq!(store.load("main").unwrap().messages, vec![m.clone(), m]);
    }

    /// A transcript from before ids: each line gets an id derived from it, the same on every
    /// read, distinct for identical lines; cutting the tail (pruning) or a torn line
    /// (repair) leaves the earlier lines' ids as they were.
    #[tokio::test]
    async fn old_lines_get_derived_ids_stable_across_pruning_and_repair() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let path = dir.path().join("sessions/hb.jsonl");
        let line = serde_json::to_string(&Message::user_text("old", 1)).unwrap();
        let other = serde_json::to_string(&Message::user_text("older", 2)).unwrap();
        std::fs::write(&path, format!("{line}\n{line}\n{other}\n")).unwrap();
        let before = ids(&path);
        assert_eq!(before.len(), 3);
        assert_eq!(before.iter().collect::<HashSet<_>>().len(), 3, "{before:?}");
        assert!(before.iter().all(|id| id.starts_with('d')));
        assert_eq!(ids(&path), before, "derived the same way every time");

        // New lines after old ones: old ids unchanged.
        let size = store.size("hb").unwrap();
        store.append("hb", &Message::user_text("new", 3)).unwrap();
        let grown = ids(&path);
        assert_eq!(grown[..3], before[..]);
        // The heartbeat prunes its run: back to the old lines, ids unchanged.
        store.truncate_async("hb", size).await.unwrap();
        assert_eq!(ids(&path), before);
        // A torn line is cut on load (repair): the rest keep their ids.
        use std::io::Write;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(br#"{"role":"us"#)
            .unwrap();
        assert_eq!(store.load("hb").unwrap().messages.len(), 3);
        assert_eq!(ids(&path), before);
    }

    #[test]
    fn a_forged_id_that_vigil_could_not_write_is_not_trusted() {
        let line = br#"{"id":"../../etc","role":"user"}"#;
        assert!(line_id(4, line).starts_with('d'));
        assert_eq!(line_id(4, br#"{"id":"mabc","role":"user"}"#), "mabc");
    }
}
