//! Image bombs (issue 30 §8): a small file that describes a huge picture, in each format
//! Vigil takes, is refused before it is decoded, and a large but fair picture is decoded
//! within the memory images may use; decoding all of them, one at a time and then all at
//! once, grows the process's peak RSS by less than 512 MiB.
//!
//! The files are written here by hand in each format's own way of saying "the same pixel
//! again", so the test never holds the picture a file describes: a JPEG whose every block
//! is one or two zero bits, a deflate stream of 258-byte copies, GIF LZW codes for ever
//! longer runs, and a lossless WebP whose every prefix code has one symbol and so takes no
//! bits at all.

use std::time::Instant;

use vigil_core::images::prepare;

use super::alone::{reset_peak, run_alone, status_bytes, MIB};

/// Bits written least significant first (deflate, GIF LZW and WebP lossless all pack so).
#[derive(Default)]
struct Bits {
    out: Vec<u8>,
    acc: u64,
    n: u32,
}

impl Bits {
    fn put(&mut self, value: u32, width: u32) {
        self.acc |= u64::from(value) << self.n;
        self.n += width;
        while self.n >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.n -= 8;
        }
    }

    /// A deflate Huffman code, which is packed starting from its most significant bit.
    fn code(&mut self, code: u32, width: u32) {
        self.put(code.reverse_bits() >> (32 - width), width);
    }

    fn finish(mut self) -> Vec<u8> {
        if self.n > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// An RGBA PNG of zeros. Its zlib stream is one fixed-Huffman block: a literal zero, then
/// copies of 258 bytes at distance 1 (13 bits each), then literal zeros to the exact length.
fn png_bomb(width: u32, height: u32) -> Vec<u8> {
    let len = u64::from(height) * (1 + u64::from(width) * 4);
    let mut bits = Bits::default();
    bits.put(0b011, 3); // the final block, fixed Huffman codes
    let zero = |bits: &mut Bits| bits.code(0b0011_0000, 8);
    zero(&mut bits);
    let mut left = len - 1;
    while left >= 258 {
        bits.code(0b1100_0101, 8); // length 258
        bits.code(0, 5); // distance 1
        left -= 258;
    }
    for _ in 0..left {
        zero(&mut bits);
    }
    bits.code(0, 7); // end of block
    let mut zlib = vec![0x78, 0x01];
    zlib.extend(bits.finish());
    // Adler-32 of zeros: a stays 1, b adds it once per byte.
    zlib.extend((((len % 65521) as u32) << 16 | 1).to_be_bytes());
    let mut header = width.to_be_bytes().to_vec();
    header.extend(height.to_be_bytes());
    header.extend([8, 6, 0, 0, 0]); // 8 bits, RGBA, deflate, no filter choice, no interlace
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    for (kind, data) in [(b"IHDR", &header), (b"IDAT", &zlib), (b"IEND", &Vec::new())] {
        png.extend((data.len() as u32).to_be_bytes());
        let start = png.len();
        png.extend(kind);
        png.extend(data);
        let crc = crc32(&png[start..]);
        png.extend(crc.to_be_bytes());
    }
    png
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for b in bytes {
        crc ^= u32::from(*b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                0xEDB8_8320 ^ (crc >> 1)
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A grey YCbCr JPEG, 4:4:4. Its Huffman tables each hold one 1-bit code `0`: "DC unchanged"
/// and "end of block", so a block costs two zero bits, or one in a progressive file that
/// has only its DC scan.
fn jpeg_bomb(width: u16, height: u16, progressive: bool) -> Vec<u8> {
    let mut jpeg = vec![0xFF, 0xD8];
    let mut segment = |marker: u8, body: &[u8]| {
        jpeg.extend([0xFF, marker]);
        jpeg.extend((body.len() as u16 + 2).to_be_bytes());
        jpeg.extend(body);
    };
    let mut quant = vec![0];
    quant.extend([1; 64]);
    segment(0xDB, &quant);
    let [h1, h0] = height.to_be_bytes();
    let [w1, w0] = width.to_be_bytes();
    let frame = [8, h1, h0, w1, w0, 3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0];
    segment(if progressive { 0xC2 } else { 0xC0 }, &frame);
    for class in [0x00, 0x10] {
        let mut table = vec![class, 1];
        table.extend([0; 15]);
        table.push(0);
        segment(0xC4, &table);
    }
    let spectrum_end = if progressive { 0 } else { 63 };
    segment(0xDA, &[3, 1, 0, 2, 0, 3, 0, 0, spectrum_end, 0]);
    let blocks = u64::from(width).div_ceil(8) * u64::from(height).div_ceil(8) * 3;
    let bits = if progressive { blocks } else { blocks * 2 };
    jpeg.resize(jpeg.len() + bits.div_ceil(8) as usize, 0);
    jpeg.extend([0xFF, 0xD9]);
    jpeg
}

/// A GIF of one frame filling its screen, every pixel colour 0.
fn gif_bomb(width: u16, height: u16) -> Vec<u8> {
    let mut gif = b"GIF89a".to_vec();
    gif.extend(width.to_le_bytes());
    gif.extend(height.to_le_bytes());
    gif.extend([0x80, 0, 0, 0, 0, 0, 255, 255, 255]); // a global table of two colours
    gif.extend([0x2C, 0, 0, 0, 0]);
    gif.extend(width.to_le_bytes());
    gif.extend(height.to_le_bytes());
    gif.extend([0, 2]); // no local table; LZW minimum code size 2
    for block in lzw_zeros(u64::from(width) * u64::from(height)).chunks(255) {
        gif.push(block.len() as u8);
        gif.extend(block);
    }
    gif.extend([0, 0x3B]);
    gif
}

/// `pixels` zeros as GIF LZW with minimum code size 2 (clear 4, end 5). After a clear, code
/// 0 is one zero and each next code is defined as the run before it and one zero more: sent
/// in order (6, 7, … 4095) they are runs of 2, 3, … 4091 zeros. Codes widen from 3 bits once
/// the decoder's next code reaches the width's limit, as GIF decoders do (no early change).
fn lzw_zeros(pixels: u64) -> Vec<u8> {
    let mut bits = Bits::default();
    let mut left = pixels;
    let mut width = 3;
    while left > 0 {
        bits.put(4, width);
        width = 3;
        bits.put(0, width);
        left -= 1;
        let (mut next, mut run) = (6, 1);
        while left > 0 && next < 4096 {
            // The last piece is a shorter run already defined (code = run + 4).
            let (code, len) = if left > run {
                (next, run + 1)
            } else {
                (left as u32 + 4, left)
            };
            let code = if len == 1 { 0 } else { code };
            bits.put(code, width);
            left -= len;
            run = len;
            next += 1;
            if next == 1 << width && width < 12 {
                width += 1;
            }
        }
    }
    bits.put(5, width);
    bits.finish()
}

/// A lossless WebP (VP8L) without alpha: no transforms, no colour cache, and five prefix
/// codes of one symbol each, so the pixels take no bits and the file a few bytes.
fn webp_bomb(width: u32, height: u32) -> Vec<u8> {
    let mut bits = Bits::default();
    bits.put(0x2F, 8);
    bits.put(width - 1, 14);
    bits.put(height - 1, 14);
    bits.put(0, 4); // no alpha, version 0
    bits.put(0, 3); // no transform, no colour cache, no meta prefix codes
    for _ in 0..5 {
        bits.put(0b0001, 4); // simple code, one symbol, a 1-bit symbol, symbol 0
    }
    let mut vp8l = bits.finish();
    let len = vp8l.len() as u32;
    if len % 2 == 1 {
        vp8l.push(0);
    }
    let mut webp = b"RIFF".to_vec();
    webp.extend((4 + 8 + vp8l.len() as u32).to_le_bytes());
    webp.extend(b"WEBPVP8L");
    webp.extend(len.to_le_bytes());
    webp.extend(vp8l);
    webp
}

/// The peak RSS growth since `before`, printed, and held under 512 MiB.
fn assert_peak_below_512_mib(before: u64, stage: &str, started: Instant) {
    let grown = status_bytes("VmHWM:").saturating_sub(before);
    println!(
        "measured: {stage}: peak RSS grew by {} MiB ({:?} in)",
        grown / MIB,
        started.elapsed()
    );
    assert!(grown < 512 * MIB, "{stage}: peak RSS grew by {} MiB", grown / MIB);
}

#[test]
fn image_bombs_are_refused_and_large_images_decode_in_bounded_memory() {
    if run_alone(
        module_path!(),
        "image_bombs_are_refused_and_large_images_decode_in_bounded_memory",
    ) {
        return;
    }
    // Each would take more than the memory images may use to decode: 588 MB of pixels for
    // the JPEG; 169 MB and 337 MB of coefficients for the progressive one; 441 MB for the
    // PNG and GIF; 192 MB and a 256 MB work buffer for the WebP.
    let bombs = [
        ("bomb.jpg", jpeg_bomb(14_000, 14_000, false), (14_000, 14_000)),
        ("bomb-progressive.jpg", jpeg_bomb(7_500, 7_500, true), (7_500, 7_500)),
        ("bomb.png", png_bomb(10_500, 10_500), (10_500, 10_500)),
        ("bomb.gif", gif_bomb(10_500, 10_500), (10_500, 10_500)),
        ("bomb.webp", webp_bomb(8_000, 8_000), (8_000, 8_000)),
    ];
    // Large but fair: decoded and downscaled, each on its own within the bound.
    let large = [
        ("large.jpg", jpeg_bomb(6_000, 6_000, false)),
        ("large-progressive.jpg", jpeg_bomb(4_000, 4_000, true)),
        ("large.png", png_bomb(5_000, 5_000)),
        ("large.gif", gif_bomb(5_000, 5_000)),
        ("large.webp", webp_bomb(5_000, 5_000)),
    ];
    for (name, bytes, _) in &bombs {
        assert!(bytes.len() < 5_000_000, "{name} is {} bytes", bytes.len());
    }
    let before = reset_peak();
    let started = Instant::now();

    for (name, bytes, (w, h)) in &bombs {
        let outcome = prepare(name, bytes.clone());
        assert_peak_below_512_mib(before, &format!("{name} alone"), started);
        let error = outcome.map(|p| (p.width, p.height)).expect_err(name).to_string();
        assert!(
            error.starts_with(&format!("{name} is {w} × {h} pixels")),
            "{name}: {error}"
        );
    }

    let outcomes: Vec<_> = std::thread::scope(|s| {
        let bombs = bombs.iter().map(|(name, bytes, _)| (name, bytes));
        let all: Vec<_> = bombs
            .chain(large.iter().map(|(name, bytes)| (name, bytes)))
            .map(|(name, bytes)| (name, s.spawn(|| prepare(name, bytes.clone()))))
            .collect();
        all.into_iter()
            .map(|(name, job)| (*name, job.join().unwrap().map(|p| (p.mime, p.width, p.height))))
            .collect()
    });
    assert_peak_below_512_mib(before, "all ten at once", started);
    for (name, outcome) in &outcomes[..bombs.len()] {
        assert!(outcome.is_err(), "{name}: {outcome:?}");
    }
    let decoded: Vec<_> = outcomes[bombs.len()..]
        .iter()
        .map(|(name, outcome)| (*name, outcome.as_ref().map_err(ToString::to_string).cloned()))
        .collect();
    assert_eq!(
        decoded,
        [
            ("large.jpg", Ok(("image/jpeg", 1568, 1568))),
            ("large-progressive.jpg", Ok(("image/jpeg", 1568, 1568))),
            ("large.png", Ok(("image/png", 1568, 1568))),
            ("large.gif", Ok(("image/png", 1568, 1568))),
            ("large.webp", Ok(("image/png", 1568, 1568))),
        ]
    );
}
