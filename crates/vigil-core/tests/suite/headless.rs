//! `vigil-headless` speaks JSON lines against the fake provider.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use vigil_fake_llm::{FakeLlm, Script, Step};

#[tokio::test]
async fn headless_answers_a_user_message_with_streamed_events() {
    let fake = FakeLlm::start(Script::steps(vec![Step::text("Hi from the fake model.")]).with_api_key("sk-headless"))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_vigil-headless"))
        .arg("--data-dir")
        .arg(dir.path())
        .env("VIGIL_PROVIDER", "openai")
        .env("VIGIL_BASE_URL", fake.openai_base_url())
        .env("VIGIL_MODEL", "fake-model")
        .env("VIGIL_API_KEY", "sk-headless")
        .env("VIGIL_NO_KEYRING", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"not json\n{\"type\":\"user_message\",\"text\":\"hello\"}\n")
        .await
        .unwrap();
    drop(stdin); // EOF: the runner finishes the turn, then exits.
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<Value> = Vec::new();
    while let Some(line) = lines.next_line().await.unwrap() {
        events.push(serde_json::from_str(&line).expect("every stdout line is JSON"));
    }
    assert!(child.wait().await.unwrap().success());
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[0], "error", "the bad line is reported: {types:?}");
    assert_eq!(events[0]["kind"], "invalid_op");
    let start = types.iter().position(|t| *t == "turn_started").expect("turn_started");
    let end = types.iter().position(|t| *t == "turn_finished").expect("turn_finished");
    assert!(start < end);
    let text: String = events[start..end]
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Hi from the fake model.");
    assert_eq!(events[end]["stop_reason"], "end_turn");
    assert!(events[end]["usage"]["output_tokens"].as_u64().is_some());
    for e in &events[start..=end] {
        assert_eq!(e["session_id"], "main");
        assert!(e["run_id"].is_string() && e["id"].is_string() && e["ts"].is_i64());
    }
    assert!(dir.path().join("sessions/main.jsonl").exists());
}

/// Runs `vigil-headless --config` with `ops` on stdin and returns every event it printed.
async fn headless_with_config(fake: &FakeLlm, heartbeat_md: &str, ops: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("data/workspace")).unwrap();
    std::fs::write(dir.path().join("data/workspace/HEARTBEAT.md"), heartbeat_md).unwrap();
    let config = dir.path().join("vigil.json");
    let settings = serde_json::json!({
        "provider": {"kind": "openai", "base_url": fake.openai_base_url(), "model": "fake-model", "max_tokens": 200},
        "heartbeat": {"every": "30m", "ackMaxChars": 300, "notifications": true}
    });
    std::fs::write(&config, settings.to_string()).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_vigil-headless"))
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .env("VIGIL_API_KEY", "sk-test")
        .env("VIGIL_NO_KEYRING", "1")
        .env_remove("VIGIL_PROVIDER")
        .env_remove("VIGIL_BASE_URL")
        .env_remove("VIGIL_MODEL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(ops.as_bytes()).await.unwrap();
    drop(stdin);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("headless finished in time")
        .unwrap()
    {
        events.push(serde_json::from_str(&line).unwrap());
    }
    assert!(child.wait().await.unwrap().success());
    events
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}

#[tokio::test]
async fn headless_wakes_on_request_and_notifies_once_for_an_alert_and_never_for_ok() {
    let wake = "{\"type\":\"wake\",\"reason\":\"manual\"}\n";
    let fake = FakeLlm::start(Script::steps(vec![Step::text("Disk usage is 91 % on /.")]))
        .await
        .unwrap();
    let events = headless_with_config(&fake, "- if disk usage is over 80 %, tell me\n", wake).await;
    let beats = of_type(&events, "heartbeat");
    assert_eq!(beats.len(), 1, "{events:?}");
    assert_eq!(
        (beats[0]["reason"].as_str(), beats[0]["status"].as_str()),
        (Some("manual"), Some("sent"))
    );
    let notes = of_type(&events, "notification");
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0]["body"], "Disk usage is 91 % on /.");
    assert_eq!(of_type(&events, "background_update").len(), 1);

    let fake = FakeLlm::start(Script::steps(vec![Step::text("HEARTBEAT_OK")]))
        .await
        .unwrap();
    let events = headless_with_config(&fake, "- if disk usage is over 80 %, tell me\n", wake).await;
    let beats = of_type(&events, "heartbeat");
    assert_eq!(beats.len(), 1, "{events:?}");
    assert_eq!(beats[0]["status"], "ok-token");
    assert!(beats[0].get("skip_reason").is_none());
    assert!(of_type(&events, "notification").is_empty());
    assert!(of_type(&events, "background_update").is_empty());

    // An effectively empty file: an interval wake is skipped without a model call.
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let events = headless_with_config(
        &fake,
        "# HEARTBEAT.md\n",
        "{\"type\":\"wake\",\"reason\":\"interval\"}\n",
    )
    .await;
    let beats = of_type(&events, "heartbeat");
    assert_eq!(
        (beats[0]["status"].as_str(), beats[0]["skip_reason"].as_str()),
        (Some("skipped"), Some("empty-heartbeat-file"))
    );
    assert!(fake.requests().is_empty());
}

/// SIGTERM shuts the runner down as cleanly as the shutdown op: it exits 0 and the
/// process group it started is gone.
#[cfg(unix)]
#[tokio::test]
async fn sigterm_shuts_down_cleanly_and_kills_process_groups() {
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::from(super::support::headless(dir.path(), &fake, "sk-term"))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"type\":\"start_process\",\"command\":\"sleep 600\"}\n")
        .await
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let pid = loop {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("process_started in time")
            .unwrap()
            .expect("the runner is alive");
        let e: Value = serde_json::from_str(&line).unwrap();
        if e["type"] == "process_started" {
            break e["process"]["pid"].as_i64().expect("a pid") as i32;
        }
    };
    let alive = |pid: i32| std::path::Path::new(&format!("/proc/{pid}")).exists();
    assert!(alive(pid));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("exits after SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
    // The group was killed before the runner exited (a zombie may linger until reaped).
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
    };
    assert!(gone(pid), "sleep {pid} survived the runner");
    drop(stdin);
}

/// Variables the desktop app set for itself (listed in `VIGIL_APP_ADDED_ENV`) reach no
/// command the agent runs, in a terminal or with pipes; the user's own variables do.
#[tokio::test]
async fn commands_do_not_inherit_the_apps_own_environment() {
    use serde_json::json;
    let print_env = "echo \"app=${APP_ONLY_A:-unset},${APP_ONLY_B:-unset} marker=${VIGIL_APP_ADDED_ENV:-unset} user=${USER_OWN:-unset}\"";
    let fake = FakeLlm::start(
        Script::steps(vec![
            Step::tool_call("call_pty", "exec", json!({"command": print_env})),
            Step::tool_call("call_pipes", "exec", json!({"command": print_env, "pty": false})),
            Step::text("done"),
        ])
        .with_api_key("sk-env"),
    )
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::from(super::support::headless(dir.path(), &fake, "sk-env"));
    let mut child = cmd
        .env("VIGIL_APPROVAL_POLICY", "full-auto")
        .env("VIGIL_APP_ADDED_ENV", "APP_ONLY_A, APP_ONLY_B")
        .env("APP_ONLY_A", "1")
        .env("APP_ONLY_B", "1")
        .env("USER_OWN", "kept")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"type\":\"user_message\",\"text\":\"print the environment\"}\n")
        .await
        .unwrap();
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("the turn ends")
        .unwrap();
    assert!(status.success(), "{status}");
    let transcript = std::fs::read_to_string(dir.path().join("sessions/main.jsonl")).unwrap();
    let results: Vec<String> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["type"] == "tool_result")
        .map(|c| c["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(results.len(), 2, "both commands ran: {transcript}");
    for output in &results {
        assert!(output.contains("app=unset,unset marker=unset user=kept"), "{output}");
    }
}

#[tokio::test]
async fn headless_answers_a_health_op_with_a_health_event() {
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let events = headless_with_config(&fake, "# HEARTBEAT.md\n", "{\"type\":\"health\"}\n").await;
    let health = of_type(&events, "health");
    assert_eq!(health.len(), 1, "{events:?}");
    let h = &health[0]["health"];
    assert_eq!(h["status"], "healthy");
    assert_eq!(h["heartbeat"]["handler_registered"], true, "{h}");
    assert_eq!(h["lanes"], serde_json::json!([]));
    assert!(h["uptime_ms"].is_u64() && h["locks"]["timeouts"] == 0, "{h}");
}

/// At the end of its input the runner waits for what was asked, but nobody is left to answer
/// a question: an approval the turn waits for is denied, the turn ends, the runner exits.
#[tokio::test]
async fn at_the_end_of_input_a_waiting_approval_is_denied_and_the_runner_exits() {
    let fake = FakeLlm::start(
        Script::steps(vec![
            Step::tool_call("t1", "exec", serde_json::json!({"command": "touch made-anyway.txt"})),
            Step::text("I could not create it."),
        ])
        .with_api_key("sk-headless"),
    )
    .await
    .unwrap();
    let dir = super::support::outside_tmp();
    let mut child = tokio::process::Command::from(super::support::headless(dir.path(), &fake, "sk-headless"))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"type\":\"user_message\",\"text\":\"make a file\"}\n")
        .await
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<Value> = Vec::new();
    // The question is out before the input ends.
    while !events.iter().any(|e| e["type"] == "approval_requested") {
        let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await
            .expect("asked in time")
            .unwrap()
            .expect("still running");
        events.push(serde_json::from_str(&line).unwrap());
    }
    drop(stdin);
    let rest = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            events.push(serde_json::from_str(&line).unwrap());
        }
        child.wait().await.unwrap()
    };
    let status = tokio::time::timeout(Duration::from_secs(20), rest)
        .await
        .expect("the runner exits instead of waiting for an answer forever");
    assert!(status.success());
    let resolved: Vec<&Value> = events.iter().filter(|e| e["type"] == "approval_resolved").collect();
    assert_eq!(resolved.len(), 1, "{events:?}");
    assert_eq!(resolved[0]["decision"], "deny");
    let finished = events.iter().find(|e| e["type"] == "tool_call_finished").unwrap();
    assert_eq!(finished["is_error"], true, "{finished}");
    assert!(!dir.path().join("workspace/made-anyway.txt").exists());
    let last = events.iter().rfind(|e| e["type"] == "turn_finished").unwrap();
    assert_eq!(last["stop_reason"], "end_turn");
}
