//! Images in a turn: the ones a tool returned are checked, downscaled and stored with the
//! session before their result is saved; the ones a request names are read back from the
//! session's files and handed to the provider. Decoding and file reads run on the blocking
//! pool: a 20 MB image must not stall the other sessions' turns.

use vigil_protocol::{ContentBlock, Message};

use crate::images::ImageBytes;
use crate::provider::RequestImages;
use crate::session::SessionStore;

/// Prepares and stores a tool's images; returns their blocks, and a line for each image that
/// could not be used (said in the result, so the model knows).
pub(super) async fn store_tool_images(
    store: &SessionStore,
    session_id: &str,
    images: Vec<ImageBytes>,
) -> (Vec<ContentBlock>, Vec<String>) {
    let mut blocks = Vec::new();
    let mut problems = Vec::new();
    for (n, image) in images.into_iter().enumerate() {
        let name = format!("image {} ({})", n + 1, image.mime);
        let prepared = tokio::task::spawn_blocking(move || crate::images::prepare(&name, image.bytes))
            .await
            .unwrap_or_else(|e| {
                Err(crate::images::ImageError::Encode {
                    name: format!("image {}", n + 1),
                    detail: e.to_string(),
                })
            });
        let stored = match prepared {
            Ok(p) => store
                .put_image(session_id, &p.bytes, p.mime)
                .await
                .map_err(|e| format!("image {} could not be saved: {e}", n + 1)),
            Err(e) => Err(e.to_string()),
        };
        match stored {
            Ok(block) => blocks.push(block),
            Err(problem) => problems.push(problem),
        }
    }
    (blocks, problems)
}

/// The bytes of every image `messages` name, read from the session's files. An image whose
/// file cannot be read is left out (the provider sends a placeholder line for it).
pub(super) async fn request_images(store: &SessionStore, session_id: &str, messages: &[Message]) -> RequestImages {
    let wanted: Vec<(String, String)> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::Image { sha256, mime } => Some((sha256.clone(), mime.clone())),
            _ => None,
        })
        .collect();
    if wanted.is_empty() {
        return RequestImages::default();
    }
    let (store, session_id) = (store.clone(), session_id.to_string());
    tokio::task::spawn_blocking(move || {
        let mut images = RequestImages::default();
        for (sha256, mime) in wanted {
            if images.contains(&sha256) {
                continue;
            }
            match store.read_image(&session_id, &sha256, &mime) {
                Ok(Some(bytes)) => images.insert(sha256, &bytes),
                Ok(None) => tracing::warn!(session = session_id, "image {sha256} is missing; sent as a placeholder"),
                Err(e) => tracing::warn!(session = session_id, "image {sha256} could not be read: {e}"),
            }
        }
        images
    })
    .await
    .unwrap_or_default()
}
