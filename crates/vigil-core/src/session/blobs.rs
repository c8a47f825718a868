//! # session::blobs
//!
//! Owns a session's images: `sessions/<id>.blobs/<sha256>.<ext>`, named by the SHA-256 of
//! their bytes and referenced from the transcript by a [`ContentBlock::Image`] that carries
//! only that hash and the type. An image is written once, whole (temp file, fsync, link under
//! its final name), under the session lock; the same image sent again is found by its name
//! and not rewritten. The folder goes when the conversation is deleted ([`super::MetaStore`]).
//!
//! On load, an image whose file is gone becomes a placeholder line with a warning: the
//! conversation still opens and can go on, it only lacks the picture.
//!
//! Must never: put image bytes into a transcript line; replace a stored image (its name is
//! its content); open a path built from anything but a validated id and a hex hash.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use vigil_protocol::{image_extension, ContentBlock, Message};

use super::lock::{SessionLockGuard, SessionLocks};
use super::{io, session_file, suffix, validate_id, SessionError};
use crate::durable;

/// Hex SHA-256 of `bytes`, as image blocks name them.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What an image whose file is missing becomes in a loaded conversation.
pub fn missing_image_text(sha256: &str) -> String {
    format!(
        "[image unavailable: its file ({}…) is missing from this conversation]",
        &sha256[..sha256.len().min(12)]
    )
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn invalid(what: String) -> std::io::Error {
    std::io::Error::new(ErrorKind::InvalidInput, what)
}

/// The images of the sessions in one folder. [`super::SessionStore`]'s image methods go
/// through it; it knows only the folder and its locks, so the transcript can mark missing
/// images without this file reaching back into the transcript's store.
pub(super) struct Blobs<'a> {
    pub(super) dir: &'a Path,
    pub(super) locks: &'a SessionLocks,
}

impl Blobs<'_> {
    /// The folder of a session's images.
    pub fn blobs_dir(&self, id: &str) -> Result<PathBuf, SessionError> {
        validate_id(id)?;
        Ok(session_file(self.dir, id, suffix::BLOBS))
    }

    /// Where the image `sha256` of type `mime` of session `id` is (or would be) stored.
    pub fn image_path(&self, id: &str, sha256: &str, mime: &str) -> Result<PathBuf, SessionError> {
        let dir = self.blobs_dir(id)?;
        let bad = |what: String| SessionError::Io {
            action: "name an image in",
            path: dir.clone(),
            source: invalid(what),
        };
        let ext = image_extension(mime).ok_or_else(|| bad(format!("\"{mime}\" is not an accepted image type")))?;
        if !is_sha256_hex(sha256) {
            return Err(bad(format!("\"{sha256}\" is not a SHA-256 hash")));
        }
        Ok(dir.join(format!("{sha256}.{ext}")))
    }

    /// Stores an image with session `id` (once: an image already there is kept) and returns
    /// the block that names it. Waits for the session lock without blocking the worker.
    pub async fn put_image(&self, id: &str, bytes: &[u8], mime: &str) -> Result<ContentBlock, SessionError> {
        let guard = self.locks.acquire(id).await?;
        self.put_image_held(&guard, bytes, mime)
    }

    /// [`Self::put_image`] for a caller that holds the session lock.
    pub fn put_image_held(
        &self,
        guard: &SessionLockGuard,
        bytes: &[u8],
        mime: &str,
    ) -> Result<ContentBlock, SessionError> {
        let sha256 = sha256_hex(bytes);
        let path = self.image_path(guard.id(), &sha256, mime)?;
        let block = ContentBlock::Image {
            sha256,
            mime: mime.to_string(),
        };
        if path.exists() {
            return Ok(block);
        }
        let dir = self.blobs_dir(guard.id())?;
        if !dir.exists() {
            durable::create_private_dir_all(&dir).map_err(io("create", &dir))?;
            let _ = durable::sync_dir(self.dir);
        }
        guard.ensure_held()?;
        // `false` means another writer stored the same bytes a moment ago: same name, same image.
        durable::create_new(&path, bytes).map_err(io("store an image in", &path))?;
        Ok(block)
    }

    /// The bytes of a stored image; `None` when its file is gone.
    pub fn read_image(&self, id: &str, sha256: &str, mime: &str) -> Result<Option<Vec<u8>>, SessionError> {
        let path = self.image_path(id, sha256, mime)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io("read", &path)(e)),
        }
    }

    /// Turns each image whose file is missing into a placeholder line, with a warning.
    pub(super) fn mark_missing_images(&self, id: &str, messages: &mut Arc<Vec<Message>>, warnings: &mut Vec<String>) {
        let mut missing = Vec::new();
        for (i, message) in messages.iter().enumerate() {
            for (j, block) in message.content.iter().enumerate() {
                let ContentBlock::Image { sha256, mime } = block else {
                    continue;
                };
                let present = self.image_path(id, sha256, mime).map(|p| p.is_file());
                let problem = match present {
                    Ok(true) => continue,
                    Ok(false) => format!(
                        "an image of this conversation ({sha256}) is missing from {}; it shows as a placeholder",
                        self.blobs_dir(id).map(|d| d.display().to_string()).unwrap_or_default()
                    ),
                    Err(e) => format!("an image of this conversation cannot be found ({e}); it shows as a placeholder"),
                };
                warnings.push(problem);
                missing.push((i, j, missing_image_text(sha256)));
            }
        }
        if missing.is_empty() {
            return;
        }
        // The placeholders go into this caller's copy; the cache keeps what the file holds.
        let messages = Arc::make_mut(messages);
        for (i, j, text) in missing {
            messages[i].content[j] = ContentBlock::Text { text };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::SessionStore;
    use vigil_protocol::{Message, Role};

    fn store() -> (tempfile::TempDir, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::open(dir.path()).unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn an_image_is_stored_once_under_its_hash() {
        let (_dir, store) = store();
        let block = store.put_image("s1", b"\x89PNG fake", "image/png").await.unwrap();
        let ContentBlock::Image { sha256, mime } = &block else {
            panic!("{block:?}")
        };
        assert_eq!(sha256, &sha256_hex(b"\x89PNG fake"));
        let path = store.image_path("s1", sha256, mime).unwrap();
        assert_eq!(path, store.dir().join("s1.blobs").join(format!("{sha256}.png")));
        let first = fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let again = store.put_image("s1", b"\x89PNG fake", "image/png").await.unwrap();
        assert_eq!(again, block);
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), first, "rewritten");
        assert_eq!(
            store.read_image("s1", sha256, mime).unwrap().as_deref(),
            Some(&b"\x89PNG fake"[..])
        );
    }

    #[tokio::test]
    async fn names_outside_the_folder_or_of_other_types_are_refused() {
        let (_dir, store) = store();
        assert!(store.image_path("s1", "../../etc/passwd", "image/png").is_err());
        assert!(store.image_path("s1", &"a".repeat(64), "text/html").is_err());
        assert!(store.image_path("../x", &"a".repeat(64), "image/png").is_err());
        assert!(store.put_image("s1", b"x", "image/svg+xml").await.is_err());
    }

    #[tokio::test]
    async fn a_missing_image_loads_as_a_placeholder_with_a_warning() {
        let (_dir, store) = store();
        let kept = store.put_image("s1", b"kept", "image/png").await.unwrap();
        let gone = store.put_image("s1", b"gone", "image/jpeg").await.unwrap();
        let ContentBlock::Image { sha256, mime } = &gone else {
            unreachable!()
        };
        fs::remove_file(store.image_path("s1", sha256, mime).unwrap()).unwrap();
        let mut m = Message::user_text("look", 1);
        m.content.push(kept.clone());
        m.content.push(gone.clone());
        store.append("s1", &m).unwrap();
        let loaded = store.load("s1").unwrap();
        assert_eq!(loaded.messages[0].role, Role::User);
        assert_eq!(
            loaded.messages[0].content[1..],
            [
                kept.clone(),
                ContentBlock::Text {
                    text: missing_image_text(sha256)
                }
            ]
        );
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        assert!(loaded.warnings[0].contains("is missing"), "{:?}", loaded.warnings);

        // The placeholder is this load's: once the file is back, so is the image, through
        // every way of loading (the parsed transcript is cached between loads).
        store.put_image("s1", b"gone", "image/jpeg").await.unwrap();
        assert_eq!(
            store.load("s1").unwrap().messages[0].content[1..],
            [kept.clone(), gone.clone()]
        );
        assert_eq!(store.load_shared("s1").unwrap()[0].content[1..], [kept, gone]);
    }

    #[tokio::test]
    async fn a_shared_load_shows_new_lines_and_leaves_an_earlier_one_as_it_was() {
        let (_dir, store) = store();
        store.append("s1", &Message::user_text("one", 1)).unwrap();
        let first = store.load_shared("s1").unwrap();
        store.append("s1", &Message::user_text("two", 2)).unwrap();
        let second = store.load_shared("s1").unwrap();
        assert_eq!(first.len(), 1, "what a caller holds does not change under it");
        let texts: Vec<String> = second.iter().map(Message::text).collect();
        assert_eq!(texts, ["one", "two"]);
        drop((first, second));
        store.append("s1", &Message::user_text("three", 3)).unwrap();
        assert_eq!(store.load_shared("s1").unwrap().len(), 3);
        assert_eq!(store.load("s1").unwrap().messages.len(), 3);
    }
}
