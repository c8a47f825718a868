//! Crash safety: `vigil-headless` against the fake provider, killed with SIGKILL at random
//! moments while it chats, runs heartbeats, deposits background updates in the mailbox and
//! drains them into turns. After every kill the data folder is read the way the next start
//! reads it, and checked against what the runner had acknowledged on stdout before it died:
//!
//! - every transcript and metadata file loads, with no warning (nothing to repair);
//! - every message the runner reported saved (`message_appended`) is there;
//! - no session's revision goes back;
//! - every deposited background update (`background_update`) is still in the mailbox or
//!   reached a turn, and one a turn acknowledged (`background_updates_read`) never reaches
//!   another turn.
//!
//! `VIGIL_CRASH_KILLS` sets the number of kills (default 20; `make crash` runs 1 000),
//! `VIGIL_CRASH_SEED` replays a run, `VIGIL_HEADLESS_BIN` runs another build of the runner.
//! The counts are printed at the end.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use vigil_core::clock::SystemClock;
use vigil_core::session::{MetaStore, SessionStore};
use vigil_fake_llm::{FakeLlm, RecordedRequest};

use super::support::{headless, numbered_echo_and_wake_only_heartbeat};

/// What the runner acknowledged on stdout, across all its lives.
#[derive(Default)]
struct Observed {
    /// `(session, message as JSON text)` for every `message_appended`.
    saved: Vec<(String, String)>,
    /// Mailbox event id → what a turn that reads it sends to the provider of it, in the form
    /// [`request_text`] holds it ([`as_sent`]).
    deposited: HashMap<String, Vec<String>>,
    /// Mailbox event id → how many provider requests there were when its ack was seen.
    read: HashMap<String, usize>,
    turns_finished: usize,
    /// Every `error` event, whole; the run fails on any.
    errors: Vec<String>,
    /// Which provider requests carried each deposited update.
    deliveries: Deliveries,
}

/// Which requests carried each deposited update's text, kept up to date as requests and
/// deposits arrive: a check after a kill scans only what is new, where rescanning every
/// request for every update made a 1 000-kill run slow down with each life.
#[derive(Default)]
struct Deliveries {
    /// Mailbox event id → indices of the requests whose text holds the update.
    at: HashMap<String, Vec<usize>>,
    /// How many requests were scanned for every id in `at`.
    scanned: usize,
}

impl Deliveries {
    fn update(&mut self, deposited: &HashMap<String, Vec<String>>, requests: &[String]) {
        for (id, needles) in deposited {
            // A new update is looked for in every request, a known one in the new requests.
            let from = if self.at.contains_key(id) { self.scanned } else { 0 };
            let hits = self.at.entry(id.clone()).or_default();
            hits.extend((from..requests.len()).filter(|&i| needles.iter().all(|n| requests[i].contains(n.as_str()))));
        }
        self.scanned = requests.len();
    }

    /// Whether a request from index `from` on carried the update.
    fn carried_from(&self, id: &str, from: usize) -> bool {
        self.at.get(id).is_some_and(|hits| hits.iter().any(|&i| i >= from))
    }
}

#[derive(Default, Debug)]
struct Counts {
    kills: usize,
    files_checked: usize,
    messages_checked: usize,
    revisions_checked: usize,
}

fn spawn(dir: &Path, fake: &FakeLlm) -> Child {
    headless(dir, fake, "sk-crash")
        .env("VIGIL_LOG", "error")
        .stderr(Stdio::null())
        .spawn()
        .expect("start vigil-headless")
}

/// What a turn that reads an update must send of it, escaped as inside a request's JSON
/// text: its id, which every shape of the context block gives (`agent/updates.rs`), and the
/// start of its summary's first line, which every shape short of a digest past its own bound
/// quotes (never reached here: a few updates at a time).
fn as_sent(id: &str, summary: &str) -> Vec<String> {
    let first: String = summary
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(100)
        .collect();
    [id.to_string(), first]
        .iter()
        .map(|s| {
            let json = serde_json::to_string(s).unwrap();
            json[1..json.len() - 1].to_string()
        })
        .collect()
}

/// Reads the runner's events into `observed` until its stdout closes.
fn watch(child: &mut Child, observed: Arc<Mutex<Observed>>, fake: Arc<FakeLlm>) -> std::thread::JoinHandle<()> {
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Ok(event) = serde_json::from_str::<Value>(&line) else {
                // A line cut by the kill: the runner never finished saying it.
                continue;
            };
            let mut o = observed.lock().unwrap();
            match event["type"].as_str().unwrap_or_default() {
                "message_appended" => {
                    let session = event["session_id"].as_str().unwrap_or_default().to_string();
                    o.saved.push((session, event["message"].to_string()));
                }
                "background_update" => {
                    let u = &event["update"];
                    let id = u["event_id"].as_str().unwrap();
                    let sent = as_sent(id, u["summary"].as_str().unwrap_or_default());
                    o.deposited.insert(id.to_string(), sent);
                }
                // A storage failure is what this run exists to catch: never let one pass.
                "error" => o.errors.push(event.to_string()),
                "background_updates_read" => {
                    let seen = fake.request_count();
                    for id in event["event_ids"].as_array().unwrap() {
                        o.read.insert(id.as_str().unwrap().to_string(), seen);
                    }
                }
                "turn_finished" => o.turns_finished += 1,
                _ => {}
            }
        }
    })
}

/// Every session's revision as it is on disk now.
fn revisions(dir: &Path) -> HashMap<String, u64> {
    let meta = MetaStore::open(dir, Arc::new(SystemClock)).unwrap();
    meta.list()
        .map(|l| l.sessions.into_iter().map(|s| (s.id, s.revision)).collect())
        .unwrap_or_default()
}

fn session_ids(dir: &Path, suffix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir.join("sessions")) else {
        return vec![];
    };
    entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(suffix).map(str::to_string))
        .collect()
}

/// The messages after a request's last assistant message: the turn's own user message with
/// its context block (where background updates are), and any steer that joined it before
/// the first call. The whole body would repeat the history in every request.
fn request_text(r: &RecordedRequest) -> String {
    let Some(messages) = r.body["messages"].as_array() else {
        return String::new();
    };
    let from = messages
        .iter()
        .rposition(|m| m["role"] == "assistant")
        .map_or(0, |i| i + 1);
    messages[from..].iter().map(|m| m.to_string()).collect()
}

/// Reads the folder as the next start would, and checks it against what was acknowledged.
fn check(dir: &Path, observed: &mut Observed, floor: &HashMap<String, u64>, requests: &[String], counts: &mut Counts) {
    assert!(
        observed.errors.is_empty(),
        "the runner reported errors: {:?}",
        observed.errors
    );
    let clock = Arc::new(SystemClock);
    let store = SessionStore::open(dir).unwrap();
    let meta = MetaStore::open(dir, clock).unwrap();
    let mut transcripts = HashMap::new();
    for id in session_ids(dir, ".jsonl") {
        let loaded = store
            .load(&id)
            .unwrap_or_else(|e| panic!("transcript {id} does not load: {e}"));
        assert!(
            loaded.warnings.is_empty(),
            "transcript {id} needed repair: {:?}",
            loaded.warnings
        );
        // Serialized through `Value`, whose keys are sorted, so equal messages give equal text.
        let messages: HashSet<String> = loaded
            .messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap().to_string())
            .collect();
        transcripts.insert(id, messages);
        counts.files_checked += 1;
    }
    for id in session_ids(dir, ".meta.json") {
        let loaded = meta
            .load(&id)
            .unwrap_or_else(|e| panic!("metadata {id} does not load: {e}"));
        assert!(loaded.warnings.is_empty(), "metadata {id}: {:?}", loaded.warnings);
        counts.files_checked += 1;
    }
    for (session, message) in &observed.saved {
        let kept = transcripts.get(session).is_some_and(|ms| ms.contains(message));
        assert!(kept, "an acknowledged message of {session} was lost: {message}");
        counts.messages_checked += 1;
    }
    let now = revisions(dir);
    for (id, before) in floor {
        let after = now.get(id).copied().unwrap_or(0);
        assert!(
            after >= *before,
            "the revision of {id} went back from {before} to {after}"
        );
        counts.revisions_checked += 1;
    }
    let on_disk = meta.load("main").map(|l| l.meta.mailbox).unwrap_or_default();
    // A deposit the kill cut off before its card was announced is tracked from here on.
    for e in &on_disk {
        let sent = as_sent(&e.event_id, &e.summary);
        observed.deposited.entry(e.event_id.clone()).or_insert(sent);
    }
    let mailbox: HashSet<String> = on_disk.into_iter().map(|e| e.event_id).collect();
    observed.deliveries.update(&observed.deposited, requests);
    for (id, seen_at) in &observed.read {
        assert!(
            !mailbox.contains(id),
            "update {id} was acknowledged but is back in the mailbox"
        );
        // Read before any life saw it deposited or found it on disk: nothing to compare.
        if !observed.deposited.contains_key(id) {
            continue;
        }
        let again = observed.deliveries.carried_from(id, (*seen_at).min(requests.len()));
        assert!(!again, "update {id} reached a turn after it was acknowledged");
    }
    for id in observed.deposited.keys() {
        if observed.read.contains_key(id) || mailbox.contains(id) {
            continue;
        }
        let delivered = observed.deliveries.carried_from(id, 0);
        assert!(delivered, "update {id} left the mailbox without reaching a turn: lost");
    }
}

fn send(stdin: &mut impl Write, op: Value) -> bool {
    writeln!(stdin, "{op}").and_then(|_| stdin.flush()).is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_loses_nothing() {
    let kills: usize = std::env::var("VIGIL_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("VIGIL_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("crash run: {kills} kills, VIGIL_CRASH_SEED={seed}");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let fake = Arc::new(numbered_echo_and_wake_only_heartbeat("sk-crash", &data).await);

    let report = tokio::task::spawn_blocking(move || {
        let mut rng = fastrand::Rng::with_seed(seed);
        let started = Instant::now();
        let observed = Arc::new(Mutex::new(Observed::default()));
        let mut counts = Counts::default();
        let mut floor = HashMap::new();
        let mut sent = 0usize;
        // Each request's text (`request_text`), added as requests arrive, never re-read.
        let mut texts: Vec<String> = Vec::new();
        let mailbox_len = |data: &Path| {
            let meta = MetaStore::open(data, Arc::new(SystemClock)).unwrap();
            meta.load("main").unwrap().meta.mailbox.len()
        };
        for life in 0.. {
            let mut child = spawn(&data, &fake);
            let reader = watch(&mut child, observed.clone(), fake.clone());
            let mut stdin = child.stdin.take().unwrap();
            if life >= kills {
                // The last lives end cleanly: a turn drains whatever is left. A wake saved
                // by an earlier life may run after that turn and deposit once more, so the
                // next clean life drains that too.
                send(&mut stdin, json!({"type": "user_message", "text": "anything new?"}));
                drop(stdin);
                let status = child.wait().unwrap();
                assert!(status.success(), "the last run failed: {status}");
                reader.join().unwrap();
                if mailbox_len(&data) == 0 || life >= kills + 3 {
                    break;
                }
                continue;
            }
            let deadline = Instant::now() + Duration::from_millis(rng.u64(30..1_500));
            while Instant::now() < deadline {
                let op = match rng.u8(0..4) {
                    0 => json!({"type": "wake", "reason": "manual"}),
                    _ => {
                        sent += 1;
                        json!({"type": "user_message", "text": format!("life {life} message {sent}")})
                    }
                };
                if !send(&mut stdin, op) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(rng.u64(0..250)));
            }
            for (id, rev) in revisions(&data) {
                let f = floor.entry(id).or_insert(0);
                *f = rev.max(*f);
            }
            child.kill().unwrap();
            child.wait().unwrap();
            reader.join().unwrap();
            counts.kills += 1;
            texts.extend(fake.requests_since(texts.len()).iter().map(request_text));
            let mut o = observed.lock().unwrap();
            check(&data, &mut o, &floor, &texts, &mut counts);
            if counts.kills % 50 == 0 {
                println!(
                    "crash run: {} kills, {} messages acknowledged, {} requests, {:.0?}",
                    counts.kills,
                    o.saved.len(),
                    texts.len(),
                    started.elapsed()
                );
            }
        }
        let mut o = observed.lock().unwrap();
        texts.extend(fake.requests_since(texts.len()).iter().map(request_text));
        check(&data, &mut o, &floor, &texts, &mut counts);
        assert_eq!(mailbox_len(&data), 0, "clean turns at the end leave the mailbox empty");
        // The checks above looked for each update in the requests; make sure they could see
        // one at all. Every update was acknowledged by the end, so every one reached a turn.
        let carried = o.deliveries.at.values().filter(|hits| !hits.is_empty()).count();
        let unseen: Vec<&String> = o.read.keys().filter(|id| !o.deliveries.carried_from(id, 0)).collect();
        assert!(unseen.is_empty(), "acknowledged updates never found in a request: {unseen:?}");
        assert!(
            o.deposited.len() > kills / 10 && o.read.len() > kills / 10 && carried > kills / 10,
            "too few updates to prove anything: {} deposited, {} acknowledged, {carried} found in requests",
            o.deposited.len(),
            o.read.len()
        );
        let redelivered = o.deliveries.at.values().filter(|hits| hits.len() > 1).count();
        format!(
            "crash run: {} kills, {} user messages sent, {} messages acknowledged and found, {} turns finished, \
             {} background updates deposited, {} acknowledged, {carried} found in requests, 0 lost, 0 read again after their ack, \
             {redelivered} shown to a second turn because the first died before its ack; \
             {} file loads and {} revision checks, all clean",
            counts.kills,
            sent,
            o.saved.len(),
            o.turns_finished,
            o.deposited.len(),
            o.read.len(),
            counts.files_checked,
            counts.revisions_checked,
        )
    })
    .await
    .unwrap();
    println!("{report}");
}
