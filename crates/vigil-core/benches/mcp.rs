//! `cargo bench -p vigil-core --bench mcp` (in `make bench`): what Vigil adds to an MCP tool
//! call. server-everything's `echo` over stdio, called through Vigil (the tool registry, the
//! `mcp__everything__echo` tool, rmcp, the server's process), against a bare JSON-RPC round
//! trip to a second copy of the same server written and read by this bench — one line out,
//! one line back. Calls alternate between the two, so both see the same machine. Goal: at
//! most 2 ms added at the median. Needs `node_modules` (`make npm-deps`).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use vigil_core::clock::SystemClock;
use vigil_core::events::{CollectingSink, Emitter};
use vigil_core::mcp::McpManager;
use vigil_core::protocol::McpServerState;
use vigil_core::secrets::Secrets;
use vigil_core::tools::{ToolContext, ToolOutput, ToolRegistry};

const CALLS: usize = 400;

fn quantile(v: &[Duration], q: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// server-everything, spoken to directly: newline-delimited JSON-RPC on its stdin/stdout.
struct Bare {
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    next_id: u64,
}

impl Bare {
    async fn start(server: &Path) -> Self {
        let mut child = tokio::process::Command::new("node")
            .arg(server)
            .arg("stdio")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs");
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut bare = Self {
            _child: child,
            stdin,
            lines,
            next_id: 0,
        };
        bare.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        )
        .await;
        bare.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        bare
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends a request and reads lines until its answer (skipping notifications).
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self.lines.next_line().await.unwrap().expect("the server answers");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let server = root.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !server.exists() {
        println!(
            "mcp: not measured, {} is missing (run `make npm-deps`)",
            server.display()
        );
        return;
    }
    let server = server.canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mcp.json"),
        json!({"mcpServers": {"everything": {"command": "node", "args": [server, "stdio"]}}}).to_string(),
    )
    .unwrap();
    let clock = Arc::new(SystemClock);
    let emitter = Emitter::new(Arc::new(CollectingSink::default()), clock.clone());
    let mcp = McpManager::open(dir.path(), Secrets::new(dir.path()), clock, emitter);
    mcp.start();
    let started = Instant::now();
    while mcp.view().servers[0].state != McpServerState::Running {
        assert!(started.elapsed() < Duration::from_secs(20), "{:?}", mcp.view());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut registry = ToolRegistry::new();
    for tool in mcp.tools() {
        registry.register(tool);
    }
    // No gate: the approval's own cost is measured by the `trust` bench.
    let ctx = ToolContext::new(dir.path());
    let mut bare = Bare::start(&server).await;

    let (mut through_vigil, mut direct) = (Vec::with_capacity(CALLS), Vec::with_capacity(CALLS));
    for i in 0..CALLS + 20 {
        let message = format!("ping {i}");
        let t = Instant::now();
        let out = registry
            .execute("mcp__everything__echo", json!({"message": message}), &ctx)
            .await;
        let vigil = t.elapsed();
        assert_eq!(out, ToolOutput::ok(format!("Echo: {message}")));

        let t = Instant::now();
        let answer = bare
            .request("tools/call", json!({"name": "echo", "arguments": {"message": message}}))
            .await;
        let plain = t.elapsed();
        assert_eq!(answer["result"]["content"][0]["text"], format!("Echo: {message}"));
        // The first calls warm up both (JIT, caches) and are not counted.
        if i >= 20 {
            through_vigil.push(vigil);
            direct.push(plain);
        }
    }
    mcp.shutdown().await;

    let (v50, d50) = (quantile(&through_vigil, 0.5), quantile(&direct, 0.5));
    let (v99, d99) = (quantile(&through_vigil, 0.99), quantile(&direct, 0.99));
    let added = v50.saturating_sub(d50);
    println!(
        "mcp: echo over stdio through Vigil p50 {v50:?} p99 {v99:?}; bare JSON-RPC round trip p50 {d50:?} p99 {d99:?}; \
         added at the median {added:?} (goal <= 2 ms: {}) -> {:.2}x of the goal, {:.2}x the bare round trip ({CALLS} calls each)",
        if added <= Duration::from_millis(2) { "met" } else { "NOT met" },
        added.as_secs_f64() / 2e-3,
        v50.as_secs_f64() / d50.as_secs_f64()
    );
}
