//! MCP servers through the whole runtime, for real: `@modelcontextprotocol/server-everything`
//! and `server-filesystem` from the repository's `node_modules` (installed from the lock by
//! `make test`) over stdio, server-everything over streamable HTTP on loopback, and a small
//! fixture server (tests/fixtures/mcp) for a call that never answers and a changing tool list.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use vigil_core::protocol::{ApprovalDecision, ApprovalPolicy, Event, McpServerState, McpView, Op, ProviderKind};
use vigil_fake_llm::{FakeLlm, RecordedRequest, Script, Step, ToolCall};

use super::support::*;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A server's entry point in `node_modules`; a clear failure when `npm install` has not run.
pub(super) fn node_server(package: &str) -> String {
    let path = repo()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run `make npm-deps` (npm install) first",
        path.display()
    );
    path.canonicalize().unwrap().display().to_string()
}

fn fixture_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp/fixture-server.mjs")
        .display()
        .to_string()
}

/// server-everything over stdio, trusted (its calls pass without asking) unless `ask`.
pub(super) fn everything(trusted: bool) -> Value {
    json!({"command": "node", "args": [node_server("server-everything"), "stdio"], "trusted": trusted})
}

pub(super) fn write_config(dir: &Path, servers: Value) {
    std::fs::write(dir.join("mcp.json"), json!({ "mcpServers": servers }).to_string()).unwrap();
}

/// The next `mcp_servers_changed` whose view `done` accepts (20 s at most).
pub(super) async fn view_until(rx: &mut Events, done: impl Fn(&McpView) -> bool) -> McpView {
    next_matching(rx, |e| match e {
        Event::McpServersChanged { mcp } if done(mcp) => Some(mcp.clone()),
        _ => None,
    })
    .await
}

pub(super) fn state_of<'a>(view: &'a McpView, name: &str) -> Option<&'a McpServerState> {
    view.servers.iter().find(|s| s.name == name).map(|s| &s.state)
}

pub(super) fn running(view: &McpView, name: &str) -> bool {
    state_of(view, name) == Some(&McpServerState::Running)
}

/// Every tool result in a request, as (call id, content, is_error), for either protocol.
pub(super) fn tool_results(req: &RecordedRequest) -> Vec<(String, String, bool)> {
    let mut out = Vec::new();
    for m in req.body["messages"].as_array().unwrap() {
        if m["role"] == "tool" {
            let content = m["content"].as_str().unwrap_or_default().to_string();
            out.push((m["tool_call_id"].as_str().unwrap().to_string(), content, false));
        }
        for b in m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
        {
            let content = match &b["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            out.push((
                b["tool_use_id"].as_str().unwrap().to_string(),
                content,
                b["is_error"].as_bool().unwrap_or(false),
            ));
        }
    }
    out
}

pub(super) fn result_of(req: &RecordedRequest, id: &str) -> (String, bool) {
    tool_results(req)
        .into_iter()
        .find(|(i, ..)| i == id)
        .map(|(_, c, e)| (c, e))
        .unwrap_or_else(|| panic!("no result for {id} in {}", req.body))
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

#[tokio::test]
async fn the_agent_calls_real_servers_and_their_results_reach_the_next_request_paired_with_their_calls() {
    for kind in KINDS {
        let dir = super::support::outside_tmp();
        let shared = dir.path().join("shared");
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::write(shared.join("note.txt"), "from the filesystem server\n").unwrap();
        write_config(
            dir.path(),
            json!({
                "everything": everything(true),
                "filesystem": {"command": "node", "args": [node_server("server-filesystem"), shared.canonicalize().unwrap()], "trusted": true}
            }),
        );
        let note = shared.canonicalize().unwrap().join("note.txt").display().to_string();
        let fake = FakeLlm::start(Script::steps(vec![
            Step::tool_calls(vec![
                call(
                    "c_echo",
                    "mcp__everything__echo",
                    json!({"message": "hi from the model"}),
                ),
                call("c_bad", "mcp__everything__get-sum", json!({"a": "one"})),
                call(
                    "c_long",
                    "mcp__everything__trigger-long-running-operation",
                    json!({"duration": 1.2, "steps": 3}),
                ),
                call("c_file", "mcp__filesystem__read_text_file", json!({"path": note})),
            ]),
            Step::text("done"),
        ]))
        .await
        .unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        rt.approvals().set_policy(ApprovalPolicy::Ask);
        assert!(rt.start_background());
        let view = view_until(&mut rx, |v| running(v, "everything") && running(v, "filesystem")).await;
        let echo = view.servers[0]
            .tools
            .iter()
            .find(|t| t.name == "echo")
            .expect("echo listed");
        assert_eq!(echo.qualified_name, "mcp__everything__echo");
        assert!(echo.read_only);

        rt.submit(user("use the tools"));
        let events = until_finished(&mut rx).await;
        let progress: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallUpdate { call_id, output } if call_id == "c_long" => Some(output.as_str()),
                _ => None,
            })
            .collect();
        // Live, in order; the last one may come with the result, which supersedes it.
        let all = ["Progress 1 of 3", "Progress 2 of 3", "Progress 3 of 3"];
        assert!(
            progress.len() >= 2 && all.starts_with(&progress),
            "{kind:?}: {progress:?}"
        );
        assert!(
            !events.iter().any(|e| matches!(e, Event::ApprovalRequested { .. })),
            "a trusted server's calls do not ask: {events:?}"
        );

        let reqs = fake.requests();
        assert_eq!(reqs.len(), 2, "{kind:?}");
        // The first request offered the tools, their schemas as the API takes them.
        let tools = reqs[0].body["tools"].to_string();
        assert!(tools.contains("mcp__everything__echo") && tools.contains("mcp__filesystem__read_text_file"));
        assert!(!tools.contains("$schema"), "{tools}");
        let next = &reqs[1];
        assert_eq!(result_of(next, "c_echo").0, "Echo: hi from the model");
        let (bad, _) = result_of(next, "c_bad");
        assert!(bad.contains("a") && bad.to_lowercase().contains("number"), "{bad}");
        assert_eq!(
            result_of(next, "c_long").0,
            "Long running operation completed. Duration: 1.2 seconds, Steps: 3."
        );
        assert_eq!(result_of(next, "c_file").0, "from the filesystem server\n");
        if kind == ProviderKind::Anthropic {
            assert!(result_of(next, "c_bad").1, "isError is a tool error");
            assert!(!result_of(next, "c_echo").1);
        }
        rt.shutdown().await;
    }
}

/// A free loopback port, for a server the test starts itself.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A process of the test's own, killed with its group when dropped.
struct Spawned(std::process::Child);

impl Drop for Spawned {
    fn drop(&mut self) {
        // Its own group (see `process_group(0)`), never group 0 or 1.
        if let Some(pid) = i32::try_from(self.0.id())
            .ok()
            .filter(|p| *p > 1)
            .and_then(rustix::process::Pid::from_raw)
        {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn server_everything_over_streamable_http_on_loopback() {
    let port = free_port();
    let mut cmd = std::process::Command::new("node");
    cmd.args([node_server("server-everything"), "streamableHttp".into()])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let _server = Spawned(cmd.spawn().unwrap());
    let mut tries = 0;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        tries += 1;
        assert!(tries < 200, "server-everything did not listen on {port}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        json!({"web": {"url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"X-Test": "1"}, "trusted": true}}),
    );
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("c1", "mcp__web__echo", json!({"message": "over http"})),
        Step::text("done"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Openai)));
    assert!(rt.start_background());
    let view = view_until(&mut rx, |v| running(v, "web")).await;
    assert_eq!(view.servers[0].transport, vigil_core::protocol::McpTransport::Http);
    rt.submit(user("echo over http"));
    until_finished(&mut rx).await;
    assert_eq!(result_of(&fake.requests()[1], "c1").0, "Echo: over http");
    rt.shutdown().await;
}

/// Whether a process still runs (a zombie does not).
pub(super) fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| !stat.contains(") Z"))
}

pub(super) async fn gone_within(pid: i32, wait: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    while alive(pid) && start.elapsed() < wait {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    !alive(pid)
}

#[tokio::test]
async fn a_server_killed_mid_call_fails_that_call_restarts_and_the_next_call_works_and_quitting_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("server.pid");
    // server-everything itself (`exec`), its pid written first so the test can kill it.
    let script = format!(
        "echo $$ > {}; exec node {} stdio",
        pidfile.display(),
        node_server("server-everything")
    );
    write_config(
        dir.path(),
        json!({"everything": {"command": "sh", "args": ["-c", script], "trusted": true}}),
    );
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call(
            "c_long",
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 20, "steps": 20}),
        ),
        Step::tool_call("c_echo", "mcp__everything__echo", json!({"message": "after the crash"})),
        Step::text("done"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    assert!(rt.start_background());
    view_until(&mut rx, |v| running(v, "everything")).await;
    let first_pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    rt.submit(user("start the long one"));
    // Mid-call: its first progress came.
    next_matching(&mut rx, |e| {
        matches!(e, Event::ToolCallUpdate { call_id, .. } if call_id == "c_long").then_some(())
    })
    .await;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(first_pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let events = until_finished(&mut rx).await;
    let failed = events.iter().find_map(|e| match e {
        Event::ToolCallFinished {
            call_id,
            content,
            is_error,
            ..
        } if call_id == "c_long" => Some((content.clone(), *is_error)),
        _ => None,
    });
    let (content, is_error) = failed.expect("the long call finished");
    assert!(is_error, "{content}");
    assert!(content.contains("stopped during the call"), "{content}");
    // The restart happened on its own, and the next call reached the new process.
    assert_eq!(
        result_of(&fake.requests()[2], "c_echo"),
        ("Echo: after the crash".to_string(), false)
    );
    let second_pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert_ne!(first_pid, second_pid);
    let state = rt.mcp_view();
    assert!(running(&state, "everything"), "{state:?}");
    rt.shutdown().await;
    assert!(
        gone_within(second_pid, std::time::Duration::from_secs(2)).await,
        "the server outlived Vigil"
    );
}

#[tokio::test]
async fn a_call_that_never_answers_times_out_and_the_server_is_told_it_was_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("fixture.log");
    write_config(
        dir.path(),
        json!({"fixture": {"command": "node", "args": [fixture_server()], "env": {"FIXTURE_LOG": log}, "timeout": 1, "trusted": true}}),
    );
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("c1", "mcp__fixture__hang", json!({})),
        Step::text("it hung"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Openai)));
    assert!(rt.start_background());
    view_until(&mut rx, |v| running(v, "fixture")).await;
    rt.submit(user("call the one that hangs"));
    until_finished(&mut rx).await;
    let (content, _) = result_of(&fake.requests()[1], "c1");
    assert_eq!(
        content,
        "`hang` on the MCP server `fixture` did not finish within 1 s, so it was cancelled. Try again with less to do, or tell the user it timed out."
    );
    let received: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call_id = received
        .iter()
        .find(|m| m["method"] == "tools/call")
        .expect("the call reached it")["id"]
        .clone();
    let cancelled = received
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("notifications/cancelled reached the server");
    assert_eq!(cancelled["params"]["requestId"], call_id);
    assert_eq!(cancelled["params"]["reason"], "timed out after 1 s");
    rt.shutdown().await;
}

#[tokio::test]
async fn a_changed_tool_list_reaches_settings_and_the_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        json!({"fixture": {"command": "node", "args": [fixture_server()], "trusted": true}}),
    );
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("c1", "mcp__fixture__grow", json!({})),
        Step::text("grown"),
        Step::tool_call("c2", "mcp__fixture__grown", json!({})),
        Step::text("used it"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    assert!(rt.start_background());
    let view = view_until(&mut rx, |v| running(v, "fixture")).await;
    assert_eq!(view.servers[0].tools.len(), 2);
    rt.submit(user("grow"));
    // The new list and the end of the turn, in whichever order they come.
    let (mut grown, mut finished) = (None, false);
    while grown.is_none() || !finished {
        next_matching(&mut rx, |e| match e {
            Event::McpServersChanged { mcp } if mcp.servers[0].tools.len() == 3 => {
                grown = Some(mcp.servers[0].tools[2].qualified_name.clone());
                Some(())
            }
            Event::TurnFinished { .. } => {
                finished = true;
                Some(())
            }
            _ => None,
        })
        .await;
    }
    assert_eq!(grown.as_deref(), Some("mcp__fixture__grown"));
    rt.submit(user("use the new one"));
    until_finished(&mut rx).await;
    let reqs = fake.requests();
    assert!(reqs[2].body["tools"].to_string().contains("mcp__fixture__grown"));
    assert_eq!(result_of(&reqs[3], "c2").0, "grown");
    rt.shutdown().await;
}

#[tokio::test]
async fn an_mcp_call_asks_with_server_tool_and_arguments_and_always_covers_that_tool_only() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), json!({"everything": everything(false)}));
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("c1", "mcp__everything__echo", json!({"message": "first"})),
        Step::tool_call("c2", "mcp__everything__echo", json!({"message": "second"})),
        Step::tool_call("c3", "mcp__everything__get-sum", json!({"a": 1, "b": 2})),
        Step::text("done"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    assert!(rt.start_background());
    view_until(&mut rx, |v| running(v, "everything")).await;
    rt.submit(user("echo twice, then add"));
    let (id, command, card) = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id: id,
            command,
            mcp,
            kind,
            prefix,
            ..
        } => {
            assert_eq!(*kind, vigil_core::protocol::ApprovalKind::McpCall);
            assert_eq!(prefix, "mcp__everything__echo");
            Some((id.clone(), command.clone(), mcp.clone()))
        }
        _ => None,
    })
    .await;
    assert_eq!(command, "mcp__everything__echo");
    assert_eq!(
        card,
        Some(vigil_core::protocol::McpCallCard {
            server: "everything".into(),
            tool: "echo".into(),
            arguments: "{\n  \"message\": \"first\"\n}".into(),
            read_only: true,
        })
    );
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Always,
    });
    // The second echo passes on "always"; another tool of the same server asks again.
    let (id, command) = next_matching(&mut rx, |e| match e {
        Event::ApprovalRequested {
            approval_id: id,
            command,
            ..
        } => Some((id.clone(), command.clone())),
        _ => None,
    })
    .await;
    assert_eq!(command, "mcp__everything__get-sum");
    rt.submit(Op::Approval {
        id,
        decision: ApprovalDecision::Deny,
    });
    until_finished(&mut rx).await;
    let reqs = fake.requests();
    assert_eq!(result_of(&reqs[2], "c2").0, "Echo: second");
    let (denied, is_error) = result_of(&reqs[3], "c3");
    assert!(is_error);
    assert_eq!(
        denied,
        "The user denied the tool `get-sum` of the MCP server `everything`."
    );

    // Under read-only, only what the server marks read-only runs; trusting the server does
    // not change that.
    rt.approvals().set_policy(ApprovalPolicy::ReadOnly);
    rt.submit(Op::SetMcpServerTrusted {
        name: "everything".into(),
        trusted: true,
    });
    let view = view_until(&mut rx, |v| v.servers[0].trusted).await;
    assert!(view.servers[0].trusted);
    assert!(std::fs::read_to_string(dir.path().join("mcp.json"))
        .unwrap()
        .contains("\"trusted\": true"));
    fake.set_script(Script::steps(vec![
        Step::tool_calls(vec![
            call("r1", "mcp__everything__get-sum", json!({"a": 1, "b": 2})),
            call("r2", "mcp__everything__toggle-simulated-logging", json!({})),
        ]),
        Step::text("done"),
    ]));
    let before = fake.request_count();
    rt.submit(user("add, and turn on logging"));
    until_finished(&mut rx).await;
    let next = &fake.requests()[before + 1];
    assert_eq!(result_of(next, "r1").0, "The sum of 1 and 2 is 3.");
    let (refused, _) = result_of(next, "r2");
    assert!(refused.contains("does not mark it read-only"), "{refused}");
    rt.shutdown().await;
}

#[tokio::test]
async fn an_image_a_tool_returns_reaches_the_model_as_an_image_in_both_protocols() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        write_config(dir.path(), json!({"everything": everything(true)}));
        let fake = FakeLlm::start(Script::steps(vec![
            Step::tool_call("c_img", "mcp__everything__get-tiny-image", json!({})),
            Step::text("a tiny logo"),
        ]))
        .await
        .unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        assert!(rt.start_background());
        view_until(&mut rx, |v| running(v, "everything")).await;
        rt.submit(user("show me the image"));
        until_finished(&mut rx).await;
        let body = fake.requests()[1].body["messages"].to_string();
        match kind {
            ProviderKind::Anthropic => assert!(
                body.contains(r#""type":"image""#) && body.contains(r#""media_type":"image/png""#),
                "{body}"
            ),
            ProviderKind::Openai => assert!(body.contains("data:image/png;base64,"), "{body}"),
        }
        assert!(
            !body.contains("[image: image/png"),
            "the image is sent, not named: {body}"
        );
        // Stored once with the conversation, referenced from the transcript.
        let blobs = std::fs::read_dir(dir.path().join("sessions/main.blobs"))
            .unwrap()
            .count();
        assert_eq!(blobs, 1, "{kind:?}");
        rt.shutdown().await;
    }
}
