//! The sleep inhibitor against a fake systemd-logind (`fixtures/fake-logind.py`) on a private
//! D-Bus bus: what it asks logind for, and whether the lock's fd is really closed when work
//! ends (the fake watches its end of the pipe for the hang-up, as logind's lock ends).
//!
//! Needs `dbus-daemon` and `/usr/bin/python3` with python3-dbus and python3-gi, which
//! `make deps-test` installs. Missing pieces fail the test with what to install; they never
//! skip it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};
use vigil_core::inhibit::{InhibitorStatus, SleepInhibitor};

/// How long anything the test waits for may take before it counts as not happening.
const BOUND: Duration = Duration::from_secs(10);
/// How long nothing must happen for "nothing happened" to hold.
const QUIET: Duration = Duration::from_millis(600);

const NO_LOGIND: &str = "The system bus has no systemd-logind (org.freedesktop.login1), so Vigil cannot keep the \
                         computer awake while work runs.";

pub(super) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A private bus; the daemon dies with this value, its socket with the folder.
pub(super) struct Bus {
    pub(super) address: String,
    _daemon: Child,
    /// Holds the socket; a test also points at a path in it where no bus listens.
    dir: tempfile::TempDir,
}

pub(super) async fn private_bus() -> Bus {
    let dir = tempfile::tempdir().expect("temp folder");
    let mut daemon = Command::new("dbus-daemon")
        .arg(format!("--config-file={}", fixture("private-bus.conf").display()))
        .arg(format!("--address=unix:path={}", dir.path().join("bus").display()))
        .args(["--print-address", "--nofork"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start dbus-daemon ({e}): the inhibitor tests need it for a private bus. Install the \
                 Debian package `dbus-daemon` (`make deps-test` does)."
            )
        });
    let mut lines = BufReader::new(daemon.stdout.take().expect("stdout")).lines();
    let address = tokio::time::timeout(BOUND, lines.next_line())
        .await
        .expect("dbus-daemon printed no address")
        .expect("read dbus-daemon's address")
        .expect("dbus-daemon exited before printing its address");
    Bus {
        address,
        _daemon: daemon,
        dir,
    }
}

/// The fake logind, and the events it reports as JSON lines.
struct FakeLogind {
    child: Child,
    events: Lines<BufReader<ChildStdout>>,
}

impl FakeLogind {
    async fn start(bus: &Bus, refuse: bool) -> Self {
        let python = "/usr/bin/python3";
        let mut cmd = Command::new(python);
        cmd.arg(fixture("fake-logind.py")).arg(&bus.address);
        if refuse {
            cmd.arg("--refuse");
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {python} ({e}): install python3, python3-dbus and python3-gi (`make deps-test`)")
            });
        let events = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut fake = FakeLogind { child, events };
        let first = tokio::time::timeout(BOUND, fake.events.next_line()).await;
        if !matches!(&first, Ok(Ok(Some(line))) if line.contains("\"ready\"")) {
            let mut stderr = String::new();
            if let Some(mut pipe) = fake.child.stderr.take() {
                let _ = tokio::time::timeout(BOUND, pipe.read_to_string(&mut stderr)).await;
            }
            panic!(
                "the fake logind did not start (it needs {python} with python3-dbus and python3-gi, which `make \
                 deps-test` installs). First line: {first:?}; its stderr:\n{stderr}"
            );
        }
        fake
    }

    /// Asserts that the next thing the fake sees is `want`.
    async fn expect(&mut self, want: Value) {
        let line = tokio::time::timeout(BOUND, self.events.next_line())
            .await
            .unwrap_or_else(|_| panic!("waited {BOUND:?} for {want}, the fake logind saw nothing"))
            .expect("read the fake's output")
            .expect("the fake logind exited");
        let got: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not an event ({e}): {line}"));
        assert_eq!(got, want);
    }

    /// Asserts that the fake sees nothing for a while: no call, no lock closed.
    async fn quiet(&mut self) {
        if let Ok(line) = tokio::time::timeout(QUIET, self.events.next_line()).await {
            panic!("expected nothing, the fake logind saw {line:?}");
        }
    }
}

fn inhibit(id: u64, why: &str) -> Value {
    json!({"event": "inhibit", "id": id, "what": "sleep", "who": "Vigil", "why": why, "mode": "block"})
}

fn released(id: u64) -> Value {
    json!({"event": "released", "id": id})
}

async fn status_becomes(inhibitor: &SleepInhibitor, want: InhibitorStatus) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while inhibitor.status() != want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "status stayed {:?}, expected {want:?}",
            inhibitor.status()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn holds_a_sleep_lock_while_work_runs_and_closes_it_when_nothing_does() {
    let bus = private_bus().await;
    let mut logind = FakeLogind::start(&bus, false).await;
    let inhibitor = SleepInhibitor::start(true, Some(bus.address.clone()));

    inhibitor.set_running(1);
    logind.expect(inhibit(1, "1 task running")).await;
    status_becomes(&inhibitor, InhibitorStatus::Holding { tasks: 1 }).await;
    // Held: the fd stays open while the work runs.
    logind.quiet().await;

    inhibitor.set_running(0);
    logind.expect(released(1)).await;
    status_becomes(&inhibitor, InhibitorStatus::Idle).await;
}

#[tokio::test]
async fn a_new_count_takes_the_new_lock_before_the_old_one_goes() {
    let bus = private_bus().await;
    let mut logind = FakeLogind::start(&bus, false).await;
    let inhibitor = SleepInhibitor::start(true, Some(bus.address.clone()));

    inhibitor.set_running(1);
    logind.expect(inhibit(1, "1 task running")).await;
    // A burst of starts: one new lock naming the count it settled on.
    inhibitor.set_running(2);
    inhibitor.set_running(3);
    logind.expect(inhibit(2, "3 tasks running")).await;
    logind.expect(released(1)).await;
    status_becomes(&inhibitor, InhibitorStatus::Holding { tasks: 3 }).await;
    logind.quiet().await;

    // Clones share the lock; the last one gone releases it.
    let other = inhibitor.clone();
    drop(inhibitor);
    logind.quiet().await;
    drop(other);
    logind.expect(released(2)).await;
}

#[tokio::test]
async fn without_logind_on_the_bus_it_says_so_and_work_goes_on() {
    let bus = private_bus().await;
    let inhibitor = SleepInhibitor::start(true, Some(bus.address.clone()));
    let unavailable = InhibitorStatus::Unavailable {
        reason: NO_LOGIND.into(),
    };
    // Settings can say so before any work runs.
    status_becomes(&inhibitor, unavailable.clone()).await;
    inhibitor.set_running(1);
    inhibitor.set_running(0);
    inhibitor.set_running(2);
    tokio::time::sleep(QUIET).await;
    assert_eq!(inhibitor.status(), unavailable);

    // No bus at all.
    let nowhere = bus.dir.path().join("no-bus");
    let inhibitor = SleepInhibitor::start(true, Some(format!("unix:path={}", nowhere.display())));
    inhibitor.set_running(1);
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        match inhibitor.status() {
            InhibitorStatus::Unavailable { reason } => {
                assert!(reason.starts_with("Vigil cannot reach the system bus ("), "{reason}");
                assert!(
                    reason.ends_with("so Vigil cannot keep the computer awake while work runs."),
                    "{reason}"
                );
                break;
            }
            other => assert!(tokio::time::Instant::now() < deadline, "status stayed {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn turned_off_it_asks_logind_for_nothing_until_turned_on() {
    let bus = private_bus().await;
    let mut logind = FakeLogind::start(&bus, false).await;
    let inhibitor = SleepInhibitor::start(false, Some(bus.address.clone()));

    inhibitor.set_running(2);
    logind.quiet().await;
    assert_eq!(inhibitor.status(), InhibitorStatus::Off);

    // Turned on while work runs: the lock is taken; turned off again: it goes.
    inhibitor.set_enabled(true);
    logind.expect(inhibit(1, "2 tasks running")).await;
    status_becomes(&inhibitor, InhibitorStatus::Holding { tasks: 2 }).await;
    inhibitor.set_enabled(false);
    logind.expect(released(1)).await;
    status_becomes(&inhibitor, InhibitorStatus::Off).await;
    inhibitor.set_running(1);
    logind.quiet().await;
}

#[tokio::test]
async fn a_refused_lock_is_asked_for_again_only_when_work_starts_anew() {
    let bus = private_bus().await;
    let mut logind = FakeLogind::start(&bus, true).await;
    let inhibitor = SleepInhibitor::start(true, Some(bus.address.clone()));
    let refused = InhibitorStatus::Unavailable {
        reason: "systemd-logind refused a sleep lock (Access denied), so Vigil cannot keep the computer awake while \
                 work runs."
            .into(),
    };

    inhibitor.set_running(1);
    logind.expect(inhibit(1, "1 task running")).await;
    status_becomes(&inhibitor, refused.clone()).await;
    // More work joining is no reason to ask again.
    inhibitor.set_running(2);
    inhibitor.set_running(3);
    logind.quiet().await;
    assert_eq!(inhibitor.status(), refused);

    // Everything ended and new work started: one more try.
    inhibitor.set_running(0);
    inhibitor.set_running(1);
    logind.expect(inhibit(2, "1 task running")).await;
    logind.quiet().await;
}

/// Everything the fake reports until it has been quiet for a while.
async fn all_until_quiet(logind: &mut FakeLogind) -> Vec<Value> {
    let mut seen = Vec::new();
    while let Ok(line) = tokio::time::timeout(QUIET, logind.events.next_line()).await {
        let line = line.expect("read the fake's output").expect("the fake logind exited");
        seen.push(serde_json::from_str(&line).expect("an event"));
    }
    seen
}

/// Through the whole runtime: a lock while the turn and its background command run (the
/// command alone keeps it after the turn ended), none once the continuation is over.
#[tokio::test]
async fn the_runtime_keeps_the_computer_awake_while_a_background_command_runs() {
    use vigil_core::protocol::{ApprovalPolicy, Event, ProviderKind};
    use vigil_fake_llm::{FakeLlm, Script, Step};

    let bus = private_bus().await;
    let mut logind = FakeLogind::start(&bus, false).await;
    let dir = super::support::outside_tmp();
    let script = Script::steps(vec![
        Step::tool_call(
            "k1",
            "exec",
            json!({"command": "sleep 1.5; echo awake-done", "background": true}),
        ),
        Step::text("Started."),
    ])
    .with_fallback(Step::text("It finished."));
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, mut rx) = super::support::runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::FullAuto);
    rt.set_logind_bus(&bus.address);
    assert!(rt.start_background());
    assert_eq!(rt.keep_awake_status(), InhibitorStatus::Idle);
    rt.submit(super::support::user("run it in the background"));
    super::support::until_finished(&mut rx).await;
    // The turn is over; the command still runs, and keeps the computer awake on its own.
    let deadline = tokio::time::Instant::now() + BOUND;
    while rt.keep_awake_status() != (InhibitorStatus::Holding { tasks: 1 }) {
        assert!(
            !rt.running_processes().await.is_empty(),
            "the command ended before the check"
        );
        assert!(tokio::time::Instant::now() < deadline, "{:?}", rt.keep_awake_status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    super::support::next_matching(&mut rx, |e| match e {
        Event::TurnFinished { .. } => Some(()),
        _ => None,
    })
    .await;
    let deadline = tokio::time::Instant::now() + BOUND;
    while rt.keep_awake_status() != InhibitorStatus::Idle {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", rt.keep_awake_status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let seen = all_until_quiet(&mut logind).await;
    let ids = |event: &str| -> Vec<u64> {
        seen.iter()
            .filter(|e| e["event"] == event)
            .map(|e| e["id"].as_u64().unwrap())
            .collect()
    };
    let (taken, let_go) = (ids("inhibit"), ids("released"));
    assert!(!taken.is_empty(), "no lock was taken: {seen:?}");
    assert_eq!(taken, let_go, "every lock is let go once nothing runs: {seen:?}");
    assert!(
        seen.iter()
            .all(|e| e["event"] != "inhibit" || (e["who"] == "Vigil" && e["what"] == "sleep")),
        "{seen:?}"
    );
    rt.shutdown().await;
}
