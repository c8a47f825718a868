//! The index against the truth: every search compared with a brute-force scan of the JSONL.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use vigil_protocol::{ContentBlock, Message, Role};

use super::*;
use crate::clock::SystemClock;
use crate::session::{ids, MetaStore, SessionStore, SessionType};

fn open(dir: &Path) -> (SessionStore, History) {
    let store = SessionStore::open(dir).unwrap();
    let history = History::open(dir, &store, Arc::new(SystemClock)).unwrap();
    (store, history)
}

fn q(text: &str) -> Query {
    Query {
        text: text.into(),
        limit: 200,
        ..Query::default()
    }
}

fn found(h: &History, text: &str) -> BTreeSet<(String, String)> {
    h.search(&q(text))
        .unwrap()
        .into_iter()
        .map(|hit| (hit.session, hit.message_id))
        .collect()
}

/// Every message of every transcript whose words include each query word as a prefix,
/// found by reading the JSONL line by line: what the index must agree with.
pub(super) fn brute_force(sessions: &Path, text: &str) -> BTreeSet<(String, String)> {
    let want: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(sessions).unwrap() {
        let path = entry.unwrap().path();
        let Some(id) = path.file_name().unwrap().to_str().unwrap().strip_suffix(".jsonl") else {
            continue;
        };
        let bytes = std::fs::read(&path).unwrap();
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        for (_, mid, line) in ids::lines_with_ids(&bytes[..complete]) {
            let Ok(m) = serde_json::from_slice::<Message>(line) else {
                continue;
            };
            let text = extract::extract(&m).text.to_lowercase();
            let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric()).collect();
            if want.iter().all(|w| words.iter().any(|x| x.starts_with(w.as_str()))) {
                out.insert((id.to_string(), mid));
            }
        }
    }
    out
}

fn tool_call(name: &str, command: &str, ts: i64) -> Message {
    Message {
        role: Role::Assistant,
        content: vec![ContentBlock::ToolUse {
            id: "t1".into(),
            name: name.into(),
            input: serde_json::json!({ "command": command }),
        }],
        ..Message::user_text("", ts)
    }
}

/// Three conversations and a job, each with its own words: a search finds each word in its
/// own session, at the message that said it, and the words around it are readable.
#[test]
fn each_conversation_and_job_is_found_at_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let (store, history) = open(dir.path());
    let meta = MetaStore::new(store.clone(), Arc::new(SystemClock));
    let c1 = meta.create("Build", SessionType::Primary).unwrap().id;
    let job = meta.create("Disk check", SessionType::Job).unwrap().id;
    store
        .append(&c1, &Message::user_text("the build broke again", 1))
        .unwrap();
    store
        .append(&c1, &tool_call("exec", "cargo clean --zanzibar", 2))
        .unwrap();
    store
        .append("c2", &Message::user_text("plan the marmalade party", 3))
        .unwrap();
    store.append("c3", &Message::user_text("what is quokka", 4)).unwrap();
    store
        .append(&job, &Message::user_text("disk at 91 percent gorgonzola", 5))
        .unwrap();
    history.settle();

    let c1_ids: Vec<String> =
        ids::lines_with_ids(&std::fs::read(dir.path().join(format!("sessions/{c1}.jsonl"))).unwrap())
            .map(|(_, id, _)| id)
            .collect();
    let hits = history.search(&q("zanzibar")).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(
        (
            hits[0].session.as_str(),
            hits[0].message_id.as_str(),
            hits[0].seq,
            hits[0].title.as_str()
        ),
        (c1.as_str(), c1_ids[1].as_str(), 1, "Build")
    );
    assert!(hits[0].snippet.contains("\u{2}zanzibar\u{3}"), "{}", hits[0].snippet);
    for (word, session) in [("marmalade", "c2"), ("quokka", "c3"), ("gorgonzola", job.as_str())] {
        let hits = history.search(&q(word)).unwrap();
        assert_eq!(
            hits.iter().map(|h| h.session.as_str()).collect::<Vec<_>>(),
            [session],
            "{word}"
        );
    }
    let prefix = history.search(&q("gorgon")).unwrap();
    assert_eq!(prefix[0].kind, Kind::Job, "prefixes match as the user types");
    let only_c2 = Query {
        session: Some("c2".into()),
        ..q("quokka")
    };
    assert!(history.search(&only_c2).unwrap().is_empty());

    let around = history.around(&c1, &c1_ids[1], 1, 1, true).unwrap().unwrap();
    assert_eq!(around.len(), 2);
    assert!(around[0].text.contains("build broke") && !around[0].hit);
    assert!(around[1].text.contains("zanzibar") && around[1].hit);
    assert_eq!(history.around(&c1, "nope", 1, 1, true).unwrap(), None);
}

/// The index deleted, or cut mid-write, or a transcript appended by another process while
/// Vigil was closed: at the next start the index catches up, and agrees with the JSONL.
#[test]
fn a_lost_torn_or_stale_index_catches_up_and_agrees_with_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    {
        let (store, history) = open(dir.path());
        for i in 0..300 {
            let text = format!("note {i} alpha{} beta{}", i % 7, i % 11);
            store
                .append(&format!("s{}", i % 5), &Message::user_text(text, i))
                .unwrap();
        }
        history.settle();
        assert_eq!(found(&history, "alpha3"), brute_force(&sessions, "alpha3"));
    }
    let check = |label: &str| {
        let (_store, history) = open(dir.path());
        history.settle();
        for word in ["alpha3", "beta10", "note 1", "alpha1 beta2", "omega"] {
            assert_eq!(found(&history, word), brute_force(&sessions, word), "{label}: {word}");
        }
        assert!(!found(&history, "omega").is_empty() || label != "appended", "{label}");
    };
    // Another process appends while Vigil is closed (no observer sees it).
    let other = SessionStore::open(dir.path()).unwrap();
    other.append("s1", &Message::user_text("omega late line", 999)).unwrap();
    other
        .append("s9", &Message::user_text("omega new session", 1000))
        .unwrap();
    check("appended");
    // The index file cut in the middle of a write.
    let file = db::file(dir.path());
    let len = std::fs::metadata(&file).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let _ = std::fs::remove_file(dir.path().join("history/index.sqlite-wal"));
    check("truncated");
    // The index gone.
    std::fs::remove_dir_all(dir.path().join("history")).unwrap();
    check("deleted");
    // A transcript rewritten shorter (pruned) while closed.
    let s1 = sessions.join("s1.jsonl");
    let bytes = std::fs::read(&s1).unwrap();
    let keep = bytes.iter().position(|&b| b == b'\n').unwrap() + 1;
    std::fs::write(&s1, &bytes[..keep]).unwrap();
    check("pruned");
}

/// Appends reach searches through the store's observer, without anyone asking the index;
/// a heartbeat's pruned run leaves it.
#[tokio::test]
async fn appends_and_prunes_reach_the_index_on_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let (store, history) = open(dir.path());
    let hb = "heartbeat_session_main";
    store.append(hb, &Message::user_text("kept checklist", 1)).unwrap();
    let size = store.size(hb).unwrap();
    store
        .append_async(hb, &Message::user_text("transient wombat", 2))
        .await
        .unwrap();
    history.settle();
    assert_eq!(history.search(&q("wombat")).unwrap().len(), 1);
    store.truncate_async(hb, size).await.unwrap();
    history.settle();
    assert!(history.search(&q("wombat")).unwrap().is_empty());
    assert_eq!(history.search(&q("checklist")).unwrap().len(), 1);
}

/// With the setting on, the agent's searches find nothing of heartbeat runs; the user's
/// still do.
#[test]
fn heartbeat_runs_can_be_kept_from_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let (store, history) = open(dir.path());
    store
        .append("heartbeat_session_main", &Message::user_text("disk capybara 80", 1))
        .unwrap();
    store.append("c1", &Message::user_text("capybara in chat", 2)).unwrap();
    history.settle();
    assert_eq!(history.search_for_agent(&q("capybara")).unwrap().len(), 2);
    history.set_agent_skips_heartbeats(true);
    let agent = history.search_for_agent(&q("capybara")).unwrap();
    assert_eq!(agent.iter().map(|h| h.session.as_str()).collect::<Vec<_>>(), ["c1"]);
    let only_hb = Query {
        kinds: vec![Kind::Heartbeat],
        ..q("capybara")
    };
    assert!(history.search_for_agent(&only_hb).unwrap().is_empty());
    let hb_hit = history.search(&only_hb).unwrap();
    assert_eq!(hb_hit.len(), 1, "the user still finds it");
    assert_eq!(
        history
            .around("heartbeat_session_main", &hb_hit[0].message_id, 0, 0, true)
            .unwrap(),
        None
    );
}

/// Deleting a conversation: its words are not found from that moment, and once the index
/// has compacted, none of its text is left in any file of the index's folder.
#[test]
fn a_deleted_conversation_is_gone_from_results_and_from_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let (store, history) = open(dir.path());
    let meta = MetaStore::new(store.clone(), Arc::new(SystemClock));
    let secret = meta.create("Secret", SessionType::Primary).unwrap().id;
    for i in 0..50 {
        store
            .append(&secret, &Message::user_text(format!("xylophonist{i} confidential"), i))
            .unwrap();
    }
    store.append("main", &Message::user_text("ordinary words", 99)).unwrap();
    history.settle();
    assert_eq!(history.search(&q("xylophonist")).unwrap().len(), 50);
    meta.delete(&secret).unwrap();
    assert!(history.search(&q("xylophonist")).unwrap().is_empty(), "at once");
    history.settle();
    assert!(history.search(&q("xylophonist")).unwrap().is_empty());
    assert_eq!(history.search(&q("ordinary")).unwrap().len(), 1);
    for entry in std::fs::read_dir(history.dir()).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let hit = bytes.windows(b"xylophonist".len()).any(|w| w == b"xylophonist");
        assert!(!hit, "{} still holds the deleted text", path.display());
    }
}

/// The index keeps no text: a snippet is read back from the transcript, and only from the
/// line that is still the message found. A transcript rewritten behind the index's back
/// (another process; Vigil not told) shows nothing of the line now in its place.
#[test]
fn snippets_come_from_the_transcript_and_never_from_another_line() {
    let dir = tempfile::tempdir().unwrap();
    let (store, history) = open(dir.path());
    store
        .append("s1", &Message::user_text("the quetzal nests here", 1))
        .unwrap();
    history.settle();
    let hits = history.search(&q("quetzal")).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].snippet, "the \u{2}quetzal\u{3} nests here");
    for entry in std::fs::read_dir(history.dir()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !bytes.windows(13).any(|w| w == b"quetzal nests"),
            "the index holds words, not the text"
        );
    }
    // Another process writes another message of the same length in that line's place.
    let elsewhere = tempfile::tempdir().unwrap();
    SessionStore::open(elsewhere.path())
        .unwrap()
        .append("s1", &Message::user_text("quetzal secret words 2", 2))
        .unwrap();
    std::fs::copy(
        elsewhere.path().join("sessions/s1.jsonl"),
        dir.path().join("sessions/s1.jsonl"),
    )
    .unwrap();
    assert_eq!(history.search(&q("quetzal")).unwrap(), Vec::new());
    assert_eq!(history.around("s1", &hits[0].message_id, 1, 1, false).unwrap(), None);
}
