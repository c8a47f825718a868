//! The `HEARTBEAT.md` checklist's machine checks (`crate::routines::checklist`), run on the
//! heartbeat's interval like any routine check: approved as written, in the read-only
//! sandbox, said (no model) when the condition turns true, nothing at all while quiet.
//!
//! Must never: run while the heartbeat is off; run a check not approved as written.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Interval, Watch};
use crate::routines::checklist::is_checklist;

/// How often the loop looks again while the heartbeat is off.
const OFF_LOOK: Duration = Duration::from_secs(30 * 60);

impl Watch {
    /// Sets where the heartbeat's interval is read (the checklist's checks run on it).
    pub fn set_checklist_every(&self, every: Interval) {
        let _ = self.shared.checklist_every.set(every);
    }

    /// Runs every checklist check once now (what each heartbeat interval does): an
    /// unapproved one asks once, a quiet one does nothing, a true one tells the user.
    pub async fn run_checklist(&self) {
        for r in self.routines().into_iter().filter(|r| is_checklist(&r.id)) {
            self.fire(&r.id, String::new()).await;
        }
    }

    /// The checklist's clock: one timer, on the heartbeat's interval.
    pub(super) async fn checklist_loop(self, shutdown: CancellationToken) {
        loop {
            let every = self.shared.checklist_every.get().and_then(|f| f());
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(every.unwrap_or(OFF_LOOK)) => {}
            }
            if every.is_some() {
                self.run_checklist().await;
            }
        }
    }
}
