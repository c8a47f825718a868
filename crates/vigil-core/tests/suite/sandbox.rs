//! The sandbox, tried from the outside: commands the agent runs through the whole runtime
//! (full-auto, so nothing is asked and only the sandbox stands in the way) write the
//! workspace and nothing else, cannot see Vigil's data folder, lose the network when the
//! user switches it off, and still behave as terminals: size, input, killing the whole
//! group, exit notices; commands start in a standing sandbox, which leaves when idle. Who may
//! leave the sandbox is `sandbox_policy`'s.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use vigil_core::protocol::{ApprovalPolicy, Event, ProviderKind};
use vigil_core::sandbox::{Availability, Sandbox};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

/// A full-auto runtime with its background work started, and the fake it talks to.
pub(super) async fn full_auto(dir: &Path) -> (vigil_core::Runtime, Events, FakeLlm) {
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, rx) = runtime(dir, Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::FullAuto);
    assert!(rt.start_background());
    (rt, rx, fake)
}

/// Runs `command` through `exec` in one user turn; returns the tool's result text.
pub(super) async fn run(rt: &vigil_core::Runtime, rx: &mut Events, fake: &FakeLlm, command: &str) -> String {
    fake.set_script(Script::steps(vec![
        Step::tool_call("c1", "exec", json!({ "command": command })),
        Step::text("done"),
    ]));
    rt.submit(user("run it"));
    results(&until_finished(rx).await).remove(0)
}

pub(super) fn results(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

pub(super) fn bwrap_ready() {
    assert!(
        matches!(Sandbox::new().availability(), Availability::Ready { .. }),
        "these tests need bubblewrap (`make test` installs it): {:?}",
        Sandbox::new().availability()
    );
}

#[tokio::test]
async fn a_sandboxed_command_writes_the_workspace_and_nothing_else() {
    bwrap_ready();
    let dir = outside_tmp();
    let data = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(data.join("secrets")).unwrap();
    std::fs::write(data.join("secrets/key"), "sk-hidden-key").unwrap();
    let outside = outside_tmp();
    let home = std::env::var("HOME").unwrap();
    let probe = format!("vigil-sandbox-probe-{}", std::process::id());
    let (rt, mut rx, fake) = full_auto(&data).await;

    let wrote = run(&rt, &mut rx, &fake, "echo made > made.txt && cat made.txt").await;
    assert!(wrote.contains("made"), "{wrote}");
    assert_eq!(
        std::fs::read_to_string(rt.workspace().join("made.txt")).unwrap(),
        "made\n"
    );

    for target in [
        format!("{home}/{probe}"),
        outside.path().join(&probe).display().to_string(),
        data.join(&probe).display().to_string(),
        data.join("approvals.json").display().to_string(),
    ] {
        let out = run(&rt, &mut rx, &fake, &format!("touch '{target}'")).await;
        assert!(out.contains("Read-only file system"), "{target}: {out}");
        assert!(
            out.contains(&format!("The sandbox refused a write ({target})")) && out.contains("Settings → Approvals"),
            "the agent is told what was refused and who can allow it: {out}"
        );
        assert!(!Path::new(&target).exists(), "{target} was written");
    }
    let secrets = run(
        &rt,
        &mut rx,
        &fake,
        &format!("cat {}/secrets/key; ls -A {}", data.display(), data.display()),
    )
    .await;
    assert!(!secrets.contains("sk-hidden-key"), "{secrets}");
    assert!(secrets.contains("No such file or directory"), "{secrets}");
    // The data folder shows only the mount point of the workspace inside it.
    assert!(
        !secrets.contains("sessions") && !secrets.contains("approvals"),
        "{secrets}"
    );
    // /tmp is the command's own.
    let tmp = run(&rt, &mut rx, &fake, &format!("touch /tmp/{probe} && ls /tmp")).await;
    assert!(tmp.contains(&probe), "{tmp}");
    assert!(!Path::new(&format!("/tmp/{probe}")).exists(), "/tmp is private");
    rt.shutdown().await;
}

/// Commands that try to take the sandbox apart from inside: unmount the empty folder over
/// the data folder, make the root writable again, mount over it, build a namespace of their
/// own with capabilities in it. Each must fail for lack of permission, not because the
/// program is missing; as root (CI here) that is the sandbox's doing: bwrap keeps every
/// capability in its namespace unless told `--cap-drop ALL`, and the first of these read
/// the key. In a standing sandbox and in a bwrap of its own.
#[tokio::test]
async fn a_sandboxed_command_cannot_undo_the_sandbox() {
    bwrap_ready();
    cannot_undo_in(false).await;
    cannot_undo_in(true).await;
}

/// The attempts, with a bwrap per command when `own_bwrap` (a writable folder under /tmp,
/// which each command's private /tmp of a standing sandbox would cover).
async fn cannot_undo_in(own_bwrap: bool) {
    let dir = outside_tmp();
    let data = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(data.join("secrets")).unwrap();
    std::fs::write(data.join("secrets/key"), "sk-hidden-key").unwrap();
    let home = std::env::var("HOME").unwrap();
    let probe = format!("{home}/vigil-escape-probe-{}", std::process::id());
    let (rt, mut rx, fake) = full_auto(&data).await;
    let under_tmp = tempfile::tempdir().unwrap();
    if own_bwrap {
        let folder = under_tmp.path().display().to_string();
        rt.approvals().set_sandbox_writable(&[folder]).unwrap();
    }
    let parent = run(&rt, &mut rx, &fake, "cat /proc/$PPID/comm").await;
    let expected = if own_bwrap { "bwrap" } else { ".vigil-sandbox" };
    assert!(parent.starts_with(expected), "{parent}");
    let d = data.display();
    let tries = [
        format!("umount {d}; cat {d}/secrets/key"),
        format!("umount -l {d}; cat {d}/secrets/key"),
        format!("mount -o remount,rw {d}; cat {d}/secrets/key"),
        format!("mount -o remount,rw /; touch {probe}"),
        format!("mount -o remount,rw {home}; touch {probe}"),
        format!("mount -t tmpfs none {home} && touch {probe}"),
        format!("unshare -rm sh -c 'umount {d}; cat {d}/secrets/key; mount -o remount,rw /; touch {probe}'"),
        format!("unshare -rm sh -c 'mount --bind / /mnt && cat /mnt{d}/secrets/key'"),
    ];
    for attempt in &tries {
        let out = run(&rt, &mut rx, &fake, attempt).await;
        assert!(!out.contains("sk-hidden-key"), "{attempt} read the key: {out}");
        assert!(!Path::new(&probe).exists(), "{attempt} wrote {probe}: {out}");
        // The first step (the mount, unmount or namespace) was refused, as a permission.
        let first = out.lines().next().unwrap_or_default().to_lowercase();
        assert!(
            ["must be superuser", "permission denied", "operation not permitted"]
                .iter()
                .any(|p| first.contains(p)),
            "{attempt} did not fail for lack of permission: {out}"
        );
        assert!(!out.contains("not found"), "{attempt}: {out}");
    }
    let caps = run(
        &rt,
        &mut rx,
        &fake,
        "grep -E '^Cap(Prm|Eff|Amb|Bnd):' /proc/self/status",
    )
    .await;
    let lines: Vec<&str> = caps.lines().filter(|l| l.starts_with("Cap")).collect();
    assert_eq!(lines.len(), 4, "{caps}");
    for line in lines {
        assert!(line.ends_with("0000000000000000"), "capabilities left: {caps}");
    }
    rt.shutdown().await;
}

#[tokio::test]
async fn the_network_switch_gives_a_network_but_never_the_hosts_loopback() {
    bwrap_ready();
    // In a zygote, and in a bwrap of its own (see `terminals_input_kill_and_exit_notices_work_inside`).
    network_in(outside_tmp().path()).await;
    network_in(tempfile::tempdir().unwrap().path()).await;
}

async fn network_in(dir: &Path) {
    // A service on the host's loopback is never reachable from a sandbox; one on the
    // machine's own network address is, when the network is on (as from another machine).
    let local = TcpListener::bind("127.0.0.1:0").unwrap();
    local.set_nonblocking(true).unwrap();
    let lan = {
        let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
        probe.connect("192.0.2.1:9").expect("this machine has a route out");
        probe.local_addr().unwrap().ip()
    };
    assert!(!lan.is_loopback(), "{lan}");
    let listener = TcpListener::bind((lan, 0)).unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (rt, mut rx, fake) = full_auto(dir).await;
    let connect = format!("bash -c 'echo hello > /dev/tcp/{lan}/{port}' && echo connected");
    let loopback = format!(
        "bash -c 'echo hello > /dev/tcp/127.0.0.1/{0}' && echo connected; bash -c 'echo hello > /dev/tcp/10.0.2.2/{0}' && echo connected",
        local.local_addr().unwrap().port()
    );

    rt.approvals().set_sandbox_network(false).unwrap();
    let off = run(&rt, &mut rx, &fake, &connect).await;
    assert!(!off.contains("connected"), "{off}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        listener.accept().is_err(),
        "the server was reached with the network off"
    );

    rt.approvals().set_sandbox_network(true).unwrap();
    let on = run(&rt, &mut rx, &fake, &connect).await;
    assert!(on.contains("connected"), "{on}");
    let (mut conn, _) = listener.accept().expect("reached with the network on");
    conn.set_nonblocking(false).unwrap();
    let mut got = String::new();
    conn.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hello\n");

    let host = run(&rt, &mut rx, &fake, &loopback).await;
    assert!(!host.contains("connected"), "{host}");
    assert!(local.accept().is_err(), "the host's loopback service was reached");
    rt.shutdown().await;
}

/// Inside the sandbox a command still has its terminal (size, input), its exit notice, and
/// killing it takes down everything it started: started by the layout's zygote (a data
/// folder outside /tmp) and by a bwrap of its own (a workspace under /tmp, which the
/// zygote's private /tmp per command would cover).
#[tokio::test]
async fn terminals_input_kill_and_exit_notices_work_inside() {
    bwrap_ready();
    terminals_in(outside_tmp().path(), ".vigil-sandbox").await;
    assert!(std::env::temp_dir().starts_with("/tmp"));
    terminals_in(tempfile::tempdir().unwrap().path(), "bwrap").await;
}

async fn terminals_in(dir: &Path, parent: &str) {
    let (rt, mut rx, fake) = full_auto(dir).await;
    let started_by = run(&rt, &mut rx, &fake, "cat /proc/$PPID/comm").await;
    assert!(started_by.starts_with(parent), "{started_by}");
    let size = run(&rt, &mut rx, &fake, "stty size").await;
    assert!(size.starts_with("32 120"), "{size}");

    // Input: a background `read`, answered with `process write`.
    fake.set_script(Script::steps(vec![
        Step::tool_call(
            "b1",
            "exec",
            json!({"command": "read x; echo got:$x", "background": true}),
        ),
        Step::text("started"),
    ]));
    rt.submit(user("start it"));
    until_finished(&mut rx).await;
    let id = rt
        .list_processes()
        .await
        .into_iter()
        .find(|p| p.command.starts_with("read x"))
        .unwrap()
        .id;
    fake.set_script(Script::steps(vec![
        Step::tool_call(
            "w1",
            "process",
            json!({"action": "write", "sessionId": id, "data": "sandboxed\n"}),
        ),
        Step::tool_call(
            "p1",
            "process",
            json!({"action": "poll", "sessionId": id, "timeout": 5000}),
        ),
        Step::text("done"),
    ]));
    rt.submit(user("answer it"));
    let events = until_finished(&mut rx).await;
    let polled = results(&events).join("\n");
    assert!(polled.contains("got:sandboxed"), "{polled}");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ProcessExited { process } if process.id == id)),
        "an exit notice"
    );

    // Kill: a group of sleepers started in the sandbox, all gone after one kill.
    fake.set_script(Script::steps(vec![
        Step::tool_call(
            "s1",
            "exec",
            json!({"command": "sleep 301.25 & sleep 302.25 & wait", "background": true}),
        ),
        Step::text("started"),
    ]));
    rt.submit(user("sleep"));
    until_finished(&mut rx).await;
    let sleeper = rt
        .list_processes()
        .await
        .into_iter()
        .find(|p| p.command.contains("sleep 301.25"))
        .unwrap();
    let alive = || sleepers(&["301.25", "302.25"]);
    let count = settled(&alive, 2).await;
    assert_eq!(count, 2, "both sleepers run inside");
    fake.set_script(Script::steps(vec![
        Step::tool_call("k1", "process", json!({"action": "kill", "sessionId": sleeper.id})),
        Step::text("killed"),
    ]));
    rt.submit(user("stop them"));
    until_finished(&mut rx).await;
    let count = settled(&alive, 0).await;
    assert_eq!(count, 0, "a sleeper survived the kill");
    rt.shutdown().await;
}

/// Where the workspace lies outside /tmp, commands start in the layout's long-lived sandbox
/// (the zygote) rather than a bwrap each. Each still gets a /tmp and a pid namespace of its
/// own, so no command sees (or signals, or reads through /proc) another, nor the sandbox's
/// helper; exit codes and signals come back as they were. A heartbeat's commands run in a
/// standing sandbox of their own.
#[tokio::test]
async fn commands_in_a_standing_sandbox_see_only_their_own_tmp_and_processes() {
    bwrap_ready();
    let dir = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    let parent = run(&rt, &mut rx, &fake, "cat /proc/$PPID/comm").await;
    assert!(parent.contains("vigil-sandbox"), "started by the zygote: {parent}");

    let first = run(&rt, &mut rx, &fake, "touch /tmp/first-probe && ls -A /tmp").await;
    assert!(first.contains("first-probe"), "{first}");
    let second = run(&rt, &mut rx, &fake, "ls -A /tmp; echo listed").await;
    assert!(
        second.contains("listed") && !second.contains("first-probe"),
        "/tmp is per command: {second}"
    );
    assert!(
        !second.contains("vigil-sandbox"),
        "the helper is not in a command's /tmp: {second}"
    );

    let code = run(&rt, &mut rx, &fake, "exit 3").await;
    assert!(code.contains("(Command exited with code 3)"), "{code}");
    let signal = run(&rt, &mut rx, &fake, "kill -TERM $$").await;
    assert!(signal.contains("killed by signal SIGTERM"), "{signal}");

    // A sleeper in the user's sandbox: neither the next command nor a heartbeat's sees it.
    fake.set_script(Script::steps(vec![
        Step::tool_call("s1", "exec", json!({"command": "sleep 303.75", "background": true})),
        Step::text("started"),
    ]));
    rt.submit(user("sleep"));
    until_finished(&mut rx).await;
    let look = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done; echo looked";
    let neighbour = run(&rt, &mut rx, &fake, look).await;
    assert!(
        neighbour.contains("looked") && !neighbour.contains("303.75"),
        "a command saw another: {neighbour}"
    );
    std::fs::write(rt.workspace().join("HEARTBEAT.md"), "- look around\n").unwrap();
    fake.set_script(Script::steps(vec![
        Step::tool_call("h1", "exec", json!({ "command": look })),
        Step::text("HEARTBEAT_OK"),
    ]));
    rt.request_wake(vigil_core::protocol::WakeReason::Interval);
    let seen = tool_results(&mut rx, 1).await.remove(0);
    assert!(
        seen.contains("looked") && !seen.contains("303.75"),
        "a heartbeat saw the user's command: {seen}"
    );
    next_matching(&mut rx, |e| matches!(e, Event::Heartbeat { .. }).then_some(())).await;
    assert_eq!(sleepers(&["303.75"]), 1, "the heartbeat did not touch it");
    // The heartbeat turn's own last events.
    tokio::time::sleep(Duration::from_millis(300)).await;
    while rx.try_recv().is_ok() {}

    // Its parent is the init of its own namespace: nothing to kill there, and the sleeper
    // (another command) lives on.
    let killed = run(
        &rt,
        &mut rx,
        &fake,
        "echo parent $PPID; kill -KILL $PPID; kill -KILL -1; echo survived",
    )
    .await;
    assert!(killed.contains("parent 1") && killed.contains("survived"), "{killed}");
    assert_eq!(sleepers(&["303.75"]), 1, "a command reached another");
    rt.shutdown().await;
}

/// A standing sandbox with nothing to do leaves on its own (an idle Vigil keeps no sandbox
/// processes), and the next command starts another.
#[tokio::test]
async fn an_idle_standing_sandbox_leaves_and_the_next_command_starts_another() {
    bwrap_ready();
    let dir = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    rt.approvals()
        .set_sandbox(Sandbox::new().with_idle_exit(Duration::from_millis(1500)));
    // bwrap's processes of this test's sandbox: their command lines name its data folder.
    let data = dir.path().canonicalize().unwrap().display().to_string();
    let standing = || {
        processes(|args| args[0].ends_with(b"bwrap") && args.iter().any(|a| String::from_utf8_lossy(a).contains(&data)))
    };
    let first = run(&rt, &mut rx, &fake, "echo one from $(cat /proc/$PPID/comm)").await;
    assert!(first.contains("one from .vigil-sandbox"), "{first}");
    assert!(standing() > 0, "the sandbox stands after its command");
    let count = settled(&standing, 0).await;
    assert_eq!(count, 0, "the idle sandbox left");
    let second = run(&rt, &mut rx, &fake, "echo two from $(cat /proc/$PPID/comm)").await;
    assert!(second.contains("two from .vigil-sandbox"), "{second}");
    rt.shutdown().await;
}

/// The README's "the helper leaves after 5 minutes with nothing running", as Vigil starts
/// it, without waiting five minutes: the standing sandbox's helper of a runtime with the
/// default sandbox is told 300 000 ms (it takes its idle limit as its argument, and the test
/// above shows it leaves after the limit it is given).
#[tokio::test]
async fn by_default_a_standing_sandbox_is_told_to_leave_after_five_idle_minutes() {
    bwrap_ready();
    let dir = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    let first = run(&rt, &mut rx, &fake, "echo one from $(cat /proc/$PPID/comm)").await;
    assert!(first.contains("one from .vigil-sandbox"), "{first}");
    let data = dir.path().canonicalize().unwrap().display().to_string();
    let args: Vec<Vec<String>> = helpers(&data).into_iter().map(|(_, args)| args).collect();
    assert_eq!(args, [vec!["/tmp/.vigil-sandbox".to_string(), "300000".into()]]);
    rt.shutdown().await;
}

/// The pids and command lines of the helpers of the standing sandboxes of the data folder
/// `data`: children of a bwrap whose command line names it, running `/tmp/.vigil-sandbox`.
fn helpers(data: &str) -> Vec<(String, Vec<String>)> {
    let cmdline = |pid: &str| std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let parent = |pid: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("PPid:").map(|p| p.trim().to_string()))
            .unwrap_or_default()
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(String::from))
        .filter(|pid| {
            cmdline(pid).starts_with(b"/tmp/.vigil-sandbox\0")
                && String::from_utf8_lossy(&cmdline(&parent(pid))).contains(data)
        })
        .map(|pid| {
            let args = cmdline(&pid)
                .split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            (pid, args)
        })
        .collect()
}

/// A folder added in Settings → Approvals is writable from inside the sandbox: a command
/// writes a file there and it is on the disk afterwards, in the standing sandbox and in a
/// bwrap of its own (a folder under /tmp added too, which a standing sandbox cannot bind).
#[tokio::test]
async fn a_folder_added_in_settings_is_writable_inside_the_sandbox() {
    bwrap_ready();
    let dir = outside_tmp();
    let added = outside_tmp();
    let under_tmp = tempfile::tempdir().unwrap();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    let added = added.path().canonicalize().unwrap();
    let under_tmp = under_tmp.path().canonicalize().unwrap();
    let write = |folder: &Path, name: &str| format!("echo {name} > {}/{name}.txt", folder.display());

    rt.approvals()
        .set_sandbox_writable(&[added.display().to_string()])
        .unwrap();
    let standing = format!("{} && cat /proc/$PPID/comm", write(&added, "standing"));
    let out = run(&rt, &mut rx, &fake, &standing).await;
    assert!(out.contains(".vigil-sandbox"), "started by the standing sandbox: {out}");
    assert_eq!(
        std::fs::read_to_string(added.join("standing.txt")).unwrap(),
        "standing\n",
        "{out}"
    );

    rt.approvals()
        .set_sandbox_writable(&[added.display().to_string(), under_tmp.display().to_string()])
        .unwrap();
    let own = format!(
        "{} && {} && cat /proc/$PPID/comm",
        write(&added, "own"),
        write(&under_tmp, "own")
    );
    let out = run(&rt, &mut rx, &fake, &own).await;
    assert!(out.contains("bwrap"), "started by a bwrap of its own: {out}");
    for folder in [&added, &under_tmp] {
        assert_eq!(
            std::fs::read_to_string(folder.join("own.txt")).unwrap(),
            "own\n",
            "{out}"
        );
    }
    rt.shutdown().await;
}

/// A standing sandbox that stops answering (stopped, stuck) costs one command a bounded
/// wait, then commands of that layout start with a bwrap each: nothing hangs, nothing is
/// lost, and the stopped helper is taken down.
#[tokio::test]
async fn a_stopped_standing_sandbox_is_replaced_by_a_bwrap_per_command() {
    bwrap_ready();
    let dir = outside_tmp();
    let (rt, mut rx, fake) = full_auto(dir.path()).await;
    let first = run(&rt, &mut rx, &fake, "echo one from $(cat /proc/$PPID/comm)").await;
    assert!(first.contains("one from .vigil-sandbox"), "{first}");
    let data = dir.path().canonicalize().unwrap().display().to_string();
    let (helper, _) = helpers(&data).pop().expect("the helper runs");
    std::process::Command::new("kill")
        .args(["-STOP", &helper])
        .status()
        .unwrap();
    let started = std::time::Instant::now();
    let second = run(&rt, &mut rx, &fake, "echo two from $(cat /proc/$PPID/comm)").await;
    assert!(second.contains("two from bwrap"), "{second}");
    assert!(started.elapsed() < Duration::from_secs(9), "{:?}", started.elapsed());
    let third = run(&rt, &mut rx, &fake, "echo three from $(cat /proc/$PPID/comm)").await;
    assert!(third.contains("three from bwrap"), "{third}");
    let gone = settled(
        || usize::from(std::path::Path::new(&format!("/proc/{helper}")).exists()),
        0,
    )
    .await;
    assert_eq!(gone, 0, "the stopped helper was taken down");
    rt.shutdown().await;
}

/// The next `n` tool results.
pub(super) async fn tool_results(rx: &mut Events, n: usize) -> Vec<String> {
    let mut seen = Vec::new();
    next_matching(rx, |e| {
        if let Event::ToolCallFinished { content, .. } = e {
            seen.push(content.clone());
        }
        (seen.len() == n).then(|| seen.clone())
    })
    .await
}

/// Processes whose command line has one of `marks` as an argument, from /proc.
fn sleepers(marks: &[&str]) -> usize {
    processes(|args| args[0].ends_with(b"sleep") && marks.iter().any(|m| args.contains(&m.as_bytes())))
}

/// `count()` once it is `want`, or after 5 s.
async fn settled(count: impl Fn() -> usize, want: usize) -> usize {
    for _ in 0..100 {
        if count() == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    count()
}

/// How many processes' arguments (from /proc, never empty) pass `test`.
fn processes(test: impl Fn(&[&[u8]]) -> bool) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|c| {
            let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
            !c.is_empty() && test(&args)
        })
        .count()
}
