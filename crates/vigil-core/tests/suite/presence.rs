//! Presence against a fake systemd-logind (`fixtures/fake-logind.py`) on a private bus: the
//! session Vigil finds itself in, its idle and lock hints as a desktop sets them, and the
//! window's input where logind knows no session of Vigil's.
//!
//! Needs `dbus-daemon` and `/usr/bin/python3` with python3-dbus and python3-gi (`make
//! deps-test`); missing pieces fail the test, never skip it.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use vigil_core::clock::ManualClock;
use vigil_core::presence::{Presence, PresenceSource, PresenceWatch};
use vigil_core::protocol::{AwayKind, AwayLine, AwaySummary, AwayTarget, Event, ProviderKind, WakeReason};
use vigil_core::Runtime;
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::inhibit::{fixture, private_bus};
use super::support::{next_matching, runtime};

const BOUND: Duration = Duration::from_secs(10);
const NOW_MS: i64 = 1_700_000_000_000;

/// The fake logind, driven through its stdin as a desktop's idle monitor would drive logind.
struct Desktop {
    _child: Child,
    stdin: ChildStdin,
    events: Lines<BufReader<ChildStdout>>,
}

impl Desktop {
    async fn start(address: &str, args: &[&str]) -> Self {
        let mut child = Command::new("/usr/bin/python3")
            .arg(fixture("fake-logind.py"))
            .arg(address)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the fake logind: install python3, python3-dbus and python3-gi (`make deps-test`)");
        let stdin = child.stdin.take().unwrap();
        let mut events = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(BOUND, events.next_line()).await;
        assert!(
            matches!(&first, Ok(Ok(Some(l))) if l.contains("\"ready\"")),
            "the fake logind did not start: {first:?}"
        );
        Desktop {
            _child: child,
            stdin,
            events,
        }
    }

    /// Sets hints on the session and waits until the fake has signalled them (other lines,
    /// its sleep locks, are passed over).
    async fn set(&mut self, hints: Value) {
        self.stdin.write_all(format!("{hints}\n").as_bytes()).await.unwrap();
        loop {
            let line = tokio::time::timeout(BOUND, self.events.next_line())
                .await
                .expect("the fake logind answered")
                .unwrap()
                .expect("the fake logind is alive");
            if line.contains("\"hints\"") {
                return;
            }
        }
    }
}

async fn becomes(rx: &mut watch::Receiver<Presence>, want: Presence) {
    let got = tokio::time::timeout(BOUND, rx.wait_for(|p| *p == want)).await.is_ok();
    assert!(got, "presence stayed {:?}, expected {want:?}", *rx.borrow());
}

#[tokio::test]
async fn idle_and_locked_sessions_are_away_and_an_active_one_is_here() {
    let bus = private_bus().await;
    let mut desktop = Desktop::start(&bus.address, &[]).await;
    let clock = ManualClock::new(NOW_MS);
    let watch = PresenceWatch::start(Arc::new(clock.clone()), Some(bus.address.clone()));
    let mut rx = watch.subscribe();
    let deadline = tokio::time::Instant::now() + BOUND;
    while watch.source() == PresenceSource::Starting {
        assert!(
            tokio::time::Instant::now() < deadline,
            "logind's session was never found"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        watch.source(),
        PresenceSource::Logind("/org/freedesktop/login1/session/_31".into())
    );
    assert_eq!(watch.now(), Presence::Here);

    // Idle since two hours ago, by the desktop's word: away since then.
    let since_ms = NOW_MS - 2 * 3_600_000;
    desktop
        .set(json!({"IdleHint": true, "IdleSinceHint": since_ms * 1000}))
        .await;
    becomes(&mut rx, Presence::Away { since_ms }).await;
    // The screen locks as well: still away since the same time.
    desktop.set(json!({"LockedHint": true})).await;
    desktop.set(json!({"IdleHint": false})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(watch.now(), Presence::Away { since_ms });
    desktop.set(json!({"LockedHint": false})).await;
    becomes(&mut rx, Presence::Here).await;

    // A lock with no idle time: away from when Vigil saw it.
    clock.advance(Duration::from_secs(60));
    desktop.set(json!({"LockedHint": true})).await;
    becomes(
        &mut rx,
        Presence::Away {
            since_ms: NOW_MS + 60_000,
        },
    )
    .await;
    // The window's input does not overrule the desktop session.
    watch.input_seen();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        watch.now(),
        Presence::Away {
            since_ms: NOW_MS + 60_000
        }
    );
}

#[tokio::test]
async fn without_a_login_session_the_window_decides() {
    let bus = private_bus().await;
    let _desktop = Desktop::start(&bus.address, &["--no-session"]).await;
    let watch = PresenceWatch::start(Arc::new(ManualClock::new(NOW_MS)), Some(bus.address.clone()));
    let deadline = tokio::time::Instant::now() + BOUND;
    loop {
        match watch.source() {
            PresenceSource::Window { why } => {
                assert!(why.contains("logind knows no session of Vigil's"), "{why}");
                assert!(why.contains("does not belong to any known session"), "{why}");
                break;
            }
            other => assert!(tokio::time::Instant::now() < deadline, "source stayed {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(watch.now(), Presence::Here);
}

/// Waits until the runtime sees `want`: each step of an absence must be seen before the next.
async fn runtime_sees(rt: &Runtime, want: Presence) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while rt.presence() != want {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}, expected {want:?}",
            rt.presence()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn found_the_session(rt: &Runtime) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while !matches!(rt.presence_source(), PresenceSource::Logind(_)) {
        assert!(tokio::time::Instant::now() < deadline, "{:?}", rt.presence_source());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn back_after_an_hour_the_window_is_told_what_happened_and_after_ten_minutes_it_is_not() {
    let bus = private_bus().await;
    let mut desktop = Desktop::start(&bus.address, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start(Script::steps(vec![
        Step::text("Disk /home is 91% full."),
        Step::text("Disk /home is 92% full."),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    std::fs::write(
        rt.workspace().join("HEARTBEAT.md"),
        "- Tell me when the disk is over 90 %.\n",
    )
    .unwrap();
    rt.set_logind_bus(&bus.address);
    assert!(rt.start_background());
    found_the_session(&rt).await;
    let now = rt.clock().now_ms();

    // Ten minutes idle: back too soon for a card, though the heartbeat reported meanwhile.
    let ten_minutes_ago = now - 10 * 60_000;
    desktop
        .set(json!({"IdleHint": true, "IdleSinceHint": ten_minutes_ago * 1000}))
        .await;
    runtime_sees(
        &rt,
        Presence::Away {
            since_ms: ten_minutes_ago,
        },
    )
    .await;
    rt.heartbeat_once(WakeReason::Manual).await;
    desktop.set(json!({"IdleHint": false})).await;
    runtime_sees(&rt, Presence::Here).await;
    // Two hours idle by the desktop's word; the heartbeat reports once more.
    let two_hours_ago = now - 2 * 3_600_000;
    desktop
        .set(json!({"IdleHint": true, "IdleSinceHint": two_hours_ago * 1000}))
        .await;
    runtime_sees(
        &rt,
        Presence::Away {
            since_ms: two_hours_ago,
        },
    )
    .await;
    rt.heartbeat_once(WakeReason::Manual).await;
    desktop.set(json!({"IdleHint": false})).await;
    let summary = next_matching(&mut rx, |e| match e {
        Event::WhileAway { summary } => Some(summary.clone()),
        _ => None,
    })
    .await;
    assert_eq!(
        summary,
        AwaySummary {
            away_since: now - 2 * 3_600_000,
            back_at: now,
            lines: vec![AwayLine {
                kind: AwayKind::Ran,
                title: "Heartbeat".into(),
                // Both runs lie in the two hours; the ten minutes' card was never sent.
                text: "checked 2 times, reported 2 things".into(),
                at: now,
                target: AwayTarget::Conversation {
                    session_id: "main".into(),
                    message_ts: None,
                    approval_id: None,
                },
            }],
        }
    );
    while let Ok(e) = rx.try_recv() {
        assert!(!matches!(e.event, Event::WhileAway { .. }), "one card: {e:?}");
    }
    rt.shutdown().await;
}
