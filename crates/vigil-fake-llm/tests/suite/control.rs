//! The control routes, model listing, step order and the library handle's lifecycle.

use serde_json::{json, Value};
use vigil_fake_llm::{FakeLlm, Faults, RecordedRequest, Script, Step};

use super::*;

fn text_of(events: &[Event]) -> String {
    join(events, |v| {
        v["delta"]["text"]
            .as_str()
            .or(v["choices"][0]["delta"]["content"].as_str())
            .map(str::to_owned)
    })
}

#[tokio::test]
async fn requests_are_recorded_with_headers_and_parsed_bodies() {
    let server = FakeLlm::start(Script::default()).await.unwrap();
    let body = anthropic_body("remember me");
    post_anthropic(&server, &body).await.text().await.unwrap();
    let listed: Vec<RecordedRequest> = client()
        .get(format!("{}/_requests", server.anthropic_base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed, server.requests());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].path, "/v1/messages");
    assert_eq!(listed[0].body, body);
    assert_eq!(listed[0].headers["x-api-key"], "sk-test");
    assert_eq!(listed[0].headers["anthropic-version"], "2023-06-01");
    let reset = client()
        .post(format!("{}/_reset", server.anthropic_base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 200);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn non_json_bodies_are_recorded_as_text_and_rejected() {
    let server = FakeLlm::start(Script::default()).await.unwrap();
    let response = client()
        .post(format!("{}/chat/completions", server.openai_base_url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(server.requests()[0].body, json!("not json"));
}

#[tokio::test]
async fn script_route_replaces_the_script_and_rewinds() {
    let server = FakeLlm::start(Script::steps(vec![Step::text("one"), Step::text("two")]))
        .await
        .unwrap();
    let first = events(post_anthropic(&server, &anthropic_body("x")).await).await;
    assert_eq!(text_of(&first), "one");
    let new = json!({"steps": [{"kind": "text", "text": "replaced", "chunk_chars": 3}],
        "fallback": {"kind": "echo", "prefix": "> "}});
    let url = format!("{}/_script", server.anthropic_base_url());
    let response = client().post(&url).json(&new).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let second = events(post_openai(&server, &openai_body("x")).await).await;
    assert_eq!(text_of(&second), "replaced");
    let third = events(post_openai(&server, &openai_body("hey")).await).await;
    assert_eq!(text_of(&third), "> hey");
    let bad = client()
        .post(&url)
        .body(r#"{"steps": [{"kind": "nope"}]}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let error: Value = bad.json().await.unwrap();
    assert!(error["error"].as_str().unwrap().contains("nope"), "{error}");
}

#[tokio::test]
async fn steps_are_shared_across_protocols_then_fall_back() {
    let script = Script::steps(vec![Step::text("a"), Step::text("b")]).with_fallback(Step::text("z"));
    let server = FakeLlm::start(script).await.unwrap();
    let a = events(post_openai(&server, &openai_body("x")).await).await;
    let b = events(post_anthropic(&server, &anthropic_body("x")).await).await;
    let c = events(post_openai(&server, &openai_body("x")).await).await;
    let d = events(post_anthropic(&server, &anthropic_body("x")).await).await;
    assert_eq!(
        [text_of(&a), text_of(&b), text_of(&c), text_of(&d)],
        ["a", "b", "z", "z"]
    );
}

#[tokio::test]
async fn a_request_over_the_context_window_gets_each_protocols_overflow_error_and_uses_no_step() {
    let script = Script::steps(vec![Step::text("fits")]).with_context_window(1_000);
    let server = FakeLlm::start(script).await.unwrap();
    let long = "word ".repeat(1_000);
    let response = post_anthropic(&server, &anthropic_body(&long)).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["type"], "invalid_request_error");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("prompt is too long: ") && message.ends_with(" tokens > 1000 maximum"),
        "{message}"
    );
    let response = post_openai(&server, &openai_body(&long)).await;
    assert_eq!(response.status(), 400);
    let error: Value = response.json().await.unwrap();
    assert_eq!(error["error"]["code"], "context_length_exceeded");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("This model's maximum context length is 1000 tokens."),
        "{message}"
    );
    // Refused before the model ran: the first step is still there for a request that fits.
    let events = events(post_openai(&server, &openai_body("short")).await).await;
    assert_eq!(text_of(&events), "fits");
}

#[tokio::test]
async fn a_side_request_gets_its_own_reply_and_the_steps_go_on_in_order() {
    let script = Script::steps(vec![Step::text("one"), Step::text("two")])
        .with_side_reply("compress conversations", Step::text("a summary"));
    let server = FakeLlm::start(script).await.unwrap();
    let mut side = anthropic_body("summarise this");
    side["system"] = json!([{"type": "text", "text": "You compress conversations."}]);
    let mut side_openai = openai_body("summarise this");
    side_openai["messages"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"role": "system", "content": "You compress conversations."}));
    let a = events(post_anthropic(&server, &anthropic_body("x")).await).await;
    let b = events(post_anthropic(&server, &side).await).await;
    let c = events(post_openai(&server, &side_openai).await).await;
    let d = events(post_openai(&server, &openai_body("x")).await).await;
    assert_eq!(
        [text_of(&a), text_of(&b), text_of(&c), text_of(&d)],
        ["one", "a summary", "a summary", "two"]
    );
}

#[tokio::test]
async fn models_lists_configured_models_behind_the_key() {
    let server = FakeLlm::start(Script::default().with_api_key("sk-test").with_models(["m1", "m2"]))
        .await
        .unwrap();
    let url = format!("{}/models", server.openai_base_url());
    let ok: Value = client()
        .get(&url)
        .bearer_auth("sk-test")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = ok["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["m1", "m2"]);
    assert_eq!(ok["object"], "list");
    assert_eq!(ok["has_more"], false);
    let anthropic = client().get(&url).header("x-api-key", "sk-test").send().await.unwrap();
    assert_eq!(anthropic.status(), 200);
    let denied = client().get(&url).header("x-api-key", "wrong").send().await.unwrap();
    assert_eq!(denied.status(), 401);
    let body: Value = denied.json().await.unwrap();
    assert_eq!(body["error"]["type"], "authentication_error");
    let default = FakeLlm::start(Script::default()).await.unwrap();
    let listed: Value = client()
        .get(format!("{}/models", default.openai_base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["data"][0]["id"], "fake-model");
}

#[tokio::test]
async fn script_json_round_trips_with_faults_flattened() {
    let text = r#"{"api_key": "k", "steps": [
        {"kind": "text", "text": "t", "split_bytes": 3, "crlf": true, "delay_ms": 5},
        {"kind": "error", "status": 529, "message": "busy", "retry_after": 2},
        {"kind": "tool_calls", "calls": [{"id": "c", "name": "n", "arguments": {"a": 1}}]}
    ]}"#;
    let script = Script::from_json(text).unwrap();
    let expected = Script::steps(vec![
        Step::text("t").with_delay_ms(5).with_faults(Faults {
            split_bytes: Some(3),
            crlf: true,
            ..Default::default()
        }),
        match Step::error(529, "x", "busy").with_retry_after("2") {
            Step::Error(mut e) => {
                e.error_type = None;
                Step::Error(e)
            }
            _ => unreachable!(),
        },
        Step::tool_call("c", "n", json!({"a": 1})),
    ])
    .with_api_key("k");
    assert_eq!(script, expected);
    let again = Script::from_json(&serde_json::to_string(&script).unwrap()).unwrap();
    assert_eq!(again, script);
}

#[tokio::test]
async fn dropping_the_handle_stops_the_server_and_live_streams() {
    let stalled = Step::text("abcdef").with_faults(Faults {
        stall_after_events: Some(2),
        ..Default::default()
    });
    let server = FakeLlm::start(Script::steps(vec![stalled])).await.unwrap();
    let addr = server.addr();
    let response = post_anthropic(&server, &anthropic_body("x")).await;
    drop(server);
    // The stall lasts an hour; only the shutdown can end this body, and it ends in an error.
    let (_, error) = tokio::time::timeout(std::time::Duration::from_secs(5), chunks(response))
        .await
        .expect("shutdown ends the stalled stream");
    assert!(error.is_some());
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let refused = client().get(format!("http://{addr}/v1/models")).send().await;
    assert!(refused.is_err(), "server is gone after drop");
}
