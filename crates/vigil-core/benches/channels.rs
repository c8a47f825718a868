//! `cargo bench -p vigil-core --bench channels` (in `make bench`): the phone channels against
//! the fake ntfy server and Telegram Bot API on loopback, each number as a ratio to its goal
//! or to a baseline measured in the same run:
//!
//! - an event on its way out → the push request at the server: p99 against 100 ms;
//! - an answer posted to the reply topic → the approval answered (the command starts right
//!   after; `trust` measures that part): p99 against 200 ms;
//! - idle CPU with a connected channel (ntfy's stream and Telegram's long poll open) against
//!   the same process with the channels off: goal ≤ 1.1×.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use vigil_core::channels::{ChannelHost, Channels, Keys};
use vigil_core::clock::SystemClock;
use vigil_core::events::CollectingSink;
use vigil_core::protocol::{
    ApprovalDecision, ApprovalKind, ChannelWhen, ChannelsSettings, Event, EventEnvelope, NotificationKind,
    NtfySettings, Scope, Source, TelegramSettings,
};
use vigil_fake_phone::{FakeNtfy, FakeTelegram};

use common::{cpu_time, p99};

const NTFY_TOKEN: &str = "tk_bench";
const BOT_TOKEN: &str = "1:bench";
const SAMPLES: usize = 200;

struct Host(mpsc::UnboundedSender<(String, Instant)>);

impl ChannelHost for Host {
    fn answer(&self, approval_id: &str, _: ApprovalDecision) -> bool {
        let _ = self.0.send((approval_id.to_string(), Instant::now()));
        true
    }
    fn user_message(&self, _: &str, _: String) {}
    fn away(&self) -> Option<bool> {
        Some(true)
    }
}

fn envelope(event: Event) -> EventEnvelope {
    EventEnvelope {
        id: uuid::Uuid::new_v4().to_string(),
        ts: 0,
        session_id: None,
        scope: Scope::App,
        source: Source::System,
        run_id: None,
        event,
    }
}

async fn wait_published(ntfy: &FakeNtfy, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while ntfy.published_to("push").len() < n {
        assert!(Instant::now() < deadline, "push {n} never arrived");
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let ntfy = FakeNtfy::start(Some(NTFY_TOKEN)).await.unwrap();
    let tg = FakeTelegram::start(BOT_TOKEN).await.unwrap();
    let channels = Channels::open(
        dir.path(),
        Arc::new(SystemClock),
        Keys::fixed(Some(NTFY_TOKEN), Some(BOT_TOKEN)),
    );
    let sink = channels.tap(Arc::new(CollectingSink::default()));
    let (tx, mut answers) = mpsc::unbounded_channel();
    let stop = CancellationToken::new();

    // Idle, channels off (settings empty): the baseline.
    channels.start(Arc::new(Host(tx)), stop.clone());
    let idle = Duration::from_secs(3);
    let before = cpu_time();
    tokio::time::sleep(idle).await;
    let off = cpu_time() - before;

    channels.set_settings(ChannelsSettings {
        ntfy: Some(NtfySettings {
            server: ntfy.url(),
            topic: Some("push".into()),
            reply_topic: Some("reply".into()),
        }),
        telegram: Some(TelegramSettings {
            api_base: tg.api_base(),
            chat_id: Some(7),
            session_id: None,
        }),
        when: ChannelWhen::Always,
        ..Default::default()
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while ntfy.subscribers() == 0 || !tg.calls().iter().any(|c| c == "getUpdates") {
        assert!(Instant::now() < deadline, "the channels never connected");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = cpu_time();
    tokio::time::sleep(idle).await;
    let on = cpu_time() - before;

    // Event → push request.
    let mut push_lat = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let start = Instant::now();
        sink.emit(envelope(Event::notice(
            NotificationKind::Routine,
            format!("result {i}"),
            "done",
        )));
        wait_published(&ntfy, i + 1).await;
        push_lat.push(start.elapsed());
    }

    // Answer → approval answered.
    let client = reqwest::Client::new();
    let mut answer_lat = Vec::with_capacity(SAMPLES / 4);
    for i in 0..SAMPLES / 4 {
        let id = format!("a{i}");
        sink.emit(envelope(Event::ApprovalRequested {
            approval_id: id.clone(),
            kind: ApprovalKind::Exec,
            prefix: String::new(),
            command: "true".into(),
            cwd: None,
            outside_sandbox: false,
            env: vec![],
            parts: vec![],
            unprovable: None,
            exec_run: None,
            mcp: None,
            expires_at: None,
        }));
        let n = ntfy.published_to("push").len();
        wait_published(&ntfy, n + 1).await;
        let push = ntfy.published_to("push").pop().unwrap();
        let body = push.body["actions"][0]["body"].as_str().expect("buttons").to_string();
        let start = Instant::now();
        client
            .post(format!("{}/reply", ntfy.url()))
            .body(body)
            .send()
            .await
            .unwrap();
        let (answered, at) = tokio::time::timeout(Duration::from_secs(10), answers.recv())
            .await
            .expect("answered")
            .unwrap();
        assert_eq!(answered, id);
        answer_lat.push(at - start);
        // The approval ends, as the gate would report it.
        sink.emit(envelope(Event::ApprovalResolved {
            approval_id: id,
            decision: ApprovalDecision::Approve,
            expired: false,
        }));
    }
    stop.cancel();

    let push = p99(push_lat);
    let answer = p99(answer_lat);
    println!(
        "channels: event → push request p99 {:.1} ms (goal 100 ms: {:.2}×)",
        push.as_secs_f64() * 1e3,
        push.as_secs_f64() / 0.100
    );
    println!(
        "channels: answer → approval answered p99 {:.1} ms (goal 200 ms: {:.2}×)",
        answer.as_secs_f64() * 1e3,
        answer.as_secs_f64() / 0.200
    );
    // A millisecond of slack each side: both are near zero, and a ratio of two zeros says nothing.
    let slack = Duration::from_millis(1);
    println!(
        "channels: idle CPU over {} s, connected {:.1} ms vs off {:.1} ms (goal ≤ 1.1×: {:.2}×)",
        idle.as_secs(),
        on.as_secs_f64() * 1e3,
        off.as_secs_f64() * 1e3,
        (on + slack).as_secs_f64() / (off + slack).as_secs_f64()
    );
}
