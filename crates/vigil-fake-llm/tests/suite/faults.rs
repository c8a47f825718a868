//! Wire faults: how the bytes arrive, not what they say.

use std::time::{Duration, Instant};

use serde_json::json;
use vigil_fake_llm::{FakeLlm, Faults, Script, Step};

use super::*;

async fn server_with(step: Step) -> FakeLlm {
    FakeLlm::start(Script::steps(vec![step])).await.unwrap()
}

fn utf8(chunks: &[bytes::Bytes]) -> String {
    String::from_utf8(chunks.concat()).expect("whole body is UTF-8")
}

#[tokio::test]
async fn split_bytes_delivers_many_small_chunks() {
    let text = "héllo wörld ✓ done";
    let plain = events(post_openai(&server_with(Step::text(text)).await, &openai_body("x")).await).await;
    let step = Step::text(text).with_faults(Faults {
        split_bytes: Some(5),
        ..Default::default()
    });
    let server = server_with(step).await;
    let (chunks, error) = chunks(post_openai(&server, &openai_body("x")).await).await;
    assert!(error.is_none());
    assert!(chunks.len() > 20, "got {} chunks", chunks.len());
    assert!(chunks.iter().all(|c| c.len() <= 5));
    assert!(
        chunks.iter().any(|c| std::str::from_utf8(c).is_err()),
        "some chunk ends inside a multi-byte character"
    );
    let split = parse_sse(&utf8(&chunks));
    assert_eq!(names(&split), names(&plain));
    assert_eq!(
        join(&split, |v| v["choices"][0]["delta"]["content"]
            .as_str()
            .map(str::to_owned)),
        text
    );
}

#[tokio::test]
async fn drop_after_events_breaks_the_body() {
    let step = Step::text("a long enough reply").with_faults(Faults {
        drop_after_events: Some(3),
        ..Default::default()
    });
    let server = server_with(step).await;
    let response = post_anthropic(&server, &anthropic_body("x")).await;
    assert_eq!(response.status(), 200);
    let (chunks, error) = chunks(response).await;
    assert!(error.is_some(), "client sees a body error, not a clean end");
    let got = parse_sse(&utf8(&chunks));
    assert_eq!(names(&got), ["message_start", "ping", "content_block_start"]);
}

#[tokio::test]
async fn crlf_and_comments_frame_the_same_events() {
    let plain = events(post_anthropic(&server_with(Step::text("abc def")).await, &anthropic_body("x")).await).await;
    let step = Step::text("abc def").with_faults(Faults {
        crlf: true,
        comments: true,
        ..Default::default()
    });
    let server = server_with(step).await;
    let body = post_anthropic(&server, &anthropic_body("x"))
        .await
        .text()
        .await
        .unwrap();
    assert!(body.contains("event: message_start\r\ndata: "));
    assert!(body.contains("\r\n\r\n: keep-alive\r\n\r\nevent: ping\r\n"));
    assert!(!body.replace("\r\n", "").contains('\n'), "every line ends in CRLF");
    assert_eq!(parse_sse(&body), plain);
}

#[tokio::test]
async fn stall_goes_silent_then_continues() {
    let step = Step::text("abcd").with_faults(Faults {
        stall_after_events: Some(2),
        stall_ms: Some(150),
        ..Default::default()
    });
    let server = server_with(step).await;
    let started = Instant::now();
    let events = events(post_openai(&server, &openai_body("x")).await).await;
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn invalid_json_event_is_inserted_once() {
    let step = Step::text("abcdefgh").with_faults(Faults {
        invalid_json_after_events: Some(1),
        ..Default::default()
    });
    let server = server_with(step).await;
    let events = events(post_openai(&server, &openai_body("x")).await).await;
    let bad: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.data != "[DONE]" && serde_json::from_str::<serde_json::Value>(&e.data).is_err())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(bad, [1]);
    assert_eq!(events.last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn no_terminator_ends_cleanly_without_done() {
    let step = Step::text("hi").with_faults(Faults {
        no_terminator: true,
        ..Default::default()
    });
    let server = server_with(step.clone()).await;
    let (chunks, error) = chunks(post_openai(&server, &openai_body("x")).await).await;
    assert!(error.is_none());
    assert!(parse_sse(&utf8(&chunks)).iter().all(|e| e.data != "[DONE]"));
    server.set_script(Script::steps(vec![step]));
    let events = events(post_anthropic(&server, &anthropic_body("x")).await).await;
    assert_eq!(events.last().unwrap().name.as_deref(), Some("message_delta"));
}

#[tokio::test]
async fn raw_chunks_arrive_as_written_even_when_not_utf8() {
    let script: Script = serde_json::from_value(json!({"steps": [
        {"kind": "raw", "chunks": ["data: {\"a\":", [255, 254, 10], "\n\n"]}
    ]}))
    .unwrap();
    let server = FakeLlm::start(script).await.unwrap();
    let response = post_openai(&server, &openai_body("x")).await;
    assert_eq!(response.status(), 200);
    let (chunks, error) = chunks(response).await;
    assert!(error.is_none());
    assert_eq!(chunks.concat(), b"data: {\"a\":\xff\xfe\n\n\n");
    assert_eq!(chunks.len(), 3);
}

#[tokio::test]
async fn delay_spaces_out_events() {
    let step = Step::text("ab").with_delay_ms(20);
    let server = server_with(step).await;
    let started = Instant::now();
    let events = events(post_anthropic(&server, &anthropic_body("x")).await).await;
    // 7 events (start, ping, block start/delta/stop, delta, stop) → 6 gaps of 20 ms.
    assert_eq!(events.len(), 7);
    assert!(started.elapsed() >= Duration::from_millis(120));
}
