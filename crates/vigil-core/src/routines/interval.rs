//! The heartbeat's interval, timed by the scheduler's one loop.
//!
//! Must never: run the heartbeat itself (it asks through [`crate::wake`]).

use std::time::Duration;

use tokio::time::Instant;
use vigil_protocol::WakeReason;

use crate::heartbeat::{Heartbeat, AGENT};
use crate::wake::Wake;

/// The heartbeat's interval, timed by [`Scheduler::run`]: the one loop that owns timing.
/// Counted from when the interval was set, so retries and event-driven runs never move it;
/// after a long sleep (a suspended laptop) it fires once, not a burst. The idle gate
/// ([`Heartbeat::interval_factor`]) stretches the period from the last interval run: quiet
/// runs with the user away double it, a user message brings the next run within one interval.
pub struct IntervalTimer {
    heartbeat: Heartbeat,
    wake: Wake,
    current: Option<Duration>,
    due: Option<Instant>,
    /// The idle gate's factor `due` was computed with, and when the last interval run fired.
    factor: u32,
    last_fired: Option<Instant>,
}

impl IntervalTimer {
    pub fn new(heartbeat: Heartbeat, wake: Wake) -> Self {
        Self {
            heartbeat,
            wake,
            current: None,
            due: None,
            factor: 1,
            last_fired: None,
        }
    }

    fn refresh(&mut self) {
        let interval = self.heartbeat.interval();
        if interval != self.current {
            self.current = interval;
            self.due = interval.map(|i| Instant::now() + i);
            self.factor = 1;
            self.last_fired = None;
            self.heartbeat.set_next_due(self.due);
        }
        let factor = self.heartbeat.interval_factor().max(1);
        if factor != self.factor {
            if let (Some(i), Some(last), Some(due)) = (self.current, self.last_fired, self.due) {
                // Stretched from the last run; back to normal (a user message): within one
                // interval from now, never later than it was going to be.
                self.due = Some(if factor < self.factor {
                    due.min(Instant::now() + i)
                } else {
                    last + i * factor
                });
                self.heartbeat.set_next_due(self.due);
            }
            self.factor = factor;
        }
    }

    /// Asks for an `interval` run if one is due.
    pub fn fire_if_due(&mut self) {
        self.refresh();
        let (Some(i), Some(d)) = (self.current, self.due) else {
            return;
        };
        let now = Instant::now();
        if now < d {
            return;
        }
        self.wake.request_wake(WakeReason::Interval, AGENT);
        // Counted from the time it was due, unless that is more than an interval ago (a sleep).
        let base = if d + i > now { d } else { now };
        self.last_fired = Some(base);
        let next = base + i * self.factor;
        self.due = Some(next);
        self.heartbeat.set_next_due(self.due);
    }

    /// The earlier of the next interval run and `other`.
    pub fn deadline(&mut self, other: Instant) -> Instant {
        self.refresh();
        self.due.map_or(other, |d| d.min(other))
    }

    pub async fn config_changed(&self) {
        self.heartbeat.config_changed().await
    }
}
