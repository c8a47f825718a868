//! Time, injected. Everything that waits or stamps goes through a [`Clock`], so tests can
//! record the delays the runtime asked for instead of sleeping through them.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of wall-clock time and of waiting.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
    /// Wait for `d` (a retry back-off, never a schedule).
    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>>;
    /// Whether [`Self::now_ms`] is the system's wall clock, so a timer on that clock (which
    /// keeps counting while the machine sleeps) can wait for a time it gives.
    fn is_system(&self) -> bool {
        false
    }
}

/// The real clock: system time and `tokio::time::sleep`.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }

    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(d))
    }

    fn is_system(&self) -> bool {
        true
    }
}

/// A clock for tests: time moves only when something sleeps on it, and every sleep is
/// recorded so a test can assert the exact delays (e.g. that `Retry-After: 7` waited 7 s).
#[derive(Debug, Default, Clone)]
pub struct ManualClock {
    inner: Arc<Mutex<ManualState>>,
}

#[derive(Debug, Default)]
struct ManualState {
    now_ms: i64,
    sleeps: Vec<Duration>,
}

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        let clock = Self::default();
        clock.lock().now_ms = start_ms;
        clock
    }

    /// The delays asked for so far, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.lock().sleeps.clone()
    }

    pub fn advance(&self, d: Duration) {
        self.lock().now_ms += d.as_millis() as i64;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ManualState> {
        // A poisoned test clock still holds valid numbers.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.lock().now_ms
    }

    fn sleep(&self, d: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        {
            let mut state = self.lock();
            state.sleeps.push(d);
            state.now_ms += d.as_millis() as i64;
        }
        Box::pin(std::future::ready(()))
    }
}
