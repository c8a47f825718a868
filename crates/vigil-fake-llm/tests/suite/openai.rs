//! `POST /v1/chat/completions`: chunks, usage chunk, `[DONE]`, tool-call deltas, errors.

use serde_json::{json, Value};
use vigil_fake_llm::{FakeLlm, Faults, Script, Step, ToolCall};

use super::*;

fn content(events: &[Event], field: &str) -> String {
    join(events, |v| v["choices"][0]["delta"][field].as_str().map(str::to_owned))
}

#[tokio::test]
async fn text_stream_ends_with_usage_chunk_and_done() {
    let step = Step::text("Hello there").with_thinking("why not").with_usage(7, 2);
    let server = FakeLlm::start(Script::steps(vec![step]).with_api_key("sk-test"))
        .await
        .unwrap();
    let response = post_openai(&server, &openai_body("hi")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = events(response).await;
    assert!(events.iter().all(|e| e.name.is_none()), "OpenAI sends data lines only");
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let n = events.len();
    let first = events[0].json();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["model"], "fake-model");
    assert_eq!(
        first["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(first["choices"][0]["finish_reason"], Value::Null);
    assert_eq!(content(&events, "reasoning_content"), "why not");
    assert_eq!(content(&events, "content"), "Hello there");
    let finish = events[n - 3].json();
    assert_eq!(finish["choices"][0]["delta"], json!({}));
    assert_eq!(finish["choices"][0]["finish_reason"], "stop");
    let usage = events[n - 2].json();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9})
    );
    let ids: Vec<Value> = events[..n - 1].iter().map(|e| e.json()["id"].clone()).collect();
    assert!(ids.iter().all(|id| id == &ids[0]), "one id for the whole stream");
}

#[tokio::test]
async fn usage_chunk_only_when_asked() {
    let server = FakeLlm::start(Script::default()).await.unwrap();
    let body = json!({"model": "x", "stream": true, "messages": [{"role": "user", "content": "yo"}]});
    let events = events(post_openai(&server, &body).await).await;
    let n = events.len();
    assert_eq!(events[n - 1].data, "[DONE]");
    assert_eq!(events[n - 2].json()["choices"][0]["finish_reason"], "stop");
    assert!(events[..n - 1].iter().all(|e| e.json().get("usage").is_none()));
    assert_eq!(content(&events, "content"), "echo: yo");
}

#[tokio::test]
async fn tool_call_arguments_split_by_index_and_reassemble() {
    let a = json!({"path": "src/main.rs", "offset": 0});
    let b = json!({"command": "ls -la", "timeout_ms": 5000});
    let step = Step::tool_calls(vec![
        ToolCall {
            id: "call_1".into(),
            name: "read".into(),
            arguments: a.clone(),
        },
        ToolCall {
            id: "call_2".into(),
            name: "exec".into(),
            arguments: b.clone(),
        },
    ]);
    let server = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
    let events = events(post_openai(&server, &openai_body("go")).await).await;
    let mut args = [String::new(), String::new()];
    let mut pieces = [0, 0];
    let mut firsts = Vec::new();
    for e in events.iter().filter(|e| e.data != "[DONE]") {
        let v = e.json();
        let Some(calls) = v["choices"][0]["delta"]["tool_calls"].as_array() else {
            continue;
        };
        for call in calls {
            let i = call["index"].as_u64().unwrap() as usize;
            if call.get("id").is_some() {
                assert_eq!(args[i], "", "id and name only in a call's first chunk");
                firsts.push((
                    call["id"].clone(),
                    call["type"].clone(),
                    call["function"]["name"].clone(),
                ));
            } else {
                assert!(call["function"].get("name").is_none());
                pieces[i] += 1;
            }
            args[i].push_str(call["function"]["arguments"].as_str().unwrap());
        }
    }
    assert_eq!(
        firsts,
        vec![
            (json!("call_1"), json!("function"), json!("read")),
            (json!("call_2"), json!("function"), json!("exec")),
        ]
    );
    assert!(
        pieces[0] > 2 && pieces[1] > 2,
        "arguments split across chunks: {pieces:?}"
    );
    assert_eq!(serde_json::from_str::<Value>(&args[0]).unwrap(), a);
    assert_eq!(serde_json::from_str::<Value>(&args[1]).unwrap(), b);
    let finish = events[events.len() - 3].json();
    assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
}

#[tokio::test]
async fn wrong_bearer_is_401_invalid_api_key() {
    let server = FakeLlm::start(Script::default().with_api_key("sk-right"))
        .await
        .unwrap();
    let response = post_openai(&server, &openai_body("hi")).await;
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_api_key");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(!body["error"]["message"].as_str().unwrap().contains("sk-test"));
}

#[tokio::test]
async fn unknown_model_is_404_model_not_found() {
    let server = FakeLlm::start(Script::default().with_models(["gpt-fake"]))
        .await
        .unwrap();
    let response = post_openai(&server, &openai_body("hi")).await;
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {"message": "The model `fake-model` does not exist or you do not have access to it.",
            "type": "invalid_request_error", "param": null, "code": "model_not_found"}})
    );
}

#[tokio::test]
async fn rate_limit_is_429_with_retry_after_and_openai_code() {
    let step = Step::error(429, "rate_limit_error", "Rate limit reached").with_retry_after("3");
    let server = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
    let response = post_openai(&server, &openai_body("hi")).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {"message": "Rate limit reached", "type": "requests", "param": null,
            "code": "rate_limit_exceeded"}})
    );
}

#[tokio::test]
async fn error_after_events_is_an_error_data_line() {
    let step = Step::text("abcdefgh").with_faults(Faults {
        error_after_events: Some(2),
        error_type: Some("api_error".into()),
        error_message: Some("boom".into()),
        ..Default::default()
    });
    let server = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
    let response = post_openai(&server, &openai_body("hi")).await;
    assert_eq!(response.status(), 200);
    let events = events(response).await;
    assert_eq!(events.len(), 3);
    assert_eq!(
        events[2].json(),
        json!({"error": {"message": "boom", "type": "server_error", "param": null, "code": null}})
    );
}

#[tokio::test]
async fn non_streaming_request_gets_a_whole_completion() {
    let server = FakeLlm::start(Script::steps(vec![Step::tool_call("c1", "ls", json!({}))]))
        .await
        .unwrap();
    let body = json!({"model": "fake-model", "messages": [{"role": "user", "content": "x"}]});
    let completion: Value = post_openai(&server, &body).await.json().await.unwrap();
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(
        completion["choices"][0]["message"],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})
    );
    assert_eq!(completion["choices"][0]["finish_reason"], "tool_calls");
}
