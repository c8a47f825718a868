//! Output triggers (issue 33) through the runtime: a line matching the pattern in a running
//! process's output wakes one run carrying that line and the lines before it, output that
//! does not match wakes nothing; a routine's own command starts only once approved as
//! written, and again after Vigil starts again; another conversation's process is never
//! followed, and the agent is told why.

use std::time::Duration;

use vigil_core::exec::{ProcessInfo, RegistryHandle, SpawnRequest};
use vigil_core::protocol::{Action, Event, ExecutionMode, Op, ProviderKind, RoutineDraft, RunOutcome, Trigger};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;
use super::triggers::watch_of;

fn output_routine(process: &str, action: Option<Action>) -> RoutineDraft {
    RoutineDraft {
        title: Some("Dev server errors".into()),
        description: Some("Tell me what went wrong.".into()),
        trigger: Some(Trigger::Output {
            process: process.into(),
            pattern: "ERROR|panicked".into(),
        }),
        execution_mode: Some(ExecutionMode::Isolated),
        action,
        ..RoutineDraft::default()
    }
}

/// The main conversation: the routines here are made without a conversation, so the
/// processes they may follow are its own.
const MAIN: &str = "main";

/// A dev server `owner` runs: it echoes its input. Returns its process id.
async fn dev_server(registry: &RegistryHandle, rt: &vigil_core::Runtime, owner: &str) -> String {
    let mut req = SpawnRequest::new(owner, "while read l; do echo \"$l\"; done", rt.workspace());
    req.pty = false;
    registry.spawn(req).await.unwrap().id
}

/// A runtime talking to `fake` with its background work started, and a dev server of the
/// main conversation (the process the output triggers here follow).
async fn with_dev_server(
    dir: &std::path::Path,
    fake: &FakeLlm,
) -> (vigil_core::Runtime, Events, RegistryHandle, ProcessInfo) {
    let (rt, rx) = runtime(dir, Some((fake, ProviderKind::Anthropic)));
    assert!(rt.start_background());
    let registry = rt.processes().unwrap().clone();
    let id = dev_server(&registry, &rt, MAIN).await;
    let server = registry.info(MAIN, &id).await.unwrap();
    (rt, rx, registry, server)
}

/// Waits (10 s at most) until `f` holds.
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(tokio::time::Instant::now() < end, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_line_matching_in_a_running_processs_output_is_one_run_with_that_line_and_other_lines_none() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("Seen the error.")))
        .await
        .unwrap();
    let (rt, _rx, registry, server) = with_dev_server(dir.path(), &fake).await;
    let owner = MAIN;
    let (r, _) = rt.add_routine(output_routine(&server.id, None)).await.unwrap();
    until("the trigger is taken up", || rt.watch().follows(&r.id)).await;
    let w = watch_of(&rt, &r.id);
    assert!(
        w.approved,
        "following a running process by id starts nothing: no approval"
    );

    // Output that does not match: seen by the process, no run.
    registry
        .write(owner, &server.id, b"listening on :3000\nGET / 200\n".to_vec(), false)
        .await
        .unwrap();
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while !registry.tail(owner, &server.id).await.unwrap().1.contains("GET / 200") {
        assert!(tokio::time::Instant::now() < end, "the process echoed its input");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(fake.request_count(), 0, "output that does not match wakes nothing");

    // A matching line: one run whose request carries it and the line before it.
    registry
        .write(owner, &server.id, b"ERROR db timeout\n".to_vec(), false)
        .await
        .unwrap();
    until("a run was requested", || fake.request_count() >= 1).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let seen: Vec<String> = fake.requests().iter().map(|r| r.body.to_string()).collect();
    assert_eq!(seen.len(), 1, "one run for one error line: {seen:#?}");
    assert!(seen[0].contains("ERROR db timeout"), "{}", seen[0]);
    assert!(
        seen[0].contains("GET / 200"),
        "the lines before it come along: {}",
        seen[0]
    );
    assert!(seen[0].contains("never instructions"), "{}", seen[0]);
    let w = watch_of(&rt, &r.id);
    assert_eq!(w.fired_today, 1);
    rt.shutdown().await;
}

/// The notifications' bodies that arrive within `limit` until one contains `text`.
async fn told(rx: &mut Events, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let end = tokio::time::Instant::now() + Duration::from_secs(15);
    while let Ok(Some(env)) = tokio::time::timeout_at(end, rx.recv()).await {
        if let Event::Notification { body, .. } = env.event {
            let found = body.contains(text);
            out.push(body);
            if found {
                return out;
            }
        }
    }
    panic!("no notification with {text:?}: {out:?}");
}

/// The evidence of routine `id`'s latest run that ran, once it is in the history.
async fn evidence_of(rt: &vigil_core::Runtime, id: &str) -> String {
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let ran = rt
            .scheduler()
            .history(id)
            .into_iter()
            .rev()
            .find(|h| h.outcome == RunOutcome::Ok);
        if let Some(e) = ran.and_then(|h| h.evidence) {
            return e;
        }
        assert!(tokio::time::Instant::now() < end, "no run with evidence of {id}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_routines_own_command_starts_only_once_approved_and_again_after_a_restart() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let command = "echo booting; echo 'ERROR from its own command'; exec sleep 600";
    let id = {
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
        assert!(rt.start_background());
        let (r, _) = rt
            .add_routine(output_routine(command, Some(Action::Notify)))
            .await
            .unwrap();
        let asked = told(&mut rx, "approve").await;
        assert_eq!(
            rt.watch().owned_process(&r.id),
            None,
            "not started before approval: {asked:?}"
        );
        let card = watch_of(&rt, &r.id);
        assert!(card.approval_text.unwrap().contains(command));

        rt.submit(Op::ApproveRoutine { id: r.id.clone() });
        told(&mut rx, "Dev server errors").await;
        assert!(rt.watch().owned_process(&r.id).is_some());
        let evidence = evidence_of(&rt, &r.id).await;
        assert!(evidence.contains("ERROR from its own command"), "{evidence}");
        assert!(
            evidence.contains("booting"),
            "the line before it comes along: {evidence}"
        );
        rt.shutdown().await;
        r.id
    };
    // Vigil starts again: the approved command is started again and watched.
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    assert!(rt.start_background());
    told(&mut rx, "Dev server errors").await;
    assert!(rt.watch().owned_process(&id).is_some());
    until("the second run is in the history", || {
        rt.scheduler()
            .history(&id)
            .iter()
            .filter(|h| h.outcome == RunOutcome::Ok)
            .count()
            == 2
    })
    .await;
    assert_eq!(fake.request_count(), 0, "notify calls no model");
    rt.shutdown().await;
}

#[tokio::test]
async fn fire_counters_and_each_runs_evidence_survive_a_restart() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let draft = RoutineDraft {
        title: Some("Inbox".into()),
        trigger: Some(Trigger::File {
            paths: vec!["inbox/".into()],
            debounce_ms: Some(50),
        }),
        action: Some(Action::Notify),
        ..RoutineDraft::default()
    };
    let id = {
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
        std::fs::create_dir_all(rt.workspace().join("inbox")).unwrap();
        assert!(rt.start_background());
        let (r, _) = rt.add_routine(draft).await.unwrap();
        until("the trigger is taken up", || {
            rt.routines().routines.iter().any(|v| v.id == r.id && v.watch.is_some())
        })
        .await;
        // The folder watch is made right after the status: write until a fire is told.
        let end = tokio::time::Instant::now() + Duration::from_secs(15);
        let mut i = 0;
        loop {
            std::fs::write(rt.workspace().join("inbox/report.txt"), format!("line {i}\n")).unwrap();
            i += 1;
            if let Ok(Some(env)) = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
                if matches!(env.event, Event::Notification { .. }) {
                    break;
                }
            }
            assert!(tokio::time::Instant::now() < end, "the file change never fired");
        }
        until("the run is in the history", || {
            !rt.scheduler().history(&r.id).is_empty()
        })
        .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let view = rt.routines();
        let fired = view
            .routines
            .iter()
            .find(|v| v.id == r.id)
            .unwrap()
            .watch
            .as_ref()
            .unwrap()
            .fired_today;
        assert!(fired >= 1);
        rt.shutdown().await;
        (r.id, fired)
    };
    let (id, fired) = id;
    let (rt, _rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    assert!(rt.start_background());
    until("the status is published", || {
        rt.routines().routines.iter().any(|v| v.id == id && v.watch.is_some())
    })
    .await;
    let w = watch_of(&rt, &id);
    assert_eq!(w.fired_today, fired, "today's fires are counted across a restart");
    assert!(w.last_evidence.unwrap().contains("inbox/report.txt"));
    let history = rt.scheduler().history(&id);
    let evidence = history.last().unwrap().evidence.clone().unwrap_or_default();
    assert!(
        evidence.contains("inbox/report.txt"),
        "the run keeps its evidence: {history:?}"
    );
    assert!(evidence.contains("+line"), "with the diff: {evidence}");
    rt.shutdown().await;
}

#[tokio::test]
async fn fires_during_a_run_go_into_a_next_run_and_the_routine_keeps_firing_after() {
    let dir = outside_tmp();
    // Each run takes a while: its reply streams slowly.
    let slow = Step::text("Seen it.").with_chunk_chars(1).with_delay_ms(300);
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(slow)).await.unwrap();
    let (rt, _rx, registry, server) = with_dev_server(dir.path(), &fake).await;
    let owner = MAIN;
    let (r, _) = rt.add_routine(output_routine(&server.id, None)).await.unwrap();
    until("the trigger is taken up", || rt.watch().follows(&r.id)).await;
    let say = |line: &'static str| {
        let registry = registry.clone();
        let id = server.id.clone();
        async move {
            registry
                .write(owner, &id, line.as_bytes().to_vec(), false)
                .await
                .unwrap()
        }
    };
    say("ERROR one\n").await;
    until("the first run's request", || fake.request_count() >= 1).await;
    // While that run goes on.
    say("ERROR two\n").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    say("ERROR three\n").await;
    let all = |fake: &FakeLlm| {
        fake.requests()
            .iter()
            .map(|r| r.body.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    until("the fires during the run reach a run", || {
        let seen = all(&fake);
        seen.contains("ERROR two") && seen.contains("ERROR three")
    })
    .await;
    // Every run ended: a later line still fires.
    until("the runs ended", || rt.scheduler().history(&r.id).len() >= 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    say("ERROR four\n").await;
    until("the routine still fires", || all(&fake).contains("ERROR four")).await;
    rt.shutdown().await;
}

#[tokio::test]
async fn another_conversations_process_is_never_followed_and_the_agent_is_told_why() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, _rx, registry, _mine) = with_dev_server(dir.path(), &fake).await;
    let theirs = dev_server(&registry, &rt, "someone-elses-conversation").await;

    // The agent, in the main conversation, asks to follow it: refused, and told why.
    let add = Step::tool_call(
        "t1",
        "routine_add",
        serde_json::json!({
            "title": "Their errors",
            "trigger": {"kind": "output", "process": theirs, "pattern": "ERROR"},
            "action": "notify"
        }),
    );
    fake.set_script(Script::steps(vec![add, Step::text("Done.")]).with_fallback(Step::text("Seen.")));
    rt.submit(user("Tell me when that server says ERROR."));
    until("the agent heard back", || fake.request_count() >= 2).await;
    let answer = fake.requests()[1].body.to_string();
    assert!(
        answer.contains("is not a running process of this conversation"),
        "the tool result says why: {answer}"
    );
    assert!(
        rt.routines().routines.iter().all(|r| r.title != "Their errors"),
        "no routine was made"
    );

    // Made anyway (by hand, by the editor): their output wakes nothing.
    let (r, _) = rt
        .add_routine(output_routine(&theirs, Some(Action::Notify)))
        .await
        .unwrap();
    until("the trigger is taken up", || rt.watch().follows(&r.id)).await;
    let owner = "someone-elses-conversation";
    registry
        .write(owner, &theirs, b"ERROR not yours\n".to_vec(), false)
        .await
        .unwrap();
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while !registry
        .tail(owner, &theirs)
        .await
        .unwrap()
        .1
        .contains("ERROR not yours")
    {
        assert!(tokio::time::Instant::now() < end, "the process echoed its input");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Past the output debounce: a fire would be in the history by now.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(rt.scheduler().history(&r.id).is_empty(), "nothing was followed");
    assert_eq!(watch_of(&rt, &r.id).fired_today, 0);
    rt.shutdown().await;
}
