//! `mcp.json` as the user meets it: entries that are wrong or whose server dies at start (the
//! others still run), a file that does not parse (kept aside) and a config pasted in
//! Settings with a value marked secret, and the headless runner reading the same file.

use serde_json::{json, Value};
use vigil_core::protocol::{McpServerState, Op, ProviderKind};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::mcp::*;
use super::support::*;

#[tokio::test]
async fn a_server_that_exits_during_initialize_fails_with_its_stderr_and_the_others_still_run() {
    let dir = tempfile::tempdir().unwrap();
    write_config(
        dir.path(),
        json!({
            "broken": {"command": "sh", "args": ["-c", "echo 'cannot open the database' >&2; exit 3"]},
            "misspelled": {"comand": "node"},
            "everything": everything(true)
        }),
    );
    let (rt, mut rx) = runtime(dir.path(), None);
    assert!(rt.start_background());
    let view = view_until(&mut rx, |v| {
        running(v, "everything") && matches!(state_of(v, "broken"), Some(McpServerState::Failed { .. }))
    })
    .await;
    let broken = view.servers.iter().find(|s| s.name == "broken").unwrap();
    let McpServerState::Failed { error, retry_at } = &broken.state else {
        unreachable!()
    };
    assert_eq!(error, "exited during initialize (exit status 3)");
    assert!(retry_at.is_some(), "it is tried again later");
    assert_eq!(broken.stderr_tail, ["cannot open the database"]);
    assert_eq!(
        state_of(&view, "misspelled"),
        Some(&McpServerState::Failed {
            error:
                "its entry in mcp.json is wrong: it needs a `command` (a program to start) or a `url` (an HTTP server)"
                    .into(),
            retry_at: None
        })
    );
    rt.shutdown().await;
}

/// Where the secret goes depends on the session (no keyring service here: the user-only
/// file); `keyring.rs` proves it reaches a real Secret Service and no file.
#[tokio::test]
async fn a_malformed_mcp_json_is_kept_aside_and_a_pasted_config_starts_again_with_its_secret_out_of_mcp_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mcp.json"),
        "{\"mcpServers\": {\"a\": {\"command\": \"x\",}}}",
    )
    .unwrap();
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("c1", "mcp__everything__get-env", json!({})),
        Step::text("done"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    assert!(rt.start_background());
    let view = rt.mcp_view();
    let problem = view.problem.expect("a problem shown in Settings");
    assert!(
        problem.contains("is not a valid MCP config") && problem.contains("mcp.json.broken-"),
        "{problem}"
    );
    assert!(view.servers.is_empty());
    assert!(!dir.path().join("mcp.json").exists(), "moved aside, not overwritten");

    // Pasted as Claude Desktop writes it, with one value marked secret.
    let pasted = json!({"mcpServers": {"everything": {
        "command": "node",
        "args": [node_server("server-everything"), "stdio"],
        "env": {"EVERYTHING_TOKEN": "s3cret-value", "PLAIN": "p"},
        "trusted": true
    }}});
    rt.submit(Op::AddMcpServers {
        json: pasted.to_string(),
        secret: vec![vigil_core::protocol::McpSecretField {
            server: "everything".into(),
            field: vigil_core::protocol::McpField::Env,
            name: "EVERYTHING_TOKEN".into(),
        }],
    });
    let view = view_until(&mut rx, |v| running(v, "everything")).await;
    assert_eq!(view.problem, None);
    assert_eq!(view.servers[0].secrets, ["EVERYTHING_TOKEN"]);
    let saved = std::fs::read_to_string(dir.path().join("mcp.json")).unwrap();
    assert!(!saved.contains("s3cret-value"), "{saved}");
    assert!(
        saved.contains("\"keyring\": \"mcp/everything/env/EVERYTHING_TOKEN\""),
        "{saved}"
    );
    // The server got the value all the same.
    rt.submit(user("what is in your environment?"));
    until_finished(&mut rx).await;
    let env = result_of(&fake.requests()[1], "c1").0;
    assert!(
        env.contains("s3cret-value") && env.contains("\"PLAIN\": \"p\""),
        "{env}"
    );

    rt.submit(Op::RemoveMcpServer {
        name: "everything".into(),
    });
    let view = view_until(&mut rx, |v| v.servers.is_empty()).await;
    assert!(view.servers.is_empty());
    assert!(rt
        .mcp()
        .add("{nope", &[])
        .await
        .unwrap_err()
        .starts_with("That is not valid JSON"));
    rt.shutdown().await;
}

#[tokio::test]
async fn the_headless_runner_loads_the_same_mcp_json_and_leaves_no_process_behind() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("helper.pid");
    // server-everything, with a helper of its own in its process group (as `npx` leaves `node`).
    let script = format!(
        "sleep 300 & echo $! > {}; exec node {} stdio",
        pidfile.display(),
        node_server("server-everything")
    );
    write_config(
        dir.path(),
        json!({"everything": {"command": "sh", "args": ["-c", script], "trusted": true}}),
    );
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("c1", "mcp__everything__echo", json!({"message": "headless"})),
        Step::text("done"),
    ]))
    .await
    .unwrap();
    let mut child = tokio::process::Command::from(headless(dir.path(), &fake, "sk-test"))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    stdin.write_all(b"{\"type\":\"list_mcp_servers\"}\n").await.unwrap();
    loop {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .expect("the server ran in time")
            .unwrap()
            .expect("the runner is alive");
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "mcp_servers_changed" && event["mcp"]["servers"][0]["state"]["state"] == "running" {
            break;
        }
    }
    stdin
        .write_all(b"{\"type\":\"user_message\",\"text\":\"echo\"}\n")
        .await
        .unwrap();
    drop(stdin);
    while lines.next_line().await.unwrap().is_some() {}
    assert!(child.wait().await.unwrap().success());
    assert_eq!(result_of(&fake.requests()[1], "c1").0, "Echo: headless");
    let helper: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    assert!(
        gone_within(helper, std::time::Duration::from_secs(2)).await,
        "the server's helper outlived the runner"
    );
}
