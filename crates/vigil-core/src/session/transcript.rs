//! # session::transcript
//!
//! Owns session transcripts: `sessions/<id>.jsonl`, one [`Message`] per line, appended whole
//! under the session lock and fsync'd before the append returns (a new file's folder too;
//! all through [`crate::durable`]), so a crash loses at most the line being written and
//! two writers (tasks or processes) never interleave. Appends stay O(1): they look at the
//! last byte only, to cut a torn tail before adding a line after it.
//! On load, a torn last line (a crash mid-append) is moved aside to `<id>.jsonl.torn` and
//! cut off with a warning; a bad line elsewhere is skipped with a warning and left on disk.
//!
//! The one cut besides a torn tail is [`SessionStore::truncate_async`]: the heartbeat takes
//! back the whole lines its own "nothing to report" run appended (seed 002 §7.1).
//!
//! Must never: rewrite a transcript in place, drop a whole file because one line is bad, or
//! cut a tail without holding the lock (it may be a line another process is writing).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use vigil_protocol::{ContentBlock, Message};

use super::blobs::Blobs;
use super::lock::{LockOptions, SessionLockGuard, SessionLocks};
use super::parsed::{check_after, FileId, Parsed, ParsedCache};
use super::{ids, io, session_file, suffix, validate_id, SessionError};
use crate::clock::{Clock, SystemClock};
use crate::durable;

/// A transcript as read: its messages, the warnings reading it gave, and the messages' ids.
type Shared = (Arc<Vec<Message>>, Vec<String>, Arc<Vec<String>>);

/// A transcript as loaded, with what had to be skipped.
#[derive(Debug, Default)]
pub struct Loaded {
    pub messages: Vec<Message>,
    /// Each message's stable id ([`ids`]), in the same order: the id the history index and
    /// `search_history` name it by, so the window can open a search result at it.
    pub ids: Vec<String>,
    /// One line per problem, for the log and the UI.
    pub warnings: Vec<String>,
}

/// The folder of transcripts, and the locks every session write takes.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
    locks: SessionLocks,
    /// The last transcripts as parsed: a load parses only what was appended since.
    parsed: ParsedCache,
    /// Told of every append, cut and delete (the history index), shared by all clones.
    observer: Observer,
}

/// Told when a transcript changes, so a view derived from transcripts (the history index)
/// can catch up off the writer's path.
pub trait TranscriptObserver: Send + Sync + 'static {
    /// Lines were appended to `id`'s transcript, or cut from its end. Must return at once:
    /// it is called by the writer, often a turn.
    fn changed(&self, id: &str);
    /// `id`'s transcript was deleted. Called under its session lock.
    fn removed(&self, id: &str);
}

/// The one observer, set once for the store and all its clones.
#[derive(Clone, Default)]
struct Observer(Arc<std::sync::OnceLock<Arc<dyn TranscriptObserver>>>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "Observer(set)"
        } else {
            "Observer(none)"
        })
    }
}

impl SessionStore {
    /// Opens `<data_dir>/sessions` with default lock options and the system clock.
    pub fn open(data_dir: &Path) -> Result<Self, SessionError> {
        Self::open_with(data_dir, Arc::new(SystemClock), LockOptions::default())
    }

    pub fn open_with(data_dir: &Path, clock: Arc<dyn Clock>, opts: LockOptions) -> Result<Self, SessionError> {
        let dir = data_dir.join("sessions");
        crate::durable::create_private_dir_all(&dir).map_err(io("create", &dir))?;
        let locks = SessionLocks::new(&dir, opts, clock);
        Ok(Self {
            dir,
            locks,
            parsed: ParsedCache::default(),
            observer: Observer::default(),
        })
    }

    /// Tells `observer` of every change from now on, through this store and its clones.
    /// Returns false (and changes nothing) if one is already set.
    pub fn observe(&self, observer: Arc<dyn TranscriptObserver>) -> bool {
        self.observer.0.set(observer).is_ok()
    }

    fn changed(&self, id: &str) {
        if let Some(o) = self.observer.0.get() {
            o.changed(id);
        }
    }

    /// The `sessions` folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The session locks; [`super::MetaStore`] takes the same ones.
    pub fn locks(&self) -> &SessionLocks {
        &self.locks
    }

    fn path(&self, id: &str) -> Result<PathBuf, SessionError> {
        validate_id(id)?;
        Ok(session_file(&self.dir, id, suffix::TRANSCRIPT))
    }

    pub(crate) fn exists(&self, id: &str) -> Result<bool, SessionError> {
        Ok(self.path(id)?.exists())
    }

    /// Loads a transcript; a missing file is an empty session. Reads without the lock; only
    /// a torn tail makes it take the lock, re-read, and cut.
    pub fn load(&self, id: &str) -> Result<Loaded, SessionError> {
        self.load_owned(id, None)
    }

    /// [`Self::load`] for a caller that already holds the session lock.
    pub fn load_held(&self, guard: &SessionLockGuard) -> Result<Loaded, SessionError> {
        self.load_owned(guard.id(), Some(guard))
    }

    /// [`Self::load`]'s messages, shared with the cache of parsed transcripts rather than
    /// copied from it (a turn loads once a round only to build its request from them).
    pub fn load_shared(&self, id: &str) -> Result<Arc<Vec<Message>>, SessionError> {
        self.load_inner(id, None).map(|(messages, ..)| messages)
    }

    fn load_owned(&self, id: &str, held: Option<&SessionLockGuard>) -> Result<Loaded, SessionError> {
        let (messages, warnings, ids) = self.load_inner(id, held)?;
        Ok(Loaded {
            messages: Arc::unwrap_or_clone(messages),
            ids: Arc::unwrap_or_clone(ids),
            warnings,
        })
    }

    /// Messages, warnings, and the messages' ids.
    fn load_inner(&self, id: &str, held: Option<&SessionLockGuard>) -> Result<Shared, SessionError> {
        let path = self.path(id)?;
        let mut f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(e) => return Err(io("open", &path)(e)),
        };
        let file = file_id(&f).map_err(io("inspect", &path))?;
        let known = self.parsed.take(id, file).filter(|p| still_holds(&f, p));
        let (start, lines, mut messages, mut ids, mut warnings, check) = match known {
            Some(p) => (p.len, p.lines, p.messages, p.ids, p.warnings, p.check),
            None => (0, 0, Arc::default(), Arc::default(), Vec::new(), Vec::new()),
        };
        let mut bytes = Vec::new();
        f.seek(SeekFrom::Start(start))
            .and_then(|_| f.read_to_end(&mut bytes))
            .map_err(io("read", &path))?;
        let mut loaded_warnings = Vec::new();
        let complete_len = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if complete_len < bytes.len() {
            if start > 0 {
                // A torn tail is cut from the whole file's point of view.
                self.parsed.forget(id);
                return self.load_inner(id, held);
            }
            let Some(guard) = held else {
                // The "torn" tail may be a line another process is writing right now.
                let guard = self.locks.acquire_blocking(id)?;
                return self.load_inner(id, Some(&guard));
            };
            guard.ensure_held()?;
            let f = OpenOptions::new().write(true).open(&path).map_err(io("open", &path))?;
            cut_torn_tail(&f, &path, &bytes[complete_len..], complete_len as u64)?;
            loaded_warnings.push(torn_warning(&path, bytes.len() - complete_len));
        }
        let parsed = parse_lines_from(&bytes[..complete_len], lines, &path);
        if !parsed.messages.is_empty() {
            // A copy only if a caller still holds the messages of an earlier load.
            Arc::make_mut(&mut messages).extend(parsed.messages);
            Arc::make_mut(&mut ids).extend(parsed.ids);
        }
        warnings.extend(parsed.warnings);
        let check = check_after(&check, &bytes[..complete_len]);
        self.parsed.put(
            id,
            Parsed {
                file,
                len: start + complete_len as u64,
                lines: lines + bytes[..complete_len].iter().filter(|&&b| b == b'\n').count(),
                check,
                messages: Arc::clone(&messages),
                ids: Arc::clone(&ids),
                warnings: warnings.clone(),
            },
        );
        loaded_warnings.extend(warnings);
        self.blobs()
            .mark_missing_images(id, &mut messages, &mut loaded_warnings);
        for w in &loaded_warnings {
            tracing::warn!("{w}");
        }
        Ok((messages, loaded_warnings, ids))
    }

    /// Drops what was parsed of `id` (it is being deleted) and tells the observer, so
    /// nothing derived from it outlives it.
    pub(crate) fn forget_parsed(&self, id: &str) {
        self.parsed.forget(id);
        if let Some(o) = self.observer.0.get() {
            o.removed(id);
        }
    }

    /// The transcript's size in bytes (0 when there is none): a point to truncate back to.
    pub fn size(&self, id: &str) -> Result<u64, SessionError> {
        let path = self.path(id)?;
        match fs::metadata(&path) {
            Ok(m) => Ok(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io("inspect", &path)(e)),
        }
    }

    /// Cuts the transcript back to `len` bytes, a size [`Self::size`] returned at a line
    /// boundary, removing the lines appended since. Does nothing if the file is not longer.
    pub async fn truncate_async(&self, id: &str, len: u64) -> Result<(), SessionError> {
        let path = self.path(id)?;
        let guard = self.locks.acquire(id).await?;
        let f = match OpenOptions::new().write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io("open", &path)(e)),
        };
        if f.metadata().map_err(io("inspect", &path))?.len() <= len {
            return Ok(());
        }
        guard.ensure_held()?;
        self.parsed.forget(id);
        durable::set_len(&f, &path, len)
            .and_then(|_| durable::sync_data(&f, &path))
            .map_err(io("truncate", &path))?;
        self.changed(id);
        Ok(())
    }

    /// Appends one message as one line and waits until it is on disk. Takes the session
    /// lock, sleeping this thread while another writer holds it: from async code use
    /// [`Self::append_async`].
    pub fn append(&self, id: &str, message: &Message) -> Result<(), SessionError> {
        let line = self.encode(id, message)?;
        let guard = self.locks.acquire_blocking(id)?;
        self.append_line(&guard, &line)
    }

    /// [`Self::append`] that waits for the lock without blocking the worker thread.
    pub async fn append_async(&self, id: &str, message: &Message) -> Result<(), SessionError> {
        let line = self.encode(id, message)?;
        let guard = self.locks.acquire(id).await?;
        self.append_line(&guard, &line)
    }

    /// [`Self::append`] for a caller that already holds the session lock.
    pub fn append_held(&self, guard: &SessionLockGuard, message: &Message) -> Result<(), SessionError> {
        let line = self.encode(guard.id(), message)?;
        self.append_line(guard, &line)
    }

    /// One line: the message with a fresh [`ids`] id as its first field.
    fn encode(&self, id: &str, message: &Message) -> Result<Vec<u8>, SessionError> {
        let path = self.path(id)?;
        let body = serde_json::to_vec(message).map_err(|e| SessionError::Io {
            action: "encode a message for",
            path,
            source: e.into(),
        })?;
        Ok(ids::with_new_id(&body))
    }

    fn append_line(&self, guard: &SessionLockGuard, line: &[u8]) -> Result<(), SessionError> {
        self.write_line(guard, line)?.sync()
    }

    /// Writes one line at the end, not yet synced.
    fn write_line(&self, guard: &SessionLockGuard, line: &[u8]) -> Result<Written, SessionError> {
        let path = self.path(guard.id())?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io("open", &path))?;
        let len = heal_tail(&mut file, &path)?;
        guard.ensure_held()?;
        // One write of a whole line: with O_APPEND the line lands after everything else.
        durable::write_all(&mut file, &path, line).map_err(io("append to", &path))?;
        self.changed(guard.id());
        Ok(Written {
            file,
            path,
            // The file may be new: its name lasts a power cut only once the folder is synced.
            dir: (len == 0).then(|| self.dir.clone()),
        })
    }

    /// Appends one message as one line that loads see at once, and returns without waiting
    /// for the disk: [`Unsynced::sync`] does. The session stays locked until then, so no line
    /// is ever written after one that is not yet durable.
    pub async fn append_unsynced(&self, id: &str, message: &Message) -> Result<Unsynced, SessionError> {
        let line = self.encode(id, message)?;
        let guard = self.locks.acquire(id).await?;
        let written = self.write_line(&guard, &line)?;
        Ok(Unsynced { written, guard })
    }
}

/// A line written and not yet synced.
struct Written {
    file: File,
    path: PathBuf,
    /// The folder, when the line started the file.
    dir: Option<PathBuf>,
}

impl Written {
    fn sync(self) -> Result<(), SessionError> {
        durable::sync_data(&self.file, &self.path).map_err(io("sync", &self.path))?;
        if let Some(dir) = &self.dir {
            let _ = durable::sync_dir(dir);
        }
        Ok(())
    }
}

/// A message appended by [`SessionStore::append_unsynced`], holding its session's lock
/// until it is on disk. Dropped unsynced, it is on disk whenever the kernel writes it (a
/// crash of Vigil loses nothing; a power cut may), and it was never reported saved.
#[must_use = "a message is not saved until it is synced"]
pub struct Unsynced {
    written: Written,
    guard: SessionLockGuard,
}

impl Unsynced {
    /// Waits until the message is on disk (blocking: run it on the blocking pool), then
    /// releases the session.
    pub fn sync(self) -> Result<(), SessionError> {
        let synced = self.written.sync();
        drop(self.guard);
        synced
    }
}

/// The messages of whole transcript lines; an unreadable line is skipped with a warning
/// naming it (and stays in the file). Never fails: the loader's fuzz target holds it to that.
pub fn parse_lines(bytes: &[u8], path: &Path) -> Loaded {
    parse_lines_from(bytes, 0, path)
}

/// [`parse_lines`] of the lines after the first `first_line` lines of a transcript (blank
/// and unreadable ones counted): a message's derived id depends on its line number.
fn parse_lines_from(bytes: &[u8], first_line: usize, path: &Path) -> Loaded {
    let mut loaded = Loaded::default();
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Message>(line) {
            Ok(m) => {
                loaded.messages.push(m);
                loaded.ids.push(ids::line_id(first_line + n, line));
            }
            Err(e) => loaded.warnings.push(format!(
                "{} line {}: skipped an unreadable message ({e}); it stays in the file",
                path.display(),
                first_line + n + 1
            )),
        }
    }
    loaded
}

/// The device and inode of an open file.
fn file_id(f: &File) -> std::io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = f.metadata()?;
    Ok((m.dev(), m.ino()))
}

/// Whether `f` still holds what `p` parsed: as long, and the same bytes before its end.
fn still_holds(f: &File, p: &Parsed) -> bool {
    use std::os::unix::fs::FileExt;
    if f.metadata().map_or(true, |m| m.len() < p.len) {
        return false;
    }
    let mut now = vec![0u8; p.check.len()];
    f.read_exact_at(&mut now, p.len - p.check.len() as u64).is_ok() && now == p.check
}

fn torn_warning(path: &Path, torn_len: usize) -> String {
    format!(
        "{}: the last line was cut short (a crash while writing?); {torn_len} bytes were moved to {}.torn",
        path.display(),
        path.display()
    )
}

/// If a crash left a partial line at the end, cut it before appending: otherwise the next
/// line would be glued to it and both would be unreadable. O(1) when the file ends in a
/// newline (the normal case); otherwise reads back only as far as the torn line. Returns the
/// file's length after.
fn heal_tail(f: &mut File, path: &Path) -> Result<u64, SessionError> {
    let len = f.metadata().map_err(io("inspect", path))?.len();
    if len == 0 {
        return Ok(0);
    }
    let mut last = [0u8; 1];
    f.seek(SeekFrom::Start(len - 1))
        .and_then(|_| f.read_exact(&mut last))
        .map_err(io("read", path))?;
    if last[0] == b'\n' {
        return Ok(len);
    }
    const CHUNK: u64 = 64 * 1024;
    let mut tail: Vec<u8> = Vec::new();
    let mut start = len;
    let keep = loop {
        let from = start.saturating_sub(CHUNK);
        let mut chunk = vec![0u8; (start - from) as usize];
        f.seek(SeekFrom::Start(from))
            .and_then(|_| f.read_exact(&mut chunk))
            .map_err(io("read", path))?;
        chunk.extend_from_slice(&tail);
        tail = chunk;
        start = from;
        if let Some(i) = tail.iter().rposition(|&b| b == b'\n') {
            tail.drain(..=i);
            break start + i as u64 + 1;
        }
        if start == 0 {
            break 0;
        }
    };
    cut_torn_tail(f, path, &tail, keep)?;
    tracing::warn!("{}", torn_warning(path, tail.len()));
    Ok(keep)
}

/// Keeps the torn bytes for inspection, then truncates so the next append starts a fresh
/// line. The caller holds the session lock.
fn cut_torn_tail(f: &File, path: &Path, tail: &[u8], keep: u64) -> Result<(), SessionError> {
    let mut torn_path = path.as_os_str().to_owned();
    torn_path.push(".torn");
    let torn_path = PathBuf::from(torn_path);
    let mut torn = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&torn_path)
        .map_err(io("open", &torn_path))?;
    let mut kept = Vec::with_capacity(tail.len() + 1);
    kept.extend_from_slice(tail);
    kept.push(b'\n');
    durable::write_all(&mut torn, &torn_path, &kept)
        .and_then(|_| durable::sync_data(&torn, &torn_path))
        .map_err(io("write", &torn_path))?;
    durable::set_len(f, path, keep)
        .and_then(|_| durable::sync_data(f, path))
        .map_err(io("truncate", path))?;
    Ok(())
}

/// A session's images, kept beside its transcript ([`super::blobs`]).
impl SessionStore {
    fn blobs(&self) -> Blobs<'_> {
        Blobs {
            dir: self.dir(),
            locks: self.locks(),
        }
    }

    /// The folder of a session's images.
    pub fn blobs_dir(&self, id: &str) -> Result<PathBuf, SessionError> {
        self.blobs().blobs_dir(id)
    }

    /// Where the image `sha256` of type `mime` of session `id` is (or would be) stored.
    pub fn image_path(&self, id: &str, sha256: &str, mime: &str) -> Result<PathBuf, SessionError> {
        self.blobs().image_path(id, sha256, mime)
    }

    /// Stores an image with session `id` (once: an image already there is kept) and returns
    /// the block that names it. Waits for the session lock without blocking the worker.
    pub async fn put_image(&self, id: &str, bytes: &[u8], mime: &str) -> Result<ContentBlock, SessionError> {
        self.blobs().put_image(id, bytes, mime).await
    }

    /// [`Self::put_image`] for a caller that holds the session lock.
    pub fn put_image_held(
        &self,
        guard: &SessionLockGuard,
        bytes: &[u8],
        mime: &str,
    ) -> Result<ContentBlock, SessionError> {
        self.blobs().put_image_held(guard, bytes, mime)
    }

    /// The bytes of a stored image; `None` when its file is gone.
    pub fn read_image(&self, id: &str, sha256: &str, mime: &str) -> Result<Option<Vec<u8>>, SessionError> {
        self.blobs().read_image(id, sha256, mime)
    }
}

#[cfg(test)]
#[path = "transcript_tests.rs"]
mod tests;
