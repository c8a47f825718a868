//! Routine triggers and checks (issue 33) through the runtime: a file change wakes one run
//! carrying its path and diff, a burst is one fire, a path outside the trigger none; a check
//! is approved once as written, a hand edit of `HEARTBEAT.md` stops it until approved
//! again; a change made while a quiet check runs is checked again; the rate limit pauses a routine and says so once; a check cannot write the
//! workspace, reach the network or a host socket.

use std::time::Duration;

use vigil_core::protocol::{Action, Check, Event, ExecutionMode, ProviderKind, RoutineDraft, RunOutcome, Trigger};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

fn file_routine(title: &str, paths: &[&str]) -> RoutineDraft {
    RoutineDraft {
        title: Some(title.into()),
        description: Some("Tell me what changed.".into()),
        trigger: Some(Trigger::File {
            paths: paths.iter().map(|p| p.to_string()).collect(),
            debounce_ms: None,
        }),
        execution_mode: Some(ExecutionMode::Isolated),
        ..RoutineDraft::default()
    }
}

/// Waits until the watcher has taken up routine `id`: its status is in the list and its
/// file watches are in place, so a change made from now on is seen.
async fn watched(rt: &vigil_core::Runtime, id: &str) {
    for _ in 0..500 {
        let view = rt.routines();
        if view.routines.iter().any(|r| r.id == id && r.watch.is_some()) && rt.watch().armed(id) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("routine {id} was never watched");
}

/// Routine `id`'s watch status as the Routines pane shows it.
pub(super) fn watch_of(rt: &vigil_core::Runtime, id: &str) -> vigil_core::protocol::WatchStatus {
    let view = rt.routines();
    let r = view
        .routines
        .into_iter()
        .find(|v| v.id == id)
        .expect("the routine is listed");
    r.watch.expect("the routine has a watch status")
}

/// Waits up to `limit` for `n` requests at the provider, then `settle` more, and returns them.
async fn requests(fake: &FakeLlm, n: usize, limit: Duration, settle: Duration) -> Vec<String> {
    let end = tokio::time::Instant::now() + limit;
    while fake.request_count() < n && tokio::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(settle).await;
    fake.requests().iter().map(|r| r.body.to_string()).collect()
}

#[tokio::test]
async fn a_burst_of_writes_to_a_watched_file_is_one_run_with_its_path_and_diff_and_other_files_none() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::text("Seen the change.")))
        .await
        .unwrap();
    let (rt, _rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let ws = rt.workspace().to_path_buf();
    std::fs::create_dir_all(ws.join("notes")).unwrap();
    std::fs::write(ws.join("notes/plan.md"), "milk\n").unwrap();
    assert!(rt.start_background());
    let (r, _) = rt
        .add_routine(file_routine("Notes watch", &["notes/*.md"]))
        .await
        .unwrap();
    assert_eq!(r.next_run_at, None, "a triggered routine has no due time");
    watched(&rt, &r.id).await;

    // A file outside the trigger: nothing.
    std::fs::write(ws.join("other.md"), "x\n").unwrap();
    std::fs::write(ws.join("notes/plan.txt"), "x\n").unwrap();
    assert!(requests(&fake, 1, Duration::from_millis(800), Duration::ZERO)
        .await
        .is_empty());

    // 100 writes in a second: one fire, with the last content's diff.
    for i in 0..100 {
        std::fs::write(ws.join("notes/plan.md"), format!("milk\neggs {i}\n")).unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seen = requests(&fake, 1, Duration::from_secs(10), Duration::from_millis(1500)).await;
    assert_eq!(seen.len(), 1, "one run for the burst: {seen:#?}");
    assert!(seen[0].contains("notes/plan.md"), "{}", seen[0]);
    assert!(seen[0].contains("+eggs 99"), "the diff is in the request: {}", seen[0]);
    assert!(seen[0].contains("never instructions"), "{}", seen[0]);
    let view = rt.routines();
    let v = view.routines.iter().find(|v| v.id == r.id).unwrap();
    let w = v.watch.as_ref().unwrap();
    assert_eq!(w.summary, "Watching `notes/*.md`");
    assert_eq!(w.fired_today, 1);
}

fn notify_check(title: &str, command: &str) -> RoutineDraft {
    RoutineDraft {
        title: Some(title.into()),
        trigger: Some(Trigger::File {
            paths: vec!["inbox/".into()],
            debounce_ms: Some(50),
        }),
        check: Some(Check {
            command: command.into(),
            when: "> 80".into(),
        }),
        action: Some(Action::Notify),
        ..RoutineDraft::default()
    }
}

/// The notifications' bodies until nothing more comes for `quiet`.
async fn notifications(rx: &mut Events, quiet: Duration) -> Vec<(String, String)> {
    let mut out = Vec::new();
    while let Ok(Some(env)) = tokio::time::timeout(quiet, rx.recv()).await {
        if let Event::Notification { title, body, .. } = env.event {
            out.push((title, body));
        }
    }
    out
}

#[tokio::test]
async fn a_check_runs_only_as_approved_and_a_hand_edit_of_heartbeat_md_stops_it() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let ws = rt.workspace().to_path_buf();
    std::fs::create_dir_all(ws.join("inbox")).unwrap();
    assert!(rt.start_background());
    let marker = ws.join("ran-marker");
    let command = format!("echo 93; touch {} 2>/dev/null; true", "/tmp/ignored");
    let (r, _) = rt.add_routine(notify_check("Disk check", &command)).await.unwrap();
    watched(&rt, &r.id).await;
    let w = watch_of(&rt, &r.id);
    assert!(!w.approved);
    let card = w.approval_text.unwrap();
    assert!(
        card.contains(&command) && card.contains("no network") && card.contains("Watching `inbox/`"),
        "{card}"
    );

    // Not approved: nothing runs, the user is asked once.
    std::fs::write(ws.join("inbox/a"), "1").unwrap();
    let told = notifications(&mut rx, Duration::from_millis(1500)).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].1.contains("approve"), "{told:?}");

    // Approved: the check runs and its output is the evidence; no model request.
    rt.submit(vigil_core::protocol::Op::ApproveRoutine { id: r.id.clone() });
    std::fs::write(ws.join("inbox/b"), "2").unwrap();
    let told = notifications(&mut rx, Duration::from_millis(2500)).await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].1.contains("93") || told[0].1.contains("Disk check"), "{told:?}");
    assert_eq!(fake.request_count(), 0, "notify calls no model");
    let runs = rt.scheduler().history(&r.id);
    assert_eq!(runs.last().unwrap().outcome, RunOutcome::Ok);

    // The check changed in HEARTBEAT.md by hand: it no longer runs, and asks again.
    let path = ws.join("HEARTBEAT.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replace("echo 93", &format!("touch {}; echo 95", marker.display()));
    assert_ne!(text, edited);
    std::fs::write(&path, edited).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::write(ws.join("inbox/c"), "3").unwrap();
    let told = notifications(&mut rx, Duration::from_millis(2000)).await;
    assert!(told.iter().any(|(_, b)| b.contains("approve")), "{told:?}");
    assert!(!told.iter().any(|(_, b)| b.contains("95")), "{told:?}");
    assert!(!marker.exists());
    let runs = rt.scheduler().history(&r.id);
    assert_eq!(runs.last().unwrap().outcome, RunOutcome::Skipped);
}

/// Whether a process with exactly this command line is running (host-wide: a sandboxed
/// check's processes are seen from outside its pid namespace too).
fn running(argv: &[&str]) -> bool {
    let want: String = argv.iter().map(|a| format!("{a}\0")).collect();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want.as_bytes()))
}

#[tokio::test]
async fn a_change_made_while_a_quiet_check_runs_is_checked_again_not_dropped() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let ws = rt.workspace().to_path_buf();
    std::fs::create_dir_all(ws.join("inbox")).unwrap();
    assert!(rt.start_background());
    // The count is taken first; then the check waits (each pause a `sleep 0.0217`, which
    // the test looks for) until b.urgent exists, and stays a second more, so b.urgent's own
    // fire arrives while it runs.
    let command =
        "n=$(ls inbox | grep -c urgent); while [ ! -e inbox/b.urgent ]; do sleep 0.0217; done; sleep 1; echo $n";
    let mut draft = notify_check("Urgent inbox", command);
    draft.check.as_mut().unwrap().when = ">= 1".into();
    let (r, _) = rt.add_routine(draft).await.unwrap();
    watched(&rt, &r.id).await;
    rt.submit(vigil_core::protocol::Op::ApproveRoutine { id: r.id.clone() });
    let end = std::time::Instant::now() + Duration::from_secs(20);
    while !watch_of(&rt, &r.id).approved {
        assert!(std::time::Instant::now() < end, "never approved");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    std::fs::write(ws.join("inbox/a.txt"), "calm").unwrap();
    while !running(&["sleep", "0.0217"]) {
        assert!(std::time::Instant::now() < end, "the first check never started waiting");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The first check counted no urgent file: quiet. The change below comes while it runs.
    std::fs::write(ws.join("inbox/b.urgent"), "fire").unwrap();

    let told = loop {
        let left = end.saturating_duration_since(std::time::Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(env)) => match env.event {
                Event::Notification { title, body, .. } if title == "Vigil: routine" => break body,
                _ => {}
            },
            _ => panic!("the change made during the quiet check was dropped: no notification"),
        }
    };
    assert!(told.contains("b.urgent"), "the merged change is the evidence: {told}");
    let runs = rt.scheduler().history(&r.id);
    let evidence = runs.last().and_then(|r| r.evidence.clone()).unwrap_or_default();
    assert!(
        evidence.contains("(>= 1):\nexit code 0\n1"),
        "the second check counted it: {evidence}"
    );
    assert_eq!(watch_of(&rt, &r.id).fired_today, 1);
    assert_eq!(fake.request_count(), 0, "notify calls no model");
}

#[tokio::test]
async fn a_routine_firing_fifty_times_pauses_itself_says_so_once_and_records_the_rest() {
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let ws = rt.workspace().to_path_buf();
    std::fs::create_dir_all(ws.join("inbox")).unwrap();
    assert!(rt.start_background());
    let draft = RoutineDraft {
        title: Some("Chatty".into()),
        trigger: Some(Trigger::File {
            paths: vec!["inbox/".into()],
            debounce_ms: Some(50),
        }),
        action: Some(Action::Notify),
        ..RoutineDraft::default()
    };
    let (r, _) = rt.add_routine(draft).await.unwrap();
    watched(&rt, &r.id).await;
    for i in 0..50 {
        std::fs::write(ws.join(format!("inbox/{i}")), "x").unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
    }
    let told = notifications(&mut rx, Duration::from_millis(1000)).await;
    let paused: Vec<_> = told.iter().filter(|(t, _)| t.contains("paused")).collect();
    assert_eq!(paused.len(), 1, "said once: {told:?}");
    let fired = told.iter().filter(|(t, _)| t == "Vigil: routine").count();
    assert_eq!(fired, vigil_core::watch::DEFAULT_MAX_FIRES_PER_HOUR, "{told:?}");
    let history = rt.scheduler().history(&r.id);
    let recorded = history
        .iter()
        .filter(|h| h.error.as_deref().is_some_and(|e| e.contains("paused")))
        .count();
    assert!(recorded >= 30, "fires while paused are in the history: {recorded}");
    let w = watch_of(&rt, &r.id);
    assert!(w.paused.unwrap().contains("more than 12 times"));
}

/// Whether `listener` took a connection within a moment.
fn took(listener: &std::net::TcpListener) -> bool {
    std::thread::sleep(Duration::from_millis(200));
    listener.accept().is_ok()
}

#[tokio::test]
async fn a_check_cannot_write_the_workspace_reach_the_network_or_a_host_socket_unless_granted_the_network() {
    use vigil_core::sandbox::{Availability, Sandbox, SandboxSettings};
    use vigil_core::watch::check::CheckSandbox;
    assert!(
        matches!(Sandbox::new().availability(), Availability::Ready { .. }),
        "`make test` installs bubblewrap"
    );
    assert!(Sandbox::network_helper().is_some(), "`make test` installs slirp4netns");
    let dir = outside_tmp();
    let ws = dir.path().join("data/workspace");
    std::fs::create_dir_all(&ws).unwrap();
    let lan = {
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        probe.connect("192.0.2.1:9").expect("this machine has a route out");
        probe.local_addr().unwrap().ip()
    };
    let net = std::net::TcpListener::bind((lan, 0)).unwrap();
    let local = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    net.set_nonblocking(true).unwrap();
    local.set_nonblocking(true).unwrap();
    let sock = ws.join("host.sock");
    let unix = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    unix.set_nonblocking(true).unwrap();
    let marker = ws.join("marker");
    let command = format!(
        "touch {m} && echo WROTE-WS; \
         bash -c 'echo x > /dev/tcp/{lan}/{p}' 2>/dev/null && echo REACHED-NET; \
         bash -c 'echo x > /dev/tcp/127.0.0.1/{l}' 2>/dev/null && echo REACHED-LOOPBACK; \
         socat -u OPEN:/dev/null UNIX-CONNECT:{s} 2>/dev/null && echo REACHED-SOCKET; \
         echo 91",
        m = marker.display(),
        p = net.local_addr().unwrap().port(),
        l = local.local_addr().unwrap().port(),
        s = sock.display()
    );
    let mut cs = CheckSandbox {
        sandbox: Sandbox::new(),
        settings: SandboxSettings::default(),
        data_dir: dir.path().join("data"),
        workspace: ws.clone(),
        home: None,
    };
    let run = cs.run("disk", &command).await.unwrap();
    assert!(run.output.contains("91"), "the check ran: {run:?}");
    for reached in ["WROTE-WS", "REACHED-NET", "REACHED-LOOPBACK", "REACHED-SOCKET"] {
        assert!(!run.output.contains(reached), "{reached}: {run:?}");
    }
    assert!(!marker.exists());
    assert!(!took(&net) && !took(&local));
    assert!(unix.accept().is_err());

    // The user granted this routine the network: then (and only for it) the check reaches
    // the network, still not the host's loopback, socket or workspace.
    cs.settings.network_routines = vec!["disk".into()];
    let run = cs.run("disk", &command).await.unwrap();
    assert!(run.output.contains("REACHED-NET"), "{run:?}");
    assert!(!run.output.contains("REACHED-LOOPBACK") && !run.output.contains("REACHED-SOCKET") && !marker.exists());
    let other = cs.run("other", &command).await.unwrap();
    assert!(!other.output.contains("REACHED-NET"), "{other:?}");
}
