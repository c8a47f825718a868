//! Bounded output buffers and the stripper that turns terminal bytes into text for the model.
//!
//! A child may write gigabytes; every buffer here keeps only its newest part, trimmed in
//! amortised steps (grow to cap + a quarter, then cut back to the cap) so a flood costs a
//! constant number of copies per byte rather than a memmove of the whole buffer per chunk.

/// How far past its cap a buffer may grow before it is cut back: bounds memory at 1.25×
/// the cap while keeping the cost of trimming amortised.
const SLACK_DIVISOR: usize = 4;

/// The newest `cap` characters of a text stream, and how many were dropped before them.
#[derive(Debug, Default)]
pub(super) struct CappedText {
    buf: String,
    /// Characters in `buf` (Unicode scalar values, like the cap).
    chars: usize,
    cap: usize,
    /// Characters cut from the front of `buf` so far.
    dropped: u64,
}

impl CappedText {
    pub fn new(cap: usize) -> Self {
        Self { cap, ..Self::default() }
    }

    pub fn push(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        self.buf.push_str(s);
        self.chars += s.chars().count();
        if self.chars > self.cap + self.cap / SLACK_DIVISOR {
            let excess = self.chars - self.cap;
            let cut = byte_at(&self.buf, excess);
            self.buf.drain(..cut);
            self.chars = self.cap;
            self.dropped += excess as u64;
        }
    }

    /// The kept text: at most `cap` characters.
    pub fn text(&self) -> &str {
        match self.chars.checked_sub(self.cap) {
            Some(over) if over > 0 => &self.buf[byte_at(&self.buf, over)..],
            _ => &self.buf,
        }
    }

    /// Characters dropped so far, counting any slack not yet trimmed.
    pub fn dropped(&self) -> u64 {
        self.dropped + self.chars.saturating_sub(self.cap) as u64
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The last `n` characters.
    pub fn tail(&self, n: usize) -> &str {
        let text = self.text();
        let chars = self.chars.min(self.cap);
        if chars <= n {
            text
        } else {
            &text[byte_at(text, chars - n)..]
        }
    }

    /// Takes the kept text and the dropped count, leaving the buffer empty.
    pub fn take(&mut self) -> (String, u64) {
        let dropped = self.dropped();
        let text = match self.chars.checked_sub(self.cap) {
            Some(over) if over > 0 => self.buf[byte_at(&self.buf, over)..].to_string(),
            _ => std::mem::take(&mut self.buf),
        };
        *self = Self::new(self.cap);
        (text, dropped)
    }
}

/// The byte index of the `n`th character, or the end.
fn byte_at(text: &str, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// The newest `cap` bytes of a byte stream.
#[derive(Debug, Default)]
pub(super) struct CappedBytes {
    buf: Vec<u8>,
    cap: usize,
}

impl CappedBytes {
    pub fn new(cap: usize) -> Self {
        Self { buf: Vec::new(), cap }
    }

    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() > self.cap + self.cap / SLACK_DIVISOR {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.buf[self.buf.len().saturating_sub(self.cap)..]
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn take(&mut self) -> Vec<u8> {
        let out = self.bytes().to_vec();
        self.buf.clear();
        out
    }
}

/// Turns terminal output into plain text for the model, across chunk boundaries (escape
/// sequences and UTF-8 characters split between reads are handled by the `vte` parser).
///
/// Escape sequences (colours, cursor moves, titles) go; `\n` and `\t` stay; `\r\n` becomes
/// `\n` and a lone `\r` (a progress bar redrawing its line) becomes `\n` too, so every state
/// of the bar is a line instead of one unreadable run. Other control bytes are dropped.
/// Invalid UTF-8 (binary garbage) comes out as U+FFFD.
pub(super) struct Stripper {
    parser: vte::Parser,
    out: Collect,
}

#[derive(Default)]
struct Collect {
    text: String,
    /// A `\r` seen last: a newline unless the next byte is `\n` (which makes it one anyway).
    pending_cr: bool,
}

impl Collect {
    fn settle_cr(&mut self) {
        if self.pending_cr {
            self.pending_cr = false;
            self.text.push('\n');
        }
    }
}

impl vte::Perform for Collect {
    fn print(&mut self, c: char) {
        self.settle_cr();
        self.text.push(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.pending_cr = false;
                self.text.push('\n');
            }
            // `\r\r\n` is one line end, not two.
            b'\r' => self.pending_cr = true,
            b'\t' => {
                self.settle_cr();
                self.text.push('\t');
            }
            _ => {}
        }
    }
}

impl Stripper {
    pub fn new() -> Self {
        Self {
            parser: vte::Parser::new(),
            out: Collect::default(),
        }
    }

    /// The text of `bytes`, given everything fed before.
    pub fn feed(&mut self, bytes: &[u8]) -> String {
        self.parser.advance(&mut self.out, bytes);
        std::mem::take(&mut self.out.text)
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
        assert_eq!((t.text(), t.dropped()), ("0123456", 0));
        t.push("789ab"); // 12 chars: within the slack, trimmed lazily
        assert_eq!((t.text(), t.dropped()), ("23456789ab", 2));
        t.push("cdefghijklmnopqrstuvwxyz");
        assert_eq!((t.text(), t.dropped()), ("qrstuvwxyz", 26));
        assert_eq!(t.tail(3), "xyz");
        assert_eq!(t.take(), ("qrstuvwxyz".to_string(), 26));
        assert!(t.is_empty());
        assert_eq!(t.dropped(), 0);
        // Characters, not bytes.
        let mut t = CappedText::new(3);
        t.push("日本語のテキスト");
        assert_eq!((t.text(), t.dropped()), ("キスト", 5));
    }

    #[test]
    fn capped_bytes_keep_the_newest_bytes() {
        let mut b = CappedBytes::new(4);
        b.push(b"abc");
        b.push(b"def");
        assert_eq!(b.bytes(), b"cdef");
        assert_eq!(b.take(), b"cdef");
        assert!(b.is_empty());
    }

    #[test]
    fn stripping_removes_escapes_keeps_lines_and_survives_split_chunks() {
        let mut s = Stripper::new();
        let mut out = s.feed(b"\x1b[31mred\x1b[0m plain\r\n\x1b]0;title\x07tab\there\r\n");
        // An escape sequence and a UTF-8 character cut in half between reads.
        out += &s.feed(b"\x1b[3");
        out += &s.feed(b"2mgr\xc3");
        out += &s.feed(b"\xbcn\x1b[0m\r\n");
        assert_eq!(out, "red plain\ntab\there\ngrün\n");
    }

    #[test]
    fn carriage_returns_become_line_ends_and_garbage_becomes_replacement_chars() {
        let mut s = Stripper::new();
        assert_eq!(s.feed(b"10%\r20%\r"), "10%\n20%");
        assert_eq!(s.feed(b"\r\ndone\x08\x07\n"), "\ndone\n");
        assert_eq!(s.feed(b"\xff\xfeok\n"), "\u{fffd}\u{fffd}ok\n");
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
