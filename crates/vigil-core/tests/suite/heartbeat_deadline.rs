//! Issue 31 item 5 through the runtime: a heartbeat run that carries an inline routine ends at
//! the routine's `timeout_seconds` — its open approval question expires, the command it left
//! running in the background is killed, the run is recorded `timed-out` (the heartbeat) and
//! `timed_out` (the routine), and the heartbeat's next run is not held up. The timings on
//! paused time are in `heartbeat/deadline_tests.rs`; this test waits out a real 5 s limit,
//! because the approval and the process are real.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use vigil_core::clock::ManualClock;
use vigil_core::protocol::{
    ApprovalDecision, ApprovalPolicy, Event, ExecutionMode, HeartbeatSettings, Op, ProviderKind, RoutineDraft,
    RunOutcome, WakeReason,
};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

const START_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// The first event `f` maps to something; fails naming `what` after 20 s.
async fn wait_for<T>(rx: &mut Events, what: &str, mut f: impl FnMut(&Event) -> Option<T>) -> T {
    loop {
        let env = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("{what} within 20 s"))
            .expect("alive");
        if let Some(t) = f(&env.event) {
            return t;
        }
    }
}

/// The wire name of a heartbeat status or skip.
fn wire<T: serde::Serialize>(v: T) -> String {
    serde_json::to_value(v).unwrap().as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_run_past_its_routines_timeout_expires_its_question_kills_its_command_and_frees_the_heartbeat() {
    let dir = outside_tmp();
    let marker = dir.path().join("workspace/never-touched");
    let script = Script::steps(vec![
        Step::tool_call("c1", "exec", json!({"command": "sleep 600", "background": true})),
        Step::tool_call("c2", "exec", json!({"command": format!("touch {}", marker.display())})),
        // The next run, after the deadline (the run above never got to a reply).
        Step::text("HEARTBEAT_OK"),
    ]);
    let fake = FakeLlm::start(script).await.unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(START_MS);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, ProviderKind::Openai), &clock)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    // Only the routine wakes the heartbeat.
    let settings = HeartbeatSettings {
        every: "0".into(),
        ..HeartbeatSettings::default()
    };
    assert!(rt.set_heartbeat_settings(&settings).is_empty());
    assert!(rt.start_background());
    let (routine, _) = rt
        .add_routine(RoutineDraft {
            title: Some("Tidy up".into()),
            description: Some("Start a sleeper, then touch the marker.".into()),
            schedule: Some("1h".into()),
            execution_mode: Some(ExecutionMode::Inline),
            timeout_seconds: Some(5),
            ..RoutineDraft::default()
        })
        .await
        .unwrap();
    clock.advance(Duration::from_secs(3600));
    // The background loop may claim it first; either way one heartbeat run carries it.
    rt.scheduler().tick().await;

    // The sleeper is allowed; the touch is asked about and never answered.
    let first = wait_for(&mut rx, "the question about the sleeper", |e| match e {
        Event::ApprovalRequested {
            approval_id, command, ..
        } if command == "sleep 600" => Some(approval_id.clone()),
        _ => None,
    })
    .await;
    rt.submit(Op::Approval {
        id: first,
        decision: ApprovalDecision::Approve,
    });
    let second = wait_for(&mut rx, "the question about the touch", |e| match e {
        Event::ApprovalRequested {
            approval_id, command, ..
        } if command.starts_with("touch") => Some(approval_id.clone()),
        _ => None,
    })
    .await;
    let expired = wait_for(&mut rx, "the unanswered question resolved", |e| match e {
        Event::ApprovalResolved { approval_id, .. } if *approval_id == second => Some(serde_json::to_value(e).unwrap()),
        _ => None,
    })
    .await;
    assert_eq!(
        (expired["decision"].as_str(), expired["expired"].as_bool()),
        (Some("deny"), Some(true)),
        "{expired}"
    );
    let (status, detail) = wait_for(&mut rx, "the run recorded", |e| match e {
        Event::Heartbeat { status, detail, .. } => Some((wire(status), detail.clone())),
        _ => None,
    })
    .await;
    assert_eq!(status, "timed-out", "{detail:?}");
    assert!(detail.as_deref().unwrap_or("").contains("5 s"), "{detail:?}");
    assert!(!marker.exists());

    let processes = rt.list_processes().await;
    let sleeper: Vec<_> = processes.iter().filter(|p| p.command == "sleep 600").collect();
    assert_eq!(sleeper.len(), 1, "{processes:?}");
    assert_ne!(sleeper[0].state, "running", "the run's command was killed");
    assert!(rt.running_processes().await.is_empty());

    rt.scheduler().settle().await;
    let runs = rt.routine_history(&routine.id);
    let outcomes: Vec<RunOutcome> = runs.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [RunOutcome::TimedOut], "{runs:?}");

    // The heartbeat's lane and lock are free: the next run runs.
    rt.heartbeat_once(WakeReason::Manual).await;
    let status = wait_for(&mut rx, "the next run recorded", |e| match e {
        Event::Heartbeat { status, .. } => Some(wire(status)),
        _ => None,
    })
    .await;
    assert_eq!(status, "ok-token");
    rt.shutdown().await;
}
