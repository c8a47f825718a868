//! Sessions under stress: concurrent writers in threads and processes, corrupt files, stale
//! and dead lock holders, and a writer SIGKILLed 200 times.
//!
//! Child processes are this test binary re-executed on one `*_child` test. Those are
//! `#[ignore]`d, so a normal run lists them as ignored instead of passing them as no-ops;
//! the parent runs one with `--ignored` and the environment variable it needs.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use vigil_core::clock::{Clock, ManualClock, SystemClock};
use vigil_core::protocol::Message;
use vigil_core::session::{
    LockHolder, LockOptions, MailboxEvent, MetaStore, SessionError, SessionStore, SessionType, PRIMARY_SESSION,
};

const START_MS: i64 = 1_700_000_000_000;

fn opts(timeout_ms: u64) -> LockOptions {
    LockOptions {
        timeout: Duration::from_millis(timeout_ms),
        max_hold: Duration::from_secs(60),
        poll: Duration::from_millis(5),
    }
}

fn meta_store(dir: &Path, clock: Arc<dyn Clock>) -> MetaStore {
    let transcripts = SessionStore::open_with(dir, clock.clone(), opts(10_000)).unwrap();
    MetaStore::new(transcripts, clock)
}

/// A child process that is killed if the test fails before it does.
struct Kid {
    child: Child,
    lines: mpsc::Receiver<String>,
}

/// A `*_child` test's environment variable; without it the child was started by hand
/// (`--ignored`), not by its parent, and says so instead of passing as a no-op.
fn child_env(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| panic!("a child process: its parent test sets {var}"))
}

impl Kid {
    fn spawn(test: &str, env: &[(&str, &str)]) -> Kid {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", test, "--ignored", "--nocapture", "--test-threads=1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("re-execute the test binary");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Kid { child, lines }
    }

    /// Waits for a line containing `prefix`, returning what follows it.
    fn expect_line(&self, prefix: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("child never printed {prefix:?}"));
            // The harness prints "test <name> ... " without a newline before the output.
            if let Some((_, rest)) = line.split_once(prefix) {
                return rest.trim().to_string();
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------- metadata

#[test]
fn revision_strictly_increases_over_many_updates() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START_MS);
    let store = meta_store(dir.path(), Arc::new(clock.clone()));
    let created = store.create("Daily digest", SessionType::Job).unwrap();
    assert_eq!(created.revision, 1);
    assert!(created.id.starts_with("job_"), "{}", created.id);
    let mut last = created;
    for i in 0..200u64 {
        clock.advance(Duration::from_millis(7));
        let (meta, n) = store
            .update_atomic(&last.id, |m| {
                m.title = format!("run {i}");
                m.revision = 0; // the mutator cannot move the revision
                i
            })
            .unwrap();
        assert_eq!(n, i);
        assert_eq!(meta.revision, last.revision + 1);
        assert_eq!(meta.updated_at, clock.now_ms());
        assert_eq!(meta.created_at, START_MS);
        last = meta;
    }
    let loaded = store.load(&last.id).unwrap();
    assert_eq!(loaded.meta, last);
    assert!(loaded.warnings.is_empty());
    assert_eq!(loaded.meta.revision, 201);
}

#[test]
fn two_stores_interleaving_updates_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let stores = [
        meta_store(dir.path(), Arc::new(SystemClock)),
        meta_store(dir.path(), Arc::new(SystemClock)),
    ];
    const THREADS_PER_STORE: usize = 3;
    const UPDATES: usize = 25;
    let mut handles = Vec::new();
    for (s, store) in stores.iter().enumerate() {
        for t in 0..THREADS_PER_STORE {
            let store = store.clone();
            handles.push(std::thread::spawn(move || {
                let mut seen = Vec::new();
                for i in 0..UPDATES {
                    let event = MailboxEvent {
                        event_id: format!("{s}-{t}-{i}"),
                        source: "test".into(),
                        summary: format!("update {i}"),
                        detail: None,
                        created_at: i as i64,
                        run_id: None,
                        ..Default::default()
                    };
                    let (meta, ()) = store.update_atomic(PRIMARY_SESSION, |m| m.mailbox.push(event)).unwrap();
                    seen.push(meta.revision);
                }
                seen
            }));
        }
    }
    let mut all = Vec::new();
    for h in handles {
        let seen = h.join().unwrap();
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        all.extend(seen);
    }
    let total = 2 * THREADS_PER_STORE * UPDATES;
    let distinct: HashSet<u64> = all.iter().copied().collect();
    assert_eq!(distinct.len(), total, "two updates got the same revision");
    let meta = stores[1].load(PRIMARY_SESSION).unwrap().meta;
    // Revision 1 is the adoption of `main`, then one per update.
    assert_eq!(meta.revision, total as u64 + 1);
    assert_eq!(meta.mailbox.len(), total);
    let ids: HashSet<&str> = meta.mailbox.iter().map(|e| e.event_id.as_str()).collect();
    assert_eq!(ids.len(), total);
}

fn two_revisions(dir: &Path) -> (MetaStore, PathBuf, PathBuf) {
    let store = meta_store(dir, Arc::new(ManualClock::new(START_MS)));
    store.rename(PRIMARY_SESSION, "first").unwrap(); // adopt = 1, rename = 2
    store.rename(PRIMARY_SESSION, "second").unwrap(); // 3; .bak holds 2
    let main = dir.join("sessions/main.meta.json");
    let bak = dir.join("sessions/main.meta.json.bak");
    (store, main, bak)
}

#[test]
fn corrupt_meta_falls_back_to_bak_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (store, main, _bak) = two_revisions(dir.path());
    fs::write(&main, b"{\"checksum\":\"sha256:00\",\"meta\":{\"id\":\"ma").unwrap();
    let loaded = store.load(PRIMARY_SESSION).unwrap();
    assert_eq!(loaded.meta.title, "first");
    assert_eq!(loaded.meta.revision, 2);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("unreadable") && loaded.warnings[0].contains("using the backup"),
        "{}",
        loaded.warnings[0]
    );
    // The next update starts from the backup and keeps the bad file aside.
    let (meta, ()) = store
        .update_atomic(PRIMARY_SESSION, |m| m.title = "third".into())
        .unwrap();
    assert_eq!(meta.revision, 3);
    assert!(fs::read_to_string(dir.path().join("sessions/main.meta.json.corrupt"))
        .unwrap()
        .ends_with("\"id\":\"ma"));
    let reloaded = store.load(PRIMARY_SESSION).unwrap();
    assert_eq!(reloaded.meta, meta);
    assert!(reloaded.warnings.is_empty());
}

#[test]
fn checksum_mismatch_is_detected_and_the_revision_still_moves_forward() {
    let dir = tempfile::tempdir().unwrap();
    let (store, main, _bak) = two_revisions(dir.path());
    let text = fs::read_to_string(&main).unwrap();
    assert!(text.starts_with("{\"checksum\":\"sha256:"), "{text}");
    fs::write(&main, text.replace("\"second\"", "\"secxnd\"")).unwrap();
    let loaded = store.load(PRIMARY_SESSION).unwrap();
    assert_eq!(loaded.meta.title, "first");
    assert!(
        loaded.warnings[0].contains("checksum mismatch"),
        "{:?}",
        loaded.warnings
    );
    // The damaged file still said revision 3, so the next one is 4, not 3 again.
    let (meta, ()) = store.update_atomic(PRIMARY_SESSION, |_| ()).unwrap();
    assert_eq!(meta.revision, 4);
}

#[test]
fn unreadable_meta_and_bak_are_rebuilt_from_the_transcript_and_kept_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = meta_store(dir.path(), Arc::new(ManualClock::new(START_MS)));
    let id = store.create("New conversation", SessionType::Primary).unwrap().id;
    store
        .transcripts()
        .append(&id, &Message::user_text("Plan my trip to Kyoto\nin May", START_MS + 5))
        .unwrap();
    store.rename(&id, "Kyoto").unwrap();
    store.rename(&id, "Kyoto in May").unwrap();
    let main = dir.path().join(format!("sessions/{id}.meta.json"));
    let bak = dir.path().join(format!("sessions/{id}.meta.json.bak"));
    fs::write(&main, b"garbage").unwrap();
    fs::write(&bak, b"{}").unwrap();

    // The conversation stays usable (seed 003 §10.3): its details start afresh from the
    // transcript, with a warning that names both files.
    let loaded = store.load(&id).unwrap();
    assert_eq!(loaded.meta.title, "Plan my trip to Kyoto");
    assert_eq!(loaded.meta.session_type, SessionType::Primary);
    assert_eq!(loaded.meta.created_at, START_MS + 5);
    let warning = loaded.warnings.join("\n");
    assert!(
        warning.contains("rebuilt from its transcript")
            && warning.contains(&main.display().to_string())
            && warning.contains(&bak.display().to_string()),
        "{warning}"
    );
    // Nothing is lost: the messages are where they were, the bad files are kept aside.
    assert_eq!(store.transcripts().load(&id).unwrap().messages.len(), 1);
    assert_eq!(fs::read(main.with_extension("json.corrupt")).unwrap(), b"garbage");
    assert_eq!(fs::read(bak.with_extension("bak.corrupt")).unwrap(), b"{}");
    // It is listed, takes updates, and loads cleanly from now on.
    assert!(store.list().unwrap().sessions.iter().any(|m| m.id == id));
    let (meta, ()) = store.update_atomic(&id, |m| m.title = "Kyoto".into()).unwrap();
    assert_eq!(meta.title, "Kyoto");
    let again = store.load(&id).unwrap();
    assert_eq!(again.meta, meta);
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
}

#[test]
fn a_skeleton_transcript_gets_metadata_on_first_load() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START_MS);
    let store = meta_store(dir.path(), Arc::new(clock));
    let transcripts = store.transcripts();
    transcripts
        .append("main", &Message::user_text("Plan my trip to Kyoto\nin May", 42))
        .unwrap();
    let loaded = store.load(PRIMARY_SESSION).unwrap();
    assert_eq!(loaded.meta.title, "Plan my trip to Kyoto");
    assert_eq!(loaded.meta.session_type, SessionType::Primary);
    assert_eq!((loaded.meta.revision, loaded.meta.created_at), (1, 42));
    assert!(dir.path().join("sessions/main.meta.json").exists());
    assert_eq!(store.load(PRIMARY_SESSION).unwrap().meta, loaded.meta);

    assert!(matches!(store.load("nope"), Err(SessionError::NotFound(_))));
    assert!(matches!(
        store.update_atomic("nope", |_| ()),
        Err(SessionError::NotFound(_))
    ));
    assert!(!dir.path().join("sessions/nope.lock").exists());
    assert!(!dir.path().join("sessions/nope.meta.json").exists());
}

#[test]
fn create_list_rename_delete() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(START_MS);
    let store = meta_store(dir.path(), Arc::new(clock.clone()));
    store
        .transcripts()
        .append("main", &Message::user_text("hello", 1))
        .unwrap();
    clock.advance(Duration::from_secs(1));
    let job = store.create("Nightly report", SessionType::Job).unwrap();
    clock.advance(Duration::from_secs(1));
    let beat = store.create("Heartbeat", SessionType::Heartbeat).unwrap();
    assert!(beat.id.starts_with("heartbeat_"));
    clock.advance(Duration::from_secs(1));
    let renamed = store.rename(&job.id, "Nightly report (v2)").unwrap();
    assert_eq!(renamed.revision, 2);
    clock.advance(Duration::from_secs(1));

    let listed = store.list().unwrap();
    let order: Vec<&str> = listed.sessions.iter().map(|m| m.id.as_str()).collect();
    // `main` is adopted during the listing, so it is the most recently updated.
    assert_eq!(order, vec!["main", job.id.as_str(), beat.id.as_str()]);
    assert!(listed.warnings.is_empty(), "{:?}", listed.warnings);

    assert!(matches!(store.delete(PRIMARY_SESSION), Err(SessionError::Protected(_))));
    store
        .transcripts()
        .append(&job.id, &Message::user_text("x", 1))
        .unwrap();
    store.delete(&job.id).unwrap();
    let left: Vec<String> = fs::read_dir(dir.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&job.id))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(matches!(store.delete(&job.id), Err(SessionError::NotFound(_))));
    assert_eq!(store.list().unwrap().sessions.len(), 2);
}

#[test]
fn an_unreadable_session_without_messages_is_listed_empty_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let store = meta_store(dir.path(), Arc::new(ManualClock::new(START_MS)));
    let ok = store.create("fine", SessionType::Primary).unwrap();
    fs::write(dir.path().join("sessions/broken.meta.json"), "nope").unwrap();
    let listed = store.list().unwrap();
    let ids: Vec<&str> = listed.sessions.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, vec!["broken", ok.id.as_str()]);
    assert_eq!(listed.sessions[0].title, "Conversation");
    assert_eq!(listed.warnings.len(), 1);
    assert!(
        listed.warnings[0].contains("broken.meta.json") && listed.warnings[0].contains("rebuilt"),
        "{}",
        listed.warnings[0]
    );
    assert_eq!(
        fs::read(dir.path().join("sessions/broken.meta.json.corrupt")).unwrap(),
        b"nope"
    );
}

#[tokio::test]
async fn mailbox_deposit_and_ack_drain() {
    let dir = tempfile::tempdir().unwrap();
    let store = meta_store(dir.path(), Arc::new(ManualClock::new(START_MS)));
    let event = |id: &str| MailboxEvent {
        event_id: id.into(),
        source: "job_abc".into(),
        summary: format!("{id} done"),
        detail: Some("details".into()),
        created_at: START_MS,
        run_id: Some("run-1".into()),
        ..Default::default()
    };
    store.deposit("main", event("e1")).await.unwrap();
    store.deposit("main", event("e1")).await.unwrap(); // a retried deposit
    let meta = store.deposit("main", event("e2")).await.unwrap();
    assert_eq!(meta.mailbox, vec![event("e1"), event("e2")]);
    let meta = store.ack_drain("main", &["e1".to_string()]).await.unwrap();
    assert_eq!(meta.mailbox, vec![event("e2")]);
    assert_eq!(meta.revision, 5);
}

// ---------------------------------------------------------------- locks

/// Holds `main`'s lock in a child process until killed.
#[test]
#[ignore = "a child process, run by its parent test with --ignored"]
fn lock_holder_child() {
    let dir = child_env("VIGIL_LOCK_HOLDER");
    let store = SessionStore::open(Path::new(&dir)).unwrap();
    let _guard = store.locks().acquire_blocking("main").unwrap();
    println!("locked {}", std::process::id());
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_live_holder_times_out_clearly_and_a_killed_one_frees_the_lock_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir_s = dir.path().to_str().unwrap();
    let mut kid = Kid::spawn("suite::sessions::lock_holder_child", &[("VIGIL_LOCK_HOLDER", dir_s)]);
    let pid: u32 = kid.expect_line("locked ").parse().unwrap();
    let store = SessionStore::open_with(dir.path(), Arc::new(SystemClock), opts(150)).unwrap();

    let err = store.locks().acquire_blocking("main").unwrap_err();
    match &err {
        SessionError::Locked { id, holder, waited } => {
            assert_eq!(id, "main");
            assert_eq!(holder.map(|h| h.pid), Some(pid));
            assert!(*waited >= Duration::from_millis(150));
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("session main is locked by pid {pid} since ")) && msg.ends_with("UTC; try again"),
        "{msg}"
    );
    // Appends wait for the same lock.
    assert!(matches!(
        store.append("main", &Message::user_text("x", 1)),
        Err(SessionError::Locked { .. })
    ));

    kid.kill(); // SIGKILL: no destructor runs, the kernel drops the flock
    let store = SessionStore::open_with(dir.path(), Arc::new(SystemClock), opts(1_000)).unwrap();
    let started = Instant::now();
    let guard = store.locks().acquire_blocking("main").unwrap();
    assert!(started.elapsed() < Duration::from_secs(1));
    drop(guard);
    println!("lock after SIGKILL taken in {} ms", started.elapsed().as_millis());
}

/// Locks `sessions/<id>.lock` directly, as another process would, with a chosen record.
fn hold_raw(dir: &Path, id: &str, holder: LockHolder) -> File {
    let path = dir.join(format!("sessions/{id}.lock"));
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.try_lock().unwrap();
    f.write_all(&serde_json::to_vec(&holder).unwrap()).unwrap();
    f
}

#[test]
fn a_record_older_than_the_maximum_hold_is_reclaimed() {
    let dir = tempfile::tempdir().unwrap();
    let now = SystemClock.now_ms();
    let store = SessionStore::open_with(dir.path(), Arc::new(SystemClock), opts(100)).unwrap();

    let fresh = hold_raw(
        dir.path(),
        "main",
        LockHolder {
            pid: std::process::id(),
            acquired_at_ms: now,
        },
    );
    assert!(matches!(
        store.locks().acquire_blocking("main"),
        Err(SessionError::Locked { .. })
    ));
    drop(fresh);

    let _hung = hold_raw(
        dir.path(),
        "main",
        LockHolder {
            pid: std::process::id(),
            acquired_at_ms: now - 120_000,
        },
    );
    let guard = store.locks().acquire_blocking("main").unwrap();
    guard.ensure_held().unwrap();
    store
        .append_held(&guard, &Message::user_text("after reclaim", 1))
        .unwrap();
}

#[test]
fn a_record_of_a_dead_process_is_reclaimed() {
    let dir = tempfile::tempdir().unwrap();
    let mut gone = Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    // The lock is still held (as by a descendant that inherited it), but its holder is gone.
    let _leaked = hold_raw(
        dir.path(),
        "main",
        LockHolder {
            pid: dead_pid,
            acquired_at_ms: SystemClock.now_ms(),
        },
    );
    let store = SessionStore::open_with(dir.path(), Arc::new(SystemClock), opts(100)).unwrap();
    store.locks().acquire_blocking("main").unwrap();
}

#[test]
fn a_writer_whose_lock_was_reclaimed_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let slow_clock = ManualClock::new(START_MS);
    let slow = SessionStore::open_with(dir.path(), Arc::new(slow_clock), opts(100)).unwrap();
    let later = ManualClock::new(START_MS + 10 * 60_000);
    let other = SessionStore::open_with(dir.path(), Arc::new(later), opts(100)).unwrap();

    let hung = slow.locks().acquire_blocking("main").unwrap();
    let taken = other.locks().acquire_blocking("main").unwrap();
    assert!(matches!(
        slow.append_held(&hung, &Message::user_text("late", 1)),
        Err(SessionError::LockLost { .. })
    ));
    other.append_held(&taken, &Message::user_text("on time", 2)).unwrap();
    drop((hung, taken));
    let texts: Vec<String> = slow.load("main").unwrap().messages.iter().map(Message::text).collect();
    assert_eq!(texts, vec!["on time"]);
}

// ---------------------------------------------------------------- concurrent appends

/// Appends 150 large messages tagged `VIGIL_APPEND_TAG` to session `shared`.
#[test]
#[ignore = "a child process, run by its parent test with --ignored"]
fn append_child() {
    let dir = child_env("VIGIL_APPEND_CHILD");
    let tag = std::env::var("VIGIL_APPEND_TAG").unwrap();
    let store = SessionStore::open(Path::new(&dir)).unwrap();
    let pad = "x".repeat(8_000);
    for i in 0..150 {
        let m = Message::user_text(format!("{tag} {i} {pad}"), i);
        store.append("shared", &m).unwrap();
    }
}

/// Every line present, in each writer's order, none torn.
fn assert_all_lines(store: &SessionStore, tags: &[&str], per_tag: usize) {
    let loaded = store.load("shared").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.messages.len(), tags.len() * per_tag);
    for tag in tags {
        let mine: Vec<usize> = loaded
            .messages
            .iter()
            .map(Message::text)
            .filter_map(|t| {
                let mut parts = t.split(' ');
                (parts.next() == Some(*tag)).then(|| parts.next().unwrap().parse().unwrap())
            })
            .collect();
        assert_eq!(mine, (0..per_tag).collect::<Vec<_>>(), "writer {tag}");
    }
}

#[test]
fn two_processes_appending_to_one_session_keep_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let dir_s = dir.path().to_str().unwrap();
    let mut kids: Vec<Kid> = ["a", "b"]
        .iter()
        .map(|tag| {
            Kid::spawn(
                "suite::sessions::append_child",
                &[("VIGIL_APPEND_CHILD", dir_s), ("VIGIL_APPEND_TAG", tag)],
            )
        })
        .collect();
    for kid in &mut kids {
        assert!(kid.child.wait().unwrap().success());
    }
    assert_all_lines(&SessionStore::open(dir.path()).unwrap(), &["a", "b"], 150);
}

#[test]
fn threads_with_separate_stores_appending_keep_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let tags = ["t0", "t1", "t2", "t3"];
    let handles: Vec<_> = tags
        .iter()
        .map(|tag| {
            let store = SessionStore::open(dir.path()).unwrap();
            let tag = tag.to_string();
            std::thread::spawn(move || {
                for i in 0..100 {
                    let m = Message::user_text(format!("{tag} {i} {}", "y".repeat(3_000)), i);
                    store.append("shared", &m).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_all_lines(&SessionStore::open(dir.path()).unwrap(), &tags, 100);
}

// ---------------------------------------------------------------- crash safety

/// Appends numbered messages to `main` forever, printing `ack N` after each append
/// returned, and every third message updates the metadata, printing `rev R` after.
#[test]
#[ignore = "a child process, run by its parent test with --ignored"]
fn crash_child() {
    let dir = child_env("VIGIL_CRASH_CHILD");
    let store = MetaStore::open(Path::new(&dir), Arc::new(SystemClock)).unwrap();
    let transcripts = store.transcripts().clone();
    let mut next = transcripts.load("main").unwrap().messages.len();
    println!("ready");
    loop {
        let m = Message::user_text(format!("msg {next}"), next as i64);
        transcripts.append("main", &m).unwrap();
        println!("ack {next}");
        if next.is_multiple_of(3) {
            let (meta, ()) = store
                .update_atomic("main", |m| m.title = format!("up to {next}"))
                .unwrap();
            println!("rev {}", meta.revision);
        }
        next += 1;
    }
}

#[test]
fn survives_200_sigkills() {
    const KILLS: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    let dir_s = dir.path().to_str().unwrap();
    let started = Instant::now();
    // xorshift, seeded from the time: a different schedule each run, printed for replay.
    let mut seed = (SystemClock.now_ms() as u64) | 1;
    println!("crash test seed {seed}");
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut acked, mut acked_rev, mut last_rev) = (None::<usize>, 0u64, 0u64);
    let (mut transcript_warnings, mut meta_warnings) = (0, 0);
    for round in 0..KILLS {
        let mut kid = Kid::spawn("suite::sessions::crash_child", &[("VIGIL_CRASH_CHILD", dir_s)]);
        kid.expect_line("ready");
        std::thread::sleep(Duration::from_millis(1 + rand() % 30));
        kid.kill();
        // Everything the child printed before it died.
        for line in kid.lines.iter() {
            if let Some(n) = line.strip_prefix("ack ") {
                acked = acked.max(Some(n.parse().unwrap()));
            } else if let Some(r) = line.strip_prefix("rev ") {
                acked_rev = acked_rev.max(r.parse().unwrap());
            }
        }

        let store = MetaStore::open(dir.path(), Arc::new(SystemClock)).unwrap();
        let loaded = store.transcripts().load("main").unwrap();
        transcript_warnings += loaded.warnings.len();
        for (i, m) in loaded.messages.iter().enumerate() {
            assert_eq!(m.text(), format!("msg {i}"), "round {round}");
        }
        if let Some(n) = acked {
            assert!(
                loaded.messages.len() > n,
                "round {round}: acknowledged message {n} lost ({} on disk)",
                loaded.messages.len()
            );
        }
        let meta = store.load("main").unwrap();
        meta_warnings += meta.warnings.len();
        assert!(
            meta.meta.revision >= acked_rev && meta.meta.revision >= last_rev,
            "round {round}: revision went back to {} (acked {acked_rev}, seen {last_rev})",
            meta.meta.revision
        );
        last_rev = meta.meta.revision;
    }
    let messages = SessionStore::open(dir.path())
        .unwrap()
        .load("main")
        .unwrap()
        .messages
        .len();
    let files: Vec<String> = fs::read_dir(dir.path().join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    println!(
        "crash test: {KILLS} SIGKILLs in {:.1} s; {} messages acknowledged, {messages} on disk; \
         revision {last_rev} (highest acknowledged {acked_rev}); torn tails cut {transcript_warnings}, \
         meta fallbacks {meta_warnings}; files {files:?}",
        started.elapsed().as_secs_f64(),
        acked.map_or(0, |n| n + 1),
    );
    assert!(acked.is_some(), "the child never acknowledged anything");
}
