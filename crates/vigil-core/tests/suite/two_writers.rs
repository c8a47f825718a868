//! Two runtimes on one data folder at once (the app and `vigil-headless`, say): both chat in
//! the same conversation and deposit heartbeat results into its mailbox; nothing either of
//! them saved is lost or doubled, and every file still loads cleanly.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;

use serde_json::{json, Value};
use vigil_core::clock::SystemClock;
use vigil_core::session::{MetaStore, SessionStore};
use vigil_fake_llm::FakeLlm;

use super::support::{headless, numbered_echo_and_wake_only_heartbeat};

const MESSAGES: usize = 15;

/// Runs one `vigil-headless` through `ops` to the end of its input; returns its events.
fn run(dir: &std::path::Path, fake: &FakeLlm, ops: Vec<Value>) -> Vec<Value> {
    let mut child = headless(dir, fake, "sk-two").spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(&l.unwrap()).unwrap())
            .collect::<Vec<_>>()
    });
    for op in ops {
        writeln!(stdin, "{op}").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    reader.join().unwrap()
}

fn ops(name: &str) -> Vec<Value> {
    (0..MESSAGES)
        .flat_map(|i| {
            let msg = json!({"type": "user_message", "text": format!("{name} {i}")});
            match i % 5 {
                0 => vec![msg, json!({"type": "wake", "reason": "manual"})],
                _ => vec![msg],
            }
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runtimes_on_one_folder_lose_and_double_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let fake = Arc::new(numbered_echo_and_wake_only_heartbeat("sk-two", &data).await);
    let (a, b) = tokio::task::spawn_blocking(move || {
        let (fa, fb) = (fake.clone(), fake.clone());
        let (da, db) = (data.clone(), data.clone());
        let a = std::thread::spawn(move || run(&da, &fa, ops("app")));
        let b = std::thread::spawn(move || run(&db, &fb, ops("headless")));
        (a.join().unwrap(), b.join().unwrap())
    })
    .await
    .unwrap();

    let store = SessionStore::open(dir.path()).unwrap();
    let loaded = store.load("main").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let on_disk: Vec<Value> = loaded
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let mut saved = 0;
    for e in a
        .iter()
        .chain(&b)
        .filter(|e| e["type"] == "message_appended" && e["session_id"] == "main")
    {
        let n = on_disk.iter().filter(|m| **m == e["message"]).count();
        assert_eq!(n, 1, "a saved message is on disk {n} times: {}", e["message"]);
        saved += 1;
    }
    assert_eq!(
        saved,
        on_disk.len(),
        "every message on disk was reported by one of the two"
    );
    // Both conversations' user messages all made it, each exactly once, and nothing else
    // was saved as a user's words.
    let mut typed: Vec<String> = on_disk
        .iter()
        // Plain, or an interrupt that joined a running turn; not a summary.
        .filter(|m| m["role"] == "user" && m["kind"]["type"].as_str().unwrap_or("interrupt") == "interrupt")
        .flat_map(|m| m["content"].as_array().unwrap().clone())
        .filter_map(|b| b["text"].as_str().map(str::to_string))
        // The context block rides along in its own text block.
        .filter(|t| !t.starts_with("<context>"))
        .map(|t| {
            t.strip_prefix("[INTERRUPT] New message from user: ")
                .unwrap_or(&t)
                .to_string()
        })
        // Messages that came in while a turn ran start the next one together, a blank line apart.
        .flat_map(|t| t.split("\n\n").map(str::to_string).collect::<Vec<_>>())
        .collect();
    typed.sort();
    let mut expected: Vec<String> = ["app", "headless"]
        .iter()
        .flat_map(|name| (0..MESSAGES).map(move |i| format!("{name} {i}")))
        .collect();
    expected.sort();
    assert_eq!(typed, expected, "the user messages on disk");
    let meta = MetaStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    for s in meta.list().unwrap().sessions {
        let l = meta.load(&s.id).unwrap();
        assert!(l.warnings.is_empty(), "{}: {:?}", s.id, l.warnings);
    }
    // Every deposited update is acknowledged by exactly one turn or still waiting: an update
    // shown to two turns is acknowledged twice, a lost one is in neither.
    let ids = |events: &[Value], kind: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == kind)
            .flat_map(|e| match kind {
                "background_update" => vec![e["update"]["event_id"].clone()],
                _ => e["event_ids"].as_array().unwrap().clone(),
            })
            .map(|id| id.as_str().unwrap().to_string())
            .collect()
    };
    let both: Vec<Value> = a.iter().chain(&b).cloned().collect();
    let deposited: BTreeSet<String> = ids(&both, "background_update").into_iter().collect();
    let acked_list = ids(&both, "background_updates_read");
    let acked: BTreeSet<String> = acked_list.iter().cloned().collect();
    assert_eq!(
        acked.len(),
        acked_list.len(),
        "an update was acknowledged twice: {acked_list:?}"
    );
    let left: BTreeSet<String> = meta
        .load("main")
        .unwrap()
        .meta
        .mailbox
        .into_iter()
        .map(|e| e.event_id)
        .collect();
    assert!(
        acked.is_disjoint(&left),
        "acknowledged yet still waiting: {:?}",
        acked.intersection(&left)
    );
    let accounted: BTreeSet<String> = acked.union(&left).cloned().collect();
    assert_eq!(accounted, deposited, "acknowledged or waiting vs deposited");
    assert!(!deposited.is_empty(), "the wakes deposited nothing: nothing was tested");
    println!(
        "two writers: {saved} messages saved by two runtimes, all on disk once; {} updates deposited, {} acknowledged once each, {} left",
        deposited.len(),
        acked.len(),
        left.len()
    );
}
