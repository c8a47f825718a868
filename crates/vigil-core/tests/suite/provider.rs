//! The streaming clients against the fake provider, both protocols.

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use vigil_core::clock::ManualClock;
use vigil_core::protocol::{ContentBlock, ProviderKind, StopReason, Usage};
use vigil_core::provider::{ProviderError, StreamEvent};
use vigil_fake_llm::{FakeLlm, Faults, Script, Step, ToolCall};

use super::support::*;

const TEXT: &str = "Grüße, 世界! 🎉 Streaming works\nacross lines.";

#[tokio::test]
async fn text_streams_in_order_and_whole_through_hostile_framing() {
    for kind in KINDS {
        let faults = Faults {
            crlf: true,
            comments: true,
            split_bytes: Some(3),
            ..Faults::default()
        };
        let step = Step::text(TEXT)
            .with_thinking("let me think")
            .with_usage(11, 7)
            .with_chunk_chars(2)
            .with_faults(faults);
        let fake = FakeLlm::start(Script::steps(vec![step]).with_api_key("sk-test"))
            .await
            .unwrap();
        let clock = ManualClock::new(0);
        let (result, events) = stream(&client(config(&fake, kind), &clock), &hello()).await;
        let done = result.unwrap_or_else(|f| panic!("{kind:?}: {}", f.error));
        assert_eq!(text_of(&events), TEXT, "{kind:?}");
        assert!(events.len() > 10, "{kind:?}: text arrived in many deltas");
        // Every call asks for replies of up to 8192 tokens unless the user set another bound
        // (seed 001 §3).
        assert_eq!(fake.requests()[0].body["max_tokens"], 8192, "{kind:?}");
        assert_eq!(done.text(), TEXT);
        assert_eq!(done.stop_reason, StopReason::EndTurn);
        // Anthropic's prompt cache (kept by the fake) took the system prompt's breakpoint on
        // this first call: part of the 11 input tokens was written to it, none read.
        let written = match kind {
            ProviderKind::Anthropic => 10,
            ProviderKind::Openai => 0,
        };
        assert_eq!(
            done.usage,
            Usage {
                input_tokens: 11,
                output_tokens: 7,
                cache_write_tokens: written,
                ..Usage::default()
            },
            "{kind:?}"
        );
        assert!(done
            .content
            .iter()
            .any(|b| matches!(b, ContentBlock::Thinking { thinking, .. } if thinking == "let me think")));
        // What the client sent.
        let req = &fake.requests()[0];
        assert_eq!(req.body["model"], "fake-model");
        assert_eq!(req.body["stream"], true);
        let sent_text = match kind {
            ProviderKind::Anthropic => {
                assert_eq!(req.headers["x-api-key"], "sk-test");
                assert_eq!(
                    req.body["system"],
                    json!([{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}])
                );
                req.body["messages"][0]["content"][0]["text"].clone()
            }
            ProviderKind::Openai => {
                assert_eq!(req.headers["authorization"], "Bearer sk-test");
                assert_eq!(
                    req.body["messages"][0],
                    json!({"role": "system", "content": "be brief"})
                );
                req.body["messages"][1]["content"].clone()
            }
        };
        assert_eq!(sent_text, "hello");
    }
}

#[tokio::test]
async fn tool_call_deltas_assemble_into_whole_calls() {
    for kind in KINDS {
        let calls = vec![
            ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "notes/ä.md", "limit": 20}),
            },
            ToolCall {
                id: "call_2".into(),
                name: "write".into(),
                arguments: json!({"path": "b.txt", "content": "x\ny"}),
            },
        ];
        let step = Step::tool_calls(calls).with_text("Reading.").with_chunk_chars(3);
        let fake = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
        let (result, _) = stream(&client(config(&fake, kind), &ManualClock::new(0)), &hello()).await;
        let done = result.unwrap_or_else(|f| panic!("{kind:?}: {}", f.error));
        assert_eq!(done.stop_reason, StopReason::ToolUse, "{kind:?}");
        assert_eq!(
            done.content,
            vec![
                ContentBlock::Text {
                    text: "Reading.".into()
                },
                ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "read".into(),
                    input: json!({"path": "notes/ä.md", "limit": 20})
                },
                ContentBlock::ToolUse {
                    id: "call_2".into(),
                    name: "write".into(),
                    input: json!({"path": "b.txt", "content": "x\ny"})
                },
            ],
            "{kind:?}"
        );
    }
}

async fn error_for(
    kind: ProviderKind,
    script: Script,
    tweak: impl FnOnce(&mut vigil_core::provider::ProviderConfig),
) -> (ProviderError, usize) {
    let fake = FakeLlm::start(script).await.unwrap();
    let mut cfg = config(&fake, kind);
    tweak(&mut cfg);
    let (result, _) = stream(&client(cfg, &ManualClock::new(0)), &hello()).await;
    let failure = result.expect_err("should fail");
    (failure.error, fake.requests().len())
}

#[tokio::test]
async fn each_http_error_maps_to_its_typed_error() {
    for kind in KINDS {
        let (e, _) = error_for(kind, Script::steps(vec![]).with_api_key("right"), |c| {
            c.api_key = Some("wrong".into())
        })
        .await;
        assert!(matches!(e, ProviderError::Auth { status: 401, .. }), "{kind:?}: {e:?}");
        assert!(e.to_string().contains("API key was rejected"));

        let (e, _) = error_for(kind, Script::steps(vec![]).with_models(["other-model"]), |_| {}).await;
        assert!(
            matches!(&e, ProviderError::ModelNotFound { model, .. } if model == "fake-model"),
            "{kind:?}: {e:?}"
        );

        let (e, n) = error_for(
            kind,
            Script::steps(vec![Step::error(400, "invalid_request_error", "max_tokens too large")]),
            |_| {},
        )
        .await;
        assert_eq!(
            e,
            ProviderError::BadRequest {
                status: 400,
                message: "max_tokens too large".into()
            },
            "{kind:?}"
        );
        assert_eq!(n, 1, "a 400 is not retried");

        let (e, n) = error_for(kind, Script::steps(vec![Step::error(500, "api_error", "boom")]), |c| {
            c.max_retries = 0
        })
        .await;
        assert!(
            matches!(e, ProviderError::Server { status: 500, .. }),
            "{kind:?}: {e:?}"
        );
        assert_eq!(n, 1);

        let faults = Faults {
            error_after_events: Some(5),
            error_type: Some("overloaded_error".into()),
            error_message: Some("Overloaded".into()),
            ..Faults::default()
        };
        let (e, n) = error_for(
            kind,
            Script::steps(vec![Step::text("partial text here").with_faults(faults)]),
            |_| {},
        )
        .await;
        assert!(matches!(e, ProviderError::InStream { .. }), "{kind:?}: {e:?}");
        assert_eq!(n, 1, "{kind:?}: an error after text reached the user is not retried");

        let faults = Faults {
            invalid_json_after_events: Some(2),
            ..Faults::default()
        };
        let (e, _) = error_for(kind, Script::steps(vec![Step::text("abc").with_faults(faults)]), |_| {}).await;
        assert!(
            matches!(&e, ProviderError::Stream { message } if message.contains("not valid JSON")),
            "{kind:?}: {e:?}"
        );
    }
}

#[tokio::test]
async fn an_unreachable_base_url_is_a_network_error() {
    // Bind then drop a listener so the port is closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for kind in KINDS {
        let mut cfg = vigil_core::provider::ProviderConfig::new(kind, format!("http://127.0.0.1:{port}"), "m");
        cfg.max_retries = 1;
        let clock = ManualClock::new(0);
        let (result, events) = stream(&client(cfg, &clock), &hello()).await;
        let e = result.expect_err("closed port").error;
        assert!(matches!(e, ProviderError::Network { .. }), "{kind:?}: {e:?}");
        assert!(e.to_string().contains("Could not reach"));
        assert!(matches!(events[0], StreamEvent::Retrying { attempt: 1, .. }));
        assert_eq!(clock.sleeps(), vec![Duration::from_secs(1)]);
    }
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_stated_delay() {
    for kind in KINDS {
        let script = Script::steps(vec![
            Step::error(429, "rate_limit_error", "slow down").with_retry_after("7"),
            Step::error(529, "overloaded_error", "Overloaded"),
            Step::text("finally"),
        ]);
        let fake = FakeLlm::start(script).await.unwrap();
        let clock = ManualClock::new(0);
        let (result, events) = stream(&client(config(&fake, kind), &clock), &hello()).await;
        assert_eq!(result.expect("retried to success").text(), "finally", "{kind:?}");
        assert_eq!(fake.requests().len(), 3);
        // Retry-After: 7 is honoured exactly; the 529 without one backs off 2 s (attempt 2).
        assert_eq!(
            clock.sleeps(),
            vec![Duration::from_secs(7), Duration::from_secs(2)],
            "{kind:?}"
        );
        let retries: Vec<u32> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::Retrying { attempt, .. } => Some(*attempt),
                _ => None,
            })
            .collect();
        assert_eq!(retries, vec![1, 2]);
    }
}

#[tokio::test]
async fn retries_stop_after_the_limit() {
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(Step::error(503, "api_error", "down")))
        .await
        .unwrap();
    let clock = ManualClock::new(0);
    let mut cfg = config(&fake, ProviderKind::Anthropic);
    cfg.max_retries = 3;
    let (result, _) = stream(&client(cfg, &clock), &hello()).await;
    assert!(matches!(
        result.unwrap_err().error,
        ProviderError::Server { status: 503, .. }
    ));
    assert_eq!(fake.requests().len(), 4);
    assert_eq!(
        clock.sleeps(),
        vec![Duration::from_secs(1), Duration::from_secs(2), Duration::from_secs(4)]
    );
}

#[tokio::test]
async fn a_drop_mid_stream_is_an_error_that_keeps_the_partial_text() {
    for kind in KINDS {
        let step = Step::text("one two three four five six seven eight")
            .with_chunk_chars(4)
            .with_faults(Faults {
                drop_after_events: Some(6),
                ..Faults::default()
            });
        let fake = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
        let (result, events) = stream(&client(config(&fake, kind), &ManualClock::new(0)), &hello()).await;
        let failure = result.expect_err("dropped");
        assert!(
            matches!(failure.error, ProviderError::Stream { .. }),
            "{kind:?}: {:?}",
            failure.error
        );
        let kept = failure.partial.text();
        assert!(!kept.is_empty(), "{kind:?}: partial text kept");
        assert_eq!(kept, text_of(&events), "{kind:?}: kept exactly what was shown");
        assert!("one two three four five six seven eight".starts_with(&kept));
        assert_eq!(failure.partial.stop_reason, StopReason::Error);
        assert_eq!(fake.requests().len(), 1, "no retry once text was shown");
    }
}

#[tokio::test]
async fn a_stream_without_its_terminator_is_handled() {
    // Anthropic: no message_stop means the reply may be incomplete → error, text kept.
    let step = Step::text("cut").with_faults(Faults {
        no_terminator: true,
        ..Faults::default()
    });
    let fake = FakeLlm::start(Script::steps(vec![step.clone()])).await.unwrap();
    let (result, _) = stream(
        &client(config(&fake, ProviderKind::Anthropic), &ManualClock::new(0)),
        &hello(),
    )
    .await;
    let failure = result.expect_err("no message_stop");
    assert!(matches!(failure.error, ProviderError::Stream { .. }));
    assert_eq!(failure.partial.text(), "cut");
    // OpenAI-compatible: a finish_reason already proves the reply whole; some servers omit [DONE].
    let fake = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
    let (result, _) = stream(
        &client(config(&fake, ProviderKind::Openai), &ManualClock::new(0)),
        &hello(),
    )
    .await;
    assert_eq!(result.expect("finish_reason seen").text(), "cut");
}

#[tokio::test]
async fn a_silent_stream_times_out_and_is_retried_only_before_text() {
    for kind in KINDS {
        // Silent mid-text: an error, the text so far kept, no retry (it would repeat the text).
        let step = Step::text("abcdefghijklmnop").with_faults(Faults {
            stall_after_events: Some(5),
            stall_ms: Some(30_000),
            ..Faults::default()
        });
        let fake = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
        let mut cfg = config(&fake, kind);
        cfg.idle_timeout = Duration::from_millis(300);
        let (result, events) = stream(&client(cfg.clone(), &ManualClock::new(0)), &hello()).await;
        let failure = result.expect_err("stalled");
        assert!(
            matches!(failure.error, ProviderError::Timeout { .. }),
            "{kind:?}: {:?}",
            failure.error
        );
        assert!(!text_of(&events).is_empty());
        assert_eq!(failure.partial.text(), text_of(&events));
        assert_eq!(fake.requests().len(), 1);

        // Silent before any text: retried, and the retry's answer is used.
        let step = Step::text("late").with_faults(Faults {
            stall_after_events: Some(1),
            stall_ms: Some(30_000),
            ..Faults::default()
        });
        let fake = FakeLlm::start(Script::steps(vec![step, Step::text("retried")]))
            .await
            .unwrap();
        cfg.base_url = base_url(&fake, kind);
        let (result, _) = stream(&client(cfg, &ManualClock::new(0)), &hello()).await;
        assert_eq!(result.expect("retried").text(), "retried", "{kind:?}");
        assert_eq!(fake.requests().len(), 2);
    }
}

#[tokio::test]
async fn cancel_stops_the_stream_and_keeps_what_arrived() {
    for kind in KINDS {
        let step = Step::text("a long reply that keeps coming ".repeat(20))
            .with_chunk_chars(5)
            .with_delay_ms(20);
        let fake = FakeLlm::start(Script::steps(vec![step])).await.unwrap();
        let client = client(config(&fake, kind), &ManualClock::new(0));
        let cancel = CancellationToken::new();
        let mut seen = String::new();
        let started = std::time::Instant::now();
        let result = client
            .stream(&hello(), &cancel, &mut |e| {
                if let StreamEvent::TextDelta(t) = e {
                    seen.push_str(&t);
                    if seen.len() >= 10 {
                        cancel.cancel();
                    }
                }
            })
            .await;
        let failure = result.expect_err("cancelled");
        assert_eq!(failure.error, ProviderError::Cancelled, "{kind:?}");
        assert_eq!(failure.partial.stop_reason, StopReason::Cancelled);
        assert_eq!(failure.partial.text(), seen);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "stopped at once, not after the whole reply"
        );
    }
}

#[tokio::test]
async fn test_connection_gives_a_verdict() {
    for kind in KINDS {
        let fake = FakeLlm::start(Script::steps(vec![]).with_api_key("sk-test"))
            .await
            .unwrap();
        let ok = client(config(&fake, kind), &ManualClock::new(0))
            .test_connection(&CancellationToken::new())
            .await;
        assert!(ok.expect("connects").starts_with("Connected"));
        let mut cfg = config(&fake, kind);
        cfg.api_key = Some("nope".into());
        let bad = client(cfg, &ManualClock::new(0))
            .test_connection(&CancellationToken::new())
            .await;
        assert!(matches!(bad, Err(ProviderError::Auth { .. })), "{kind:?}");
    }
}

/// The decoder the fuzz targets drive is the live one: a body cut at every byte, even
/// inside a UTF-8 character, decodes to the same reply as the whole body.
#[test]
fn a_stream_cut_at_every_byte_decodes_like_the_whole_body() {
    use vigil_core::provider::assemble_sse;
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n\
        event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
        event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Grüße \"}}\n\n\
        : a comment\n\n\
        event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"dir\"}}\n\n\
        event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\n\
        event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    let whole = assemble_sse(
        ProviderKind::Anthropic,
        vec![body.as_bytes().to_vec().into()],
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(whole.text(), "Grüße dir");
    assert_eq!(whole.stop_reason, vigil_core::protocol::StopReason::EndTurn);
    let bytes: Vec<bytes::Bytes> = body.bytes().map(|b| vec![b].into()).collect();
    let mut streamed = String::new();
    let cut = assemble_sse(ProviderKind::Anthropic, bytes, &mut |e| {
        if let StreamEvent::TextDelta(t) = e {
            streamed.push_str(&t)
        }
    })
    .unwrap();
    assert_eq!(cut, whole);
    assert_eq!(streamed, "Grüße dir");
    // Without its terminator the reply is incomplete, and says so.
    let cut_short = &body[..body.find("event: message_stop").unwrap()];
    let err = assemble_sse(
        ProviderKind::Anthropic,
        vec![cut_short.as_bytes().to_vec().into()],
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("closed before the reply was complete"),
        "{err}"
    );
}
