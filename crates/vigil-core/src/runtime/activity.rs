//! Keeping the computer awake while work runs (issue 19 item 7): the runtime counts its busy
//! lanes (turns, continuations, heartbeat runs, routine jobs) and its running commands, and
//! the sleep inhibitor holds a logind lock while the count is above zero.

use std::sync::atomic::Ordering;

use super::Runtime;
use crate::inhibit::{InhibitorStatus, SleepInhibitor};

impl Runtime {
    /// Turns keeping the computer awake on or off at once (the `keep_awake` setting).
    pub fn set_keep_awake(&self, on: bool) {
        self.inner.away.keep_awake.store(on, Ordering::Relaxed);
        if let Some(inhibitor) = self.inner.away.inhibitor.get() {
            inhibitor.set_enabled(on);
        }
    }

    /// What Settings shows: off, unavailable (and why), idle, or holding a lock.
    pub fn keep_awake_status(&self) -> InhibitorStatus {
        match self.inner.away.inhibitor.get() {
            Some(inhibitor) => inhibitor.status(),
            None if self.inner.away.keep_awake.load(Ordering::Relaxed) => InhibitorStatus::Idle,
            None => InhibitorStatus::Off,
        }
    }

    /// The bus logind is asked on instead of the system bus (tests); call before
    /// [`Runtime::start_background`].
    pub fn set_logind_bus(&self, address: &str) {
        *self.inner.away.logind_bus.lock().unwrap_or_else(|e| e.into_inner()) = Some(address.to_string());
    }

    /// Starts the inhibitor with the background work (it needs a tokio runtime).
    pub(super) fn start_inhibitor(&self) {
        let bus = self
            .inner
            .away
            .logind_bus
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let enabled = self.inner.away.keep_awake.load(Ordering::Relaxed);
        if self
            .inner
            .away
            .inhibitor
            .set(SleepInhibitor::start(enabled, bus))
            .is_ok()
        {
            self.activity_changed();
        }
    }

    /// How many things run now: busy lanes plus running commands.
    pub fn running_tasks(&self) -> usize {
        let lanes = self.inner.conversations.lanes.busy().len();
        lanes + self.inner.processes.running_commands.load(Ordering::Relaxed)
    }

    /// Tells the inhibitor the new count; call after a lane turns busy or free, and after a
    /// command starts or ends.
    pub(super) fn activity_changed(&self) {
        if let Some(inhibitor) = self.inner.away.inhibitor.get() {
            inhibitor.set_running(self.running_tasks());
        }
    }
}
