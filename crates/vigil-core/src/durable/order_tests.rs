//! The durable order of the writes that must outlast a power cut, as the seam records them.
//! A SIGKILL test cannot tell these writes from their unsynced versions (a killed process
//! loses nothing the kernel already holds), so each test here compares the whole sequence
//! of calls: it fails if an fsync is dropped, or moved after the rename it must precede.

use std::sync::Arc;

use vigil_protocol::Message;

use super::recording::Recording;
use crate::clock::{Clock, ManualClock};
use crate::routines::store::Entry;
use crate::routines::{Routine, RoutineStore};
use crate::session::{MetaStore, SessionLocks, SessionStore, SessionType};

fn clock() -> Arc<dyn Clock> {
    Arc::new(ManualClock::new(1_000))
}

#[tokio::test]
async fn an_append_is_written_and_fdatasynced_before_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let rec = Recording::start(dir.path());

    store.append("main", &Message::user_text("one", 1)).unwrap();
    // A new file: its name is made durable too.
    assert_eq!(
        rec.take(),
        [
            "write sessions/main.jsonl",
            "fdatasync sessions/main.jsonl",
            "fsync dir sessions",
        ]
    );
    let one_line = store.size("main").unwrap();

    store.append_async("main", &Message::user_text("two", 2)).await.unwrap();
    assert_eq!(
        rec.take(),
        ["write sessions/main.jsonl", "fdatasync sessions/main.jsonl"]
    );

    // A torn tail is kept aside durably and cut durably before the next line goes on.
    let path = dir.path().join("sessions/main.jsonl");
    let two_lines = store.size("main").unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut f, br#"{"role":"us"#).unwrap();
    store.append("main", &Message::user_text("three", 3)).unwrap();
    assert_eq!(
        rec.take(),
        [
            "write sessions/main.jsonl.torn".to_string(),
            "fdatasync sessions/main.jsonl.torn".to_string(),
            format!("truncate sessions/main.jsonl to {two_lines}"),
            "fdatasync sessions/main.jsonl".to_string(),
            "write sessions/main.jsonl".to_string(),
            "fdatasync sessions/main.jsonl".to_string(),
        ]
    );

    // The heartbeat taking back its lines.
    store.truncate_async("main", one_line).await.unwrap();
    assert_eq!(
        rec.take(),
        [
            format!("truncate sessions/main.jsonl to {one_line}"),
            "fdatasync sessions/main.jsonl".to_string(),
        ]
    );
    assert_eq!(store.load("main").unwrap().messages, [Message::user_text("one", 1)]);
}

#[test]
fn a_metadata_commit_fsyncs_its_temp_file_before_any_rename_and_the_folder_after() {
    let dir = tempfile::tempdir().unwrap();
    let store = MetaStore::open(dir.path(), clock()).unwrap();
    let rec = Recording::start(dir.path());

    let id = store.create("Plan", SessionType::Primary).unwrap().id;
    let (main, tmp) = (format!("sessions/{id}.meta.json"), |n: u32| {
        format!("sessions/.{id}.meta.json.<{n}>")
    });
    assert_eq!(
        rec.take(),
        [
            format!("create {}", tmp(1)),
            format!("write {}", tmp(1)),
            format!("fsync {}", tmp(1)),
            format!("rename {} -> {main}", tmp(1)),
            "fsync dir sessions".to_string(),
        ]
    );

    // The good file it replaces becomes the backup by a link, before the rename over it.
    store.rename(&id, "Trip").unwrap();
    assert_eq!(
        rec.take(),
        [
            format!("create {}", tmp(2)),
            format!("write {}", tmp(2)),
            format!("fsync {}", tmp(2)),
            format!("link {main} -> {main}.bak.tmp"),
            format!("rename {main}.bak.tmp -> {main}.bak"),
            format!("rename {} -> {main}", tmp(2)),
            "fsync dir sessions".to_string(),
        ]
    );

    // A damaged file is set aside, never made the backup.
    std::fs::write(dir.path().join(&main), "{ not json").unwrap();
    store.rename(&id, "Trip to Lyon").unwrap();
    assert_eq!(
        rec.take(),
        [
            format!("create {}", tmp(3)),
            format!("write {}", tmp(3)),
            format!("fsync {}", tmp(3)),
            format!("rename {main} -> {main}.corrupt"),
            format!("rename {} -> {main}", tmp(3)),
            "fsync dir sessions".to_string(),
        ]
    );
    assert_eq!(store.load(&id).unwrap().meta.title, "Trip to Lyon");
}

#[tokio::test]
async fn a_heartbeat_md_write_is_journaled_then_made_in_place_and_the_journal_goes_last() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("HEARTBEAT.md"), "- check the disk\n").unwrap();
    std::fs::create_dir_all(dir.path().join("sessions")).unwrap();
    let locks = SessionLocks::with_defaults(&dir.path().join("sessions"));
    let store = RoutineStore::new(&workspace, locks, clock());
    let rec = Recording::start(dir.path());

    store
        .update(|entries| {
            entries.push(Entry::new(Routine::new("water".into(), "Drink water".into(), 0)));
            Ok(())
        })
        .await
        .unwrap();
    // The journal (in Vigil's own folder) made durable first, then HEARTBEAT.md rewritten
    // in place (its inode stays: a sandbox's read-only bind of it stays attached) and
    // fsync'd, and only then the journal removed; then the snapshot of the good task block.
    let len = std::fs::metadata(workspace.join("HEARTBEAT.md")).unwrap().len();
    let take = rec.take();
    assert_eq!(
        take,
        [
            "create sessions/.vigil-tmp-<1>".to_string(),
            "write sessions/.vigil-tmp-<1>".into(),
            "fsync sessions/.vigil-tmp-<1>".into(),
            "rename sessions/.vigil-tmp-<1> -> sessions/.HEARTBEAT.md.journal".into(),
            "fsync dir sessions".into(),
            "write workspace/HEARTBEAT.md".into(),
            format!("truncate workspace/HEARTBEAT.md to {len}"),
            "fsync workspace/HEARTBEAT.md".into(),
            "remove sessions/.HEARTBEAT.md.journal".into(),
            "fsync dir sessions".into(),
            "create workspace/.vigil-tmp-<2>".into(),
            "write workspace/.vigil-tmp-<2>".into(),
            "fsync workspace/.vigil-tmp-<2>".into(),
            "rename workspace/.vigil-tmp-<2> -> workspace/.heartbeat_snapshot.json".into(),
            "fsync dir workspace".into(),
        ]
    );
    let text = std::fs::read_to_string(workspace.join("HEARTBEAT.md")).unwrap();
    assert!(
        text.starts_with("- check the disk\n") && text.contains("Drink water"),
        "{text}"
    );
}
