//! The wake loop on paused tokio time: no test waits for a real schedule.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;
use crate::clock::ManualClock;

/// Records each call (wake, when) and answers from a script, then `Done`.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(PendingWake, Instant)>>,
    answers: Mutex<VecDeque<WakeOutcome>>,
    /// How long each run takes.
    run_time: Duration,
    running: AtomicUsize,
    max_running: AtomicUsize,
}

#[async_trait::async_trait]
impl WakeHandler for Recorder {
    async fn on_wake(&self, wake: PendingWake) -> WakeOutcome {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(now, Ordering::SeqCst);
        self.calls.lock().unwrap().push((wake, Instant::now()));
        tokio::time::sleep(self.run_time).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        self.answers.lock().unwrap().pop_front().unwrap_or(WakeOutcome::Done)
    }
}

impl Recorder {
    fn reasons(&self) -> Vec<WakeReason> {
        self.calls.lock().unwrap().iter().map(|(w, _)| w.reason).collect()
    }
}

fn start(config: WakeConfig) -> (Wake, CancellationToken, TaskTracker) {
    let shutdown = CancellationToken::new();
    let tasks = TaskTracker::new();
    let wake = Wake::start(config, Arc::new(ManualClock::new(1_000)), shutdown.clone(), &tasks);
    (wake, shutdown, tasks)
}

async fn settle(d: Duration) {
    tokio::time::sleep(d).await;
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_requests_in_one_window_make_one_run() {
    let (wake, _stop, _tasks) = start(WakeConfig::default());
    let rec = Arc::new(Recorder::default());
    let _reg = wake.set_handler(rec.clone());
    let t0 = Instant::now();
    for _ in 0..10_000 {
        wake.request_wake(WakeReason::Wake, "main");
    }
    settle(Duration::from_secs(5)).await;
    let calls = rec.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].1 - t0,
        Duration::from_millis(250),
        "fires once the window closes"
    );
    let stats = wake.stats();
    assert_eq!((stats.requested, stats.coalesced, stats.handled), (10_000, 9_999, 1));
}

#[tokio::test(start_paused = true)]
async fn higher_priority_replaces_and_equal_priority_latest_wins() {
    let (wake, _stop, _tasks) = start(WakeConfig::default());
    let rec = Arc::new(Recorder::default());
    let _reg = wake.set_handler(rec.clone());
    // action < default < interval < retry
    wake.request_wake(WakeReason::Manual, "main");
    wake.request_wake(WakeReason::ExecEvent, "main");
    wake.request_wake(WakeReason::Interval, "main");
    wake.request_wake(WakeReason::Manual, "main");
    wake.request_wake(WakeReason::ExecEvent, "main");
    settle(Duration::from_secs(1)).await;
    // Equal priority: the latest request wins.
    wake.request_wake(WakeReason::ExecEvent, "main");
    wake.request_wake(WakeReason::Cron, "main");
    settle(Duration::from_secs(1)).await;
    // Targets do not replace each other.
    wake.request_wake(WakeReason::Cron, "a");
    wake.request_wake(WakeReason::Manual, "b");
    settle(Duration::from_secs(1)).await;
    assert_eq!(
        rec.reasons(),
        [
            WakeReason::Interval,
            WakeReason::Cron,
            WakeReason::Cron,
            WakeReason::Manual
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_busy_lane_is_retried_after_one_second_then_two() {
    let (wake, _stop, _tasks) = start(WakeConfig::default());
    let rec = Arc::new(Recorder::default());
    rec.answers
        .lock()
        .unwrap()
        .extend([WakeOutcome::Busy, WakeOutcome::Busy]);
    let _reg = wake.set_handler(rec.clone());
    wake.request_wake(WakeReason::ExecEvent, "main");
    settle(Duration::from_millis(300)).await;
    // A new request does not pull the retry forward.
    wake.request_wake(WakeReason::Manual, "main");
    settle(Duration::from_secs(5)).await;
    let calls = rec.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 3, "{calls:?}");
    assert_eq!(calls[1].1 - calls[0].1, Duration::from_secs(1));
    assert_eq!(calls[2].1 - calls[1].1, Duration::from_secs(2));
    assert_eq!(calls[1].0.reason, WakeReason::Retry);
    assert_eq!(calls[1].0.retry_of, Some(WakeReason::ExecEvent));
    assert_eq!(calls[2].0.effective_reason(), WakeReason::ExecEvent);
    assert_eq!(wake.stats().retried, 2);
}

/// Issue 20 item 7: a conversation busy for a whole minute costs six tries, not sixty, and
/// the retries settle at one a minute.
#[tokio::test(start_paused = true)]
async fn busy_retries_back_off_to_one_a_minute() {
    let (wake, _stop, _tasks) = start(WakeConfig::default());
    let rec = Arc::new(Recorder::default());
    rec.answers.lock().unwrap().extend([WakeOutcome::Busy; 200]);
    let _reg = wake.set_handler(rec.clone());
    wake.request_wake(WakeReason::Interval, "main");
    settle(Duration::from_millis(300)).await;
    let first = rec.calls.lock().unwrap()[0].1;
    settle(Duration::from_secs(60)).await;
    let gaps = |calls: &[(PendingWake, Instant)]| -> Vec<u64> {
        calls.windows(2).map(|w| (w[1].1 - w[0].1).as_secs()).collect()
    };
    let calls = rec.calls.lock().unwrap().clone();
    assert_eq!(calls[0].1, first);
    assert_eq!(gaps(&calls), [1, 2, 4, 8, 16], "in the first minute");
    assert_eq!(calls.len(), 6);
    settle(Duration::from_secs(10 * 60)).await;
    let calls = rec.calls.lock().unwrap().clone();
    let later = gaps(&calls);
    assert_eq!(later[5], 32);
    assert!(
        later.len() > 12 && later[6..].iter().all(|&g| g == 60),
        "capped at 60 s: {later:?}"
    );
    assert_eq!(calls.last().unwrap().0.busy_retries as usize, calls.len() - 1);
    assert_eq!(wake.requests_waiting(), 1, "the interval request is still owed");
    // A run that goes through ends the back-off: the next busy run waits 1 s again.
    rec.answers.lock().unwrap().clear();
    settle(Duration::from_secs(61)).await;
    assert_eq!(wake.requests_waiting(), 0);
    rec.answers.lock().unwrap().extend([WakeOutcome::Busy]);
    let before = rec.calls.lock().unwrap().len();
    wake.request_wake(WakeReason::Manual, "main");
    settle(Duration::from_millis(300)).await;
    settle(Duration::from_secs(1)).await;
    let calls = rec.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), before + 2);
    assert_eq!(calls[before + 1].1 - calls[before].1, Duration::from_secs(1));
}

/// Issue 20 item 7: a failed run is tried again 30 s, then 60 s later, as long as the
/// handler asks; each retry knows how many tries failed before it.
#[tokio::test(start_paused = true)]
async fn failed_runs_are_retried_with_back_off_while_the_handler_asks() {
    let (wake, _stop, _tasks) = start(WakeConfig::default());
    let rec = Arc::new(Recorder::default());
    rec.answers.lock().unwrap().extend([
        WakeOutcome::Failed,
        WakeOutcome::Busy,
        WakeOutcome::Failed,
        WakeOutcome::Failed,
    ]);
    let _reg = wake.set_handler(rec.clone());
    wake.request_wake(WakeReason::Manual, "main");
    settle(Duration::from_secs(10 * 60)).await;
    let calls = rec.calls.lock().unwrap().clone();
    let at: Vec<u64> = calls.iter().map(|c| (c.1 - calls[0].1).as_secs()).collect();
    assert_eq!(at, [0, 30, 31, 91, 151], "30 s, busy 1 s, then 60 s and 60 s");
    let failures: Vec<u32> = calls.iter().map(|c| c.0.failures).collect();
    assert_eq!(failures, [0, 1, 1, 2, 3]);
    assert!(calls[1..].iter().all(|c| c.0.effective_reason() == WakeReason::Manual));
    let stats = wake.stats();
    assert_eq!((stats.retried, stats.retried_failed), (1, 3));
    assert_eq!(stats.by_reason, [(WakeReason::Manual, 1)].into_iter().collect());
}

#[tokio::test(start_paused = true)]
async fn one_run_at_a_time_and_requests_meanwhile_run_after() {
    let (wake, _stop, _tasks) = start(WakeConfig::default());
    let rec = Arc::new(Recorder {
        run_time: Duration::from_secs(10),
        ..Default::default()
    });
    let _reg = wake.set_handler(rec.clone());
    wake.request_wake(WakeReason::Wake, "main");
    settle(Duration::from_secs(1)).await;
    for _ in 0..5 {
        wake.request_wake(WakeReason::Cron, "main");
        settle(Duration::from_secs(1)).await;
    }
    settle(Duration::from_secs(30)).await;
    assert_eq!(rec.reasons(), [WakeReason::Wake, WakeReason::Cron]);
    assert_eq!(rec.max_running.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn event_wakes_keep_a_minimum_spacing_without_being_dropped() {
    let (wake, _stop, _tasks) = start(WakeConfig::default());
    let rec = Arc::new(Recorder::default());
    let _reg = wake.set_handler(rec.clone());
    let t0 = Instant::now();
    wake.request_wake(WakeReason::ExecEvent, "main");
    settle(Duration::from_secs(2)).await;
    for _ in 0..100 {
        wake.request_wake(WakeReason::ExecEvent, "main");
        settle(Duration::from_millis(100)).await;
    }
    settle(Duration::from_secs(60)).await;
    let calls = rec.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2, "a burst of 100 exits is one more run: {calls:?}");
    assert_eq!(calls[0].1 - t0, Duration::from_millis(250));
    assert_eq!(calls[1].1 - calls[0].1, Duration::from_secs(30));
    // Long after, an exit runs at once; the next one waits again…
    wake.request_wake(WakeReason::ExecEvent, "main");
    settle(Duration::from_secs(1)).await;
    wake.request_wake(WakeReason::ExecEvent, "main");
    settle(Duration::from_secs(1)).await;
    assert_eq!(rec.reasons().len(), 3);
    // …but an interval wake (higher priority, replacing it) is not held back.
    wake.request_wake(WakeReason::Interval, "main");
    settle(Duration::from_secs(1)).await;
    assert_eq!(rec.reasons()[2..], [WakeReason::ExecEvent, WakeReason::Interval]);
}

#[tokio::test(start_paused = true)]
async fn a_stale_registration_cannot_remove_a_newer_handler() {
    let (wake, _stop, _tasks) = start(WakeConfig::default());
    let old = Arc::new(Recorder::default());
    let new = Arc::new(Recorder::default());
    let reg_old = wake.set_handler(old.clone());
    let reg_new = wake.set_handler(new.clone());
    reg_old.release();
    assert!(wake.has_handler());
    wake.request_wake(WakeReason::Manual, "main");
    settle(Duration::from_secs(1)).await;
    assert_eq!((old.reasons().len(), new.reasons().len()), (0, 1));
    drop(reg_new);
    assert!(!wake.has_handler());
    // Without a handler a wake waits; the next handler runs it.
    wake.request_wake(WakeReason::Cron, "main");
    settle(Duration::from_secs(1)).await;
    assert_eq!(wake.pending().len(), 1);
    let _reg = wake.set_handler(old.clone());
    settle(Duration::from_secs(1)).await;
    assert_eq!(old.reasons(), [WakeReason::Cron]);
}

#[tokio::test(start_paused = true)]
async fn a_restart_keeps_pending_and_running_wakes() {
    let dir = tempfile::tempdir().unwrap();
    let config = WakeConfig {
        persist_path: Some(dir.path().join("wake/pending.json")),
        ..Default::default()
    };
    // Before any handler: the request is pending and saved.
    let (wake, stop, tasks) = start(config.clone());
    wake.request_wake(WakeReason::ExecEvent, "main");
    settle(Duration::from_secs(1)).await;
    stop.cancel();
    tasks.close();
    tasks.wait().await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("wake")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "the wake folder is the user's alone");
    }
    let (wake, stop, tasks) = start(config.clone());
    assert_eq!(wake.pending().len(), 1);
    assert_eq!(wake.pending()[0].reason, WakeReason::ExecEvent);
    // A wake whose run is cut short by the restart is not lost either.
    let slow = Arc::new(Recorder {
        run_time: Duration::from_secs(3600),
        ..Default::default()
    });
    let _reg = wake.set_handler(slow.clone());
    settle(Duration::from_secs(1)).await;
    assert_eq!(slow.reasons(), [WakeReason::ExecEvent]);
    assert!(wake.pending().is_empty());
    stop.cancel();
    tasks.close();
    tasks.wait().await;
    let (wake, _stop, _tasks) = start(config);
    assert_eq!(wake.pending().len(), 1, "the interrupted run is pending again");
    let rec = Arc::new(Recorder::default());
    let _reg = wake.set_handler(rec.clone());
    settle(Duration::from_secs(1)).await;
    assert_eq!(rec.reasons(), [WakeReason::ExecEvent]);
    settle(Duration::from_secs(1)).await;
    let saved = std::fs::read_to_string(dir.path().join("wake/pending.json")).unwrap();
    assert_eq!(saved, r#"{"version":1,"pending":[]}"#, "done wakes leave the file");
}
