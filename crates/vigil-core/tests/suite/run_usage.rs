//! Issue 20 items 9 and 11 through the runtime against the fake provider: each routine run's
//! record carries the tokens (and cost) of the model turn it ran in — a job's own turn, an
//! inline routine's heartbeat run — and the heartbeat view keeps its last run's; a job whose
//! command the gate denied changed nothing, so when it is cut off it is retried, not
//! `unknown`.

use std::sync::Arc;
use std::time::Duration;

use vigil_core::clock::ManualClock;
use vigil_core::protocol::{
    ApprovalPolicy, ExecutionMode, ProviderKind, RoutineDraft, RoutineRun, RoutineState, RunOutcome, Usage, WakeReason,
};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

const START_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z
const HOUR: Duration = Duration::from_secs(3600);

async fn rig(script: Script) -> (Runtime, ManualClock, FakeLlm, tempfile::TempDir) {
    let fake = FakeLlm::start(script).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(START_MS);
    let rt = Runtime::new(dir.path(), Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(Some(client(config(&fake, ProviderKind::Openai), &clock)));
    (rt, clock, fake, dir)
}

/// What the fake reports for a reply, and the usage Vigil should read from it.
fn reported(input: u64, output: u64, cached: u64, dollars: Option<f64>) -> vigil_fake_llm::Usage {
    vigil_fake_llm::Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        cached_tokens: Some(cached),
        cost: dollars,
    }
}

async fn add(rt: &Runtime, title: &str, schedule: &str, mode: ExecutionMode, timeout: Option<u32>) -> String {
    rt.add_routine(RoutineDraft {
        title: Some(title.into()),
        schedule: Some(schedule.into()),
        execution_mode: Some(mode),
        timeout_seconds: timeout,
        ..RoutineDraft::default()
    })
    .await
    .unwrap()
    .0
    .id
}

#[tokio::test]
async fn a_job_and_an_inline_routine_record_the_tokens_of_the_run_they_rode_in() {
    let script = Script::steps(vec![
        Step::text("Backed up 3 folders.").with_usage_of(reported(3210, 40, 2900, Some(0.0004))),
        Step::text("Time for a glass of water.").with_usage_of(reported(1500, 9, 0, None)),
    ]);
    let (rt, clock, _fake, _dir) = rig(script).await;
    let job = add(&rt, "Back up", "1h", ExecutionMode::Isolated, None).await;
    let inline = add(&rt, "Drink water", "90m", ExecutionMode::Inline, None).await;

    clock.advance(HOUR);
    assert_eq!(rt.scheduler().tick().await.claimed, std::slice::from_ref(&job));
    rt.scheduler().settle().await;
    clock.advance(HOUR / 2);
    assert_eq!(rt.scheduler().tick().await.claimed, std::slice::from_ref(&inline));
    rt.heartbeat_once(WakeReason::Cron).await;
    rt.scheduler().settle().await;

    let job_runs = rt.routine_history(&job);
    assert_eq!(job_runs.len(), 1);
    assert_eq!(
        (job_runs[0].outcome, job_runs[0].usage),
        (
            RunOutcome::Ok,
            Some(Usage {
                input_tokens: 3210,
                output_tokens: 40,
                cache_read_tokens: 2900,
                cache_write_tokens: 0,
                cost_micro_usd: 400,
            })
        )
    );
    let heartbeat_run = Usage {
        input_tokens: 1500,
        output_tokens: 9,
        ..Usage::default()
    };
    let inline_runs = rt.routine_history(&inline);
    assert_eq!(inline_runs.len(), 1);
    assert_eq!(
        (inline_runs[0].outcome, inline_runs[0].usage),
        (RunOutcome::Ok, Some(heartbeat_run))
    );
    let view = rt.heartbeat_view();
    assert_eq!(view.last_usage, Some(heartbeat_run), "the heartbeat's last run");
    assert_eq!(
        (view.usage_today.input_tokens, view.runs_today),
        (3210 + 1500, 2),
        "today's totals hold both"
    );
    rt.shutdown().await;
}

/// What a job cut off by its timeout left: the record of its one run, the routine after it
/// (its state, the run it waits on), and what the model was told of its command.
struct CutOff {
    runs: Vec<RoutineRun>,
    state: RoutineState,
    unknown: Option<String>,
    told: String,
}

/// A job that runs `command` under `policy`, then takes longer than its 1 s timeout to
/// answer.
async fn cut_off_after(policy: ApprovalPolicy, command: &str) -> CutOff {
    let script = Script::steps(vec![
        Step::tool_call("c1", "exec", serde_json::json!({ "command": command })),
        Step::text("Deployed.").with_delay_ms(5_000),
    ]);
    let (rt, clock, fake, _dir) = rig(script).await;
    rt.approvals().set_policy(policy);
    // The processes (and with them `exec`) come with the background work.
    rt.start_background();
    let id = add(&rt, "Deploy", "1d", ExecutionMode::Isolated, Some(1)).await;
    clock.advance(HOUR * 24);
    // The background loop may claim it first; either way it runs once.
    rt.scheduler().tick().await;
    rt.scheduler().settle().await;
    let view = rt.routines().routines.into_iter().find(|r| r.id == id).unwrap();
    let runs = rt.routine_history(&id);
    rt.shutdown().await;
    // The second request carries the command's result (its answer never came in time).
    let told = fake
        .requests()
        .get(1)
        .map(|r| r.body["messages"].to_string())
        .unwrap_or_default();
    CutOff {
        runs,
        state: view.state,
        unknown: view.unknown_run,
        told,
    }
}

#[tokio::test]
async fn a_job_cut_off_after_the_gate_denied_its_command_is_retried_not_unknown() {
    // `allowlist` refuses a command no rule covers at once, without asking: the gate has
    // denied it before the job's timeout cuts the run off.
    let denied = cut_off_after(ApprovalPolicy::Allowlist, "make deploy").await;
    assert!(
        denied.told.contains("make deploy") && denied.told.contains("allowlist"),
        "the model was told of the refusal: {}",
        denied.told
    );
    let seen: Vec<_> = denied.runs.iter().map(|r| (r.outcome, r.side_effect.clone())).collect();
    assert_eq!(
        seen,
        [(RunOutcome::TimedOut, None)],
        "no side effect recorded: {:?}",
        denied.runs
    );
    assert_eq!((denied.state, denied.unknown), (RoutineState::Pending, None));

    // The same job whose command the gate let through: its evidence was written, so the
    // cut-off run is unknown and waits for the user.
    let allowed = cut_off_after(ApprovalPolicy::FullAuto, "echo deploying").await;
    let seen: Vec<_> = allowed
        .runs
        .iter()
        .map(|r| (r.outcome, r.side_effect.clone()))
        .collect();
    assert_eq!(
        seen,
        [(RunOutcome::Unknown, Some("exec: echo deploying".to_string()))],
        "{:?}",
        allowed.runs
    );
    assert_eq!(allowed.unknown.as_deref(), Some(allowed.runs[0].run_id.as_str()));
}
