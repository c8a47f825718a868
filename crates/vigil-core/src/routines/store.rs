//! The routine store: the ```` ```json ```` block under `## Tasks` in `HEARTBEAT.md` (seed
//! 003 §11), parsed to `ok | corrupted | empty`, and rewritten in place.
//!
//! - Reads are cached by the file's size and modification time, so a scheduler tick costs a
//!   `stat` when nothing changed; a hand edit is seen at the next tick.
//! - Every write re-reads the file under the lock the heartbeat session's writes take
//!   (`heartbeat_session_main`, across processes too), changes only the block's contents
//!   (the user's own text around it stays byte for byte), and replaces the file atomically.
//! - After each good parse the task list is copied to `.heartbeat_snapshot.json`, the floor
//!   a corrupted block can be rebuilt from.
//!
//! Must never: write over a corrupted block (the user's text would be lost; writes fail with
//! [`StoreError::Corrupted`] until it is fixed or restored on purpose), drop a task it cannot
//! read (it is kept verbatim), or write without the lock.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde_json::{Map, Value};

use super::model::Routine;
use crate::clock::Clock;
use crate::durable::write_atomic;
use crate::heartbeat::file::HEARTBEAT_FILE;
use crate::session::{SessionError, SessionLocks};

/// The snapshot's file name, next to `HEARTBEAT.md`.
pub const SNAPSHOT_FILE: &str = ".heartbeat_snapshot.json";
/// The schema version written.
pub const SCHEMA_VERSION: u64 = 2;

/// Why the store could not do something; each says how to recover.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The task block is not valid; nothing is written until it is. Recover: fix the JSON in
    /// `HEARTBEAT.md`, or restore the routines from the snapshot.
    #[error("the task block in HEARTBEAT.md is corrupted ({0}); fix it, or restore the routines from {SNAPSHOT_FILE}")]
    Corrupted(String),
    /// The file could not be read or written. Recover: fix permissions / free space.
    #[error("could not {action} {}: {source}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Another writer holds the lock. Recover: try again shortly.
    #[error("HEARTBEAT.md is being written by someone else: {0}")]
    Locked(#[from] SessionError),
    /// The change itself was refused (a bad schedule, a duplicate, no such routine).
    /// Recover: change the request as the message says.
    #[error("{0}")]
    Rejected(Refusal),
}

/// Why a change was refused, and the draft field it is about when there is one (`title`,
/// `schedule`, `timezone`, `next_run_at`, `timeout_seconds`, `kind`), so an editor can show
/// it at that field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub field: Option<&'static str>,
    pub message: String,
}

impl Refusal {
    /// A refusal about the request as a whole.
    pub fn new(message: impl Into<String>) -> Self {
        Refusal {
            field: None,
            message: message.into(),
        }
    }

    /// A refusal about one field of the draft.
    pub fn at(field: &'static str, message: impl Into<String>) -> Self {
        Refusal {
            field: Some(field),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// One task of the block: its text as found, and the routine if it could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub raw: Value,
    pub routine: Result<Routine, String>,
}

impl Entry {
    pub fn new(routine: Routine) -> Self {
        Self {
            raw: serde_json::to_value(&routine).unwrap_or(Value::Null),
            routine: Ok(routine),
        }
    }

    /// The id, also for an entry that could not be read.
    pub fn id(&self) -> Option<&str> {
        match &self.routine {
            Ok(r) => Some(&r.id),
            Err(_) => self.raw.get("id").and_then(Value::as_str),
        }
    }
}

/// What the block held when the file was read.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// No task block.
    Empty,
    Corrupted(String),
    Ok {
        entries: Vec<Entry>,
        /// Top-level fields besides `version` and `tasks`, kept.
        extra: Map<String, Value>,
    },
}

impl Parsed {
    pub fn entries(&self) -> &[Entry] {
        match self {
            Parsed::Ok { entries, .. } => entries,
            _ => &[],
        }
    }
}

/// Where the block's contents are in the text (byte offsets), or why it is broken.
fn find_block(text: &str) -> Result<Option<(usize, usize)>, String> {
    let mut offset = 0;
    let mut in_tasks = false;
    let mut open: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        match open {
            Some(start) if t == "```" => return Ok(Some((start, offset))),
            Some(_) => {}
            None if t.starts_with('#') => {
                let title = t.trim_start_matches('#').trim();
                in_tasks = title.eq_ignore_ascii_case("tasks");
            }
            None if in_tasks && t.to_ascii_lowercase().starts_with("```json") => open = Some(offset + line.len()),
            None => {}
        }
        offset += line.len();
    }
    match open {
        Some(_) => Err("the ```json block under ## Tasks has no closing ```".into()),
        None => Ok(None),
    }
}

/// Whether `before` and `after` hold the same task block (as JSON values, so layout does not
/// matter): what the file tools check before they write `HEARTBEAT.md`, since routines are
/// changed only through the routine tools, which check schedules, the limit and duplicates,
/// and announce what the agent added.
pub fn same_tasks(before: &str, after: &str) -> bool {
    let block = |text: &str| -> Result<Option<Value>, String> {
        match find_block(text)? {
            Some((start, end)) => serde_json::from_str(&text[start..end])
                .map(Some)
                .map_err(|e| e.to_string()),
            None => Ok(None),
        }
    };
    match (block(before), block(after)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Parses `HEARTBEAT.md`'s text (seed 003 §11.4 `parse_heartbeat_md`).
pub fn parse(text: &str) -> Parsed {
    let (start, end) = match find_block(text) {
        Ok(Some(range)) => range,
        Ok(None) => return Parsed::Empty,
        Err(e) => return Parsed::Corrupted(e),
    };
    let doc: Value = match serde_json::from_str(&text[start..end]) {
        Ok(v) => v,
        Err(e) => {
            let line = text[..start].lines().count() + e.line();
            return Parsed::Corrupted(format!("invalid JSON at line {line}, column {}: {e}", e.column()));
        }
    };
    let Value::Object(mut doc) = doc else {
        return Parsed::Corrupted("the block must be an object like {\"version\": 2, \"tasks\": [...]}".into());
    };
    let tasks = match doc.remove("tasks") {
        Some(Value::Array(t)) => t,
        None | Some(Value::Null) => vec![],
        Some(_) => return Parsed::Corrupted("\"tasks\" must be a list".into()),
    };
    doc.remove("version");
    let mut seen = std::collections::HashSet::new();
    let entries = tasks
        .into_iter()
        .enumerate()
        .map(|(i, raw)| {
            let routine = serde_json::from_value::<Routine>(raw.clone())
                .map_err(|e| format!("task {} cannot be read: {e}", i + 1))
                .and_then(|r| {
                    if r.id.trim().is_empty() {
                        Err(format!("task {} has an empty id", i + 1))
                    } else if !seen.insert(r.id.clone()) {
                        Err(format!("task {} repeats the id \"{}\"", i + 1, r.id))
                    } else {
                        Ok(r)
                    }
                });
            Entry { raw, routine }
        })
        .collect();
    Parsed::Ok { entries, extra: doc }
}

/// The block's JSON for `entries`: readable ones as they are now, unreadable ones verbatim.
/// Serialised from structs, not a `Value`, so fields keep their schema order for people.
fn block_json(entries: &[Entry], extra: &Map<String, Value>) -> String {
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum Task<'a> {
        Read(&'a Routine),
        Raw(&'a Value),
    }
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        version: u64,
        tasks: Vec<Task<'a>>,
        #[serde(flatten)]
        extra: &'a Map<String, Value>,
    }
    let doc = Doc {
        version: SCHEMA_VERSION,
        tasks: entries
            .iter()
            .map(|e| match &e.routine {
                Ok(r) => Task::Read(r),
                Err(_) => Task::Raw(&e.raw),
            })
            .collect(),
        extra,
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// `text` with the block's contents replaced (or a `## Tasks` block appended).
pub fn render(text: &str, entries: &[Entry], extra: &Map<String, Value>) -> String {
    let json = block_json(entries, extra);
    match find_block(text) {
        Ok(Some((start, end))) => format!("{}{json}{}", &text[..start], &text[end..]),
        _ => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str("## Tasks\n\n<!-- Routines: edit with care, or ask Vigil. Times are ISO-8601. -->\n```json\n");
            out.push_str(&json);
            out.push_str("```\n");
            out
        }
    }
}

/// `text` without the task block, for the heartbeat's copy of the file (the block's due
/// tasks reach the model as `## Due Tasks` instead) and its effectively-empty rule.
pub fn strip_block(text: &str) -> String {
    match find_block(text) {
        Ok(Some((start, end))) => {
            // Cut from the opening fence line to the closing fence line.
            let open = text[..start].trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
            let close_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
            format!("{}{}", &text[..open], &text[close_end..])
        }
        _ => text.to_string(),
    }
}

/// Splits the file into the free-text checks and the routines' section (from its `## Tasks`
/// heading to the block's closing fence), or says why the section cannot be found.
pub fn split_checks(text: &str) -> Result<(String, Option<&str>), String> {
    let Some((start, end)) = find_block(text)? else {
        return Ok((text.to_string(), None));
    };
    // The section starts at the last heading before the block (the one `find_block` took).
    let mut heading = 0;
    let mut offset = 0;
    for line in text[..start].split_inclusive('\n') {
        if line.trim_start().starts_with('#') {
            heading = offset;
        }
        offset += line.len();
    }
    let close_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
    let checks = format!("{}{}", &text[..heading], &text[close_end..]);
    Ok((checks, Some(&text[heading..close_end])))
}

/// The file with `checks` as its free text and `section` (the routines) after it.
fn join_checks(checks: &str, section: Option<&str>) -> String {
    let mut out = checks.trim_end().to_string();
    if let Some(section) = section {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(section.trim_end());
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// The file as last read.
#[derive(Debug, Clone)]
pub struct FileState {
    pub parsed: Parsed,
    /// The file's text ("" when there is none).
    pub text: String,
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

/// The routine store; cheap to clone.
#[derive(Clone)]
pub struct RoutineStore {
    inner: Arc<Inner>,
}

struct Inner {
    workspace: PathBuf,
    locks: SessionLocks,
    /// The lock id: the heartbeat session's, so routine writes and heartbeat writes exclude
    /// each other (seed 003 §8.2).
    lock_id: String,
    /// `std` lock: the last read, keyed by the file's stamp; never held across an await.
    cache: Mutex<Option<(Option<Stamp>, Arc<FileState>)>>,
    /// The snapshot last written, to write it only when it changes.
    snapshot: Mutex<Option<String>>,
}

impl RoutineStore {
    pub fn new(workspace: &Path, locks: SessionLocks, _clock: Arc<dyn Clock>) -> Self {
        Self {
            inner: Arc::new(Inner {
                workspace: workspace.to_path_buf(),
                locks,
                lock_id: crate::heartbeat::session_id(crate::heartbeat::AGENT),
                cache: Mutex::new(None),
                snapshot: Mutex::new(None),
            }),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.inner.workspace.join(HEARTBEAT_FILE)
    }

    pub fn snapshot_path(&self) -> PathBuf {
        self.inner.workspace.join(SNAPSHOT_FILE)
    }

    fn stamp(&self) -> Result<Option<Stamp>, StoreError> {
        let path = self.path();
        match std::fs::metadata(&path) {
            Ok(m) => Ok(Some(Stamp {
                len: m.len(),
                modified: m.modified().ok(),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io {
                action: "read",
                path,
                source,
            }),
        }
    }

    /// The file's text, read beneath its folder (a symlink in its place is refused).
    fn read_text(&self) -> Result<String, StoreError> {
        use crate::beneath::BeneathError;
        let path = self.path();
        let folder = path.parent().unwrap_or(Path::new("."));
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or(HEARTBEAT_FILE);
        match crate::beneath::read(folder, name) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| StoreError::Io {
                action: "read",
                path,
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
            }),
            Err(BeneathError::Missing) => Ok(String::new()),
            Err(BeneathError::Io(source)) => Err(StoreError::Io {
                action: "read",
                path,
                source,
            }),
            Err(link @ BeneathError::Link) => Err(StoreError::Io {
                action: "read",
                path,
                source: std::io::Error::other(link.to_string()),
            }),
        }
    }

    /// Replaces `HEARTBEAT.md` atomically; the caller holds the lock.
    fn write(&self, text: &str) -> Result<(), StoreError> {
        let path = self.path();
        write_atomic(&path, text.as_bytes())
            .map(|_| ())
            .map_err(|source| StoreError::Io {
                action: "write",
                path,
                source,
            })
    }

    /// The file now: from the cache when its size and time are unchanged.
    pub fn read(&self) -> Result<Arc<FileState>, StoreError> {
        let stamp = self.stamp()?;
        if let Some((s, state)) = &*self.cache() {
            if *s == stamp {
                return Ok(state.clone());
            }
        }
        let text = self.read_text()?;
        let state = Arc::new(FileState {
            parsed: parse(&text),
            text,
        });
        self.save_snapshot(&state.parsed);
        *self.cache() = Some((stamp, state.clone()));
        Ok(state)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Option<(Option<Stamp>, Arc<FileState>)>> {
        self.inner.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the task list under the lock: re-reads the file, hands `f` the entries, and
    /// writes the result if anything changed. `f`'s error leaves the file untouched.
    pub async fn update<R>(&self, f: impl FnOnce(&mut Vec<Entry>) -> Result<R, StoreError>) -> Result<R, StoreError> {
        let guard = self.inner.locks.acquire(&self.inner.lock_id).await?;
        let text = self.read_text()?;
        let (mut entries, extra) = match parse(&text) {
            Parsed::Corrupted(e) => return Err(StoreError::Corrupted(e)),
            Parsed::Empty => (vec![], Map::new()),
            Parsed::Ok { entries, extra } => (entries, extra),
        };
        let before = entries.clone();
        let result = f(&mut entries)?;
        if entries != before {
            let out = render(&text, &entries, &extra);
            guard.ensure_held()?;
            self.write(&out)?;
            let state = Arc::new(FileState {
                parsed: parse(&out),
                text: out,
            });
            self.save_snapshot(&state.parsed);
            *self.cache() = Some((self.stamp()?, state));
        }
        drop(guard);
        Ok(result)
    }

    /// The checks part of the file now, from the cache when unchanged.
    pub fn checks(&self) -> Result<String, StoreError> {
        let state = self.read()?;
        split_checks(&state.text)
            .map(|(checks, _)| checks)
            .map_err(StoreError::Corrupted)
    }

    /// Replaces the checks with `text`, keeping the routines' section as it is on disk now.
    /// `expected` is the checks as the editor loaded them: if the file's checks changed
    /// since (the agent or another editor wrote them), nothing is written and the error says
    /// so, rather than one side's words silently replacing the other's.
    pub async fn save_checks(&self, expected: &str, text: &str) -> Result<String, StoreError> {
        if !matches!(find_block(text), Ok(None)) {
            return Err(StoreError::Rejected(Refusal::new(
                "the checks cannot hold a ```json block under ## Tasks: routines are edited in the list",
            )));
        }
        let guard = self.inner.locks.acquire(&self.inner.lock_id).await?;
        let current = self.read_text()?;
        let (checks, section) = split_checks(&current).map_err(StoreError::Corrupted)?;
        if checks.trim_end() != expected.trim_end() {
            return Err(StoreError::Rejected(Refusal::new(format!(
                "{HEARTBEAT_FILE} changed since it was opened here; reload to see the new text, then edit again"
            ))));
        }
        let out = join_checks(text, section);
        if out != current {
            guard.ensure_held()?;
            self.write(&out)?;
            *self.cache() = None;
        }
        drop(guard);
        Ok(split_checks(&out).map(|(c, _)| c).unwrap_or_default())
    }

    /// Replaces a corrupted block with the snapshot's tasks, keeping the broken file as
    /// `HEARTBEAT.md.corrupt` first. The user asks for this (in the pane, or by asking the
    /// agent, whose `routine_restore` tool calls it); it never happens on its own.
    pub async fn restore_snapshot(&self) -> Result<usize, StoreError> {
        let guard = self.inner.locks.acquire(&self.inner.lock_id).await?;
        let text = self.read_text()?;
        let snap_path = self.snapshot_path();
        let snap = std::fs::read_to_string(&snap_path).map_err(|source| StoreError::Io {
            action: "read",
            path: snap_path.clone(),
            source,
        })?;
        let fenced = format!("## Tasks\n\n```json\n{snap}\n```\n");
        let Parsed::Ok { entries, extra } = parse(&fenced) else {
            return Err(StoreError::Rejected(Refusal::new(format!(
                "{} is not readable either",
                snap_path.display()
            ))));
        };
        let corrupt = self.inner.workspace.join(format!("{HEARTBEAT_FILE}.corrupt"));
        write_atomic(&corrupt, text.as_bytes()).map_err(|source| StoreError::Io {
            action: "write",
            path: corrupt,
            source,
        })?;
        let out = match find_block(&text) {
            Ok(Some(_)) => render(&text, &entries, &extra),
            // An unclosed block: keep everything before it, then a fresh block.
            _ => {
                let cut = text.find("## Tasks").unwrap_or(text.len());
                render(&text[..cut], &entries, &extra)
            }
        };
        guard.ensure_held()?;
        self.write(&out)?;
        *self.cache() = None;
        Ok(entries.len())
    }

    /// Writes `.heartbeat_snapshot.json` after a good parse, when it changed.
    fn save_snapshot(&self, parsed: &Parsed) {
        let Parsed::Ok { entries, extra } = parsed else { return };
        let json = block_json(entries, extra);
        let mut last = self.inner.snapshot.lock().unwrap_or_else(|e| e.into_inner());
        if last.as_deref() == Some(json.as_str()) {
            return;
        }
        if std::fs::read_to_string(self.snapshot_path()).ok().as_deref() != Some(json.as_str()) {
            if let Err(e) = write_atomic(&self.snapshot_path(), json.as_bytes()) {
                tracing::warn!("could not write {SNAPSHOT_FILE}: {e}");
                return;
            }
        }
        *last = Some(json);
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
