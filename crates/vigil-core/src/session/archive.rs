//! # archive — background updates a turn has read
//!
//! A turn acknowledges every mailbox update it was shown, and the acknowledgement removes it
//! from the mailbox (seed 003 §4.5 `ack_drain`). After a long absence a turn is shown most
//! updates as one digest line each (`agent/updates.rs`), so the agent may want to open one
//! a turn or two later, when the user asks about it. So `ack_drain` keeps what it removes in
//! `<id>.updates.ndjson`, one update per line, and [`MetaStore::find_update`] looks there after
//! the mailbox.
//!
//! Owns that file: whole lines appended under the session lock (the lock `ack_drain` holds),
//! bounded to [`ARCHIVE_MAX_BYTES`] by rewriting it atomically with its newer half.
//!
//! Must never: decide what waits (the mailbox does), or fail an acknowledgement: an archive
//! that cannot be written costs only the later look-up, and is logged.

use std::fs::{self, OpenOptions};
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::meta::{MailboxEvent, MetaStore};
use super::{suffix, validate_id, SessionError};
use crate::durable;

/// Past this size the archive keeps its newer half: about 2 000 updates with their detail.
pub const ARCHIVE_MAX_BYTES: u64 = 2 * 1024 * 1024;

/// Where an update was found.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// Still in the mailbox: no turn has acknowledged it yet (this one may be showing it).
    Waiting(MailboxEvent),
    /// A turn read and acknowledged it.
    Read(MailboxEvent),
}

/// Appends `events` to the archive at `path`; the caller holds the session's lock.
pub(super) fn append(path: &Path, events: &[MailboxEvent]) -> std::io::Result<()> {
    if events.is_empty() {
        return Ok(());
    }
    let mut lines = Vec::new();
    for e in events {
        let mut stored = e.clone();
        stored.claim = None;
        serde_json::to_writer(&mut lines, &stored)?;
        lines.push(b'\n');
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    // A line a crash cut short is skipped on reading; the next append starts a new line.
    let len = file.metadata()?.len();
    if len > 0 && !ends_with_newline(path, len) {
        lines.insert(0, b'\n');
    }
    durable::write_all(&mut file, path, &lines)?;
    durable::sync_data(&file, path)?;
    if len + lines.len() as u64 > ARCHIVE_MAX_BYTES {
        keep_newer_half(path)?;
    }
    Ok(())
}

fn ends_with_newline(path: &Path, len: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let mut last = [0u8; 1];
    fs::File::open(path)
        .and_then(|f| f.read_exact_at(&mut last, len - 1))
        .is_ok_and(|()| last[0] == b'\n')
}

/// Rewrites the archive with its lines from the middle on (whole lines only).
fn keep_newer_half(path: &Path) -> std::io::Result<()> {
    let bytes = fs::read(path)?;
    let middle = bytes.len() / 2;
    let from = bytes[middle..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |i| middle + i + 1);
    durable::write_atomic(path, &bytes[from..]).map(drop)
}

impl MetaStore {
    /// The update `event_id` of session `id`: in the mailbox, else in the archive of the ones
    /// read (the latest copy). A unique prefix of at least 8 characters names it too.
    pub fn find_update(&self, id: &str, event_id: &str) -> Result<Option<Found>, SessionError> {
        validate_id(id)?;
        let event_id = event_id.trim();
        if event_id.is_empty() {
            return Ok(None);
        }
        let matches =
            |e: &MailboxEvent| e.event_id == event_id || (event_id.len() >= 8 && e.event_id.starts_with(event_id));
        let mailbox = self.load(id)?.meta.mailbox;
        let waiting: Vec<&MailboxEvent> = mailbox.iter().filter(|e| matches(e)).collect();
        if let Some(exact) = waiting.iter().find(|e| e.event_id == event_id) {
            return Ok(Some(Found::Waiting((*exact).clone())));
        }
        let path = self.transcripts().dir().join(format!("{id}{}", suffix::UPDATES));
        let mut read: Vec<MailboxEvent> = Vec::new();
        if let Ok(file) = fs::File::open(&path) {
            for line in BufReader::new(file).lines() {
                let Ok(line) = line else { break };
                let Ok(e) = serde_json::from_str::<MailboxEvent>(&line) else {
                    continue;
                };
                if matches(&e) {
                    read.retain(|r| r.event_id != e.event_id);
                    read.push(e);
                }
            }
        }
        if let Some(exact) = read.iter().find(|e| e.event_id == event_id) {
            return Ok(Some(Found::Read(exact.clone())));
        }
        // A prefix: only when it names one update.
        let mut ids: Vec<&str> = waiting.iter().map(|e| e.event_id.as_str()).collect();
        ids.extend(read.iter().map(|e| e.event_id.as_str()));
        ids.sort_unstable();
        ids.dedup();
        Ok(match ids.as_slice() {
            [only] => match waiting.iter().find(|e| e.event_id == *only) {
                Some(e) => Some(Found::Waiting((*e).clone())),
                None => read.iter().find(|e| e.event_id == *only).cloned().map(Found::Read),
            },
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;
    use crate::session::PRIMARY_SESSION;

    fn event(id: &str, detail: &str) -> MailboxEvent {
        MailboxEvent {
            event_id: id.into(),
            source: "job_backup".into(),
            summary: format!("update {id}"),
            detail: Some(detail.into()),
            created_at: 1,
            event_type: "job_completed".into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn an_acknowledged_update_can_still_be_opened_by_its_id() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaStore::open(dir.path(), Arc::new(ManualClock::new(1_000))).unwrap();
        meta.deposit(PRIMARY_SESSION, event("3f2a9c71-aaaa", "all of it"))
            .await
            .unwrap();
        meta.deposit(PRIMARY_SESSION, event("3f2a9c71-bbbb", "the other"))
            .await
            .unwrap();
        assert!(matches!(
            meta.find_update(PRIMARY_SESSION, "3f2a9c71-aaaa").unwrap(),
            Some(Found::Waiting(e)) if e.detail.as_deref() == Some("all of it")
        ));
        meta.prepare_drain(PRIMARY_SESSION).await.unwrap();
        meta.ack_drain(PRIMARY_SESSION, &["3f2a9c71-aaaa".into()])
            .await
            .unwrap();
        assert_eq!(
            meta.find_update(PRIMARY_SESSION, "3f2a9c71-aaaa").unwrap(),
            Some(Found::Read(event("3f2a9c71-aaaa", "all of it")))
        );
        // A prefix names one update only when it is unique.
        assert!(meta.find_update(PRIMARY_SESSION, "3f2a9c71").unwrap().is_none());
        assert!(matches!(
            meta.find_update(PRIMARY_SESSION, "3f2a9c71-b").unwrap(),
            Some(Found::Waiting(_))
        ));
        assert!(meta.find_update(PRIMARY_SESSION, "nope").unwrap().is_none());
    }

    #[test]
    fn the_archive_keeps_its_newer_half_past_its_bound_and_skips_a_torn_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("main.updates.ndjson");
        let detail = "d".repeat(4000);
        fs::write(&path, b"{\"event_id\":\"torn").unwrap();
        for i in 0..600 {
            append(&path, &[event(&format!("e{i:04}"), &detail)]).unwrap();
        }
        let len = fs::metadata(&path).unwrap().len();
        assert!(len <= ARCHIVE_MAX_BYTES, "{len}");
        let text = fs::read_to_string(&path).unwrap();
        let ids: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<MailboxEvent>(l).unwrap().event_id)
            .collect();
        assert_eq!(ids.last().map(String::as_str), Some("e0599"));
        // Whole lines, newest kept, in order, none twice.
        let first: usize = ids[0][1..].parse().unwrap();
        assert_eq!(ids, (first..600).map(|i| format!("e{i:04}")).collect::<Vec<_>>());
    }
}
