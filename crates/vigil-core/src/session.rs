//! # session
//!
//! Owns session transcripts on disk: `sessions/<id>.jsonl`, one [`Message`] per line,
//! appended whole and fsync'd, so a crash loses at most the line being written.
//! On load, a torn last line (a crash mid-append) is moved aside to `<id>.jsonl.torn` and
//! cut off with a warning; a bad line elsewhere is skipped with a warning and left on disk.
//!
//! Must never: rewrite a transcript in place, or drop a whole file because one line is bad.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use vigil_protocol::Message;

/// The user's conversation with Vigil.
pub const PRIMARY_SESSION: &str = "main";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The id would escape the sessions folder. Recover: use letters, digits, `-`, `_`.
    #[error("\"{0}\" is not a valid session id (use letters, digits, '-' and '_')")]
    InvalidId(String),
    /// The disk refused a read or write. Recover: free space / fix permissions; nothing
    /// already saved is touched.
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// A transcript as loaded, with what had to be skipped.
#[derive(Debug, Default)]
pub struct Loaded {
    pub messages: Vec<Message>,
    /// One line per problem, for the log and the UI.
    pub warnings: Vec<String>,
}

/// The folder of transcripts.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

fn io<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> SessionError + 'a {
    move |source| SessionError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

impl SessionStore {
    pub fn open(data_dir: &Path) -> Result<Self, SessionError> {
        let dir = data_dir.join("sessions");
        fs::create_dir_all(&dir).map_err(io("create", &dir))?;
        Ok(Self { dir })
    }

    fn path(&self, id: &str) -> Result<PathBuf, SessionError> {
        let valid = !id.is_empty()
            && id.len() <= 128
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(SessionError::InvalidId(id.to_string()));
        }
        Ok(self.dir.join(format!("{id}.jsonl")))
    }

    /// Loads a transcript; a missing file is an empty session.
    pub fn load(&self, id: &str) -> Result<Loaded, SessionError> {
        let path = self.path(id)?;
        let mut bytes = Vec::new();
        match File::open(&path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(io("read", &path))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
            Err(e) => return Err(io("open", &path)(e)),
        }
        let mut loaded = Loaded::default();
        let complete_len = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if complete_len < bytes.len() {
            self.cut_torn_tail(&path, &bytes[complete_len..], complete_len as u64)?;
            loaded.warnings.push(format!(
                "{}: the last line was cut short (a crash while writing?); {} bytes were moved to {}.torn",
                path.display(),
                bytes.len() - complete_len,
                path.display()
            ));
        }
        for (n, line) in bytes[..complete_len].split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Message>(line) {
                Ok(m) => loaded.messages.push(m),
                Err(e) => loaded.warnings.push(format!(
                    "{} line {}: skipped an unreadable message ({e}); it stays in the file",
                    path.display(),
                    n + 1
                )),
            }
        }
        for w in &loaded.warnings {
            tracing::warn!("{w}");
        }
        Ok(loaded)
    }

    /// Keeps the torn bytes for inspection, then truncates so the next append starts a
    /// fresh line.
    fn cut_torn_tail(&self, path: &Path, tail: &[u8], keep: u64) -> Result<(), SessionError> {
        let mut torn_path = path.as_os_str().to_owned();
        torn_path.push(".torn");
        let torn_path = PathBuf::from(torn_path);
        let mut torn = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&torn_path)
            .map_err(io("open", &torn_path))?;
        torn.write_all(tail)
            .and_then(|_| torn.write_all(b"\n"))
            .and_then(|_| torn.sync_data())
            .map_err(io("write", &torn_path))?;
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io("open", path))?;
        f.set_len(keep)
            .and_then(|_| f.sync_data())
            .map_err(io("truncate", path))?;
        Ok(())
    }

    /// Appends one message as one line and waits until it is on disk. Callers serialise
    /// appends per session (one turn at a time per lane), so lines never interleave.
    pub fn append(&self, id: &str, message: &Message) -> Result<(), SessionError> {
        let path = self.path(id)?;
        let mut line = serde_json::to_vec(message).map_err(|e| SessionError::Io {
            action: "encode a message for",
            path: path.clone(),
            source: e.into(),
        })?;
        line.push(b'\n');
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io("open", &path))?;
        // One write_all of a whole line: with O_APPEND the line lands after everything else.
        f.write_all(&line).map_err(io("append to", &path))?;
        f.sync_data().map_err(io("sync", &path))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn torn_last_line_is_dropped_with_a_warning_and_appends_continue() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        let a = Message::user_text("kept", 1);
        store.append("main", &a).unwrap();
        let path = dir.path().join("sessions/main.jsonl");
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"role":"user","content":[{"type":"te"#)
            .unwrap();
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
        assert!(matches!(
            store.load("../x"),
            Err(SessionError::InvalidId(_))
        ));
    }
}
