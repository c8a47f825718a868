//! The images of one request: their bytes, base64-encoded once (a retry reuses them), and
//! what each image block becomes on the wire.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine as _;

/// The base64 bytes of the images a request names, by SHA-256. Cheap to clone.
#[derive(Clone, Default)]
pub struct RequestImages {
    by_sha256: HashMap<String, Arc<str>>,
}

impl std::fmt::Debug for RequestImages {
    // Megabytes of base64 have no place in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RequestImages({} images)", self.by_sha256.len())
    }
}

impl RequestImages {
    /// Adds the bytes of the image `sha256` (encoded here, once).
    pub fn insert(&mut self, sha256: impl Into<String>, bytes: &[u8]) {
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.by_sha256.insert(sha256.into(), encoded.into());
    }

    /// Whether the bytes of `sha256` are here.
    pub fn contains(&self, sha256: &str) -> bool {
        self.by_sha256.contains_key(sha256)
    }

    pub fn len(&self) -> usize {
        self.by_sha256.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_sha256.is_empty()
    }
}

/// What an image block is sent as.
pub(super) enum WireImage<'a> {
    /// Its bytes, base64.
    Data { mime: &'a str, base64: &'a str },
    /// A line in place of the image, saying why it is not there.
    Note(String),
}

/// The images of the request being built, and whether the model refused images before.
pub(super) struct Wire<'a> {
    pub images: &'a RequestImages,
    pub refused: bool,
}

impl<'a> Wire<'a> {
    pub fn image(&self, sha256: &str, mime: &'a str) -> WireImage<'a> {
        if self.refused {
            return WireImage::Note("[an image was here; it was not sent: this model does not accept images]".into());
        }
        match self.images.by_sha256.get(sha256) {
            Some(base64) => WireImage::Data { mime, base64 },
            None => WireImage::Note(crate::session::blobs::missing_image_text(sha256)),
        }
    }
}
