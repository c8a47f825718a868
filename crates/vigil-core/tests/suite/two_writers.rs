//! Two runtimes on one data folder at once (the app and `vigil-headless`, say): both chat in
//! the same conversation and deposit heartbeat results into its mailbox; nothing either of
//! them saved is lost or doubled, and every file still loads cleanly.

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
    // Both conversations' user messages all made it.
    for name in ["app", "headless"] {
        for i in 0..MESSAGES {
            let text = format!("{name} {i}");
            assert!(
                on_disk
                    .iter()
                    .any(|m| m["role"] == "user" && m.to_string().contains(&text)),
                "{text} is missing"
            );
        }
    }
    let meta = MetaStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
    for s in meta.list().unwrap().sessions {
        let l = meta.load(&s.id).unwrap();
        assert!(l.warnings.is_empty(), "{}: {:?}", s.id, l.warnings);
    }
    let deposited = a.iter().chain(&b).filter(|e| e["type"] == "background_update").count();
    let acked: usize = a
        .iter()
        .chain(&b)
        .filter(|e| e["type"] == "background_updates_read")
        .map(|e| e["event_ids"].as_array().unwrap().len())
        .sum();
    let left = meta.load("main").unwrap().meta.mailbox.len();
    println!(
        "two writers: {} messages saved by two runtimes, all on disk once; {deposited} updates deposited, {acked} acknowledged, {left} left",
        saved
    );
    assert!(
        acked + left >= deposited,
        "a deposited update vanished: {deposited} deposited, {acked} acked, {left} left"
    );
}
