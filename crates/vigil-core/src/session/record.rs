//! # record — what a `.meta.json` file holds, and its bytes
//!
//! The record ([`SessionMeta`]: title, type, revision, mailbox) and its checksummed
//! envelope, `{"checksum":"sha256:<hex of the exact bytes of meta>","meta":{…}}`: encoding
//! one, and reading one file back as good, missing or bad (with the revision that can still
//! be salvaged from a bad one). No lock and no store: [`super::meta`] reads and commits
//! with these.
//!
//! Must never: accept bytes whose checksum does not match; drop a field it does not know.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::mailbox::MailboxEvent;
use super::{io, SessionError};

/// What a session is for; decides its lifetime and how its context is built (seed 003 §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionType {
    /// A conversation with the user; receives background updates in its mailbox.
    Primary,
    /// The heartbeat's own short-lived session.
    Heartbeat,
    /// One run of a scheduled job, isolated from everything else.
    Job,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: String,
    pub title: String,
    pub session_type: SessionType,
    /// Strictly increasing on every successful update; a reader can tell stale from fresh.
    pub revision: u64,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
    /// Background updates waiting for this session's next turn (seed 003 §4.5).
    #[serde(default)]
    pub mailbox: Vec<MailboxEvent>,
    /// Turns Vigil ran here on its own (continuations) since the user's last message.
    #[serde(default)]
    pub continuations: u32,
    /// This conversation's own limit on continuations in a row; `None`: the global one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation_limit: Option<u32>,
    /// The chain of continuations reached its limit and the user was told (once).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_at_limit: bool,
    /// Fields written by a newer Vigil, kept so an older one rewriting the file does not
    /// erase them.
    #[serde(flatten, default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The type a session has by the id conventions of [`MetaStore::create`] (and of sessions
/// from before metadata).
pub(crate) fn type_from_id(id: &str) -> SessionType {
    if id.starts_with("heartbeat") {
        SessionType::Heartbeat
    } else if id.starts_with("job_") {
        SessionType::Job
    } else {
        SessionType::Primary
    }
}

pub(super) enum ReadOne {
    Good(SessionMeta),
    Missing,
    Bad {
        problem: String,
        revision_hint: Option<u64>,
    },
}

/// `.<name>.`: a commit's temp file is `.<name>.XXXXXX`, which [`MetaStore::remove_temp_files`]
/// and [`crate::leftovers`] know to remove after a crash.
pub(super) fn temp_prefix(path: &Path) -> String {
    format!(".{}.", path.file_name().unwrap_or_default().to_string_lossy())
}

#[derive(Serialize)]
struct EnvelopeOut<'a> {
    checksum: String,
    meta: &'a RawValue,
}

#[derive(Deserialize)]
struct EnvelopeIn<'a> {
    checksum: String,
    #[serde(borrow)]
    meta: &'a RawValue,
}

/// The checksum covers the exact bytes of `meta` as written, so it does not depend on how a
/// serializer orders keys or formats numbers: whoever hashes the same bytes agrees.
pub(super) fn checksum(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

pub(super) fn encode(meta: &SessionMeta) -> std::io::Result<Vec<u8>> {
    let raw = RawValue::from_string(serde_json::to_string(meta)?)?;
    let mut out = serde_json::to_vec(&EnvelopeOut {
        checksum: checksum(raw.get().as_bytes()),
        meta: &raw,
    })?;
    out.push(b'\n');
    Ok(out)
}

pub(super) fn read_one(path: &Path, id: &str) -> Result<ReadOne, SessionError> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ReadOne::Missing),
        Err(e) => return Err(io("read", path)(e)),
    };
    Ok(decode(&bytes, id))
}

pub(super) fn decode(bytes: &[u8], id: &str) -> ReadOne {
    let bad = |problem: String, revision_hint| ReadOne::Bad { problem, revision_hint };
    let envelope: EnvelopeIn = match serde_json::from_slice(bytes) {
        Ok(e) => e,
        Err(e) => return bad(format!("unreadable ({e})"), None),
    };
    let hint = serde_json::from_str::<serde_json::Value>(envelope.meta.get())
        .ok()
        .and_then(|v| v.get("revision")?.as_u64());
    let actual = checksum(envelope.meta.get().as_bytes());
    if actual != envelope.checksum {
        return bad(
            format!(
                "damaged (checksum mismatch: the file says {}, its content hashes to {actual})",
                envelope.checksum
            ),
            hint,
        );
    }
    match serde_json::from_str::<SessionMeta>(envelope.meta.get()) {
        Ok(meta) if meta.id == id => ReadOne::Good(meta),
        Ok(meta) => bad(format!("for another session ({})", meta.id), None),
        Err(e) => bad(format!("not valid metadata ({e})"), hint),
    }
}
