//! Images a user sends with a message, and the limits every front end applies to them.
//!
//! The transcript holds an image only as [`crate::ContentBlock::Image`] (its hash and type);
//! the bytes live beside the transcript, stored once per conversation.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A file sent with a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct Attachment {
    /// An absolute path the runtime can read (the desktop app writes pasted images to a file
    /// under the data folder first).
    pub path: String,
    /// What the user calls the image: the file's name where it was picked, pasted or dropped.
    /// A refusal names it instead of the path's file name, because a pasted image is staged
    /// under a generated name the user never saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub name: Option<String>,
}

/// The largest image file accepted, before downscaling: 20 MB.
pub const MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;

/// The longest side, in pixels, of an image as it is stored and sent: the size Anthropic
/// recommends, past which the service would scale it down itself (and bill the same).
pub const MAX_IMAGE_SIDE: u32 = 1568;

/// The image types accepted, as MIME types.
pub const IMAGE_MIME_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The file extension a stored image of this MIME type gets; `None` for a type not accepted.
pub fn image_extension(mime: &str) -> Option<&'static str> {
    match mime {
        "image/png" => Some("png"),
        "image/jpeg" => Some("jpg"),
        "image/gif" => Some("gif"),
        "image/webp" => Some("webp"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ContentBlock, Op};
    use serde_json::json;

    #[test]
    fn a_user_message_without_attachments_still_parses_and_one_with_them_keeps_them() {
        let op: Op = serde_json::from_value(json!({"type": "user_message", "text": "hi"})).unwrap();
        assert_eq!(
            op,
            Op::UserMessage {
                text: "hi".into(),
                session_id: None,
                attachments: vec![]
            }
        );
        let op: Op = serde_json::from_value(
            json!({"type": "user_message", "text": "what is this?", "attachments": [{"path": "/tmp/a.png"}]}),
        )
        .unwrap();
        assert_eq!(
            op,
            Op::UserMessage {
                text: "what is this?".into(),
                session_id: None,
                attachments: vec![Attachment {
                    path: "/tmp/a.png".into(),
                    name: None,
                }]
            }
        );
    }

    #[test]
    fn an_image_block_names_its_blob_and_carries_no_bytes() {
        let block = ContentBlock::Image {
            sha256: "ab".repeat(32),
            mime: "image/png".into(),
        };
        assert_eq!(
            serde_json::to_value(&block).unwrap(),
            json!({"type": "image", "sha256": "ab".repeat(32), "mime": "image/png"})
        );
        assert!(IMAGE_MIME_TYPES.iter().all(|m| image_extension(m).is_some()));
        assert_eq!(image_extension("image/svg+xml"), None);
    }
}
