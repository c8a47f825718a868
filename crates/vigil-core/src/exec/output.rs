//! Bounded output buffers, and windows of lines for `log`.
//!
//! A child may write gigabytes; every buffer here keeps only its newest part. They are rings
//! (`VecDeque<u8>`): appending and dropping from the front touch only the bytes involved, so a
//! flood costs a constant amount of work per byte and memory never exceeds the cap. Reading
//! makes the ring contiguous, which only happens when someone asks (poll, log, a tail).

use std::collections::VecDeque;

/// The newest `cap` characters of a text stream, and how many were dropped before them.
#[derive(Debug, Default)]
pub(super) struct CappedText {
    /// Valid UTF-8: only whole `&str`s go in and cuts land on character starts.
    buf: VecDeque<u8>,
    /// Characters in `buf` (Unicode scalar values, like the cap).
    chars: usize,
    cap: usize,
    /// Characters cut from the front since the last `take`.
    dropped: u64,
}

impl CappedText {
    pub fn new(cap: usize) -> Self {
        Self { cap, ..Self::default() }
    }

    #[cfg(test)]
    pub fn push(&mut self, s: &str) {
        self.push_counted(s, s.chars().count());
    }

    /// Appends `s`, which has `chars` characters (counted once by the caller, who pushes the
    /// same text into several buffers).
    pub fn push_counted(&mut self, s: &str, chars: usize) {
        if s.is_empty() {
            return;
        }
        self.buf.extend(s.as_bytes());
        self.chars += chars;
        if self.chars > self.cap {
            let excess = self.chars - self.cap;
            // As many characters as bytes: all ASCII, so the cut needs no scan. (The usual
            // case for floods, and the scan would cost more than everything else per byte.)
            let cut = if self.buf.len() == self.chars {
                excess
            } else {
                let (front, back) = self.buf.as_slices();
                skip_chars(front.iter().chain(back).copied(), excess)
            };
            self.buf.drain(..cut);
            self.chars = self.cap;
            self.dropped += excess as u64;
        }
    }

    /// The kept text: at most `cap` characters.
    pub fn text(&mut self) -> &str {
        as_str(self.buf.make_contiguous())
    }

    /// Characters dropped since the last `take`.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The last `n` characters.
    pub fn tail(&mut self, n: usize) -> &str {
        let from_end = if self.chars <= n {
            self.buf.len()
        } else if self.buf.len() == self.chars {
            n
        } else {
            skip_chars_back(self.buf.iter().rev().copied(), n)
        };
        let start = self.buf.len() - from_end;
        as_str(&self.buf.make_contiguous()[start..])
    }

    /// Takes the kept text and the dropped count, leaving the buffer empty.
    pub fn take(&mut self) -> (String, u64) {
        let bytes = Vec::from(std::mem::take(&mut self.buf));
        let text = String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        let dropped = self.dropped;
        *self = Self::new(self.cap);
        (text, dropped)
    }
}

/// The byte offset after the first `n` characters of UTF-8 `bytes` (all of them if fewer).
fn skip_chars(bytes: impl Iterator<Item = u8>, n: usize) -> usize {
    let mut seen = 0;
    let mut len = 0;
    for (i, b) in bytes.enumerate() {
        if b & 0xC0 != 0x80 {
            if seen == n {
                return i;
            }
            seen += 1;
        }
        len = i + 1;
    }
    len
}

/// How many bytes from the end hold the last `n` characters, given the bytes in reverse.
fn skip_chars_back(reversed: impl Iterator<Item = u8>, n: usize) -> usize {
    let mut seen = 0;
    let mut len = 0;
    for (i, b) in reversed.enumerate() {
        len = i + 1;
        if b & 0xC0 != 0x80 {
            seen += 1;
            if seen == n {
                return len;
            }
        }
    }
    len
}

/// Bytes that are UTF-8 by construction; anything else (a bug) shows as far as it is valid.
fn as_str(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
    }
}

/// The newest `cap` bytes of a byte stream.
#[derive(Debug, Default)]
pub(super) struct CappedBytes {
    buf: VecDeque<u8>,
    cap: usize,
}

impl CappedBytes {
    pub fn new(cap: usize) -> Self {
        Self {
            buf: VecDeque::new(),
            cap,
        }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if bytes.len() >= self.cap {
            self.buf.clear();
            self.buf.extend(&bytes[bytes.len() - self.cap..]);
            return;
        }
        self.buf.extend(bytes);
        if self.buf.len() > self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
        }
    }

    pub fn bytes(&mut self) -> &[u8] {
        self.buf.make_contiguous()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn take(&mut self) -> Vec<u8> {
        Vec::from(std::mem::take(&mut self.buf))
    }
}

/// A window of lines from a text, for `log`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineSlice {
    pub text: String,
    /// 0-based index of the first line returned.
    pub start: usize,
    /// Lines returned.
    pub count: usize,
    /// Lines in the whole text.
    pub total: usize,
}

/// Lines `offset..offset + limit` of `text` (0-based), or with no offset the last `limit`.
pub fn slice_lines(text: &str, offset: Option<usize>, limit: usize) -> LineSlice {
    let lines: Vec<&str> = text.lines().collect();
    let total = lines.len();
    let start = match offset {
        Some(o) => o.min(total),
        None => total.saturating_sub(limit),
    };
    let end = start.saturating_add(limit).min(total);
    LineSlice {
        text: lines[start..end].join("\n"),
        start,
        count: end - start,
        total,
    }
}

/// Whitespace runs collapsed to one space, trimmed: a tail fit for one line of a notice.
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_text_keeps_the_newest_characters_and_counts_the_rest() {
        let mut t = CappedText::new(10);
        t.push("0123456");
        assert_eq!((t.text().to_string(), t.dropped()), ("0123456".to_string(), 0));
        t.push("789ab");
        assert_eq!((t.text().to_string(), t.dropped()), ("23456789ab".to_string(), 2));
        t.push("cdefghijklmnopqrstuvwxyz");
        assert_eq!((t.text().to_string(), t.dropped()), ("qrstuvwxyz".to_string(), 26));
        assert_eq!(t.tail(3), "xyz");
        assert_eq!(t.tail(20), "qrstuvwxyz");
        assert_eq!(t.take(), ("qrstuvwxyz".to_string(), 26));
        assert!(t.is_empty());
        assert_eq!(t.dropped(), 0);
        // Characters, not bytes.
        let mut t = CappedText::new(3);
        t.push("日本語のテキスト");
        assert_eq!((t.text().to_string(), t.dropped()), ("キスト".to_string(), 5));
        assert_eq!(t.tail(2), "スト");
        t.push("🙂é");
        assert_eq!((t.text().to_string(), t.dropped()), ("ト🙂é".to_string(), 7));
    }

    #[test]
    fn capped_bytes_keep_the_newest_bytes() {
        let mut b = CappedBytes::new(4);
        b.push(b"abc");
        b.push(b"def");
        assert_eq!(b.bytes(), b"cdef");
        b.push(b"0123456");
        assert_eq!(b.bytes(), b"3456");
        assert_eq!(b.take(), b"3456");
        assert!(b.is_empty());
    }

    #[test]
    fn line_slices_default_to_the_last_lines() {
        let text = "a\nb\nc\nd\n";
        assert_eq!(
            slice_lines(text, None, 2),
            LineSlice {
                text: "c\nd".into(),
                start: 2,
                count: 2,
                total: 4
            }
        );
        assert_eq!(slice_lines(text, Some(1), 2).text, "b\nc");
        assert_eq!(slice_lines(text, Some(9), 2).count, 0);
        assert_eq!(one_line("  a\n\n b\tc  "), "a b c");
    }
}
