//! # history
//!
//! Owns the full-text index of every transcript — conversations, routine jobs, heartbeat
//! runs — in `<data>/history/index.sqlite`, inside Vigil's data folder (which no sandbox
//! shows and no file tool opens), and the searches over it by the agent
//! ([`crate::tools::history`]) and the user.
//!
//! The JSONL transcripts stay the only truth. The index is derived from them ([`indexer`]):
//! rebuilt when missing, corrupt or of another version ([`db`]); at start every transcript
//! is checked by identity (device, inode), length and last bytes and caught up or indexed
//! again; afterwards a transcript writer only *tells* the indexer a session changed
//! ([`crate::session::TranscriptObserver`], one channel send), and the indexer's own thread
//! reads the new lines. A turn never waits for the index.
//!
//! The index holds each message's words (a contentless FTS5 table) and where its line is,
//! not its text: snippets and `read_history` read the line back from the transcript
//! ([`source`]), which keeps the index about half the transcripts' size and means it never
//! shows text the transcript no longer holds.
//!
//! SQLite FTS5 (bundled) rather than tantivy: one C file that builds in well under tantivy's
//! time on two cores, one index file plus its WAL, bm25 built in, and WAL's crash safety (a
//! killed indexer loses only its open transaction, and catches up from the JSONL).
//!
//! Forgetting: deleting a session removes it from results at once (a set checked by every
//! search until the indexer has deleted it), then from the index, which is compacted (FTS5
//! `optimize`, `VACUUM`, `wal_checkpoint(TRUNCATE)`, with `secure_delete` on) so none of its
//! text stays in the files.
//!
//! Must never: block a transcript writer, hold text a transcript does not (or no longer)
//! hold after a catch-up, or show a deleted session's message.

pub(crate) mod db;
pub mod extract;
mod indexer;
pub mod query;
mod snippet;
mod source;
pub mod wire;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};

use crate::clock::Clock;
use crate::session::{SessionStore, SessionType, TranscriptObserver};
use indexer::Cmd;

/// How long a search right after start waits for the start's catch-up (a rebuild of a
/// very large history takes longer: the search then sees what is indexed so far).
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What kind of run a transcript is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Conversation,
    Job,
    Heartbeat,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Conversation => "conversation",
            Kind::Job => "job",
            Kind::Heartbeat => "heartbeat",
        }
    }

    pub fn parse(s: &str) -> Kind {
        match s {
            "job" => Kind::Job,
            "heartbeat" => Kind::Heartbeat,
            _ => Kind::Conversation,
        }
    }
}

/// A search.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Words, matched as prefixes, all of them required.
    pub text: String,
    /// Only this session.
    pub session: Option<String>,
    /// Only these kinds (none: all).
    pub kinds: Vec<Kind>,
    /// Only messages at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Only messages before this time.
    pub until_ms: Option<i64>,
    /// At most this many results (1–200).
    pub limit: usize,
}

/// One message found.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub session: String,
    /// The session's title as it is now (empty if it has none).
    pub title: String,
    pub kind: Kind,
    /// The message's stable id ([`crate::session::ids`]).
    pub message_id: String,
    /// Its place among the transcript's messages, from 0: where the UI scrolls to.
    pub seq: u64,
    pub role: String,
    pub ts: i64,
    /// Words around the match, each matched word between [`query::MARK_START`] and
    /// [`query::MARK_END`].
    pub snippet: String,
}

/// A message near a hit, as indexed (tool results bounded).
#[derive(Debug, Clone, PartialEq)]
pub struct Nearby {
    pub message_id: String,
    pub seq: u64,
    pub role: String,
    pub ts: i64,
    pub text: String,
    /// This is the message asked about.
    pub hit: bool,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HistoryError {
    /// The index could not be opened or read. Recover: try again; it is rebuilt from the
    /// transcripts at the next start if it is damaged.
    #[error("the history index could not be read ({0}); try again, or restart Vigil to rebuild it")]
    Unavailable(String),
}

impl From<rusqlite::Error> for HistoryError {
    fn from(e: rusqlite::Error) -> Self {
        HistoryError::Unavailable(e.to_string())
    }
}

/// State the indexer thread and searches share.
#[derive(Default)]
pub(crate) struct Shared {
    /// Deleted sessions the indexer has not yet removed: searches skip them meanwhile.
    forgotten: Mutex<HashSet<String>>,
    /// Whether the start's catch-up is done.
    ready: Mutex<bool>,
    ready_cv: Condvar,
    /// The owner is gone: a catch-up in progress stops between transcripts.
    stop: AtomicBool,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn set_ready(&self) {
        *self.ready.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.ready_cv.notify_all();
    }

    fn removed_done(&self, ids: &BTreeSet<String>) {
        let mut f = self.forgotten.lock().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            f.remove(id);
        }
    }
}

/// The index's owner: a cheap clonable handle. The indexer thread lives as long as the
/// session store it observes.
#[derive(Clone)]
pub struct History {
    inner: Arc<Inner>,
}

struct Inner {
    data_dir: PathBuf,
    sessions: PathBuf,
    /// A `std` channel: sending never blocks and needs no runtime (writers may be threads).
    tx: Mutex<Sender<Cmd>>,
    shared: Arc<Shared>,
    /// Read-only connections kept between searches; each search takes one, so searches run
    /// side by side (WAL readers never wait for the writer).
    readers: Mutex<Vec<rusqlite::Connection>>,
    /// The setting that keeps heartbeat runs out of the agent's searches.
    agent_skips_heartbeats: AtomicBool,
    clock: Arc<dyn Clock>,
    indexer: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// The last handle gone: the indexer stops and closes the index before this returns, so
/// the files are left alone by the time the next `History` (or anything else) opens them.
impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let _ = self.tx.lock().unwrap_or_else(|e| e.into_inner()).send(Cmd::Stop);
        if let Some(thread) = self.indexer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = thread.join();
        }
    }
}

/// What the session store calls: one channel send.
struct Notifier {
    tx: Mutex<Sender<Cmd>>,
    shared: Arc<Shared>,
}

impl TranscriptObserver for Notifier {
    fn changed(&self, id: &str) {
        let _ = self
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Cmd::Changed(id.into()));
    }

    fn removed(&self, id: &str) {
        self.shared
            .forgotten
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string());
        let _ = self
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Cmd::Removed(id.into()));
    }
}

impl History {
    /// Opens (or rebuilds) the index in `data_dir`, starts the indexer, which first catches
    /// up with every transcript, and observes `store` from now on. Returns at once.
    pub fn open(data_dir: &Path, store: &SessionStore, clock: Arc<dyn Clock>) -> Result<Self, HistoryError> {
        let (conn, _fresh) = db::open_writer(data_dir)?;
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let sessions = store.dir().to_path_buf();
        let thread_shared = Arc::clone(&shared);
        let thread_sessions = sessions.clone();
        let indexer = std::thread::Builder::new()
            .name("vigil-history".into())
            .spawn(move || indexer::run(conn, thread_sessions, thread_shared, rx))
            .map_err(|e| HistoryError::Unavailable(e.to_string()))?;
        store.observe(Arc::new(Notifier {
            tx: Mutex::new(tx.clone()),
            shared: Arc::clone(&shared),
        }));
        Ok(Self {
            inner: Arc::new(Inner {
                data_dir: data_dir.to_path_buf(),
                sessions,
                tx: Mutex::new(tx),
                shared,
                readers: Mutex::default(),
                agent_skips_heartbeats: AtomicBool::new(false),
                clock,
                indexer: Mutex::new(Some(indexer)),
            }),
        })
    }

    /// [`Self::open`], or `None` with a warning in the log: Vigil works without its index.
    pub fn open_or_warn(data_dir: &Path, store: &SessionStore, clock: Arc<dyn Clock>) -> Option<Self> {
        Self::open(data_dir, store, clock)
            .inspect_err(|e| tracing::warn!("searching past conversations is off: {e}"))
            .ok()
    }

    /// The setting: keep heartbeat runs out of the agent's searches (the user's still
    /// find them).
    pub fn set_agent_skips_heartbeats(&self, skip: bool) {
        self.inner.agent_skips_heartbeats.store(skip, Ordering::Relaxed);
    }

    /// Waits (blocking) until the indexer has done everything asked of it so far, the
    /// start's catch-up included.
    pub fn settle(&self) {
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        let sent = self
            .inner
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(Cmd::Flush(done_tx));
        if sent.is_ok() {
            let _ = done_rx.recv();
        }
    }

    /// Whether the start's catch-up is done (before, searches see what was indexed so far).
    pub fn ready(&self) -> bool {
        *self.inner.shared.ready.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits (blocking) until the start's catch-up is done, at most `max`: a search just
    /// after start should not miss what was said before it for want of a moment.
    pub fn wait_ready(&self, max: std::time::Duration) {
        let ready = self.inner.shared.ready.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self.inner.shared.ready_cv.wait_timeout_while(ready, max, |r| !*r);
    }

    /// A search as the user makes it: every kind of run. Blocking (disk): call it from a
    /// blocking thread.
    pub fn search(&self, q: &Query) -> Result<Vec<Hit>, HistoryError> {
        self.wait_ready(READY_WAIT);
        let now = self.inner.clock.now_ms();
        let mut hits = self.with_reader(|conn| query::search(conn, &self.inner.sessions, q, now))?;
        let forgotten = self
            .inner
            .shared
            .forgotten
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        hits.retain(|h| !forgotten.contains(&h.session));
        let mut titles = std::collections::HashMap::new();
        for h in &mut hits {
            h.title = titles
                .entry(h.session.clone())
                .or_insert_with(|| session_title(&self.inner.sessions, &h.session))
                .clone();
        }
        Ok(hits)
    }

    /// A search as the agent makes it: heartbeat runs left out when the setting says so.
    pub fn search_for_agent(&self, q: &Query) -> Result<Vec<Hit>, HistoryError> {
        let mut q = q.clone();
        if self.inner.agent_skips_heartbeats.load(Ordering::Relaxed) {
            if q.kinds.is_empty() {
                q.kinds = vec![Kind::Conversation, Kind::Job];
            }
            q.kinds.retain(|k| *k != Kind::Heartbeat);
            if q.kinds.is_empty() {
                return Ok(Vec::new());
            }
        }
        self.search(&q)
    }

    /// The messages around one, by its session and id; `None` if there is no such message
    /// (or the session was deleted). For the agent, heartbeat runs are hidden when they are
    /// from its searches.
    pub fn around(
        &self,
        session: &str,
        message_id: &str,
        before: u64,
        after: u64,
        for_agent: bool,
    ) -> Result<Option<Vec<Nearby>>, HistoryError> {
        self.wait_ready(READY_WAIT);
        if self
            .inner
            .shared
            .forgotten
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(session)
        {
            return Ok(None);
        }
        if for_agent
            && self.inner.agent_skips_heartbeats.load(Ordering::Relaxed)
            && session_kind(&self.inner.sessions, session) == Kind::Heartbeat
        {
            return Ok(None);
        }
        self.with_reader(|conn| {
            query::around(
                conn,
                &self.inner.sessions,
                session,
                message_id,
                before.min(50),
                after.min(50),
            )
        })
    }

    /// The folder the index's files are in.
    pub fn dir(&self) -> PathBuf {
        db::dir(&self.inner.data_dir)
    }

    fn with_reader<T>(&self, f: impl FnOnce(&rusqlite::Connection) -> rusqlite::Result<T>) -> Result<T, HistoryError> {
        let pooled = self.inner.readers.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match pooled {
            Some(c) => c,
            None => db::open_reader(&self.inner.data_dir)?,
        };
        let out = f(&conn);
        let mut readers = self.inner.readers.lock().unwrap_or_else(|e| e.into_inner());
        if readers.len() < 4 {
            readers.push(conn);
        }
        Ok(out?)
    }
}

/// The session's metadata (inside its checksummed envelope), read leniently: the index
/// only labels results with it.
fn session_meta(sessions: &Path, id: &str) -> serde_json::Value {
    let path = sessions.join(format!("{id}{}", crate::session::suffix::META));
    std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .map(|mut v| v["meta"].take())
        .unwrap_or_default()
}

/// What a session's metadata says it is; a session without readable metadata is told by
/// its id's shape (`heartbeat_session_…`, `job_…`), else taken as a conversation.
pub(crate) fn session_kind(sessions: &Path, id: &str) -> Kind {
    let typed = serde_json::from_value::<SessionType>(session_meta(sessions, id)["session_type"].take()).ok();
    match typed {
        Some(SessionType::Primary) => Kind::Conversation,
        Some(SessionType::Job) => Kind::Job,
        Some(SessionType::Heartbeat) => Kind::Heartbeat,
        None if id.starts_with("heartbeat_session_") => Kind::Heartbeat,
        None if id.starts_with("job_") => Kind::Job,
        None => Kind::Conversation,
    }
}

fn session_title(sessions: &Path, id: &str) -> String {
    session_meta(sessions, id)["title"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests;
