//! The scheduler's loop waits quietly when a routine is past due but cannot run (paused,
//! or a schedule it cannot use): the runtime's thread neither wakes over and over nor burns
//! CPU without sleeping, and the routine runs once it can.

use std::time::Duration;

use vigil_core::protocol::Event;
use vigil_fake_llm::{Script, Step};

use super::routines::{add_hourly_job, rig, until};

/// How often this thread went to sleep and was woken: the runtime of a `#[tokio::test]`
/// runs on it, so every turn of a loop that waits on anything counts.
fn thread_wakes() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("voluntary_ctxt_switches:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The CPU time this thread has used, in nanoseconds (the first field of its schedstat). A
/// loop that never waits (a `yield_now` spin, a poll with no timeout) is never woken, since
/// it never sleeps: only the time it burns shows it.
fn thread_cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    stat.split_whitespace().next().unwrap().parse().unwrap()
}

/// A loop that waits 0 ms per turn wakes ~900 times a second here (tokio's timer rounds up to
/// the millisecond); the rest of the runtime, still starting on a loaded machine, far less.
const SPIN: u64 = 100;

/// CPU time in one second of an idle runtime that counts as spinning: a loop that never
/// waits takes all of the second it is given (a quarter of it even with eight busy processes
/// on two cores); an idle runtime takes a few milliseconds.
const SPIN_CPU_MS: u64 = 100;

/// How often the runtime's thread woke, and how many milliseconds of CPU it used, over one
/// second after the runtime's start has settled.
async fn a_second_of_the_thread() -> (u64, u64) {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (wakes, cpu) = (thread_wakes(), thread_cpu_ns());
    tokio::time::sleep(Duration::from_secs(1)).await;
    (thread_wakes() - wakes, (thread_cpu_ns() - cpu) / 1_000_000)
}

#[tokio::test]
async fn while_paused_a_routine_past_due_does_not_spin_the_loop_and_runs_on_resume() {
    let (rt, mut rx, clock, fake, _dir) = rig(Script::steps(vec![]).with_fallback(Step::text("Tidied."))).await;
    rt.start_background();
    rt.set_paused(true);
    add_hourly_job(&rt, "Tidy downloads").await;
    clock.advance(Duration::from_secs(2 * 3600));
    // The loop looks, and finds it past due and paused.
    rt.scheduler().poke();
    let (wakes, cpu_ms) = a_second_of_the_thread().await;
    assert!(
        wakes < SPIN,
        "the runtime's thread woke {wakes} times in 1 s while paused"
    );
    assert!(
        cpu_ms < SPIN_CPU_MS,
        "the runtime's thread used {cpu_ms} ms of CPU in 1 s while paused"
    );
    assert_eq!(fake.request_count(), 0, "nothing runs while paused");
    rt.set_paused(false);
    until(&mut rx, |seen| {
        seen.iter().any(|e| {
            matches!(e.event, Event::TurnFinished { .. })
                && e.session_id
                    .as_deref()
                    .is_some_and(|s| s.starts_with("job_tidy_downloads"))
        })
    })
    .await;
    rt.shutdown().await;
}

#[tokio::test]
async fn a_routine_past_due_that_cannot_run_does_not_spin_the_loop() {
    let (rt, _rx, clock, fake, _dir) = rig(Script::steps(vec![]).with_fallback(Step::text("Tidied."))).await;
    rt.start_background();
    add_hourly_job(&rt, "Tidy downloads").await;
    // A zone misspelt by hand: the routine stays pending with its due time, and cannot run.
    let file = rt.workspace().join("HEARTBEAT.md");
    let text = std::fs::read_to_string(&file).unwrap();
    let zone = text
        .lines()
        .find(|l| l.contains("\"timezone\": \""))
        .unwrap()
        .to_string();
    std::fs::write(&file, text.replace(&zone, "      \"timezone\": \"Europe/Berln\",")).unwrap();
    clock.advance(Duration::from_secs(2 * 3600));
    // The loop looks, and finds it past due.
    rt.scheduler().poke();
    let (wakes, cpu_ms) = a_second_of_the_thread().await;
    assert!(wakes < SPIN, "the runtime's thread woke {wakes} times in 1 s");
    assert!(
        cpu_ms < SPIN_CPU_MS,
        "the runtime's thread used {cpu_ms} ms of CPU in 1 s"
    );
    assert_eq!(fake.request_count(), 0, "nothing could run");
    let view = rt.routines();
    let tidy = view.routines.iter().find(|r| r.id == "tidy_downloads").unwrap();
    assert!(
        tidy.error_message.as_deref().is_some_and(|e| e.contains("Berln")),
        "{:?}",
        tidy.error_message
    );
    rt.shutdown().await;
}
