//! An envelope's fields and its flattened payload's share one JSON object: a payload field
//! named like an envelope field (`id`, `ts`, `session_id`, `scope`, `source`, `run_id`)
//! would write that key twice, and a reader keeps only one of them (`JSON.parse` the last,
//! serde refuses the object). Each event that names an id or a session checks it here.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::Deserializer;

use super::*;

/// The keys of a JSON object, in order, duplicates kept.
fn keys(json: &str) -> Vec<String> {
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut keys = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(key);
            }
            Ok(keys)
        }
    }
    serde_json::Deserializer::from_str(json).deserialize_map(Keys).unwrap()
}

fn envelope(event: Event) -> EventEnvelope {
    EventEnvelope {
        id: "ev-1".into(),
        ts: 5,
        session_id: Some("job-1".into()),
        scope: Scope::Job,
        source: Source::System,
        run_id: Some("run-1".into()),
        event,
    }
}

/// Serialises `event` in an envelope: every key once, and it reads back as it was.
fn assert_each_key_once(event: Event) {
    let env = envelope(event);
    let json = serde_json::to_string(&env).unwrap();
    let keys = keys(&json);
    let mut seen = std::collections::HashSet::new();
    let twice: Vec<&String> = keys.iter().filter(|k| !seen.insert(*k)).collect();
    assert!(twice.is_empty(), "keys written twice: {twice:?} in {json}");
    let back: EventEnvelope = serde_json::from_str(&json).unwrap();
    assert_eq!(back, env);
}

#[test]
fn an_approval_request_keeps_its_id_apart_from_the_envelopes() {
    assert_each_key_once(Event::ApprovalRequested {
        approval_id: "ap-1".into(),
        kind: ApprovalKind::Exec,
        command: "cargo build".into(),
        prefix: "cargo build".into(),
        cwd: Some("/w".into()),
        outside_sandbox: false,
        env: vec![],
        parts: vec![],
        unprovable: None,
        exec_run: None,
        mcp: None,
        expires_at: Some(9),
    });
}

#[test]
fn an_approval_answer_keeps_its_id_apart_from_the_envelopes() {
    assert_each_key_once(Event::ApprovalResolved {
        approval_id: "ap-1".into(),
        decision: ApprovalDecision::Deny,
        expired: true,
    });
}

#[test]
fn a_notification_keeps_the_session_it_opens_apart_from_the_envelopes() {
    assert_each_key_once(Event::Notification {
        kind: NotificationKind::Approval,
        title: "Vigil is waiting".into(),
        body: "cargo build".into(),
        event_id: None,
        process_id: None,
        approval_id: Some("ap-1".into()),
        target_session_id: Some("main".into()),
        message_ts: Some(7),
    });
}
