//! The network grant per routine (issue 30 §4): while runs nobody watches may not use the
//! network (the default), a routine's job gets it only when the user ticked "this routine
//! may use the network" for that routine; another routine's job still gets none. Proven by a
//! listener on this machine's network address that the job's command tries to reach.

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::{ApprovalPolicy, Event, ExecutionMode, ProviderKind, RoutineDraft};
use vigil_core::sandbox::{Availability, Sandbox};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

async fn job_reaches(rt: &vigil_core::Runtime, rx: &mut Events, fake: &FakeLlm, id: &str, command: &str) -> String {
    fake.set_script(Script::steps(vec![
        Step::tool_call("n1", "exec", json!({ "command": command })),
        Step::text("Checked.\nThe server was tried."),
    ]));
    rt.run_routine_now(id).await.unwrap();
    let seen = next_matching(rx, |e| match e {
        Event::ToolCallFinished { content, .. } => Some(content.clone()),
        _ => None,
    })
    .await;
    // The run over before the next one is asked for.
    for _ in 0..500 {
        let view = rt.routines();
        let r = view.routines.iter().find(|r| r.id == id).unwrap();
        if r.state != vigil_core::protocol::RoutineState::Running {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the job did not end");
}

fn accepted(listener: &TcpListener) -> Option<String> {
    std::thread::sleep(Duration::from_millis(200));
    let (mut conn, _) = listener.accept().ok()?;
    conn.set_nonblocking(false).unwrap();
    let mut got = String::new();
    conn.read_to_string(&mut got).unwrap();
    Some(got)
}

#[tokio::test]
async fn only_the_routine_the_user_granted_the_network_reaches_it() {
    assert!(matches!(Sandbox::new().availability(), Availability::Ready { .. }));
    assert!(Sandbox::network_helper().is_some(), "`make test` installs slirp4netns");
    let lan = {
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        probe.connect("192.0.2.1:9").expect("this machine has a route out");
        probe.local_addr().unwrap().ip()
    };
    let listener = TcpListener::bind((lan, 0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("bash -c 'echo hello > /dev/tcp/{lan}/{port}' && echo connected");

    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::FullAuto);
    assert!(rt.start_background());
    let routine = |title: &str, schedule: &str| RoutineDraft {
        title: Some(title.into()),
        description: Some(format!("{title}: see that the server answers")),
        schedule: Some(schedule.into()),
        execution_mode: Some(ExecutionMode::Isolated),
        ..RoutineDraft::default()
    };
    let (granted, _) = rt.add_routine(routine("Build server check", "1d")).await.unwrap();
    let (other, _) = rt.add_routine(routine("Mirror health", "0 7 * * 1")).await.unwrap();
    assert!(!rt.approvals().view().sandbox.unattended_network);

    let before = job_reaches(&rt, &mut rx, &fake, &granted.id, &connect).await;
    assert!(!before.contains("connected"), "{before}");
    assert!(
        before.contains("routines that may use the network"),
        "the refusal says who can allow it: {before}"
    );
    assert_eq!(accepted(&listener), None, "reached without a grant");

    rt.approvals().set_routine_network(&granted.id, true).unwrap();
    assert_eq!(rt.approvals().view().sandbox.network_routines, vec![granted.id.clone()]);
    let after = job_reaches(&rt, &mut rx, &fake, &granted.id, &connect).await;
    assert!(after.contains("connected"), "{after}");
    assert_eq!(accepted(&listener).as_deref(), Some("hello\n"));

    let elsewhere = job_reaches(&rt, &mut rx, &fake, &other.id, &connect).await;
    assert!(!elsewhere.contains("connected"), "{elsewhere}");
    assert_eq!(accepted(&listener), None, "another routine used the grant");

    rt.approvals().set_routine_network(&granted.id, false).unwrap();
    let revoked = job_reaches(&rt, &mut rx, &fake, &granted.id, &connect).await;
    assert!(!revoked.contains("connected"), "{revoked}");
    assert_eq!(accepted(&listener), None, "reached after the grant was taken back");
    rt.shutdown().await;
}
