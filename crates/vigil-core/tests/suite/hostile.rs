//! Hostile input and secrets (issue 18 §8): what a child can see of the parent's
//! environment, where the provider client sends the key, and how much memory a server or a
//! child can make Vigil hold.
//!
//! The environment and memory tests run their body in a process of their own (this test
//! binary started again for one test): variables are set only for that process, never with
//! `set_var` under the other tests' threads, and its peak RSS is its own alone.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use vigil_core::clock::{ManualClock, SystemClock};
use vigil_core::exec::{NoExecEvents, RegistryConfig, RegistryHandle, SpawnRequest};
use vigil_core::protocol::{ErrorKind, ProviderKind};
use vigil_core::provider::{ProviderConfig, ProviderError};
use vigil_fake_llm::{FakeLlm, Script};

use super::alone::{is_root, run_alone, run_alone_as, status_bytes, MIB};
use super::support::{client, hello, stream, KINDS};

/// A registry whose children inherit this process's environment, as the app's do.
fn registry() -> RegistryHandle {
    let config = RegistryConfig {
        kill_grace: Duration::from_millis(300),
        ..RegistryConfig::default()
    };
    RegistryHandle::start(config, Arc::new(SystemClock), Arc::new(NoExecEvents))
}

/// The variables a key is read from never reach a child, with a terminal or with pipes; the
/// rest of the environment does (the control variable proves `env` saw the inherited ones).
/// Nor can the child read them from the parent's `/proc/<pid>/environ`.
#[test]
fn api_keys_never_reach_a_child() {
    const KEYS: [&str; 3] = ["VIGIL_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"];
    let env: Vec<(&str, &str)> = KEYS
        .iter()
        .map(|k| (*k, "sk-secret-0123456789"))
        .chain([
            ("VIGIL_BASE_URL", "http://127.0.0.1:9"),
            ("VIGIL_TEST_INHERITED", "yes"),
        ])
        .collect();
    if run_alone_as(module_path!(), "api_keys_never_reach_a_child", &env, true) {
        return;
    }
    assert!(!is_root(), "run as a user: root reads any process's environment");
    for key in KEYS {
        assert_eq!(
            std::env::var(key).as_deref(),
            Ok("sk-secret-0123456789"),
            "set in the parent"
        );
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let registry = registry();
        let dir = tempfile::tempdir().unwrap();
        for pty in [true, false] {
            let req = SpawnRequest {
                pty,
                ..SpawnRequest::new("a", "env", dir.path())
            };
            let info = registry.spawn(req).await.unwrap();
            let outcome = registry.wait("a", &info.id).await.unwrap();
            assert!(outcome.exit().success(), "{outcome:?}");
            let output = outcome.output;
            assert!(output.contains("VIGIL_TEST_INHERITED=yes"), "pty {pty}: {output}");
            assert!(output.contains("VIGIL_BASE_URL="), "not a secret, passes: {output}");
            assert!(
                !output.contains("sk-secret"),
                "pty {pty}: a key reached the child:\n{output}"
            );
            for key in KEYS {
                assert!(!output.contains(&format!("{key}=")), "pty {pty}: {key} in\n{output}");
            }
            let read = "tr '\\0' '\\n' < /proc/$PPID/environ; echo done";
            let req = SpawnRequest {
                pty,
                ..SpawnRequest::new("a", read, dir.path())
            };
            let info = registry.spawn(req).await.unwrap();
            let output = registry.wait("a", &info.id).await.unwrap().output;
            assert!(output.contains("done"), "{output}");
            assert!(
                !output.contains("sk-secret"),
                "pty {pty}: read from the parent:\n{output}"
            );
        }
        registry.shutdown().await;
    });
}

/// What [`RawServer`] answers a request with: `head` (status line, headers, and the start of
/// the body if wanted), then `chunk` written `times` times, then it closes the connection.
#[derive(Clone)]
struct Answer {
    head: String,
    chunk: Vec<u8>,
    times: usize,
}

impl Answer {
    fn new(head: &str) -> Self {
        Self {
            head: head.into(),
            chunk: Vec::new(),
            times: 0,
        }
    }

    fn then(mut self, chunk: Vec<u8>, times: usize) -> Self {
        self.chunk = chunk;
        self.times = times;
        self
    }
}

/// An HTTP/1.1 server that says exactly what a test wants, however wrong: floods, redirects.
/// It records the head of every request (lowercased), and stops when dropped.
struct RawServer {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RawServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RawServer {
    /// Answers the `n`th request (from 0) with `answer(n)`.
    async fn start(answer: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (answer, seen) = (Arc::new(answer), heads.clone());
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (answer, seen) = (answer.clone(), seen.clone());
                tokio::spawn(async move {
                    let mut tcp = BufReader::new(tcp);
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        if tcp.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        head.push_str(&line.to_lowercase());
                    }
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|n| n.trim().parse().ok())
                        .unwrap_or(0);
                    let mut body = vec![0; length];
                    if tcp.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let n = {
                        let mut seen = seen.lock().unwrap();
                        seen.push(head);
                        seen.len() - 1
                    };
                    let reply = answer(n);
                    let mut tcp = tcp.into_inner();
                    if tcp.write_all(reply.head.as_bytes()).await.is_err() {
                        return;
                    }
                    for _ in 0..reply.times {
                        // The client hung up: what a bounded reader should do.
                        if tcp.write_all(&reply.chunk).await.is_err() {
                            return;
                        }
                    }
                    let _ = tcp.shutdown().await;
                });
            }
        });
        Self { addr, heads, task }
    }

    /// The base URL for `kind`, as the fake's would be.
    fn base_url(&self, kind: ProviderKind) -> String {
        match kind {
            ProviderKind::Anthropic => format!("http://{}", self.addr),
            ProviderKind::Openai => format!("http://{}/v1", self.addr),
        }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// A client config for `base_url` with a key and no retries.
fn raw_config(kind: ProviderKind, base_url: String) -> ProviderConfig {
    let mut cfg = ProviderConfig::new(kind, base_url, "m");
    cfg.api_key = Some("sk-secret-0123456789".into());
    cfg.idle_timeout = Duration::from_secs(10);
    cfg.max_retries = 0;
    cfg
}

/// The error of one request to `cfg`, within `limit`.
async fn fails_within(cfg: ProviderConfig, limit: Duration) -> ProviderError {
    let clock = ManualClock::new(0);
    let client = client(cfg, &clock);
    let (result, _) = tokio::time::timeout(limit, stream(&client, &hello()))
        .await
        .unwrap_or_else(|_| panic!("no answer within {limit:?}"));
    result.expect_err("the request must fail").error
}

/// A short, ordinary failure: the first request, so that the threads, TLS roots and
/// buffers every request needs are in place before memory is measured.
const WARM_UP: &str = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}";

/// Sends the warm-up request; returns the resident set after it.
async fn warmed_up(server: &RawServer) -> u64 {
    let error = fails_within(
        raw_config(ProviderKind::Anthropic, server.base_url(ProviderKind::Anthropic)),
        Duration::from_secs(10),
    )
    .await;
    assert!(matches!(error, ProviderError::Server { status: 503, .. }), "{error:?}");
    status_bytes("VmRSS:")
}

/// 100 MB of one SSE line that never ends: a clear stream error once 16 MiB have come, and
/// memory grows by about that much, not by the 100 MB (nor their square in parsing time).
#[test]
fn an_endless_sse_line_is_a_clear_error_and_memory_stays_bounded() {
    if run_alone(
        module_path!(),
        "an_endless_sse_line_is_a_clear_error_and_memory_stays_bounded",
    ) {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: ";
        let server = RawServer::start(move |n| match n {
            0 => Answer::new(WARM_UP),
            _ => Answer::new(head).then(vec![b'x'; MIB as usize], 100),
        })
        .await;
        let before = warmed_up(&server).await;
        let mut errors = Vec::new();
        for kind in KINDS {
            let started = Instant::now();
            errors.push(fails_within(raw_config(kind, server.base_url(kind)), Duration::from_secs(60)).await);
            println!("measured: {kind:?} failed after {:?}", started.elapsed());
        }
        let grown = status_bytes("VmHWM:").saturating_sub(before);
        println!("measured: peak RSS grew by {} MiB", grown / MIB);
        assert!(grown < 48 * MIB, "peak RSS grew by {} MiB", grown / MIB);
        for error in errors {
            assert_eq!(error.kind(), ErrorKind::Stream, "{error}");
            assert_eq!(
                error.to_string(),
                "The reply stream broke off: the server sent more than 16 MiB without ending an event; it is \
                 not sending a reply Vigil can read"
            );
        }
        assert_eq!(server.heads().len(), 3, "no retry of a broken stream");
    });
}

/// A 100 MB error body: the first 64 KiB are read for the message, the rest never.
#[test]
fn an_endless_error_body_is_read_only_up_to_a_cap() {
    if run_alone(module_path!(), "an_endless_error_body_is_read_only_up_to_a_cap") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let head = "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n";
        let server = RawServer::start(move |n| match n {
            0 => Answer::new(WARM_UP),
            _ => Answer::new(head).then(vec![b'e'; MIB as usize], 100),
        })
        .await;
        let before = warmed_up(&server).await;
        for kind in KINDS {
            let started = Instant::now();
            let error = fails_within(raw_config(kind, server.base_url(kind)), Duration::from_secs(60)).await;
            let ProviderError::Server {
                status: 500, message, ..
            } = &error
            else {
                panic!("{kind:?}: {error:?}");
            };
            assert_eq!(*message, format!("{}…", "e".repeat(300)), "{kind:?}");
            println!("measured: {kind:?} failed after {:?}", started.elapsed());
        }
        let grown = status_bytes("VmHWM:").saturating_sub(before);
        println!("measured: peak RSS grew by {} MiB", grown / MIB);
        assert!(grown < 8 * MIB, "peak RSS grew by {} MiB", grown / MIB);
    });
}

/// The path each protocol posts to, under the raw server's base URL.
fn chat_path(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "/v1/messages",
        ProviderKind::Openai => "/v1/chat/completions",
    }
}

/// A 307 to a server on another port is refused: that server gets no request at all (no
/// key, no conversation), and the error says where the redirect pointed and what to do.
#[tokio::test]
async fn a_redirect_to_another_origin_is_refused_and_carries_nothing() {
    let other = FakeLlm::start(Script::default()).await.unwrap();
    for kind in KINDS {
        let target = format!("http://{}{}", other.addr(), chat_path(kind));
        let location = target.clone();
        let server = RawServer::start(move |_| {
            Answer::new(&format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            ))
        })
        .await;
        let error = fails_within(raw_config(kind, server.base_url(kind)), Duration::from_secs(10)).await;
        assert_eq!(error.kind(), ErrorKind::Config, "{kind:?}: {error}");
        let from = format!("{}{}", server.base_url(ProviderKind::Anthropic), chat_path(kind));
        assert_eq!(
            error.to_string(),
            format!(
                "{from} redirected the request to {target}, another server. Vigil sends your API key and \
                 conversation only to the base URL in Settings; if http://{} is the right server, set the \
                 base URL to it.",
                other.addr()
            )
        );
        assert_eq!(other.requests(), vec![], "{kind:?}: the other origin was reached");
        // One request, to the configured server, with the key; not retried.
        let heads = server.heads();
        assert_eq!(heads.len(), 1, "{kind:?}");
        assert!(heads[0].contains("sk-secret-0123456789"), "{kind:?}: {}", heads[0]);
    }
}

/// Another scheme on the same host and port is another origin too (the mirror of
/// https → http, which needs no TLS server to show).
#[tokio::test]
async fn a_redirect_to_another_scheme_is_refused() {
    // The server redirects to its own host and port, only the scheme differs.
    let own = Arc::new(std::sync::OnceLock::<SocketAddr>::new());
    let addr = own.clone();
    let server = RawServer::start(move |_| {
        let addr = addr.get().unwrap();
        Answer::new(&format!(
            "HTTP/1.1 308 Permanent Redirect\r\nlocation: https://{addr}/v1/messages\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        ))
    })
    .await;
    own.set(server.addr).unwrap();
    let cfg = raw_config(ProviderKind::Anthropic, server.base_url(ProviderKind::Anthropic));
    let error = fails_within(cfg, Duration::from_secs(10)).await;
    assert_eq!(error.kind(), ErrorKind::Config, "{error}");
    let to = format!("to https://{}/v1/messages, another server", server.addr);
    assert!(error.to_string().contains(&to), "{error}");
    assert_eq!(server.heads().len(), 1);
}

/// Within the origin a redirect is still followed, key included: a server that moved its
/// path keeps working.
#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let server = RawServer::start(|n| match n {
        0 => Answer::new(
            "HTTP/1.1 307 Temporary Redirect\r\nlocation: /v2/messages\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        ),
        _ => {
            let body = r#"{"type":"error","error":{"type":"authentication_error","message":"who are you"}}"#;
            Answer::new(&format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            ))
        }
    })
    .await;
    let cfg = raw_config(ProviderKind::Anthropic, server.base_url(ProviderKind::Anthropic));
    let error = fails_within(cfg, Duration::from_secs(10)).await;
    assert_eq!(
        error,
        ProviderError::Auth {
            status: 401,
            message: "who are you".into()
        }
    );
    let heads = server.heads();
    assert_eq!(heads.len(), 2);
    assert!(heads[1].starts_with("post /v2/messages "), "{}", heads[1]);
    assert!(heads[1].contains("x-api-key: sk-secret-0123456789"), "{}", heads[1]);
}

/// 10 MB of an OSC sequence that never ends (a title, say) through a real terminal: the
/// stripper keeps at most 4 KiB of its payload, so memory does not grow with it, and the
/// text after its end still reaches the model.
#[test]
fn an_endless_osc_sequence_does_not_grow_memory() {
    if run_alone(module_path!(), "an_endless_osc_sequence_does_not_grow_memory") {
        return;
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let registry = registry();
        let dir = tempfile::tempdir().unwrap();
        let run = |command: &str| {
            let (registry, req) = (registry.clone(), SpawnRequest::new("a", command, dir.path()));
            async move {
                let info = registry.spawn(req).await.unwrap();
                registry.wait("a", &info.id).await.unwrap()
            }
        };
        // The same pipeline with a short payload first: threads, terminal and buffers.
        let warm = run(r"printf 'before\033]0;'; head -c 1000 /dev/zero | tr '\0' x; printf '\007after\n'").await;
        assert_eq!(warm.output.trim_end(), "beforeafter");
        let before = status_bytes("VmRSS:");
        let flood = r"printf 'before\033]0;'; head -c 10000000 /dev/zero | tr '\0' x; printf '\007after\n'";
        let started = Instant::now();
        let outcome = run(flood).await;
        let grown = status_bytes("VmHWM:").saturating_sub(before);
        println!("measured: 10 MB OSC through a PTY in {:?}", started.elapsed());
        println!("measured: peak RSS grew by {:.1} MiB", grown as f64 / MIB as f64);
        assert!(outcome.exit().success(), "{outcome:?}");
        assert_eq!(outcome.output.trim_end(), "beforeafter");
        // Measured: +2.1 to 2.5 MiB (the raw-output rings filling); +12 MiB with vte's growing buffer.
        assert!(grown < 6 * MIB, "peak RSS grew by {} KiB", grown / 1024);
        registry.shutdown().await;
    });
}

/// A 200 MB file of one line (a minified bundle, a log without line ends): `read` keeps only
/// the start of the line, so memory does not grow with it, and says how long the line is;
/// `edit` refuses a file too big to hold whole, with what to use instead.
#[test]
fn a_huge_single_line_is_read_in_bounded_memory_and_edit_refuses_huge_files() {
    if run_alone(
        module_path!(),
        "a_huge_single_line_is_read_in_bounded_memory_and_edit_refuses_huge_files",
    ) {
        return;
    }
    use vigil_core::tools::ToolContext;
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let registry = vigil_core::tools::ToolRegistry::with_builtins();
        let read = |path: &str| {
            let (registry, ctx) = (registry.clone(), ctx.clone());
            let input = serde_json::json!({ "path": path });
            async move { registry.execute("read", input, &ctx).await }
        };
        std::fs::write(dir.path().join("small.txt"), "x".repeat(10_000)).unwrap();
        assert!(!read("small.txt").await.is_error);
        {
            use std::io::Write;
            let mut f = std::fs::File::create(dir.path().join("one-line.js")).unwrap();
            let chunk = vec![b'x'; MIB as usize];
            for _ in 0..200 {
                f.write_all(&chunk).unwrap();
            }
        }
        let before = status_bytes("VmRSS:");
        let out = read("one-line.js").await;
        let grown = status_bytes("VmHWM:").saturating_sub(before);
        println!(
            "measured: a 200 MiB line read; peak RSS grew by {:.1} MiB",
            grown as f64 / MIB as f64
        );
        assert!(!out.is_error, "{}", &out.content[..200.min(out.content.len())]);
        assert!(
            out.content
                .ends_with("[line cut: 2,000 characters shown of a line of 209,715,200 bytes]"),
            "{}",
            &out.content[out.content.len().saturating_sub(200)..]
        );
        assert!(grown < 16 * MIB, "peak RSS grew by {} KiB", grown / 1024);

        // Written a MiB at a time: a 17 MiB buffer here would raise the peak measured below.
        {
            use std::io::Write;
            let mut f = std::fs::File::create(dir.path().join("big.log")).unwrap();
            let chunk = vec![b'y'; MIB as usize];
            for _ in 0..17 {
                f.write_all(&chunk).unwrap();
            }
        }
        let edit = serde_json::json!({"path": "big.log", "old_text": "yy", "new_text": "zz"});
        let before = status_bytes("VmRSS:");
        let out = registry.execute("edit", edit, &ctx).await;
        let grown = status_bytes("VmHWM:").saturating_sub(before);
        assert!(
            out.is_error && out.content.contains("more than the 16,777,216 bytes"),
            "{}",
            out.content
        );
        assert!(grown < 4 * MIB, "edit loaded the file: {} KiB", grown / 1024);
    });
}
