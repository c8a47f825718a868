//! Issue 31 item 8: one bad hand edit of the task block must not stop every routine. While
//! `HEARTBEAT.md`'s block is corrupted the last good routines (the snapshot) keep running —
//! their bookkeeping goes to the snapshot, the broken file is left as it is — the user is told
//! once, and a change through the routine tools repairs the block: the last good state plus
//! the change, the broken file kept as `HEARTBEAT.md.corrupt`. On real files, with a manual
//! clock and a host that records jobs.

use std::sync::Arc;

use crate::clock::Clock;
use vigil_protocol::{Event, ExecutionMode, RoutineDraft, RoutineSource, RoutineState};

use super::scheduler_tests::{scheduler, FakeHost, MIN, T0};
use super::*;
use crate::clock::ManualClock;
use crate::events::CollectingSink;

struct Rig {
    _dir: tempfile::TempDir,
    clock: ManualClock,
    s: Scheduler,
    host: Arc<FakeHost>,
    sink: CollectingSink,
}

fn rig() -> Rig {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(T0);
    let sink = CollectingSink::default();
    let s = scheduler(dir.path(), &clock, Arc::new(sink.clone()));
    let host = Arc::new(FakeHost::default());
    s.set_host(host.clone());
    Rig {
        _dir: dir,
        clock,
        s,
        host,
        sink,
    }
}

/// A job due `at`, once.
fn once(title: &str, at: i64) -> RoutineDraft {
    RoutineDraft {
        title: Some(title.into()),
        description: Some(format!("do {title}")),
        next_run_at: Some(at),
        execution_mode: Some(ExecutionMode::Isolated),
        ..RoutineDraft::default()
    }
}

/// A job every `every`.
fn every(title: &str, every: &str) -> RoutineDraft {
    RoutineDraft {
        schedule: Some(every.into()),
        next_run_at: None,
        ..once(title, 0)
    }
}

/// What a hand edit that breaks the JSON makes of the file: a comma where none may be.
fn break_by_hand(text: &str) -> String {
    let broken = text.replacen("\"tasks\": [", "\"tasks\": [,", 1);
    assert_ne!(broken, text);
    broken
}

impl Rig {
    async fn add(&self, d: RoutineDraft) -> Routine {
        self.s.create(d, RoutineSource::Chat, true).await.unwrap().0
    }

    fn file(&self) -> String {
        std::fs::read_to_string(self.s.deps().store.path()).unwrap()
    }

    fn write_file(&self, text: &str) {
        std::fs::write(self.s.deps().store.path(), text).unwrap();
    }

    fn advance_to(&self, t: i64) {
        let now = self.clock.now_ms();
        self.clock
            .advance(std::time::Duration::from_millis((t - now).max(0) as u64));
    }

    fn outcomes(&self, id: &str) -> Vec<RunOutcome> {
        self.s.history(id).into_iter().map(|r| r.outcome).collect()
    }

    /// The notifications and errors since the last look: (title or "error", text).
    fn told(&self) -> Vec<(String, String)> {
        self.sink
            .take()
            .into_iter()
            .filter_map(|e| match e.event {
                Event::Notification { title, body, .. } => Some((title, body)),
                Event::Error { message, .. } => Some(("error".into(), message)),
                _ => None,
            })
            .collect()
    }
}

#[tokio::test]
async fn a_hand_edit_that_breaks_the_json_does_not_stop_a_routine_due_in_a_minute() {
    let r = rig();
    let job = r.add(once("Stand up", T0 + MIN)).await;
    let broken = break_by_hand(&r.file());
    r.write_file(&broken);
    r.told();

    r.advance_to(T0 + MIN);
    let t = r.s.tick().await;
    assert!(t.corrupted, "{t:?}");
    assert_eq!(
        t.claimed,
        std::slice::from_ref(&job.id),
        "the last good routines keep running"
    );
    r.s.settle().await;
    assert_eq!(r.host.runs.lock().unwrap().len(), 1);
    assert_eq!(r.outcomes(&job.id), [RunOutcome::Ok]);
    assert_eq!(r.file(), broken, "the broken file is left as the user wrote it");

    // Said once: one notification (and the error line), not one per tick.
    let told = r.told();
    let notices: Vec<_> = told.iter().filter(|(title, _)| title.contains("broken")).collect();
    assert_eq!(notices.len(), 1, "{told:?}");
    assert!(notices[0].1.contains("keep running"), "{told:?}");
    r.s.tick().await;
    assert!(
        r.told().iter().all(|(title, _)| title == "error"),
        "no second notification"
    );

    // The run is not repeated: the one-shot is done in the routines that keep running.
    r.advance_to(T0 + 10 * MIN);
    assert!(r.s.tick().await.claimed.is_empty());
    let view = r.s.view();
    assert_eq!(view.status, vigil_protocol::ParseStatus::Corrupted);
    let shown: Vec<_> = view.routines.iter().map(|v| (v.id.as_str(), v.state)).collect();
    assert_eq!(shown, [(job.id.as_str(), RoutineState::Done)], "the pane lists them");
    assert!(view.error.unwrap().starts_with("invalid JSON at line"));
}

#[tokio::test]
async fn a_routine_tool_repairs_the_block_from_the_last_good_state_plus_its_change() {
    let r = rig();
    let hourly = r.add(every("Check mail", "1h")).await;
    let good = r.file();
    let broken = break_by_hand(&good);
    r.write_file(&broken);
    // It runs while the file is broken: its next time moves on in the last good state.
    r.advance_to(T0 + 60 * MIN);
    assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&hourly.id));
    r.s.settle().await;

    let added = r.add(every("Stretch", "2h")).await;
    let repaired = r.file();
    let kept = std::fs::read_to_string(r.s.deps().store.path().with_file_name("HEARTBEAT.md.corrupt")).unwrap();
    assert_eq!(kept, broken, "the broken file is kept beside it");
    let state = r.s.deps().store.read().unwrap();
    assert!(matches!(state.parsed, Parsed::Ok { .. }), "{:?}", state.parsed);
    let routines: Vec<_> = state
        .parsed
        .entries()
        .iter()
        .map(|e| e.routine.clone().unwrap())
        .map(|x| (x.id, x.next_run_at))
        .collect();
    assert_eq!(
        routines,
        [
            (hourly.id.clone(), Some(T0 + 120 * MIN)),
            (added.id.clone(), Some(T0 + 180 * MIN))
        ],
        "the last good state, its run included, plus the change"
    );
    let outside = |text: &str| text[..text.find("## Tasks").unwrap()].to_string();
    assert_eq!(outside(&repaired), outside(&good), "the user's own text stays");
    assert_eq!(r.s.view().error, None);
}

#[tokio::test]
async fn a_block_fixed_by_hand_after_a_run_does_not_run_it_again() {
    let r = rig();
    let hourly = r.add(every("Check mail", "1h")).await;
    let good = r.file();
    r.write_file(&break_by_hand(&good));
    r.advance_to(T0 + 60 * MIN);
    assert_eq!(r.s.tick().await.claimed, std::slice::from_ref(&hourly.id));
    r.s.settle().await;
    // The user undoes their edit: the block says the routine is due at 01:00, which passed
    // and ran meanwhile.
    r.write_file(&good);
    r.advance_to(T0 + 61 * MIN);
    assert!(r.s.tick().await.claimed.is_empty(), "ran once at 01:00");
    assert_eq!(r.outcomes(&hourly.id), [RunOutcome::Ok]);
    let state = r.s.deps().store.read().unwrap();
    let x = state.parsed.entries()[0].routine.clone().unwrap();
    assert_eq!(
        x.next_run_at,
        Some(T0 + 120 * MIN),
        "the runs meanwhile are written back"
    );
}
