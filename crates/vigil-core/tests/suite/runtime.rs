//! Turns end to end through the runtime: events out, transcript on disk.

use serde_json::json;
use vigil_core::protocol::{ErrorKind, Event, Op, ProviderKind, Role, StopReason};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::support::*;

fn kinds(events: &[Event]) -> Vec<&'static str> {
    events
        .iter()
        .map(|e| match e {
            Event::TurnStarted { .. } => "turn_started",
            Event::TextDelta { .. } => "text_delta",
            Event::ReasoningDelta { .. } => "reasoning_delta",
            Event::Retrying { .. } => "retrying",
            Event::TurnFinished { .. } => "turn_finished",
            Event::Error { .. } => "error",
            Event::Notification { .. } => "notification",
            Event::MessageAppended { .. } => "message_appended",
            Event::SessionsChanged { .. } => "sessions_changed",
            _ => "other",
        })
        .collect()
}

fn user(text: &str) -> Op {
    Op::UserMessage {
        text: text.into(),
        session_id: None,
        attachments: vec![],
    }
}

#[tokio::test]
async fn a_turn_streams_and_both_messages_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    for kind in KINDS {
        let fake = FakeLlm::start(Script::steps(vec![Step::text("Hello **there**")]).with_fallback(Step::echo()))
            .await
            .unwrap();
        let (rt, mut rx) = runtime(dir.path(), Some((&fake, kind)));
        rt.submit(user("hi"));
        let events = until_finished(&mut rx).await;
        let mut k = kinds(&events);
        k.dedup();
        // The first message of the session names it: the sidebar hears about that first.
        k.retain(|k| *k != "sessions_changed");
        assert_eq!(
            k,
            [
                "message_appended",
                "turn_started",
                "text_delta",
                "message_appended",
                "turn_finished"
            ],
            "{kind:?}"
        );
        let streamed: String = events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(streamed, "Hello **there**");
        assert!(matches!(
            events.last(),
            Some(Event::TurnFinished {
                stop_reason: StopReason::EndTurn,
                ..
            })
        ));

        // A second turn carries the history; then a fresh runtime on the same dir sees it all.
        rt.submit(user("again"));
        until_finished(&mut rx).await;
        let sent = &fake.requests()[1].body["messages"];
        let texts: Vec<String> = sent.as_array().unwrap().iter().map(|m| m.to_string()).collect();
        assert!(
            texts.iter().any(|m| m.contains("Hello **there**")),
            "{kind:?}: history sent: {texts:?}"
        );
        rt.shutdown().await;
        drop(rt);
        let (rt2, _rx2) = runtime(dir.path(), None);
        let msgs = rt2.messages(None);
        let tail: Vec<(Role, String)> = msgs.iter().rev().take(4).rev().map(|m| (m.role, m.text())).collect();
        assert_eq!(
            tail,
            vec![
                (Role::User, "hi".to_string()),
                (Role::Assistant, "Hello **there**".to_string()),
                (Role::User, "again".to_string()),
                (Role::Assistant, "echo: again".to_string()),
            ]
        );
    }
}

#[tokio::test]
async fn stop_cancels_the_turn_and_keeps_what_was_said() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Step::text("word ".repeat(200)).with_chunk_chars(5).with_delay_ms(20);
    let fake = FakeLlm::start(Script::steps(vec![slow])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.submit(user("talk a lot"));
    let mut shown = String::new();
    loop {
        let env = rx.recv().await.unwrap();
        if let Event::TextDelta { text } = env.event {
            shown.push_str(&text);
            if shown.len() >= 20 {
                break;
            }
        }
    }
    rt.submit(Op::Interrupt { session_id: None });
    let rest = until_finished(&mut rx).await;
    for e in &rest {
        if let Event::TextDelta { text } = e {
            shown.push_str(text);
        }
    }
    assert!(matches!(
        rest.last(),
        Some(Event::TurnFinished {
            stop_reason: StopReason::Cancelled,
            ..
        })
    ));
    assert!(
        !rest.iter().any(|e| matches!(e, Event::Error { .. })),
        "Stop is not an error"
    );
    let msgs = rt.messages(None);
    assert_eq!(msgs.len(), 2);
    assert_eq!(
        msgs[1].text(),
        shown,
        "the saved partial reply is exactly what was shown"
    );
    assert_eq!(msgs[1].stop_reason, Some(StopReason::Cancelled));
    assert!(shown.len() < 1000);
}

#[tokio::test]
async fn provider_errors_are_reported_and_the_session_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let script = Script::steps(vec![
        Step::error(401, "authentication_error", "invalid x-api-key"),
        Step::text("ok now"),
    ]);
    let fake = FakeLlm::start(script).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Openai)));
    rt.submit(user("first"));
    let events = until_finished(&mut rx).await;
    let err = events.iter().find_map(|e| match e {
        Event::Error { kind, message } => Some((*kind, message.clone())),
        _ => None,
    });
    let (kind, message) = err.expect("an error event");
    assert_eq!(kind, ErrorKind::Auth);
    assert!(message.contains("API key was rejected"), "{message}");
    assert!(matches!(
        events.last(),
        Some(Event::TurnFinished {
            stop_reason: StopReason::Error,
            ..
        })
    ));
    rt.submit(user("second"));
    until_finished(&mut rx).await;
    let msgs: Vec<(Role, String)> = rt.messages(None).iter().map(|m| (m.role, m.text())).collect();
    assert_eq!(
        msgs,
        vec![
            (Role::User, "first".into()),
            (Role::User, "second".into()),
            (Role::Assistant, "ok now".into())
        ]
    );
    // The provider saw both user messages in one valid chain (consecutive user turns are allowed).
    assert_eq!(
        fake.requests()[1].body["messages"].as_array().unwrap().len(),
        3,
        "system + two user messages"
    );
    let _ = json!(null);
}

#[tokio::test]
async fn without_a_provider_the_message_is_kept_and_the_user_told() {
    let dir = tempfile::tempdir().unwrap();
    let (rt, mut rx) = runtime(dir.path(), None);
    rt.submit(user("anyone there?"));
    let events = until_finished(&mut rx).await;
    assert!(events
        .iter()
        .any(|e| matches!(e, Event::Error { kind: ErrorKind::Config, message } if message.contains("Settings"))));
    assert_eq!(rt.messages(None)[0].text(), "anyone there?");
}

#[tokio::test]
async fn conversations_can_be_created_named_renamed_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let ids = |rt: &vigil_core::Runtime| {
        rt.sessions()
            .unwrap()
            .into_iter()
            .map(|s| (s.id, s.title))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&rt), vec![("main".to_string(), "Conversation".to_string())]);

    rt.submit(Op::CreateSession { title: None });
    let created = loop {
        if let Event::SessionsChanged { sessions } = rx.recv().await.unwrap().event {
            break sessions.into_iter().find(|s| s.id != "main").unwrap();
        }
    };
    assert_eq!(created.title, "New conversation");
    // The first message names it; the turn runs in that session, not in main.
    rt.submit(Op::UserMessage {
        text: "Plan the garden\nwith details".into(),
        session_id: Some(created.id.clone()),
        attachments: vec![],
    });
    until_finished(&mut rx).await;
    assert_eq!(
        rt.messages(Some(&created.id)).last().unwrap().text(),
        "echo: Plan the garden\nwith details"
    );
    assert!(rt.messages(None).is_empty());
    assert!(ids(&rt).contains(&(created.id.clone(), "Plan the garden".to_string())));

    rt.submit(Op::RenameSession {
        session_id: created.id.clone(),
        title: "Garden".into(),
    });
    rt.submit(Op::RenameSession {
        session_id: created.id.clone(),
        title: "  ".into(),
    });
    rt.submit(Op::DeleteSession {
        session_id: "main".into(),
    });
    let mut errors = Vec::new();
    while errors.len() < 2 {
        if let Event::Error { message, .. } = rx.recv().await.unwrap().event {
            errors.push(message);
        }
    }
    assert!(errors[0].contains("needs a title"), "{errors:?}");
    assert!(errors[1].contains("cannot be deleted"), "{errors:?}");
    assert!(ids(&rt).contains(&(created.id.clone(), "Garden".to_string())));

    rt.submit(Op::DeleteSession {
        session_id: created.id.clone(),
    });
    loop {
        if let Event::SessionsChanged { sessions } = rx.recv().await.unwrap().event {
            if sessions.iter().all(|s| s.id != created.id) {
                break;
            }
        }
    }
    assert!(!dir.path().join(format!("sessions/{}.jsonl", created.id)).exists());
}

/// A start removes the temp files writes cut off by a crash left behind (here two hours
/// old), and nothing else: not a temp file a live writer may still be using, not the files
/// beside them, not a user's file in the workspace that merely looks like a temp name.
#[tokio::test]
async fn a_start_sweeps_temp_files_left_by_interrupted_writes_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 60 * 60);
    let at = |p: &str| dir.path().join(p);
    let stale = [at("wake/.pending.json.Xy12ab"), at(".vigil-tmp-a1b2c3")];
    let kept = [
        // Old, but not a temp name of either writer.
        (at("wake/pending.json"), old),
        (at("sessions/notes.txt"), old),
        (at(".pending.json.toolongname"), old),
        // Deeper in the workspace than its top level, where only Vigil's prefix is swept.
        (at("workspace/src/.vigil-tmp-user"), old),
        (at("workspace/.main.rs.Ab12Cd"), old),
        // A temp name, but fresh: a write in progress in another process.
        (at(".vigil-tmp-fresh1"), std::time::SystemTime::now()),
        (at("wake/.pending.json.Zz99zz"), std::time::SystemTime::now()),
    ];
    for p in stale.iter().chain(kept.iter().map(|(p, _)| p)) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }
    for p in &stale {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    for (p, t) in &kept {
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(*t)
            .unwrap();
    }
    let (_rt, _rx) = runtime(dir.path(), None);
    for _ in 0..100 {
        if stale.iter().all(|p| !p.exists()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for p in &stale {
        assert!(!p.exists(), "{} is still there", p.display());
    }
    // The sweep is one pass on its own thread: give it a moment past the last removal.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    for (p, _) in &kept {
        let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{} was removed: {e}", p.display()));
        assert_eq!(text, "x", "{} was changed", p.display());
    }
    assert!(dir.path().join("workspace").is_dir(), "the start itself went on");
}

/// The data directory and every folder Vigil makes in it are the user's alone (0700), and a
/// data directory an older version left open (0755) is narrowed when the runtime opens it.
#[cfg(unix)]
#[tokio::test]
async fn the_data_directory_is_the_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let tmp = tempfile::tempdir().unwrap();
    let fresh = tmp.path().join("vigil/data");
    let (rt, _rx) = runtime(&fresh, None);
    for p in [
        tmp.path().join("vigil"),
        fresh.clone(),
        fresh.join("sessions"),
        rt.workspace().to_path_buf(),
    ] {
        assert_eq!(mode(&p), 0o700, "{}", p.display());
    }
    drop(rt);
    let old = tmp.path().join("old");
    std::fs::create_dir(&old).unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (_rt, _rx) = runtime(&old, None);
    assert_eq!(mode(&old), 0o700);
}
