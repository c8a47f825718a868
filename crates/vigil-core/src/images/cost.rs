//! # images::cost
//!
//! What preparing one image takes in memory, worked out from its header before a pixel is
//! decoded: the picture, what its decoder holds beside it, and the downscaled copies. The
//! figures are upper bounds read from the decoders' code (image 0.25, png 0.18, zune-jpeg
//! 0.5, gif 0.14, image-webp 0.2); `tests/suite/image_bombs.rs` holds them to the peak RSS of
//! a bomb of each format.
//!
//! Must never: read more than headers, or allocate by what a header claims.

use image::{ColorType, ImageFormat};
use vigil_protocol::MAX_IMAGE_SIDE;

const MIB: u64 = 1024 * 1024;

/// What a PNG decoder may allocate beside the picture (its rows, and chunks such as an ICC
/// profile, inflated), passed to png's own limits.
pub(super) const PNG_OWN: u64 = 16 * MIB;

/// Encoding the downscaled picture: the PNG tried first, then the JPEG.
const ENCODING: u64 = 16 * MIB;

/// The memory one image takes, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cost {
    /// While decoding, the picture included: the decoder's `Limits::max_alloc`.
    pub decode: u64,
    /// From the header to the encoded result: what is taken from the shared budget.
    pub total: u64,
}

/// The cost of a `width` × `height` picture of `color` in `format`, whose file is `file`.
pub(super) fn of(format: ImageFormat, width: u32, height: u32, color: ColorType, file: &[u8]) -> Cost {
    let pixels = u64::from(width) * u64::from(height);
    let picture = pixels * u64::from(color.bytes_per_pixel());
    let beside = match format {
        ImageFormat::Png => PNG_OWN,
        // zune-jpeg decodes from a copy of the file; a progressive one keeps every block's
        // coefficients until its last scan.
        ImageFormat::Jpeg => file.len() as u64 + jpeg_coefficients(file, width, height),
        // A first frame that does not cover the screen is decoded into a buffer of its own,
        // reserved against the decoder's limits (so a frame larger than its screen fails).
        ImageFormat::Gif => picture,
        // Lossless pictures are decoded as RGBA beside an RGB result; lossy ones as YUV planes
        // and an alpha plane, which take less.
        _ => pixels * 4,
    };
    let decode = picture + beside;
    Cost {
        decode,
        total: decode + downscaled(width, height, color),
    }
}

/// The copies [`super::downscale`] makes: a box-filtered one at most twice the size sent, the
/// Triangle filter's pass in `f32` RGBA (the new height times the old width), the result,
/// its turned or flattened copy, and the encoding.
fn downscaled(width: u32, height: u32, color: ColorType) -> u64 {
    let bpp = u64::from(color.bytes_per_pixel());
    let area = |(w, h): (u32, u32)| u64::from(w) * u64::from(h);
    let (w2, h2) = super::fit(width, height, 2 * MAX_IMAGE_SIDE);
    let (w1, h1) = super::fit(width, height, MAX_IMAGE_SIDE);
    area((w2, h2)) * bpp + area((w2, h1)) * 16 + 2 * area((w1, h1)) * bpp + ENCODING
}

/// The coefficients a progressive JPEG keeps: 64 of two bytes per block, for every block of
/// every component (zune-jpeg's `decode_mcu_ycbcr_progressive`). A baseline JPEG decodes a
/// row of blocks at a time: nothing to count. A file whose frame header cannot be found is
/// counted as progressive with three full-size components.
fn jpeg_coefficients(file: &[u8], width: u32, height: u32) -> u64 {
    let blocks = |w: u32, h: u32| u64::from(w.div_ceil(8)) * u64::from(h.div_ceil(8));
    let Some(frame) = jpeg_frame(file) else {
        return 3 * blocks(width, height) * 128;
    };
    if !frame.progressive {
        return 0;
    }
    let h_max = frame.sampling.iter().map(|s| s.0).max().unwrap_or(1);
    let v_max = frame.sampling.iter().map(|s| s.1).max().unwrap_or(1);
    let mcus = u64::from(width.div_ceil(8 * h_max)) * u64::from(height.div_ceil(8 * v_max));
    frame.sampling.iter().map(|(h, v)| mcus * u64::from(h * v) * 128).sum()
}

/// What a JPEG's frame header (SOF) says about decoding it.
#[derive(Debug, PartialEq, Eq)]
struct Frame {
    progressive: bool,
    /// Each component's horizontal and vertical sampling factors (1 to 4).
    sampling: Vec<(u32, u32)>,
}

/// The frame header: the first SOF segment, found by walking the segments from the start.
fn jpeg_frame(file: &[u8]) -> Option<Frame> {
    let mut at = 2; // after SOI
    loop {
        if *file.get(at)? != 0xFF {
            return None;
        }
        // Any number of 0xFF may pad before a marker.
        at += 1;
        while *file.get(at)? == 0xFF {
            at += 1;
        }
        let marker = file[at];
        at += 1;
        match marker {
            // Markers without a length: TEM and the restart markers.
            0x01 | 0xD0..=0xD7 => continue,
            // A scan or the end before any frame header.
            0xDA | 0xD9 => return None,
            _ => {}
        }
        let len = usize::from(u16::from_be_bytes([*file.get(at)?, *file.get(at + 1)?]));
        let body = file.get(at + 2..at + len.max(2))?;
        // SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC).
        if (0xC0..=0xCF).contains(&marker) && ![0xC4, 0xC8, 0xCC].contains(&marker) {
            let components = usize::from(*body.get(5)?);
            let sampling = (0..components)
                .map(|i| {
                    body.get(7 + 3 * i)
                        .map(|hv| (u32::from(hv >> 4).max(1), u32::from(hv & 15).max(1)))
                })
                .collect::<Option<Vec<_>>>()?;
            return Some(Frame {
                progressive: [0xC2, 0xC6, 0xCA, 0xCE].contains(&marker),
                sampling,
            });
        }
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jpeg(width: u32, height: u32, progressive: bool, subsampled: bool) -> Vec<u8> {
        let img = image::RgbImage::from_pixel(width, height, image::Rgb([10, 200, 30]));
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new(&mut out)
            .encode_image(&img)
            .unwrap();
        // The encoder writes baseline 4:4:4; the header is patched for the other cases (the
        // code under test reads only it).
        let sof = out.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        if progressive {
            out[sof + 1] = 0xC2;
        }
        if subsampled {
            out[sof + 11] = 0x22; // Y at 2 × 2, so Cb and Cr at half its width and height
        }
        out
    }

    #[test]
    fn a_jpeg_frame_header_is_found_past_the_other_segments() {
        assert_eq!(
            jpeg_frame(&jpeg(40, 30, false, true)),
            Some(Frame {
                progressive: false,
                sampling: vec![(2, 2), (1, 1), (1, 1)]
            })
        );
        assert!(jpeg_frame(&jpeg(40, 30, true, false)).unwrap().progressive);
        assert_eq!(jpeg_frame(b"\xFF\xD8\xFF\xDA\x00\x02"), None);
        assert_eq!(jpeg_frame(b"\xFF\xD8\xFF\xE0\x00"), None, "cut short");
    }

    #[test]
    fn a_progressive_jpeg_counts_its_coefficients_and_a_baseline_one_does_not() {
        let rgb = ColorType::Rgb8;
        let (w, h) = (4000, 3000);
        let file = jpeg(16, 16, false, true);
        let baseline = of(ImageFormat::Jpeg, w, h, rgb, &file);
        let picture_and_file = 36_000_000 + file.len() as u64;
        assert_eq!(baseline.decode, picture_and_file);
        // 4:2:0: 250 × 188 MCUs of 16 × 16 px, each 4 Y blocks, one Cb and one Cr.
        let progressive = of(ImageFormat::Jpeg, w, h, rgb, &jpeg(16, 16, true, true));
        assert_eq!(progressive.decode - picture_and_file, 250 * 188 * 6 * 128);
        // 4:4:4: three blocks per 8 × 8 px.
        let full = of(ImageFormat::Jpeg, w, h, rgb, &jpeg(16, 16, true, false));
        assert_eq!(full.decode - picture_and_file, 500 * 375 * 3 * 128);
    }

    #[test]
    fn the_downscaled_copies_are_counted_once_whatever_the_size() {
        let rgba = ColorType::Rgba8;
        // A picture that is sent as it is still counts the copies it might need.
        let small = of(ImageFormat::Png, 100, 100, rgba, &[]);
        assert_eq!(small.decode, 40_000 + PNG_OWN);
        assert_eq!(small.total - small.decode, 40_000 + 100 * 100 * 16 + 80_000 + ENCODING);
        // 8000 × 4000: boxed to 3136 × 1568, filtered to 1568 × 784.
        let wide = of(ImageFormat::Png, 8000, 4000, rgba, &[]);
        let copies = 3136 * 1568 * 4 + 3136 * 784 * 16 + 2 * 1568 * 784 * 4 + ENCODING;
        assert_eq!(wide.total - wide.decode, copies);
    }
}
