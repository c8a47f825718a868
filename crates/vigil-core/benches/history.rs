//! `cargo bench -p vigil-core --bench history` (in `make bench`): the history index over
//! 100 000 generated messages of realistic lengths (user lines, longer replies, tool calls
//! and tool results up to a few KB) in 200 transcripts. Each figure against its goal, and
//! the search against its baseline in the same run:
//!
//! - full rebuild from the JSONL (goal ≤ 10 s);
//! - index size against the transcripts' bytes and against their indexed text (goal ≤ 1.5×
//!   the transcripts);
//! - query p99 over 300 searches of one or two words of mixed frequency (goal ≤ 20 ms), in
//!   wall time and in the searching thread's CPU time (the machine's load apart);
//! - a brute-force scan of the same JSONL for the same queries (read, parse, match every
//!   word as a prefix), the baseline: the index's p99 must be ≥ 50× faster;
//! - a transcript append (what a turn does per message, the index observing) while a
//!   search runs, against the same while none runs, in alternating phases (goal ≤ 1.05×);
//!   and appends the index observes against appends to a store nobody observes;
//! - the process's CPU time over 2 s idle with the index open (goal: ~0, the indexer
//!   thread sleeps on its channel).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use vigil_core::clock::SystemClock;
use vigil_core::history::{History, Query};
use vigil_core::protocol::{ContentBlock, Message, Role};
use vigil_core::session::SessionStore;

const MESSAGES: usize = 100_000;
const SESSIONS: usize = 200;
const QUERIES: usize = 300;

fn quantile(v: &[Duration], q: f64) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// 4 000 made-up words; drawn with a skew, so a few are common and most are rare.
fn vocabulary() -> Vec<String> {
    let syl = [
        "ka", "lo", "mi", "ner", "tus", "bra", "vel", "ion", "dre", "sat", "pu", "gor", "fen", "qui", "zo", "ark",
    ];
    let mut words = Vec::new();
    for a in syl {
        for b in syl {
            for c in syl {
                words.push(format!("{a}{b}{c}"));
                if words.len() == 4_000 {
                    return words;
                }
            }
        }
    }
    words
}

fn sentence(rng: &mut fastrand::Rng, vocab: &[String], words: usize) -> String {
    let mut s = String::new();
    for _ in 0..words {
        // Skewed: squaring a uniform draw favours the front of the list.
        let u = rng.f64();
        let w = &vocab[((u * u) * vocab.len() as f64) as usize % vocab.len()];
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(w);
    }
    s
}

fn message(rng: &mut fastrand::Rng, vocab: &[String], i: usize) -> Message {
    let ts = 1_700_000_000_000 + i as i64 * 30_000;
    let base = Message::user_text("", ts);
    match i % 4 {
        0 => Message::user_text(
            {
                let n = rng.usize(4..40);
                sentence(rng, vocab, n)
            },
            ts,
        ),
        1 => Message {
            role: Role::Assistant,
            content: vec![
                ContentBlock::Text {
                    text: {
                        let n = rng.usize(20..200);
                        sentence(rng, vocab, n)
                    },
                },
                ContentBlock::ToolUse {
                    id: format!("t{i}"),
                    name: "exec".into(),
                    input: json!({"command": format!("ls {}", sentence(rng, vocab, 3))}),
                },
            ],
            ..base
        },
        2 => Message {
            role: Role::ToolResult,
            content: vec![ContentBlock::ToolResult {
                tool_use_id: format!("t{}", i - 1),
                content: {
                    let n = rng.usize(10..600);
                    sentence(rng, vocab, n)
                },
                is_error: false,
            }],
            ..base
        },
        _ => Message {
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: {
                    let n = rng.usize(10..150);
                    sentence(rng, vocab, n)
                },
            }],
            ..base
        },
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| d.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

/// What the index replaces: every transcript read and parsed, every message's text matched.
fn brute_force(sessions: &Path, text: &str) -> usize {
    let want: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    let mut n = 0;
    for entry in std::fs::read_dir(sessions).unwrap().flatten() {
        let bytes = std::fs::read(entry.path()).unwrap();
        for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let Ok(m) = serde_json::from_slice::<Message>(line) else {
                continue;
            };
            let t = vigil_core::history::extract::extract(&m).text.to_lowercase();
            let words: Vec<&str> = t.split(|c: char| !c.is_alphanumeric()).collect();
            if want.iter().all(|w| words.iter().any(|x| x.starts_with(w.as_str()))) {
                n += 1;
            }
        }
    }
    n
}

/// Turns the bench's background searches on and off.
#[derive(Default)]
struct Searcher {
    want: AtomicBool,
    /// The searcher is between searches and will not start one while `want` is off.
    idle: AtomicBool,
    stop: AtomicBool,
}

impl Searcher {
    /// Searches on or off, returning once the searcher has seen it (a search in flight
    /// when turned off has finished).
    fn set(&self, on: bool, thread: &std::thread::Thread) {
        self.want.store(on, Ordering::Release);
        thread.unpark();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.idle.load(Ordering::Acquire) == on && Instant::now() < deadline {
            std::thread::yield_now();
        }
    }
}

/// This thread's CPU time: what a search costs, apart from the machine's load (the wall
/// times above include waiting for a core on a busy machine).
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec it is given, which lives on this stack.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// User + system CPU time of this process so far (from /proc, in clock ticks of 10 ms).
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    f.get(11).and_then(|u| u.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let vocab = vocabulary();
    let mut rng = fastrand::Rng::with_seed(35);
    let mut bodies = vec![String::new(); SESSIONS];
    let mut text_bytes = 0usize;
    for i in 0..MESSAGES {
        let m = message(&mut rng, &vocab, i);
        text_bytes += vigil_core::history::extract::extract(&m).text.len();
        bodies[i % SESSIONS].push_str(&serde_json::to_string(&m).unwrap());
        bodies[i % SESSIONS].push('\n');
    }
    let jsonl_bytes: usize = bodies.iter().map(String::len).sum();
    for (n, body) in bodies.iter().enumerate() {
        std::fs::write(sessions.join(format!("chat_{n:04}.jsonl")), body).unwrap();
    }
    println!("history: load average {} at the start", load_average());
    println!(
        "history: {MESSAGES} messages in {SESSIONS} transcripts, {:.1} MB of JSONL, {:.1} MB of indexed text",
        jsonl_bytes as f64 / 1e6,
        text_bytes as f64 / 1e6
    );

    let store = SessionStore::open(dir.path()).unwrap();
    let (start, ticks) = (Instant::now(), cpu_ticks());
    let history = History::open(dir.path(), &store, Arc::new(SystemClock)).unwrap();
    history.settle();
    let rebuild = start.elapsed();
    println!(
        "history rebuild: {:.2} s (goal ≤ 10 s), {:.2} s of CPU",
        rebuild.as_secs_f64(),
        (cpu_ticks() - ticks) as f64 / 100.0
    );
    let index_bytes = dir_size(&history.dir());
    println!(
        "history index size: {:.1} MB = {:.2}× the transcripts (goal ≤ 1.5×), {:.2}× their indexed text",
        index_bytes as f64 / 1e6,
        index_bytes as f64 / jsonl_bytes as f64,
        index_bytes as f64 / text_bytes as f64
    );

    // Queries: one or two words, from common to rare.
    let queries: Vec<String> = (0..QUERIES)
        .map(|i| {
            let pick = |r: &mut fastrand::Rng| vocab[r.usize(0..vocab.len())].clone();
            if i % 3 == 0 {
                format!("{} {}", pick(&mut rng), pick(&mut rng))
            } else {
                pick(&mut rng)
            }
        })
        .collect();
    let (mut index_times, mut index_cpu) = (Vec::new(), Vec::new());
    for q in &queries {
        let (t, c) = (Instant::now(), thread_cpu());
        let hits = history
            .search(&Query {
                text: q.clone(),
                limit: 20,
                ..Query::default()
            })
            .unwrap();
        index_times.push(t.elapsed());
        index_cpu.push(thread_cpu() - c);
        std::hint::black_box(hits);
    }
    let (index_p99, index_cpu_p99) = (quantile(&index_times, 0.99), quantile(&index_cpu, 0.99));
    println!(
        "history query: p50 {:.2} ms, p99 {:.2} ms (goal ≤ 20 ms); CPU time p50 {:.2} ms, p99 {:.2} ms",
        quantile(&index_times, 0.5).as_secs_f64() * 1e3,
        index_p99.as_secs_f64() * 1e3,
        quantile(&index_cpu, 0.5).as_secs_f64() * 1e3,
        index_cpu_p99.as_secs_f64() * 1e3
    );
    // The scan is slow: every 10th query is enough for its p99.
    let (mut scan_times, mut scan_cpu) = (Vec::new(), Vec::new());
    for q in queries.iter().step_by(10) {
        let (t, c) = (Instant::now(), thread_cpu());
        std::hint::black_box(brute_force(&sessions, q));
        scan_times.push(t.elapsed());
        scan_cpu.push(thread_cpu() - c);
    }
    let (scan_p99, scan_cpu_p99) = (quantile(&scan_times, 0.99), quantile(&scan_cpu, 0.99));
    println!(
        "history brute-force scan: p99 {:.1} ms (CPU {:.1} ms); index {:.0}× faster at p99 (goal ≥ 50×), {:.0}× in CPU time",
        scan_p99.as_secs_f64() * 1e3,
        scan_cpu_p99.as_secs_f64() * 1e3,
        scan_p99.as_secs_f64() / index_p99.as_secs_f64(),
        scan_cpu_p99.as_secs_f64() / index_cpu_p99.as_secs_f64()
    );

    // A turn's per-message cost (an append to its transcript, with the index observing)
    // while a search runs against the same while none runs: phases of PHASE appends,
    // alternating, so drift in the machine's load falls on both alike.
    const PHASE: usize = 50;
    const PHASES: usize = 20;
    let control = Arc::new(Searcher {
        idle: AtomicBool::new(true),
        ..Searcher::default()
    });
    let searcher = {
        let (history, control, queries) = (history.clone(), control.clone(), queries.clone());
        std::thread::spawn(move || {
            let mut i = 0;
            while !control.stop.load(Ordering::Acquire) {
                if control.want.load(Ordering::Acquire) {
                    control.idle.store(false, Ordering::Release);
                    let q = Query {
                        text: queries[i % queries.len()].clone(),
                        limit: 20,
                        ..Query::default()
                    };
                    std::hint::black_box(history.search(&q).unwrap());
                    i += 1;
                } else {
                    control.idle.store(true, Ordering::Release);
                    std::thread::park_timeout(Duration::from_millis(5));
                }
            }
        })
    };
    let (mut searching, mut quiet) = (Vec::new(), Vec::new());
    let (mut searching_cpu, mut quiet_cpu) = (Vec::new(), Vec::new());
    for phase in 0..PHASES {
        let on = phase % 2 == 0;
        control.set(on, searcher.thread());
        for _ in 0..PHASE {
            let m = Message::user_text(sentence(&mut rng, &vocab, 30), 0);
            let (t, c) = (Instant::now(), thread_cpu());
            store.append("live", &m).unwrap();
            let (wall, cpu) = (t.elapsed(), thread_cpu() - c);
            if on {
                searching.push(wall);
                searching_cpu.push(cpu);
            } else {
                quiet.push(wall);
                quiet_cpu.push(cpu);
            }
        }
    }
    control.stop.store(true, Ordering::Release);
    searcher.thread().unpark();
    searcher.join().unwrap();
    let (s, q) = (quantile(&searching, 0.5), quantile(&quiet, 0.5));
    let (sc, qc) = (quantile(&searching_cpu, 0.5), quantile(&quiet_cpu, 0.5));
    println!(
        "history append while searching: median {:.3} ms vs {:.3} ms with no search = {:.2}× (goal ≤ 1.05×); \
         CPU time {:.3} ms vs {:.3} ms = {:.2}×",
        s.as_secs_f64() * 1e3,
        q.as_secs_f64() * 1e3,
        s.as_secs_f64() / q.as_secs_f64(),
        sc.as_secs_f64() * 1e3,
        qc.as_secs_f64() * 1e3,
        sc.as_secs_f64() / qc.as_secs_f64()
    );
    // What the index costs a turn at all: appends it observes against appends to a store
    // nobody observes, interleaved (the order swapped every other pair).
    let plain_dir = tempfile::tempdir().unwrap();
    let plain = SessionStore::open(plain_dir.path()).unwrap();
    let (mut observed, mut bare) = (Vec::new(), Vec::new());
    for i in 0..(PHASE * PHASES / 2) {
        let m = Message::user_text(sentence(&mut rng, &vocab, 30), 0);
        for first in [i % 2 == 0, i % 2 == 1] {
            let t = Instant::now();
            if first {
                store.append("live", &m).unwrap();
                observed.push(t.elapsed());
            } else {
                plain.append("live", &m).unwrap();
                bare.push(t.elapsed());
            }
        }
    }
    let (o, b) = (quantile(&observed, 0.5), quantile(&bare, 0.5));
    println!(
        "history append observed by the index: median {:.3} ms vs {:.3} ms unobserved = {:.2}×",
        o.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        o.as_secs_f64() / b.as_secs_f64()
    );

    history.settle();
    let before = cpu_ticks();
    std::thread::sleep(Duration::from_secs(2));
    let idle = cpu_ticks() - before;
    println!(
        "history idle: {} ms of CPU in 2 s with the index open (goal: none)",
        idle * 10
    );
    println!("history: load average {} at the end", load_average());
}
