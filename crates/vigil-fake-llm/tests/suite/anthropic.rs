//! `POST /v1/messages`: event order, block contents, tool-use deltas, errors.

use serde_json::{json, Value};
use vigil_fake_llm::{FakeLlm, Faults, Script, Step, StopReason};

use super::*;

fn s(v: &str) -> String {
    v.to_owned()
}

#[tokio::test]
async fn text_stream_has_the_real_event_order() {
    let step = Step::text("Hello, world").with_thinking("hmm ok").with_usage(12, 3);
    let server = FakeLlm::start(Script::steps(vec![step]).with_api_key("sk-test"))
        .await
        .unwrap();
    let response = post_anthropic(&server, &anthropic_body("hi")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = events(response).await;
    let delta = s("content_block_delta");
    let expected = vec![
        s("message_start"),
        s("ping"),
        s("content_block_start"),
        delta.clone(),
        delta.clone(),
        delta.clone(), // signature_delta
        s("content_block_stop"),
        s("content_block_start"),
        delta.clone(),
        delta.clone(),
        delta,
        s("content_block_stop"),
        s("message_delta"),
        s("message_stop"),
    ];
    assert_eq!(names(&events), expected);
    for e in &events {
        assert_eq!(e.json()["type"], e.name.clone().unwrap(), "type matches event name");
    }
    let start = events[0].json();
    assert_eq!(start["message"]["model"], "fake-model");
    assert_eq!(start["message"]["role"], "assistant");
    assert_eq!(start["message"]["usage"]["input_tokens"], 12);
    assert!(start["message"]["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(
        events[2].json()["content_block"],
        json!({"type": "thinking", "thinking": "", "signature": ""})
    );
    assert_eq!(events[5].json()["delta"]["type"], "signature_delta");
    let thinking = join(&events, |v| v["delta"]["thinking"].as_str().map(str::to_owned));
    assert_eq!(thinking, "hmm ok");
    let text = join(&events, |v| {
        (v["delta"]["type"] == "text_delta").then(|| v["delta"]["text"].as_str().unwrap().into())
    });
    assert_eq!(text, "Hello, world");
    assert_eq!(events[8].json()["index"], 1);
    assert_eq!(events[8].json()["delta"], json!({"type": "text_delta", "text": "Hell"}));
    assert_eq!(
        events[12].json(),
        json!({"type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": null},
            "usage": {"output_tokens": 3}})
    );
}

#[tokio::test]
async fn tool_use_arguments_arrive_in_pieces_and_reassemble() {
    let args = json!({"path": "/tmp/notes.txt", "limit": 10, "ü": [1, 2]});
    let step = Step::tool_call("call_1", "read", args.clone()).with_text("Let me look.");
    let server = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
    let events = events(post_anthropic(&server, &anthropic_body("read it")).await).await;
    let starts: Vec<Value> = events
        .iter()
        .filter(|e| e.name.as_deref() == Some("content_block_start"))
        .map(|e| e.json())
        .collect();
    assert_eq!(starts[0]["content_block"]["type"], "text");
    assert_eq!(
        starts[1],
        json!({"type": "content_block_start", "index": 1, "content_block":
            {"type": "tool_use", "id": "call_1", "name": "read", "input": {}}})
    );
    let pieces: Vec<String> = events
        .iter()
        .map(|e| e.json())
        .filter(|v| v["delta"]["type"] == "input_json_delta")
        .inspect(|v| assert_eq!(v["index"], 1))
        .map(|v| v["delta"]["partial_json"].as_str().unwrap().to_owned())
        .collect();
    assert!(pieces.len() > 3, "arguments split into several deltas");
    let reassembled: Value = serde_json::from_str(&pieces.concat()).unwrap();
    assert_eq!(reassembled, args);
    let stop = events.iter().find(|e| e.name.as_deref() == Some("message_delta"));
    assert_eq!(stop.unwrap().json()["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn echo_uses_the_last_user_message_blocks() {
    let server = FakeLlm::start(Script::default()).await.unwrap();
    let body = json!({"model": "m", "max_tokens": 5, "stream": true, "messages": [
        {"role": "user", "content": "old"},
        {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
        {"role": "user", "content": [{"type": "text", "text": "new question"}]},
    ]});
    let events = events(post_anthropic(&server, &body).await).await;
    let text = join(&events, |v| v["delta"]["text"].as_str().map(str::to_owned));
    assert_eq!(text, "echo: new question");
    assert_eq!(events[0].json()["message"]["model"], "m");
}

#[tokio::test]
async fn wrong_key_is_401_with_the_real_body() {
    let server = FakeLlm::start(Script::default().with_api_key("sk-right"))
        .await
        .unwrap();
    let response = post_anthropic(&server, &anthropic_body("hi")).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    );
}

#[tokio::test]
async fn unknown_model_is_404_and_does_not_use_a_step() {
    let script = Script::steps(vec![Step::text("first")]).with_models(["fake-model"]);
    let server = FakeLlm::start(script).await.unwrap();
    let mut body = anthropic_body("hi");
    body["model"] = json!("claude-nope");
    let response = post_anthropic(&server, &body).await;
    assert_eq!(response.status(), 404);
    let error: Value = response.json().await.unwrap();
    assert_eq!(
        error,
        json!({"type": "error", "error": {"type": "not_found_error", "message": "model: claude-nope"}})
    );
    let events = events(post_anthropic(&server, &anthropic_body("hi")).await).await;
    assert_eq!(
        join(&events, |v| v["delta"]["text"].as_str().map(str::to_owned)),
        "first"
    );
}

#[tokio::test]
async fn rate_limit_is_429_with_retry_after() {
    let step = Step::error(429, "rate_limit_error", "slow down").with_retry_after("2");
    let server = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
    let response = post_anthropic(&server, &anthropic_body("hi")).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
    );
}

#[tokio::test]
async fn error_after_events_is_an_sse_error_event() {
    let step = Step::text("abcdefgh").with_faults(Faults {
        error_after_events: Some(4),
        ..Default::default()
    });
    let server = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
    let response = post_anthropic(&server, &anthropic_body("hi")).await;
    assert_eq!(response.status(), 200);
    let events = events(response).await;
    assert_eq!(events.len(), 5);
    assert_eq!(events[4].name.as_deref(), Some("error"));
    assert_eq!(
        events[4].json(),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
}

#[tokio::test]
async fn non_streaming_request_gets_a_whole_message() {
    let step = Step::text("cut").with_stop_reason(StopReason::MaxTokens);
    let server = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
    let mut body = anthropic_body("hi");
    body["stream"] = json!(false);
    let message: Value = post_anthropic(&server, &body).await.json().await.unwrap();
    assert_eq!(message["content"], json!([{"type": "text", "text": "cut"}]));
    assert_eq!(message["stop_reason"], "max_tokens");
}
