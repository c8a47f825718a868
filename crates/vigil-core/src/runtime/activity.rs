//! Keeping the computer awake while work runs (issue 19 item 7): the runtime counts its busy
//! lanes (turns, continuations, heartbeat runs, routine jobs) and its running commands, and
//! the sleep inhibitor ([`Away`]'s) holds a logind lock while the count is above zero.
//!
//! Owns: the inhibitor's switch and its start. Must never: hold a lock while nothing runs.

use std::sync::atomic::Ordering;

use super::away::Away;
use super::processes::Processes;
use crate::inhibit::{InhibitorStatus, SleepInhibitor};
use crate::run::Lanes;

impl Away {
    /// Turns keeping the computer awake on or off at once (the `keep_awake` setting).
    pub(super) fn set_keep_awake(&self, on: bool) {
        self.keep_awake.store(on, Ordering::Relaxed);
        if let Some(inhibitor) = self.inhibitor.get() {
            inhibitor.set_enabled(on);
        }
    }

    /// What Settings shows: off, unavailable (and why), idle, or holding a lock.
    pub(super) fn keep_awake_status(&self) -> InhibitorStatus {
        match self.inhibitor.get() {
            Some(inhibitor) => inhibitor.status(),
            None if self.keep_awake.load(Ordering::Relaxed) => InhibitorStatus::Idle,
            None => InhibitorStatus::Off,
        }
    }

    /// The bus logind is asked on instead of the system bus (tests).
    pub(super) fn set_logind_bus(&self, address: &str) {
        *self.logind_bus.lock().unwrap_or_else(|e| e.into_inner()) = Some(address.to_string());
    }

    /// The bus of [`Self::set_logind_bus`], `None`: the system bus.
    pub(super) fn logind_bus(&self) -> Option<String> {
        self.logind_bus.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Starts the inhibitor with the background work (it needs a tokio runtime); true the
    /// first time.
    pub(super) fn start_inhibitor(&self) -> bool {
        let bus = self.logind_bus();
        let enabled = self.keep_awake.load(Ordering::Relaxed);
        self.inhibitor.set(SleepInhibitor::start(enabled, bus)).is_ok()
    }
}

/// How many things run now: busy lanes plus running commands.
pub(super) fn running_tasks(lanes: &Lanes, processes: &Processes) -> usize {
    lanes.busy().len() + processes.running_commands.load(Ordering::Relaxed)
}

/// Tells the inhibitor the new count; call after a lane turns busy or free, and after a
/// command starts or ends.
pub(super) fn changed(away: &Away, lanes: &Lanes, processes: &Processes) {
    if let Some(inhibitor) = away.inhibitor.get() {
        inhibitor.set_running(running_tasks(lanes, processes));
    }
}
