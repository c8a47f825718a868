//! Images the user sends with a message: each file is read, checked, downscaled and stored
//! with the conversation on the blocking pool, then the message starts (or joins) a turn with
//! them. One that cannot be used is an error naming it, and nothing is sent: no message is
//! saved, no request made.
//!
//! A desktop front end that holds an image's bytes rather than a path (a paste) writes them
//! into `<data dir>/attachments/` with [`stage_attachment`]; a staged file is removed once
//! its message was handled, and any a crash left behind are removed a day later.
//!
//! Preparing a large image takes a moment, so a message with images can be overtaken by a
//! text-only message sent right after it.
//!
//! Owns: the staging folder and turning attachments into stored images. Must never: send a
//! message with an image it could not use, or remove an attached file that is not a staged
//! copy (a file the user picked elsewhere stays where it is).

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use vigil_protocol::{Attachment, ContentBlock, ErrorKind, Event, Scope, Source, MAX_ATTACHMENT_BYTES};

use crate::events::Emitter;
use crate::session::SessionStore;

/// Where [`stage_attachment`] puts images handed over as bytes, under the data folder.
pub const STAGING_DIR: &str = "attachments";

/// A staged image older than this belongs to no message in progress.
const STAGED_STALE_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// Prepares and stores `attachments` with `session_id` (the images for its message), then
/// removes the staged ones; or says why the message cannot be sent.
pub(super) async fn prepare(
    store: &SessionStore,
    data_dir: &Path,
    session_id: &str,
    attachments: &[Attachment],
) -> Result<Vec<ContentBlock>, String> {
    let stored = store_all(store, session_id, attachments).await;
    let staging = data_dir.join(STAGING_DIR);
    for a in attachments {
        if Path::new(&a.path).parent() == Some(staging.as_path()) {
            let _ = std::fs::remove_file(&a.path);
        }
    }
    stored
}

/// The message was not sent: the conversation shows why.
pub(super) fn refused(emitter: &Emitter, session_id: &str, message: String) {
    emitter.for_session(session_id, Scope::Primary).emit(
        Source::System,
        Event::Error {
            kind: ErrorKind::Attachment,
            message,
        },
    );
}

async fn store_all(
    store: &SessionStore,
    session_id: &str,
    attachments: &[Attachment],
) -> Result<Vec<ContentBlock>, String> {
    let mut blocks = Vec::new();
    for a in attachments {
        let (path, name) = (PathBuf::from(&a.path), a.name.clone());
        let prepared = tokio::task::spawn_blocking(move || crate::images::prepare_file(&path, name.as_deref()))
            .await
            .map_err(|e| format!("An image could not be prepared ({e}); the message was not sent."))?
            .map_err(|e| format!("Cannot send this image: {e}. The message was not sent."))?;
        let block = store
            .put_image(session_id, &prepared.bytes, prepared.mime)
            .await
            .map_err(|e| format!("Could not save the image: {e}. The message was not sent."))?;
        blocks.push(block);
    }
    Ok(blocks)
}

/// Writes image bytes a front end holds (a pasted picture) to a file of their own under
/// `<data_dir>/attachments/`, to send as an attachment; `name` gives the extension. Refuses
/// more than 20 MB. Removes staged files a crash left behind.
pub fn stage_attachment(data_dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    if bytes.len() as u64 > MAX_ATTACHMENT_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{name} is {:.1} MB; images up to 20 MB can be sent",
                bytes.len() as f64 / 1e6
            ),
        ));
    }
    let dir = data_dir.join(STAGING_DIR);
    crate::durable::create_private_dir_all(&dir)?;
    sweep_stale(&dir, SystemTime::now());
    let ext: String = Path::new(name)
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .filter(|e| e.len() <= 5 && e.chars().all(|c| c.is_ascii_alphanumeric()))
        .unwrap_or_else(|| "img".into());
    let path = dir.join(format!("{}.{ext}", uuid::Uuid::new_v4()));
    crate::durable::create_new(&path, bytes)?;
    Ok(path)
}

fn sweep_stale(dir: &Path, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > STAGED_STALE_AFTER);
        if stale {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_bytes_get_a_file_of_their_own_with_their_extension() {
        let dir = tempfile::tempdir().unwrap();
        let a = stage_attachment(dir.path(), "Screenshot 1.PNG", b"one").unwrap();
        let b = stage_attachment(dir.path(), "Screenshot 1.PNG", b"two").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.parent().unwrap(), dir.path().join(STAGING_DIR));
        assert_eq!(a.extension().unwrap(), "png");
        assert_eq!(std::fs::read(&b).unwrap(), b"two");
        let odd = stage_attachment(dir.path(), "../../x.p/ng", b"three").unwrap();
        assert_eq!(odd.parent().unwrap(), dir.path().join(STAGING_DIR));
        let big = vec![0u8; MAX_ATTACHMENT_BYTES as usize + 1];
        assert!(stage_attachment(dir.path(), "big.png", &big).is_err());
    }
}
