//! # drain — which turn holds a mailbox event between showing it and acknowledging it
//!
//! Seed 003 §4.5 drains a mailbox in two steps: `prepare_drain` gives a turn the waiting
//! events, `ack_drain` removes them once the turn has succeeded. Within one process the
//! session's lane keeps two turns of a conversation apart, but two processes on one data
//! folder (the app and `vigil-headless`) each have their own lanes: both turns would be
//! shown the same update and both would acknowledge it. So [`MetaStore::prepare_drain`]
//! *claims* what it hands out, in the metadata, under the session lock; a turn of another
//! process leaves a claimed event alone. A claim ends with the ack, with
//! [`MetaStore::release_drain`] after a failed turn, or when its holder is gone.
//!
//! Must never: hide an event for good. A claim whose process has died (a crash between
//! showing and acknowledging), or that is older than [`CLAIM_LIMIT_MS`] (a reused pid), no
//! longer counts, and the event goes to the next turn as seed 003 wants after a crash.

use std::sync::atomic::Ordering;

use super::archive;
pub use super::mailbox::{DrainClaim, CLAIM_LIMIT_MS};
use super::meta::{MailboxEvent, MetaStore, SessionMeta};
use super::suffix;
use super::SessionError;

impl MetaStore {
    /// Removes the events a successful turn consumed (seed 003 §4.5 `ack_drain`); events
    /// that arrived meanwhile stay. What it removes is kept in the session's archive of read
    /// updates ([`super::archive`]), under the same lock, so the agent can still open it.
    pub async fn ack_drain(&self, id: &str, event_ids: &[String]) -> Result<SessionMeta, SessionError> {
        let archive = self.file(id, suffix::UPDATES);
        let (meta, removed) = self
            .update_atomic_async(id, |m| {
                let (read, kept): (Vec<MailboxEvent>, Vec<MailboxEvent>) = std::mem::take(&mut m.mailbox)
                    .into_iter()
                    .partition(|e| event_ids.contains(&e.event_id));
                m.mailbox = kept;
                if let Err(e) = archive::append(&archive, &read) {
                    tracing::warn!("could not keep the read updates in {}: {e}", archive.display());
                }
                read.len()
            })
            .await?;
        self.mailbox_counts.drained.fetch_add(removed as u64, Ordering::Relaxed);
        Ok(meta)
    }

    /// The mailbox events a turn of `id` may show, claimed for it; events another live
    /// process is showing are left out. Writes nothing when nothing can be claimed.
    pub async fn prepare_drain(&self, id: &str) -> Result<Vec<MailboxEvent>, SessionError> {
        let now = self.now_ms();
        let store = self.instance().to_string();
        let claimable = |e: &MailboxEvent| !e.claim.as_ref().is_some_and(|c| c.holds_against(&store, now));
        if !self.load(id)?.meta.mailbox.iter().any(claimable) {
            return Ok(vec![]);
        }
        let (_, taken) = self
            .update_atomic_async(id, |m| {
                let mut taken = Vec::new();
                for e in m.mailbox.iter_mut().filter(|e| claimable(e)) {
                    e.claim = Some(DrainClaim {
                        pid: std::process::id(),
                        store: store.clone(),
                        at_ms: now,
                    });
                    taken.push(e.clone());
                }
                taken
            })
            .await?;
        Ok(taken)
    }

    /// Gives back the events a failed turn was shown: the next turn shows them again.
    pub async fn release_drain(&self, id: &str, event_ids: &[String]) -> Result<(), SessionError> {
        let store = self.instance().to_string();
        self.update_atomic_async(id, |m| {
            for e in m.mailbox.iter_mut().filter(|e| event_ids.contains(&e.event_id)) {
                if e.claim.as_ref().is_some_and(|c| c.store == store) {
                    e.claim = None;
                }
            }
        })
        .await
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;

    fn event(id: &str) -> MailboxEvent {
        MailboxEvent {
            event_id: id.into(),
            source: "heartbeat".into(),
            summary: format!("update {id}"),
            ..MailboxEvent::default()
        }
    }

    fn store(dir: &std::path::Path, clock: &ManualClock) -> MetaStore {
        MetaStore::open(dir, Arc::new(clock.clone())).unwrap()
    }

    fn ids(events: &[MailboxEvent]) -> Vec<&str> {
        events.iter().map(|e| e.event_id.as_str()).collect()
    }

    #[tokio::test]
    async fn a_claimed_update_goes_to_one_store_until_released_or_stale() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let (a, b) = (store(dir.path(), &clock), store(dir.path(), &clock));
        a.deposit("main", event("u1")).await.unwrap();
        assert_eq!(ids(&a.prepare_drain("main").await.unwrap()), ["u1"]);
        // The other store (another process, as far as the file can tell) is not shown it.
        assert!(b.prepare_drain("main").await.unwrap().is_empty());
        b.deposit("main", event("u2")).await.unwrap();
        assert_eq!(ids(&b.prepare_drain("main").await.unwrap()), ["u2"]);
        // A failed turn gives it back; then the other store may show it (and its own
        // earlier claim is a leftover it takes again: its lane runs one turn at a time).
        a.release_drain("main", &["u1".into()]).await.unwrap();
        assert_eq!(ids(&b.prepare_drain("main").await.unwrap()), ["u1", "u2"]);
        assert!(a.prepare_drain("main").await.unwrap().is_empty());
        // b's claims age out after the limit: a takes both.
        clock.advance(std::time::Duration::from_millis(CLAIM_LIMIT_MS as u64));
        assert_eq!(ids(&a.prepare_drain("main").await.unwrap()), ["u1", "u2"]);
        a.ack_drain("main", &["u1".into(), "u2".into()]).await.unwrap();
        assert!(b.prepare_drain("main").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_claim_of_a_dead_process_does_not_count() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_700_000_000_000);
        let a = store(dir.path(), &clock);
        a.deposit("main", event("u1")).await.unwrap();
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let pid = dead.id();
        dead.wait().unwrap();
        a.update_atomic("main", |m| {
            m.mailbox[0].claim = Some(DrainClaim {
                pid,
                store: "gone".into(),
                at_ms: 1_700_000_000_000,
            })
        })
        .unwrap();
        assert_eq!(ids(&a.prepare_drain("main").await.unwrap()), ["u1"]);
    }
}
