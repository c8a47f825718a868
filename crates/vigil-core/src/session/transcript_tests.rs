//! The transcript store's own tests: appends, torn tails, cuts, and ids.

use super::*;
use std::io::Write;

#[test]
fn appends_reload_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let a = Message::user_text("one", 1);
    let b = Message::user_text("two", 2);
    store.append("main", &a).unwrap();
    store.append("main", &b).unwrap();
    let loaded = store.load("main").unwrap();
    assert_eq!(loaded.messages, vec![a, b]);
    assert!(loaded.warnings.is_empty());
}

/// A load parses only what was appended since the last one; a cut followed by new lines,
/// made by another writer (here another store, as another process would), is noticed.
#[tokio::test]
async fn reloads_see_every_append_and_a_cut_by_another_writer() {
    let dir = tempfile::tempdir().unwrap();
    let (mine, other) = (
        SessionStore::open(dir.path()).unwrap(),
        SessionStore::open(dir.path()).unwrap(),
    );
    let m = |text: &str, ts| Message::user_text(text, ts);
    mine.append("main", &m("one", 1)).unwrap();
    let after_one = mine.size("main").unwrap();
    mine.append("main", &m("two", 2)).unwrap();
    mine.append("main", &m("three", 3)).unwrap();
    assert_eq!(mine.load("main").unwrap().messages.len(), 3);
    other.append("main", &m("four", 4)).unwrap();
    let texts = |s: &SessionStore| {
        s.load("main")
            .unwrap()
            .messages
            .iter()
            .map(|m| m.text())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&mine), ["one", "two", "three", "four"]);
    // The other writer takes back all but the first line and writes longer ones.
    other.truncate_async("main", after_one).await.unwrap();
    other.append("main", &m(&"five ".repeat(40), 5)).unwrap();
    other.append("main", &m("six", 6)).unwrap();
    assert_eq!(texts(&mine), ["one", &"five ".repeat(40), "six"]);
    // Its own cut too, then an append of the same size as what was cut.
    let before = mine.size("main").unwrap();
    mine.append("main", &m("seven", 7)).unwrap();
    assert_eq!(texts(&mine).len(), 4);
    mine.truncate_async("main", before).await.unwrap();
    mine.append("main", &m("eight", 8)).unwrap();
    assert_eq!(texts(&mine), ["one", &"five ".repeat(40), "six", "eight"]);
    assert_eq!(texts(&other), texts(&mine));
}

#[test]
fn torn_last_line_is_dropped_with_a_warning_and_appends_continue() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let a = Message::user_text("kept", 1);
    store.append("main", &a).unwrap();
    let path = dir.path().join("sessions/main.jsonl");
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(br#"{"role":"user","content":[{"type":"te"#).unwrap();
    let loaded = store.load("main").unwrap();
    assert_eq!(loaded.messages, vec![a.clone()]);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    let b = Message::user_text("after", 2);
    store.append("main", &b).unwrap();
    assert_eq!(store.load("main").unwrap().messages, vec![a, b]);
    let torn = fs::read_to_string(dir.path().join("sessions/main.jsonl.torn")).unwrap();
    assert!(torn.starts_with(r#"{"role":"user""#));
}

#[test]
fn an_append_after_a_torn_tail_cuts_it_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let a = Message::user_text("kept", 1);
    store.append("main", &a).unwrap();
    let path = dir.path().join("sessions/main.jsonl");
    let torn = format!("{{\"role\":\"user\",\"content\":\"{}", "z".repeat(100_000));
    OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(torn.as_bytes())
        .unwrap();
    let b = Message::user_text("after", 2);
    store.append("main", &b).unwrap();
    let loaded = store.load("main").unwrap();
    assert_eq!(loaded.messages, vec![a.clone(), b]);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    let kept = fs::read_to_string(dir.path().join("sessions/main.jsonl.torn")).unwrap();
    assert_eq!(kept, format!("{torn}\n"));

    // A file that is one torn line from its first byte.
    fs::write(&path, b"{\"ro").unwrap();
    store.append("main", &a).unwrap();
    assert_eq!(store.load("main").unwrap().messages, vec![a]);
}

#[test]
fn a_bad_middle_line_is_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let path = dir.path().join("sessions/main.jsonl");
    let good = serde_json::to_string(&Message::user_text("ok", 1)).unwrap();
    fs::write(&path, format!("{good}\nnot json\n{good}\n")).unwrap();
    let loaded = store.load("main").unwrap();
    assert_eq!(loaded.messages.len(), 2);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(fs::read_to_string(&path).unwrap().contains("not json"));
}

#[test]
fn ids_cannot_escape_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    assert!(matches!(store.load("../x"), Err(SessionError::InvalidId(_))));
}

/// A load names each message by the id the history index gives it (so the window opens a
/// search result at it): written ids as written, old lines' derived ids by their line number
/// in the whole file, also when a load parses only the lines appended since the last one.
#[test]
fn loads_give_each_message_the_ids_the_index_gives_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::open(dir.path()).unwrap();
    let path = dir.path().join("sessions/main.jsonl");
    let old = |text: &str| serde_json::to_string(&Message::user_text(text, 1)).unwrap();
    fs::write(&path, format!("{}\n\nnot json\n{}\n", old("a"), old("a"))).unwrap();
    let index_ids = || -> Vec<String> {
        let bytes = fs::read(&path).unwrap();
        super::ids::lines_with_ids(&bytes)
            .filter(|(_, _, line)| serde_json::from_slice::<Message>(line).is_ok())
            .map(|(_, id, _)| id)
            .collect()
    };
    let first = store.load("main").unwrap();
    assert_eq!(first.ids, index_ids());
    assert_eq!(first.ids.len(), 2);
    assert_ne!(first.ids[0], first.ids[1], "the same line twice, two ids");

    // Appended since: a new line (written id) and, by another writer, an old-style one.
    store.append("main", &Message::user_text("b", 2)).unwrap();
    OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(format!("{}\n", old("a")).as_bytes())
        .unwrap();
    let again = store.load("main").unwrap();
    assert_eq!(again.messages.len(), 4);
    assert_eq!(again.ids, index_ids());
    assert_eq!(again.ids[..2], first.ids[..]);
    assert!(again.ids[2].starts_with('m'));
}
