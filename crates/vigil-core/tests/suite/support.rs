//! Shared helpers: clients pointed at the fake provider, both protocols.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use vigil_core::clock::ManualClock;
use vigil_core::protocol::{Message, ProviderKind};
use vigil_core::provider::{ChatRequest, Completion, ModelClient, ProviderConfig, StreamEvent, StreamFailure};
use vigil_fake_llm::FakeLlm;

pub const KINDS: [ProviderKind; 2] = [ProviderKind::Anthropic, ProviderKind::Openai];

pub fn base_url(fake: &FakeLlm, kind: ProviderKind) -> String {
    match kind {
        ProviderKind::Anthropic => fake.anthropic_base_url(),
        ProviderKind::Openai => fake.openai_base_url(),
    }
}

pub fn config(fake: &FakeLlm, kind: ProviderKind) -> ProviderConfig {
    let mut cfg = ProviderConfig::new(kind, base_url(fake, kind), "fake-model");
    cfg.api_key = Some("sk-test".into());
    cfg.idle_timeout = Duration::from_secs(5);
    cfg
}

pub fn client(cfg: ProviderConfig, clock: &ManualClock) -> ModelClient {
    ModelClient::new(cfg, Arc::new(clock.clone())).expect("client")
}

pub fn hello() -> ChatRequest {
    ChatRequest {
        images: Default::default(),
        system: "be brief".into(),
        messages: vec![Message::user_text("hello", 1)],
        tools: Default::default(),
        cache: Default::default(),
    }
}

/// Streams one request, returning the result and every event in order.
pub async fn stream(client: &ModelClient, req: &ChatRequest) -> (Result<Completion, StreamFailure>, Vec<StreamEvent>) {
    let mut events = Vec::new();
    let result = client
        .stream(req, &CancellationToken::new(), &mut |e| events.push(e))
        .await;
    (result, events)
}

pub fn text_of(events: &[StreamEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// A sink that hands events to the test as they happen.
pub struct ChannelSink(pub tokio::sync::mpsc::UnboundedSender<vigil_core::protocol::EventEnvelope>);

impl vigil_core::events::EventSink for ChannelSink {
    fn emit(&self, event: vigil_core::protocol::EventEnvelope) {
        let _ = self.0.send(event);
    }
}

pub type Events = tokio::sync::mpsc::UnboundedReceiver<vigil_core::protocol::EventEnvelope>;

/// A runtime on a temp data dir, talking to `fake` with `kind`.
pub fn runtime(dir: &std::path::Path, fake: Option<(&FakeLlm, ProviderKind)>) -> (vigil_core::Runtime, Events) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let clock = ManualClock::new(1_700_000_000_000);
    let rt = vigil_core::Runtime::new(dir, Arc::new(clock.clone()), Arc::new(ChannelSink(tx))).unwrap();
    rt.set_client(fake.map(|(f, k)| client(config(f, k), &clock)));
    (rt, rx)
}

/// Collects events up to and including the next `turn_finished`.
pub async fn until_finished(rx: &mut Events) -> Vec<vigil_core::protocol::Event> {
    let mut out = Vec::new();
    loop {
        let env = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("turn finished in time")
            .expect("runtime alive");
        let done = matches!(env.event, vigil_core::protocol::Event::TurnFinished { .. });
        out.push(env.event);
        if done {
            return out;
        }
    }
}

/// `vigil-headless` on `dir` against `fake` over the OpenAI protocol with key `key` (the
/// binary in `VIGIL_HEADLESS_BIN` if set, else this build's), for tests that drive it.
pub fn headless(dir: &std::path::Path, fake: &FakeLlm, key: &str) -> std::process::Command {
    let bin = std::env::var("VIGIL_HEADLESS_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_vigil-headless").into());
    let mut cmd = std::process::Command::new(bin);
    cmd.arg("--data-dir")
        .arg(dir)
        .env("VIGIL_PROVIDER", "openai")
        .env("VIGIL_BASE_URL", fake.openai_base_url())
        .env("VIGIL_MODEL", "fake-model")
        .env("VIGIL_API_KEY", key)
        .env("VIGIL_NO_KEYRING", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    cmd
}

/// A fake that answers every request with a numbered echo (no two replies alike, so no
/// heartbeat alert is dropped as a repeat), and a data folder whose heartbeat runs only on
/// `wake` ops, with a short prompt.
pub async fn numbered_echo_and_wake_only_heartbeat(key: &str, dir: &std::path::Path) -> FakeLlm {
    let script = vigil_fake_llm::Script::steps(vec![])
        .with_api_key(key)
        .with_fallback(vigil_fake_llm::Step::echo_numbered());
    std::fs::write(
        dir.join("settings.json"),
        serde_json::json!({"heartbeat": {"enabled": true, "every": "0", "prompt": "Check."}}).to_string(),
    )
    .unwrap();
    // A crash run resends an ever longer history; only a request's tail is ever looked at.
    let options = vigil_fake_llm::Options {
        keep_messages: Some(16),
        ..Default::default()
    };
    FakeLlm::start_with(script, options).await.unwrap()
}

/// A message from the user to the primary conversation.
pub fn user(text: &str) -> vigil_core::protocol::Op {
    vigil_core::protocol::Op::UserMessage {
        text: text.into(),
        session_id: None,
        attachments: vec![],
    }
}

/// The first event `f` maps to something (20 s at most).
pub async fn next_matching<T>(rx: &mut Events, mut f: impl FnMut(&vigil_core::protocol::Event) -> Option<T>) -> T {
    loop {
        let env = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .expect("in time")
            .expect("alive");
        if let Some(t) = f(&env.event) {
            return t;
        }
    }
}

/// A temp folder the sandbox does not replace: outside `/tmp` and `/var/tmp` (each sandboxed
/// command gets private ones), even when the checkout itself lives under `/tmp`.
pub fn outside_tmp() -> tempfile::TempDir {
    let target = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target.starts_with("/tmp") || target.starts_with("/var/tmp") {
        let home = std::env::var_os("HOME").map_or_else(|| std::path::PathBuf::from("/root"), Into::into);
        home.join(".cache").join("vigil-tests")
    } else {
        target.to_path_buf()
    };
    std::fs::create_dir_all(&base).expect("a temp folder outside /tmp");
    tempfile::tempdir_in(base).expect("a temp folder outside /tmp")
}
