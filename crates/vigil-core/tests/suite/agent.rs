//! The tool loop against the fake provider, asserting on the requests it logged.

use serde_json::{json, Value};
use vigil_core::agent::AgentConfig;
use vigil_core::protocol::{Event, Op, ProviderKind, StopReason};
use vigil_fake_llm::{FakeLlm, RecordedRequest, Script, Step, ToolCall};

use super::support::*;

fn user(text: &str) -> Op {
    Op::UserMessage {
        text: text.into(),
        session_id: None,
        attachments: vec![],
    }
}

/// Every tool result in a request, as (tool_use_id, content), for either protocol.
fn tool_results(req: &RecordedRequest) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for m in req.body["messages"].as_array().unwrap() {
        if m["role"] == "tool" {
            out.push((
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            ));
        }
        if let Some(blocks) = m["content"].as_array() {
            for b in blocks.iter().filter(|b| b["type"] == "tool_result") {
                out.push((
                    b["tool_use_id"].as_str().unwrap().to_string(),
                    b["content"].as_str().unwrap().to_string(),
                ));
            }
        }
    }
    out
}

/// Every tool call id in a request, in order, for either protocol.
fn tool_use_ids(req: &RecordedRequest) -> Vec<String> {
    let mut out = Vec::new();
    for m in req.body["messages"].as_array().unwrap() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            out.push(c["id"].as_str().unwrap().to_string());
        }
        for b in m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
        {
            out.push(b["id"].as_str().unwrap().to_string());
        }
    }
    out
}

fn all_text(req: &RecordedRequest) -> String {
    req.body["messages"].to_string()
}

fn system_of(req: &RecordedRequest) -> Value {
    if req.path.ends_with("/messages") {
        req.body["system"].clone()
    } else {
        req.body["messages"][0].clone()
    }
}

#[tokio::test]
async fn a_multi_round_tool_loop_reads_and_edits_files() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let script = Script::steps(vec![
            Step::tool_call("call_r", "read", json!({"path": "notes.txt"})),
            Step::tool_call(
                "call_e",
                "edit",
                json!({"path": "notes.txt", "old_text": "tea", "new_text": "coffee"}),
            ),
            Step::text("Changed tea to coffee."),
        ]);
        let fake = FakeLlm::start(script).await.unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        std::fs::write(rt.workspace().join("notes.txt"), "likes tea\nand cake\n").unwrap();
        rt.submit(user("switch my drink"));
        let events = until_finished(&mut rx).await;
        assert!(
            matches!(
                events.last(),
                Some(Event::TurnFinished {
                    stop_reason: StopReason::EndTurn,
                    ..
                })
            ),
            "{kind:?}: {events:?}"
        );
        assert_eq!(
            std::fs::read_to_string(rt.workspace().join("notes.txt")).unwrap(),
            "likes coffee\nand cake\n"
        );
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 3, "{kind:?}");
        // Tools are offered in both protocols' shapes.
        let tools = reqs[0].body["tools"].to_string();
        assert!(
            tools.contains("\"read\"") && tools.contains("\"edit\"") && tools.contains("\"write\""),
            "{tools}"
        );
        let r1 = tool_results(&reqs[1]);
        assert_eq!(r1.len(), 1);
        assert_eq!(r1[0].0, "call_r");
        assert!(r1[0].1.contains("likes tea"), "{kind:?}: {}", r1[0].1);
        let r2 = tool_results(&reqs[2]);
        assert_eq!(r2.last().unwrap().0, "call_e");
        assert!(
            r2.last().unwrap().1.contains("-likes tea") && r2.last().unwrap().1.contains("+likes coffee"),
            "a diff: {}",
            r2[1].1
        );
        let started: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallStarted { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(started, ["read", "edit"]);
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::ToolCallFinished { call_id, is_error: false, .. } if call_id == "call_e")));
        rt.shutdown().await;
    }
}

#[tokio::test]
async fn parallel_tool_calls_are_all_answered_with_matching_ids() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let calls = (1..=3)
            .map(|i| ToolCall {
                id: format!("call_{i}"),
                name: "write".into(),
                arguments: json!({"path": format!("f{i}.txt"), "content": format!("n{i}")}),
            })
            .collect();
        let fake = FakeLlm::start(Script::steps(vec![Step::tool_calls(calls), Step::text("wrote three")]))
            .await
            .unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        rt.submit(user("write three files"));
        until_finished(&mut rx).await;
        let ids: Vec<String> = tool_results(&fake.requests()[1])
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids, ["call_1", "call_2", "call_3"], "{kind:?}");
        assert_eq!(tool_use_ids(&fake.requests()[1]), ["call_1", "call_2", "call_3"]);
        for i in 1..=3 {
            assert_eq!(
                std::fs::read_to_string(rt.workspace().join(format!("f{i}.txt"))).unwrap(),
                format!("n{i}")
            );
        }
    }
}

#[tokio::test]
async fn max_rounds_ends_a_runaway_turn_with_its_reason() {
    let dir = tempfile::tempdir().unwrap();
    let forever = Step::tool_call("c", "read", json!({"path": "missing-but-varied.txt"}));
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(forever))
        .await
        .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.set_agent_config(AgentConfig {
        max_tool_rounds: 3,
        max_repeated_failures: 100,
        ..AgentConfig::default()
    });
    rt.submit(user("loop"));
    let events = until_finished(&mut rx).await;
    match events.last() {
        Some(Event::TurnFinished {
            stop_reason: StopReason::Policy,
            detail: Some(d),
            ..
        }) => assert!(d.contains("3 rounds"), "{d}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(fake.requests().len(), 3, "at most max_tool_rounds requests in one turn");
    // The session is valid for the next turn: every call has its result, the last
    // response's one saying it was not run.
    fake.set_script(Script::steps(vec![Step::text("ok")]));
    rt.submit(user("go on"));
    until_finished(&mut rx).await;
    let next = &fake.requests()[3];
    assert_eq!(tool_use_ids(next).len(), 3);
    assert_eq!(tool_use_ids(next).len(), tool_results(next).len());
    assert_eq!(
        tool_results(next).last().unwrap().1,
        "not run: the turn reached its round limit"
    );
}

#[tokio::test]
async fn a_command_in_the_last_allowed_response_does_not_run() {
    let dir = outside_tmp();
    let marker = dir.path().join("workspace/late-marker");
    let fake = FakeLlm::start(
        Script::steps(vec![
            Step::tool_call("r", "read", json!({"path": "."})),
            Step::tool_call(
                "late",
                "exec",
                json!({"command": format!("touch {}", marker.display())}),
            ),
        ])
        .with_fallback(Step::text("done")),
    )
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals()
        .set_policy(vigil_core::protocol::ApprovalPolicy::FullAuto);
    assert!(rt.start_background(), "exec is offered once background work runs");
    rt.set_agent_config(AgentConfig {
        max_tool_rounds: 2,
        ..AgentConfig::default()
    });
    rt.submit(user("look, then touch"));
    let events = until_finished(&mut rx).await;
    assert!(
        !marker.exists(),
        "the command ran although no request would carry its result"
    );
    assert_eq!(fake.requests().len(), 2, "{events:?}");
    let late: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                call_id,
                content,
                is_error,
                ..
            } if call_id == "late" => Some((content.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(late, [("not run: the turn reached its round limit", true)]);
    assert!(
        matches!(
            events.last(),
            Some(Event::TurnFinished {
                stop_reason: StopReason::Policy,
                ..
            })
        ),
        "{events:?}"
    );
    rt.shutdown().await;
}

#[tokio::test]
async fn the_same_failing_call_repeated_ends_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let failing = Step::tool_call("c", "read", json!({"path": "nope.txt"}));
    let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(failing))
        .await
        .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Openai)));
    rt.submit(user("read it"));
    let events = until_finished(&mut rx).await;
    match events.last() {
        Some(Event::TurnFinished {
            stop_reason: StopReason::Policy,
            detail: Some(d),
            ..
        }) => assert!(d.contains("`read` failed 3 times"), "{d}"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn long_tool_results_are_cut_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call("c", "read", json!({"path": "big.txt"})),
        Step::text("ok"),
    ]))
    .await
    .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.set_agent_config(AgentConfig {
        context_window: 4_000,
        ..AgentConfig::default()
    });
    let big: String = (0..1500).map(|i| format!("line {i} of a long file\n")).collect();
    std::fs::write(rt.workspace().join("big.txt"), &big).unwrap();
    rt.submit(user("read big"));
    until_finished(&mut rx).await;
    let result = &tool_results(&fake.requests()[1])[0].1;
    assert!(result.contains("characters cut"), "{}", &result[..200]);
    assert!(
        result.chars().count()
            <= AgentConfig {
                context_window: 4_000,
                ..AgentConfig::default()
            }
            .max_result_chars()
                + 200
    );
    assert!(result.contains("line 0 of"), "the head is kept");
}

#[tokio::test]
async fn a_message_sent_while_working_reaches_the_next_step_as_an_interrupt() {
    for kind in KINDS {
        let dir = tempfile::tempdir().unwrap();
        let script = Script::steps(vec![
            Step::tool_call("c1", "write", json!({"path": "a.txt", "content": "a"})),
            Step::text("noted"),
        ]);
        let fake = FakeLlm::start(script).await.unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        rt.submit(user("start work"));
        rt.submit(user("also use blue")); // the lane is busy: queued, not a second turn
        let events = until_finished(&mut rx).await;
        assert!(events
            .iter()
            .any(|e| matches!(e, Event::MessageQueued { text } if text == "also use blue")));
        assert!(events.iter().any(|e| matches!(e, Event::QueueConsumed { count: 1 })));
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 2, "{kind:?}: one turn, two steps");
        assert!(!all_text(&reqs[0]).contains("also use blue"));
        assert!(
            all_text(&reqs[1]).contains("[INTERRUPT] New message from user: also use blue"),
            "{kind:?}"
        );
    }
}

#[tokio::test]
async fn the_system_prompt_is_byte_identical_across_turns_while_time_moves() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    std::fs::write(rt.workspace().join("USER.md"), "The user is called Ana.").unwrap();
    rt.submit(user("one"));
    until_finished(&mut rx).await;
    rt.submit(user("two"));
    until_finished(&mut rx).await;
    let reqs = fake.requests();
    assert_eq!(system_of(&reqs[0]), system_of(&reqs[1]));
    assert!(system_of(&reqs[0]).to_string().contains("The user is called Ana."));
    assert!(
        !system_of(&reqs[0]).to_string().contains("Current time"),
        "volatile context stays out of the system prompt"
    );
    assert!(all_text(&reqs[1]).contains("Current time"));
    // A change to the workspace files does change it, in the next turn.
    std::fs::write(rt.workspace().join("USER.md"), "The user is called Bo.").unwrap();
    rt.submit(user("three"));
    until_finished(&mut rx).await;
    assert!(system_of(&fake.requests()[2]).to_string().contains("Bo."));
}

#[tokio::test]
async fn invalid_tool_arguments_get_an_error_result_the_model_can_correct() {
    let dir = tempfile::tempdir().unwrap();
    let bad = Step::tool_call("c", "write", Value::String("{\"path\": ".into()));
    let fake = FakeLlm::start(Script::steps(vec![bad, Step::text("sorry")]))
        .await
        .unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Openai)));
    rt.submit(user("write"));
    let events = until_finished(&mut rx).await;
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
    let (id, content) = &tool_results(&fake.requests()[1])[0];
    assert_eq!(id, "c");
    assert!(content.contains("not a valid JSON object"), "{content}");
}

#[tokio::test]
async fn compaction_summarises_old_turns_without_splitting_tool_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.set_agent_config(AgentConfig {
        context_window: 1_500,
        ..AgentConfig::default()
    });
    let filler = "word ".repeat(150);
    let mut compacted = false;
    for i in 0..12 {
        // Every other turn uses a tool, so the history holds call/result pairs to protect.
        let step = if i % 2 == 0 {
            Step::tool_call(
                format!("call_{i}"),
                "write",
                json!({"path": format!("t{i}.txt"), "content": filler}),
            )
        } else {
            Step::text(format!("answer {i} {filler}"))
        };
        let follow = Step::text(format!("done {i}"));
        fake.set_script(
            Script::steps(if i % 2 == 0 { vec![step, follow] } else { vec![step] })
                .with_fallback(Step::text("A summary of what happened.")),
        );
        rt.submit(user(&format!("turn {i} {filler}")));
        let events = until_finished(&mut rx).await;
        compacted |= events.iter().any(|e| matches!(e, Event::Compacted { .. }));
    }
    assert!(compacted, "a 1 500-token window must compact");
    let reqs = fake.requests();
    let summarise = reqs
        .iter()
        .filter(|r| r.body["system"].to_string().contains("compress conversations"))
        .count();
    assert!(summarise >= 1);
    for req in reqs
        .iter()
        .filter(|r| !r.body["system"].to_string().contains("compress conversations"))
    {
        let uses = tool_use_ids(req);
        let results: Vec<String> = tool_results(req).into_iter().map(|(id, _)| id).collect();
        assert_eq!(uses, results, "every call has exactly its result, in order");
    }
    let last = reqs.last().unwrap();
    assert!(all_text(last).contains("[Summary of the earlier conversation]"));
}

#[tokio::test]
async fn a_context_overflow_compacts_and_retries_once() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    for i in 0..3 {
        rt.submit(user(&format!("earlier {i}")));
        until_finished(&mut rx).await;
    }
    fake.set_script(Script::steps(vec![
        Step::error(
            400,
            "invalid_request_error",
            "prompt is too long: 250000 tokens > 200000 maximum",
        ),
        Step::text("The summary."),
        Step::text("answered after compaction"),
    ]));
    rt.submit(user("now"));
    let events = until_finished(&mut rx).await;
    assert!(
        events.iter().any(|e| matches!(e, Event::Compacted { .. })),
        "{events:?}"
    );
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            stop_reason: StopReason::EndTurn,
            ..
        })
    ));
    assert_eq!(rt.messages(None).last().unwrap().text(), "answered after compaction");
}
