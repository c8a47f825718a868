//! The last good routines, kept running while a hand edit has broken the task block.
//!
//! The snapshot (`.heartbeat_snapshot.json`, a copy of every good block) is their home while
//! the block is corrupted: the scheduler's claims and results go there, and the routines it
//! names are marked *ahead* of the file. Two ways out:
//! - a change someone asks for repairs the block from the snapshot plus the change
//!   ([`repaired`]), the broken file kept as `HEARTBEAT.md.corrupt`;
//! - the user fixes the JSON by hand: the block they wrote back still holds the state from
//!   before, so at the next write the runs made meanwhile are brought back into it
//!   ([`RoutineStore::bring_back_runs`]): a routine that ran at 01:00 while the file was broken
//!   does not run at 01:00 again.
//!
//! Must never: touch the broken file while it is broken (only a repair someone asked for
//! replaces it, after keeping it), or bring back anything but the scheduler's bookkeeping (the
//! user's fix of a title or a schedule stands).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::{find_block, render, RoutineStore, StoreError, HEARTBEAT_FILE};
use crate::durable::write_atomic;
use crate::routines::block::{block_json, parse, Entry, Parsed};
use crate::routines::model::Routine;
use crate::routines::store::Refusal;

impl RoutineStore {
    /// The last good routines: the snapshot's.
    pub(super) fn last_good(&self) -> Result<(Vec<Entry>, Map<String, Value>), StoreError> {
        let path = self.snapshot_path();
        let snap = std::fs::read_to_string(&path).map_err(|source| StoreError::Io {
            action: "read",
            path: path.clone(),
            source,
        })?;
        match parse(&format!("## Tasks\n\n```json\n{snap}\n```\n")) {
            Parsed::Ok { entries, extra } => Ok((entries, extra)),
            _ => Err(StoreError::Rejected(Refusal::new(format!(
                "{} is not readable either",
                path.display()
            )))),
        }
    }

    /// The routines whose bookkeeping is in the snapshot and not yet in the file.
    pub(super) fn ahead(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.inner.ahead.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The scheduler's change while the block is corrupted: to the snapshot, and the routines
    /// it touched marked ahead of the file. The caller holds the lock.
    pub(super) fn keep_ahead(
        &self,
        before: &[Entry],
        after: &[Entry],
        extra: &Map<String, Value>,
    ) -> Result<(), StoreError> {
        self.write_snapshot(&block_json(after, extra))
            .map_err(|source| StoreError::Io {
                action: "write",
                path: self.snapshot_path(),
                source,
            })?;
        let mut ahead = self.ahead();
        for entry in after {
            if !before.contains(entry) {
                ahead.extend(entry.id().map(String::from));
            }
        }
        drop(ahead);
        // The file did not change; the routines in force did.
        *self.cache() = None;
        Ok(())
    }

    /// Keeps the broken file as `HEARTBEAT.md.corrupt` before a repair replaces it.
    pub(super) fn keep_corrupt(&self, text: &str) -> Result<(), StoreError> {
        let path = self.inner.workspace.join(format!("{HEARTBEAT_FILE}.corrupt"));
        write_atomic(&path, text.as_bytes())
            .map(|_| ())
            .map_err(|source| StoreError::Io {
                action: "write",
                path,
                source,
            })
    }

    /// A block fixed by hand while the snapshot was ahead: the runs made meanwhile go back into
    /// `entries`. Whether the file must be written (the snapshot was ahead).
    pub(super) fn bring_back_runs(&self, entries: &mut [Entry]) -> bool {
        let ahead = self.ahead().clone();
        if ahead.is_empty() {
            return false;
        }
        let Ok((kept, _)) = self.last_good() else {
            return true;
        };
        for entry in entries.iter_mut() {
            let Ok(into) = &mut entry.routine else { continue };
            if !ahead.contains(&into.id) {
                continue;
            }
            let from = kept
                .iter()
                .filter_map(|e| e.routine.as_ref().ok())
                .find(|r| r.id == into.id);
            if let Some(from) = from {
                take_runs(into, from);
            }
        }
        true
    }
}

/// `into` with the scheduler's bookkeeping of `from`: where it stands, when it ran and runs
/// next, its retries, its claim and its evidence. Not what the user defines.
fn take_runs(into: &mut Routine, from: &Routine) {
    into.state = from.state;
    into.last_run_at = from.last_run_at;
    into.next_run_at = from.next_run_at;
    into.retry = from.retry;
    into.error_message.clone_from(&from.error_message);
    into.claimed_by.clone_from(&from.claimed_by);
    into.run_started_at = from.run_started_at;
    into.due_at = from.due_at;
    into.run_id.clone_from(&from.run_id);
    into.side_effect.clone_from(&from.side_effect);
    into.missed_count = from.missed_count;
    into.missed_from = from.missed_from;
    into.unknown_run.clone_from(&from.unknown_run);
    into.announced = from.announced;
}

/// The broken `text` with a valid block of `entries`: in place of the broken block's
/// contents, or, when its fence is not closed, after everything before its `## Tasks`.
pub(super) fn repaired(text: &str, entries: &[Entry], extra: &Map<String, Value>) -> String {
    match find_block(text) {
        Ok(Some(_)) => render(text, entries, extra),
        _ => {
            let cut = text.find("## Tasks").unwrap_or(text.len());
            render(&text[..cut], entries, extra)
        }
    }
}
