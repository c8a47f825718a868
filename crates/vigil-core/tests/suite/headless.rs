//! `vigil-headless` speaks JSON lines against the fake provider.

use std::process::Stdio;

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
