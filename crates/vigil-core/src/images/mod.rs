//! # images
//!
//! Owns turning an image someone hands over (a file the user attached, a picture a tool
//! returned) into what is stored and sent: it must be a PNG, JPEG, GIF or WebP of at most
//! 20 MB that decodes whole; it is then downscaled so its long side is at most 1 568 px and
//! re-encoded. An image that already fits is kept byte for byte (no generation loss, an
//! animated GIF stays animated).
//!
//! Memory is bounded before a pixel is decoded: a 2 MB JPEG can describe a picture of a
//! gigabyte. The header says what decoding and downscaling will take ([`cost`]); an image
//! that would take more than [`DECODE_BUDGET`] is refused, and the others share that budget
//! ([`budget`]), so images read in parallel decode side by side only while they fit in it.
//! The decoder gets the same figure as its `Limits`, with the picture reserved in it.
//!
//! Must never: accept an image it could not decode to the last row (a corrupt file is an
//! error, not a half-grey picture sent to the model); start decoding before its cost is
//! taken from the budget; hold more than one full-size decoded copy of an image; touch the
//! disk except to read the file it is given.

mod budget;
mod cost;

use std::io::Cursor;
use std::path::{Path, PathBuf};

use image::{DynamicImage, ImageDecoder, ImageFormat, ImageReader, Limits};
use vigil_protocol::{MAX_ATTACHMENT_BYTES, MAX_IMAGE_SIDE};

/// The most bytes an image may have once prepared: base64 of it stays under the 5 MB the
/// Anthropic API takes per image. A larger PNG is sent as JPEG instead.
pub const MAX_SENT_BYTES: usize = 3_750_000;

/// The memory all image decodes in the process share, and so the most one may take: a
/// 48-megapixel photo fits, with its downscaled copies.
pub const DECODE_BUDGET: u64 = 400_000_000;

/// Decodes wait here for their share of [`DECODE_BUDGET`].
static DECODES: budget::Budget = budget::Budget::new(DECODE_BUDGET);

/// JPEG quality for re-encoded photos: visually lossless for a model's eyes.
const JPEG_QUALITY: u8 = 85;

/// An image's bytes and MIME type as a tool hands them over (not yet checked or downscaled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageBytes {
    pub bytes: Vec<u8>,
    /// What the giver says it is; the bytes decide (a PNG labelled `image/jpeg` is a PNG).
    pub mime: String,
}

impl ImageBytes {
    pub fn new(bytes: impl Into<Vec<u8>>, mime: impl Into<String>) -> Self {
        Self {
            bytes: bytes.into(),
            mime: mime.into(),
        }
    }
}

/// An image ready to store and send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    pub bytes: Vec<u8>,
    /// One of [`vigil_protocol::IMAGE_MIME_TYPES`].
    pub mime: &'static str,
    pub width: u32,
    pub height: u32,
}

/// Why an image cannot be sent. Each message names the file (when there is one) and says
/// what the user can do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// Over 20 MB. Recover: send a smaller image (a screenshot of part of the screen…).
    #[error("{name} is {} MB; images up to 20 MB can be sent", mb(*.size))]
    TooLarge { name: String, size: u64 },
    /// Its picture would take more memory to open than images may use (a huge picture, or a
    /// small file that claims one). Recover: send a smaller copy, downscaled or cropped.
    #[error(
        "{name} is {width} × {height} pixels: opening it would take {} MB, more than the {} MB images may \
         use; send a smaller copy",
        mb(*.needed),
        mb(DECODE_BUDGET)
    )]
    TooManyPixels {
        name: String,
        width: u32,
        height: u32,
        needed: u64,
    },
    /// Not a PNG, JPEG, GIF or WebP. Recover: convert it, or take a screenshot of it.
    #[error("{name} is not a PNG, JPEG, GIF or WebP image")]
    Unsupported { name: String },
    /// It claims to be an image but does not decode. Recover: open and save it again.
    #[error("{name} could not be read as a {format} image (the file may be damaged or cut short): {detail}")]
    Corrupt {
        name: String,
        format: &'static str,
        detail: String,
    },
    /// The file could not be read. Recover: check the path and its permissions.
    #[error("could not read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Re-encoding failed (a bug, or memory ran out).
    #[error("{name} could not be prepared for sending: {detail}")]
    Encode { name: String, detail: String },
}

fn mb(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / 1_000_000.0)
}

/// Reads, checks and prepares the image file at `path` (the size is checked before reading).
/// Errors call it `name`, the user's name for it, or else by the path's file name.
pub fn prepare_file(path: &Path, name: Option<&str>) -> Result<Prepared, ImageError> {
    let name = name.map(str::to_string).unwrap_or_else(|| {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| path.display().to_string())
    });
    let read_error = |source| ImageError::Read {
        path: path.to_path_buf(),
        source,
    };
    let size = std::fs::metadata(path).map_err(read_error)?.len();
    if size > MAX_ATTACHMENT_BYTES {
        return Err(ImageError::TooLarge { name, size });
    }
    let bytes = std::fs::read(path).map_err(read_error)?;
    prepare(&name, bytes)
}

/// Checks and prepares image bytes; `name` is how errors call the image.
pub fn prepare(name: &str, bytes: Vec<u8>) -> Result<Prepared, ImageError> {
    let name = name.to_string();
    if bytes.len() as u64 > MAX_ATTACHMENT_BYTES {
        return Err(ImageError::TooLarge {
            name,
            size: bytes.len() as u64,
        });
    }
    let format = match image::guess_format(&bytes) {
        Ok(f @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP)) => f,
        _ => return Err(ImageError::Unsupported { name }),
    };
    let corrupt = |e: image::ImageError| ImageError::Corrupt {
        name: name.clone(),
        format: format_name(format),
        detail: e.to_string(),
    };
    // The header alone first: what the picture would take, before any of it is decoded.
    let probe = decoder(&bytes, format).map_err(corrupt)?;
    let (width, height) = probe.dimensions();
    let cost = cost::of(format, width, height, probe.color_type(), &bytes);
    drop(probe);
    let too_large = || ImageError::TooManyPixels {
        name: name.clone(),
        width,
        height,
        needed: cost.total,
    };
    let _lease = DECODES.take(cost.total).ok_or_else(too_large)?;
    let mut decoder = decoder(&bytes, format).map_err(corrupt)?;
    let mut limits = Limits::no_limits();
    limits.max_alloc = Some(cost.decode);
    // As `ImageReader::decode` does, and `from_decoder` does not: the picture counts too.
    limits.reserve(decoder.total_bytes()).map_err(|_| too_large())?;
    decoder.set_limits(limits).map_err(|_| too_large())?;
    let orientation = decoder.orientation().map_err(corrupt)?;
    // Decoding to the end is the check: a truncated or damaged file fails here.
    let mut img = DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    let upright = orientation == image::metadata::Orientation::NoTransforms;
    if width.max(height) <= MAX_IMAGE_SIDE && upright && bytes.len() <= MAX_SENT_BYTES {
        return Ok(Prepared {
            bytes,
            mime: mime_of(format),
            width,
            height,
        });
    }
    drop(bytes);
    // Turned after downscaling, so a turn copies the small picture, not the large one (`fit`
    // gives the same size either way round).
    let (w, h) = fit(width, height, MAX_IMAGE_SIDE);
    if (w, h) != (width, height) {
        img = downscale(img, w, h);
    }
    img.apply_orientation(orientation);
    encode(&name, img, format)
}

/// A decoder for `bytes` that has read the header only. PNG's decoder takes its limits here
/// for what it allocates beside the picture; the others get theirs later.
fn decoder(bytes: &[u8], format: ImageFormat) -> image::ImageResult<impl ImageDecoder + '_> {
    let mut limits = Limits::no_limits();
    limits.max_alloc = Some(cost::PNG_OWN);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits);
    reader.into_decoder()
}

/// Downscales to `width` × `height`: a box filter first to at most twice that (it holds only
/// its result), then the Triangle filter, whose `f32` pass is then small. The full-size
/// picture is freed before the second step.
fn downscale(img: DynamicImage, width: u32, height: u32) -> DynamicImage {
    let (w2, h2) = fit(img.width(), img.height(), 2 * MAX_IMAGE_SIDE);
    let img = if (w2, h2) == (img.width(), img.height()) {
        img
    } else {
        let boxed = img.thumbnail_exact(w2, h2);
        drop(img);
        boxed
    };
    img.resize_exact(width, height, image::imageops::FilterType::Triangle)
}

/// The size that fits `max` on the long side, keeping the aspect ratio (at least 1 px).
pub fn fit(width: u32, height: u32, max: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= max {
        return (width, height);
    }
    let scale = |side: u32| ((side as u64 * max as u64 + long as u64 / 2) / long as u64).max(1) as u32;
    (scale(width), scale(height))
}

/// Re-encodes a downscaled (or turned) image: a JPEG stays JPEG; anything else becomes PNG,
/// or JPEG when the PNG would be too big to send (a photo saved as PNG).
fn encode(name: &str, img: DynamicImage, source: ImageFormat) -> Result<Prepared, ImageError> {
    let (width, height) = (img.width(), img.height());
    let failed = |e: image::ImageError| ImageError::Encode {
        name: name.to_string(),
        detail: e.to_string(),
    };
    if source != ImageFormat::Jpeg {
        let mut png = Vec::new();
        let encoder = image::codecs::png::PngEncoder::new_with_quality(
            &mut png,
            image::codecs::png::CompressionType::Fast,
            image::codecs::png::FilterType::Adaptive,
        );
        img.write_with_encoder(encoder).map_err(failed)?;
        if png.len() <= MAX_SENT_BYTES {
            return Ok(Prepared {
                bytes: png,
                mime: "image/png",
                width,
                height,
            });
        }
    }
    let mut jpeg = Vec::new();
    let encoder = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, JPEG_QUALITY);
    flatten(img).write_with_encoder(encoder).map_err(failed)?;
    Ok(Prepared {
        bytes: jpeg,
        mime: "image/jpeg",
        width,
        height,
    })
}

/// JPEG has no transparency: transparent parts go on white, as a viewer would show them.
fn flatten(img: DynamicImage) -> DynamicImage {
    if !img.color().has_alpha() {
        return DynamicImage::ImageRgb8(img.into_rgb8());
    }
    let rgba = img.into_rgba8();
    let (w, h) = rgba.dimensions();
    let mut rgb = image::RgbImage::new(w, h);
    for (dst, src) in rgb.pixels_mut().zip(rgba.pixels()) {
        let a = src[3] as u32;
        for c in 0..3 {
            dst[c] = ((src[c] as u32 * a + 255 * (255 - a) + 127) / 255) as u8;
        }
    }
    DynamicImage::ImageRgb8(rgb)
}

fn mime_of(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "image/png",
        ImageFormat::Jpeg => "image/jpeg",
        ImageFormat::Gif => "image/gif",
        _ => "image/webp",
    }
}

fn format_name(format: ImageFormat) -> &'static str {
    match format {
        ImageFormat::Png => "PNG",
        ImageFormat::Jpeg => "JPEG",
        ImageFormat::Gif => "GIF",
        _ => "WebP",
    }
}

/// The MIME type of a file's bytes, if they are one of the accepted image types (a cheap
/// look at the first bytes; [`prepare`] is the real check).
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match image::guess_format(bytes).ok()? {
        f @ (ImageFormat::Png | ImageFormat::Jpeg | ImageFormat::Gif | ImageFormat::WebP) => Some(mime_of(f)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let img = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x % 256) as u8, (y % 256) as u8, 90]));
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(img)
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn a_small_image_is_kept_byte_for_byte() {
        let bytes = png(40, 30);
        let p = prepare("a.png", bytes.clone()).unwrap();
        assert_eq!((p.bytes, p.mime, p.width, p.height), (bytes, "image/png", 40, 30));
    }

    #[test]
    fn a_large_image_is_downscaled_to_1568_on_its_long_side() {
        let p = prepare("wide.png", png(3136, 1000)).unwrap();
        assert_eq!((p.mime, p.width, p.height), ("image/png", 1568, 500));
        let back = image::load_from_memory(&p.bytes).unwrap();
        assert_eq!((back.width(), back.height()), (1568, 500));
        let p = prepare("tall.png", png(700, 2000)).unwrap();
        assert_eq!((p.width, p.height), (549, 1568));
    }

    #[test]
    fn a_cut_short_or_foreign_file_is_a_clear_error() {
        let mut bytes = png(300, 300);
        bytes.truncate(bytes.len() / 2);
        let e = prepare("shot.png", bytes).unwrap_err();
        assert!(matches!(e, ImageError::Corrupt { format: "PNG", .. }), "{e}");
        assert!(
            e.to_string().starts_with("shot.png could not be read as a PNG image"),
            "{e}"
        );
        let e = prepare("notes.txt", b"hello there, not an image".to_vec()).unwrap_err();
        assert_eq!(e.to_string(), "notes.txt is not a PNG, JPEG, GIF or WebP image");
    }

    #[test]
    fn a_huge_claimed_size_is_refused_without_decoding_it() {
        // A JPEG header claiming 60 000 × 60 000 pixels (a JPEG has no checksum to fix).
        let img = image::RgbImage::from_pixel(16, 16, image::Rgb([0, 0, 0]));
        let mut bytes = Vec::new();
        image::codecs::jpeg::JpegEncoder::new(&mut bytes)
            .encode_image(&img)
            .unwrap();
        let sof = bytes.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        bytes[sof + 5..sof + 9].copy_from_slice(&[0xEA, 0x60, 0xEA, 0x60]);
        let e = prepare("bomb.jpg", bytes).unwrap_err();
        assert!(matches!(e, ImageError::TooManyPixels { width: 60_000, .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("bomb.jpg is 60000 × 60000 pixels: opening it would take"),
            "{e}"
        );
    }

    #[test]
    fn a_turned_photo_is_downscaled_then_turned() {
        use image::ImageEncoder as _;
        // A JPEG stored 3000 × 1000 whose EXIF says it is turned 90° (orientation 6).
        let img = image::RgbImage::from_pixel(3000, 1000, image::Rgb([200, 30, 30]));
        let mut jpeg = Vec::new();
        let mut encoder = image::codecs::jpeg::JpegEncoder::new(&mut jpeg);
        let exif = [
            b"MM\0\x2a\0\0\0\x08\0\x01".as_slice(),
            &[0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0],
            &[0, 0, 0, 0],
        ]
        .concat();
        encoder.set_exif_metadata(exif).unwrap();
        encoder.encode_image(&img).unwrap();
        let p = prepare("photo.jpg", jpeg).unwrap();
        assert_eq!((p.mime, p.width, p.height), ("image/jpeg", 523, 1568));
    }

    #[test]
    fn fit_keeps_the_aspect_ratio() {
        assert_eq!(fit(1568, 10, 1568), (1568, 10));
        assert_eq!(fit(4000, 3000, 1568), (1568, 1176));
        assert_eq!(fit(100_000, 10, 1568), (1568, 1));
    }

    #[test]
    fn transparent_parts_go_on_white_in_a_jpeg() {
        let img = image::RgbaImage::from_pixel(2, 1, image::Rgba([0, 0, 0, 0]));
        let flat = flatten(DynamicImage::ImageRgba8(img)).into_rgb8();
        assert_eq!(flat.get_pixel(0, 0), &image::Rgb([255, 255, 255]));
    }
}
