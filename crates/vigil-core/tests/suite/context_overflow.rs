//! A request the model's context window cannot hold, against a fake that counts every request
//! and refuses the ones over its window as the real services do (issue 31 item 4): the turn
//! recovers as long as it can make the request smaller — older messages summarised, then the
//! largest tool results of the round that overflowed cut — and fails with a clear error,
//! without resending the same request, when nothing more can be cut.

use serde_json::json;
use vigil_core::agent::AgentConfig;
use vigil_core::protocol::{Event, ProviderKind, StopReason};
use vigil_fake_llm::{FakeLlm, RecordedRequest, Script, Step, ToolCall};

use super::support::*;

/// The window of the fake's model and of Vigil's setting, in tokens: room for the system
/// prompt, the tools and a conversation, but not for three reads of 30 % of it each.
const WINDOW: u64 = 16_000;

fn read(id: &str, path: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: json!({ "path": path }),
    }
}

/// A file of `chars` characters whose lines say which file and line they are.
fn big_file(name: &str, chars: usize) -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < chars {
        text.push_str(&format!("{name} line {n}: some words of a long file\n"));
        n += 1;
    }
    text
}

/// The tool results a request carries, as (call id, content), in either protocol.
fn results(req: &RecordedRequest) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in req.body["messages"].as_array().unwrap() {
        if m["role"] == "tool" {
            out.push((
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            ));
        }
        for b in m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_result")
        {
            out.push((
                b["tool_use_id"].as_str().unwrap().to_string(),
                b["content"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

/// Words of the summariser's system prompt: its requests are answered apart from the turn's.
const SUMMARISER: &str = "compress conversations";

fn is_summary_request(req: &RecordedRequest) -> bool {
    req.body.to_string().contains(SUMMARISER)
}

/// Rounds of three parallel reads in one turn; more than the recoveries one request may
/// have (4), so the count must start again with each request that went through.
const ROUNDS: usize = 5;

/// Three parallel reads whose results together overflow the window, round after round in one
/// turn: the turn recovers each time and finishes.
#[tokio::test]
async fn parallel_reads_that_overflow_the_window_are_cut_and_the_turn_finishes() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let ids = |round: usize| [0, 1, 2].map(|i| format!("r{round}_{i}"));
        let script = Script::steps(
            (0..ROUNDS)
                .map(|round| Step::tool_calls(ids(round).iter().map(|id| read(id, &format!("{id}.txt"))).collect()))
                .collect(),
        )
        .with_side_reply(SUMMARISER, Step::text("The earlier rounds read files."))
        .with_fallback(Step::text("All read."))
        .with_context_window(WINDOW);
        let fake = FakeLlm::start(script).await.unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        let config = AgentConfig {
            context_window: WINDOW,
            ..AgentConfig::default()
        };
        let per_result = config.max_result_chars();
        rt.set_agent_config(config);
        for id in (0..ROUNDS).flat_map(ids) {
            // Longer than a result may be: each arrives at 30 % of the window.
            std::fs::write(rt.workspace().join(format!("{id}.txt")), big_file(&id, per_result * 2)).unwrap();
        }
        rt.submit(user("read all the files"));
        let events = until_finished(&mut rx).await;
        let errors: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::Error { .. })).collect();
        assert!(errors.is_empty(), "{kind:?}: {errors:?}");
        assert!(
            matches!(
                events.last(),
                Some(Event::TurnFinished {
                    stop_reason: StopReason::EndTurn,
                    ..
                })
            ),
            "{kind:?}: {:?}",
            events.last()
        );
        assert_eq!(rt.messages(None).last().unwrap().text(), "All read.");

        let turn: Vec<RecordedRequest> = fake.requests().into_iter().filter(|r| !is_summary_request(r)).collect();
        // Each round's first request overflowed (the fake refused it) and was sent again
        // smaller, never the same.
        eprintln!(
            "DEBUG {kind:?}: {:?}",
            fake.requests()
                .iter()
                .map(|r| (is_summary_request(r), r.body.to_string().len() / 4))
                .collect::<Vec<_>>()
        );
        assert!(turn.len() > 2 * ROUNDS, "{kind:?}: {} requests", turn.len());
        for pair in turn.windows(2) {
            assert_ne!(pair[0].body, pair[1].body, "{kind:?}: a request was resent unchanged");
        }
        // The request that was answered carries every result of the last round, each cut
        // in the middle with its head and tail kept.
        let last = results(turn.last().unwrap());
        for id in ids(ROUNDS - 1) {
            let (_, content) = last
                .iter()
                .find(|(i, _)| *i == id)
                .unwrap_or_else(|| panic!("{kind:?}: no result for {id}"));
            assert!(content.contains(&format!("{id} line 0:")), "{kind:?}: the head of {id}");
            assert!(
                content.contains("characters cut from the middle"),
                "{kind:?}: {id} was not cut"
            );
            assert!(content.len() < per_result, "{kind:?}: {id} is {} chars", content.len());
        }
        // The transcript (and the cards) keep what the tools returned.
        let saved = rt.messages(None);
        let whole = saved
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|b| match b {
                vigil_core::protocol::ContentBlock::ToolResult { content, .. } => Some(content.len()),
                _ => None,
            })
            .min()
            .unwrap();
        assert!(whole >= per_result, "{kind:?}: a saved result was cut to {whole}");
        rt.shutdown().await;
    }
}

/// A request with nothing to cut (one message longer than the window): one request, and an
/// error that says why, instead of the same request sent again.
#[tokio::test]
async fn an_overflow_with_nothing_to_cut_fails_at_once_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![Step::text("never")])
        .with_side_reply(SUMMARISER, Step::text("A summary."))
        .with_context_window(WINDOW);
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.set_agent_config(AgentConfig {
        context_window: WINDOW,
        ..AgentConfig::default()
    });
    rt.submit(user(&"a very long paste ".repeat(WINDOW as usize)));
    let events = until_finished(&mut rx).await;
    let errors: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("too long for the model's context window") && errors[0].contains("nothing more can be cut"),
        "{}",
        errors[0]
    );
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            stop_reason: StopReason::Error,
            ..
        })
    ));
    assert_eq!(fake.request_count(), 1, "the refused request was not sent again");
    rt.shutdown().await;
}
