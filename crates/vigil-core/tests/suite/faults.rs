//! Provider faults through a whole conversation turn, both protocols: each becomes a retry
//! or a clear error, the session stays valid on disk (the next turn works), and text that
//! was shown before a failure is kept.

use std::time::Duration;

use vigil_core::clock::ManualClock;
use vigil_core::protocol::{ErrorKind, Event, Message, Op, ProviderKind, Role, StopReason};
use vigil_fake_llm::{FakeLlm, Faults, Script, Step};

use super::support::*;

/// What the user must see after the fault.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Retried out of sight: one failed request, a `retrying` event, then the reply whole.
    Recovers,
    /// Not a fault for this protocol: the first request's reply is whole, nothing retried.
    Whole,
    /// A clear error of this kind whose message holds these words; with `partial`, text had
    /// streamed before the fault and stays in the conversation.
    Fails {
        kind: ErrorKind,
        words: &'static str,
        partial: bool,
    },
}

const fn fails(kind: ErrorKind, words: &'static str, partial: bool) -> Expect {
    Expect::Fails { kind, words, partial }
}

const REPLY: &str = "one two three four five six seven eight nine ten";

fn streamed(faults: Faults) -> Step {
    Step::text(REPLY).with_chunk_chars(5).with_faults(faults)
}

fn cases() -> Vec<(&'static str, Step, Expect)> {
    vec![
        (
            "401",
            Step::error(401, "authentication_error", "invalid x-api-key"),
            fails(
                ErrorKind::Auth,
                "The API key was rejected (HTTP 401): invalid x-api-key",
                false,
            ),
        ),
        (
            "429 with Retry-After",
            Step::error(429, "rate_limit_error", "slow down").with_retry_after("3"),
            Expect::Recovers,
        ),
        (
            "429 without Retry-After",
            Step::error(429, "rate_limit_error", "slow down"),
            Expect::Recovers,
        ),
        ("500", Step::error(500, "api_error", "internal"), Expect::Recovers),
        (
            "529",
            Step::error(529, "overloaded_error", "Overloaded"),
            Expect::Recovers,
        ),
        (
            "stall past the idle timeout before text",
            streamed(Faults {
                stall_after_events: Some(1),
                ..Faults::default()
            }),
            Expect::Recovers,
        ),
        (
            "stall past the idle timeout after text",
            streamed(Faults {
                stall_after_events: Some(6),
                ..Faults::default()
            }),
            fails(ErrorKind::Timeout, "did not answer within", true),
        ),
        (
            "drop mid-stream",
            streamed(Faults {
                drop_after_events: Some(6),
                ..Faults::default()
            }),
            fails(ErrorKind::Stream, "The reply stream broke off", true),
        ),
        (
            "invalid JSON in an event",
            streamed(Faults {
                invalid_json_after_events: Some(6),
                ..Faults::default()
            }),
            fails(ErrorKind::Stream, "The reply stream broke off", true),
        ),
        (
            "an error event after HTTP 200",
            streamed(Faults {
                error_after_events: Some(6),
                ..Faults::default()
            }),
            fails(ErrorKind::Stream, "The provider reported an error mid-reply", true),
        ),
        (
            // OpenAI-compatible servers that skip `[DONE]` after a finish_reason are whole;
            // an Anthropic reply without message_stop may be cut (see `expectation`).
            "a stream that ends without its terminator",
            streamed(Faults {
                no_terminator: true,
                ..Faults::default()
            }),
            fails(ErrorKind::Stream, "The reply stream broke off", true),
        ),
    ]
}

fn expectation(kind: ProviderKind, name: &str, expect: Expect) -> Expect {
    match (kind, name) {
        (ProviderKind::Openai, "a stream that ends without its terminator") => Expect::Whole,
        _ => expect,
    }
}

fn text_of_message(m: &Message) -> String {
    m.text()
}

#[tokio::test]
async fn each_provider_fault_is_a_retry_or_a_clear_error_and_the_session_stays_valid() {
    for kind in KINDS {
        for (name, fault, expect) in cases() {
            let expect = expectation(kind, name, expect);
            let what = format!("{kind:?}, {name}");
            let dir = tempfile::tempdir().unwrap();
            let fake = FakeLlm::start(Script::steps(vec![fault, Step::text(REPLY)]))
                .await
                .unwrap();
            let (rt, mut rx) = runtime(dir.path(), None);
            let clock = ManualClock::new(1_700_000_000_000);
            let mut cfg = config(&fake, kind);
            cfg.idle_timeout = Duration::from_millis(300);
            rt.set_client(Some(client(cfg, &clock)));

            rt.submit(Op::UserMessage {
                text: "question".into(),
                session_id: None,
                attachments: vec![],
            });
            let events = until_finished(&mut rx).await;
            let shown: String = events
                .iter()
                .filter_map(|e| match e {
                    Event::TextDelta { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let Some(Event::TurnFinished { stop_reason, .. }) = events.last() else {
                unreachable!()
            };
            let errors: Vec<(ErrorKind, &String)> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Error { kind, message } => Some((*kind, message)),
                    _ => None,
                })
                .collect();
            let retries = events.iter().filter(|e| matches!(e, Event::Retrying { .. })).count();
            let requests = fake.request_count();
            let saved = rt.history(None).unwrap();
            assert!(saved.warnings.is_empty(), "{what}: {:?}", saved.warnings);
            assert_eq!(saved.messages[0].role, Role::User, "{what}: the question is kept");
            match expect {
                Expect::Recovers | Expect::Whole => {
                    let (tries, retried) = if expect == Expect::Recovers { (2, 1) } else { (1, 0) };
                    assert_eq!(requests, tries, "{what}: requests sent");
                    assert_eq!(retries, retried, "{what}: retry events: {events:?}");
                    assert_eq!(*stop_reason, StopReason::EndTurn, "{what}: {events:?}");
                    assert!(errors.is_empty(), "{what}: {errors:?}");
                    assert_eq!(shown, REPLY, "{what}: the whole reply, once");
                    assert_eq!(text_of_message(saved.messages.last().unwrap()), REPLY, "{what}");
                }
                Expect::Fails { kind, words, partial } => {
                    assert_eq!(requests, 1, "{what}: not retried");
                    assert_eq!(retries, 0, "{what}: {events:?}");
                    assert_eq!(*stop_reason, StopReason::Error, "{what}: {events:?}");
                    assert_eq!(errors.len(), 1, "{what}: one clear error: {errors:?}");
                    assert_eq!(errors[0].0, kind, "{what}: {errors:?}");
                    assert!(errors[0].1.contains(words), "{what}: {errors:?}");
                    let last = saved.messages.last().unwrap();
                    if partial {
                        // Six events of five characters each had streamed: some words at least.
                        assert!(
                            shown.len() >= 10 && REPLY.starts_with(&shown),
                            "{what}: shown {shown:?}"
                        );
                        assert_eq!(last.role, Role::Assistant, "{what}");
                        assert_eq!(text_of_message(last), shown, "{what}: what was shown is kept");
                    } else {
                        assert_eq!(shown, "", "{what}");
                        assert_eq!(saved.messages.len(), 1, "{what}: only the question");
                    }
                }
            }
            // The session is still good: the next turn works and sees the conversation.
            rt.submit(Op::UserMessage {
                text: "again".into(),
                session_id: None,
                attachments: vec![],
            });
            let events = until_finished(&mut rx).await;
            assert!(
                matches!(
                    events.last(),
                    Some(Event::TurnFinished {
                        stop_reason: StopReason::EndTurn,
                        ..
                    })
                ),
                "{what}: the next turn: {events:?}"
            );
            let reloaded = rt.history(None).unwrap();
            assert!(reloaded.warnings.is_empty(), "{what}");
            assert!(reloaded.messages.len() > saved.messages.len(), "{what}");
        }
    }
}
