//! `HEARTBEAT.md` checklist lines that are machine checks (issue 33, item 5): a checklist of
//! only such lines costs the interval heartbeat no model call; each check runs only as
//! approved, tells the user (no model) when it turns true with its output as evidence kept
//! in its history, and a hand edit of its line runs nothing until approved again.

use std::time::Duration;

use vigil_core::protocol::{Event, Op, ProviderKind, WakeReason};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

/// Every notification body that arrives until none has for `quiet`.
async fn told(rx: &mut Events, quiet: Duration) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(Some(env)) = tokio::time::timeout(quiet, rx.recv()).await {
        if let Event::Notification { title, body, .. } = env.event {
            out.push(format!("{title}: {body}"));
        }
    }
    out
}

#[tokio::test]
async fn checklist_checks_cost_no_model_call_run_only_as_approved_and_a_hand_edit_stops_them() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("HEARTBEAT_OK")))
        .await
        .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let path = rt.workspace().join("HEARTBEAT.md");
    std::fs::write(
        &path,
        "# Checks\n- check `echo 93` when > 80: the disk is almost full\n",
    )
    .unwrap();
    assert!(rt.start_background());

    // Listed with what it runs, waiting for approval.
    let view = rt.routines();
    let check = view
        .routines
        .iter()
        .find(|r| r.title == "the disk is almost full")
        .expect("the checklist check is listed")
        .clone();

    // The interval heartbeat: the checklist holds only a check, so no model call.
    rt.heartbeat_once(WakeReason::Interval).await;
    assert_eq!(fake.request_count(), 0, "a checklist of checks costs no tokens");

    // Not approved: it does not run, the user is asked once.
    rt.watch().run_checklist().await;
    let asked = told(&mut rx, Duration::from_millis(500)).await;
    assert!(asked.iter().any(|t| t.contains("approve")), "{asked:?}");
    assert!(!asked.iter().any(|t| t.contains("93")), "{asked:?}");
    let w = rt
        .routines()
        .routines
        .into_iter()
        .find(|r| r.id == check.id)
        .unwrap()
        .watch
        .unwrap();
    assert!(!w.approved);
    assert!(w.approval_text.unwrap().contains("echo 93"));

    // Approved: it runs, says so once with its output, and keeps it in its history.
    rt.submit(Op::ApproveRoutine { id: check.id.clone() });
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while !rt
        .watch()
        .approved(&vigil_core::routines::checklist::routines(&std::fs::read_to_string(&path).unwrap(), 0)[0])
    {
        assert!(tokio::time::Instant::now() < end, "approval never took");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rt.watch().run_checklist().await;
    let said = told(&mut rx, Duration::from_millis(1000)).await;
    assert!(said.iter().any(|t| t.contains("almost full")), "{said:?}");
    let history = rt.scheduler().history(&check.id);
    assert!(
        history
            .last()
            .and_then(|r| r.evidence.clone())
            .unwrap_or_default()
            .contains("93"),
        "{history:?}"
    );
    // Still true at the next interval: not said again.
    rt.watch().run_checklist().await;
    let again = told(&mut rx, Duration::from_millis(500)).await;
    assert!(!again.iter().any(|t| t.contains("almost full")), "{again:?}");
    assert_eq!(fake.request_count(), 0, "no model while it watched");

    // A hand edit of its line: nothing runs, the user is asked again.
    std::fs::write(
        &path,
        "# Checks\n- check `echo 95` when > 80: the disk is almost full\n",
    )
    .unwrap();
    rt.watch().run_checklist().await;
    let edited = told(&mut rx, Duration::from_millis(500)).await;
    assert!(edited.iter().any(|t| t.contains("approve")), "{edited:?}");
    assert!(!edited.iter().any(|t| t.contains("95")), "{edited:?}");
    rt.shutdown().await;
}
