//! # images::budget
//!
//! The memory every image decode in the process shares, handed out first come, first
//! served: a decode takes its whole cost before it starts, gives it back when it ends, and
//! waits while the others hold too much of it. Large images read in parallel therefore
//! decode one after another, and small ones still side by side.
//!
//! Must never: hand out more than its total at once, or let a decode that waits be
//! overtaken forever (waiters are served in the order they came).

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// Bytes shared by decodes. A `std` mutex and condvar, not Tokio's: decodes run on blocking
/// threads (`spawn_blocking`), which may wait.
pub(super) struct Budget {
    total: u64,
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug)]
struct State {
    taken: u64,
    /// The ticket the next caller of [`Budget::take`] draws.
    next_ticket: u64,
    /// The ticket whose turn it is; the ones after it wait even if they would fit.
    serving: u64,
}

/// Bytes taken from a [`Budget`], given back when dropped.
#[must_use = "the bytes are given back when the lease is dropped"]
pub(super) struct Lease<'a> {
    budget: &'a Budget,
    bytes: u64,
}

impl Budget {
    pub const fn new(total: u64) -> Self {
        Self {
            total,
            state: Mutex::new(State {
                taken: 0,
                next_ticket: 0,
                serving: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// Waits for its turn and for `bytes` to fit, and takes them; `None` at once if they
    /// could never fit.
    pub fn take(&self, bytes: u64) -> Option<Lease<'_>> {
        if bytes > self.total {
            return None;
        }
        let mut state = self.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        while state.serving != ticket || state.taken + bytes > self.total {
            state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.serving += 1;
        state.taken += bytes;
        drop(state);
        // The next in line may fit beside this one.
        self.changed.notify_all();
        Some(Lease { budget: self, bytes })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Callers waiting in [`Self::take`].
    #[cfg(test)]
    fn waiting(&self) -> u64 {
        let state = self.lock();
        state.next_ticket - state.serving
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.budget.lock().taken -= self.bytes;
        self.budget.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    /// Starts a thread that takes `bytes` and reports it; returns once `waiting` callers
    /// wait in line.
    fn queue(budget: &'static Budget, bytes: u64, done: &mpsc::Sender<u64>, waiting: u64) {
        let done = done.clone();
        std::thread::spawn(move || {
            let _lease = budget.take(bytes);
            done.send(bytes).unwrap();
        });
        while budget.waiting() < waiting {
            std::thread::yield_now();
        }
    }

    #[test]
    fn more_than_the_total_is_refused_at_once() {
        static BUDGET: Budget = Budget::new(100);
        assert!(BUDGET.take(101).is_none());
        let all = BUDGET.take(100);
        assert!(all.is_some());
    }

    #[test]
    fn takers_wait_in_order_until_what_they_need_is_given_back() {
        static BUDGET: Budget = Budget::new(100);
        let (tx, rx) = mpsc::channel();
        let first = BUDGET.take(60).unwrap();
        // 50 does not fit beside 60; 10 would, but it came later and waits its turn.
        queue(&BUDGET, 50, &tx, 1);
        queue(&BUDGET, 10, &tx, 2);
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Empty));
        drop(first);
        // Both fit together once the 60 is back; which reports first is up to the threads.
        let mut served = [rx.recv().unwrap(), rx.recv().unwrap()];
        served.sort_unstable();
        assert_eq!(served, [10, 50]);
    }
}
