//! Terminal bytes → plain text for the model.

/// Turns terminal output into plain text for the model, across chunk boundaries (escape
/// sequences and UTF-8 characters split between reads are handled by the `vte` parser).
///
/// Escape sequences (colours, cursor moves, titles) go; `\n` and `\t` stay; `\r\n` becomes
/// `\n` and a lone `\r` (a progress bar redrawing its line) becomes `\n` too, so every state
/// of the bar is a line instead of one unreadable run. Other control characters (C0, C1,
/// DEL) are dropped. Invalid UTF-8 (binary garbage) comes out as U+FFFD.
///
/// Memory: the parser holds at most [`OSC_CAP`] bytes of an OSC payload (a title, a link, a
/// clipboard write) and drops the rest, so a child that opens one and never ends it costs
/// nothing more however much it writes. DCS payloads go to `put` and SOS/PM/APC strings
/// are skipped; neither is buffered at all.
///
/// Speed: vte calls back once per character, which made it the bottleneck of a flood. Plain
/// chunks (valid UTF-8, no ESC) fed while the parser is known to be in its ground state skip
/// it: in that state vte only sorts characters into printable and control, which
/// [`Collect::plain`] does a run at a time. The state is known at the start, after such a
/// chunk, and after a chunk that vte saw end in a complete CSI sequence followed by plain
/// text (the common colour case); otherwise every chunk goes through vte until one does.
pub(super) struct Stripper {
    parser: vte::Parser<OSC_CAP>,
    out: Collect,
    /// The parser is in its ground state with no partial UTF-8 character buffered.
    ground: bool,
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

    /// What vte's ground state does with `text` (no ESC in it): printable runs are copied
    /// whole, control characters handled one by one.
    fn plain(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut run = 0;
        loop {
            let at = next_control(bytes, run);
            self.copy(&text[run..at]);
            match bytes.get(at) {
                None => return,
                // A C1 control: two bytes, dropped.
                Some(0xC2) => run = at + 2,
                Some(&b) => {
                    vte::Perform::execute(self, b);
                    run = at + 1;
                }
            }
        }
    }

    fn copy(&mut self, run: &str) {
        if !run.is_empty() {
            self.settle_cr();
            self.text.push_str(run);
        }
    }
}

impl vte::Perform for Collect {
    fn print(&mut self, c: char) {
        // vte prints DEL; it is a control character for our purposes.
        if c != '\x7f' {
            self.settle_cr();
            self.text.push(c);
        }
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

/// Bytes of an OSC payload kept: more than any title or hyperlink needs.
const OSC_CAP: usize = 4096;

impl Stripper {
    pub fn new() -> Self {
        Self {
            parser: vte::Parser::new_with_size(),
            out: Collect::default(),
            ground: true,
        }
    }

    /// The text of `bytes`, given everything fed before.
    pub fn feed(&mut self, bytes: &[u8]) -> String {
        // Stripped text is rarely longer than its bytes (only garbage grows: U+FFFD is three
        // bytes), so this is one allocation per chunk instead of a dozen doublings.
        self.out.text.reserve(bytes.len());
        let has_esc = bytes.contains(&0x1B);
        match std::str::from_utf8(bytes) {
            Ok(text) if self.ground && !has_esc => self.out.plain(text),
            _ => {
                self.parser.advance(&mut self.out, bytes);
                self.ground = if has_esc {
                    ends_in_ground(bytes)
                } else {
                    // Still ground; a last byte that is ASCII leaves no partial character.
                    self.ground && bytes.last().is_none_or(|b| b.is_ascii())
                };
            }
        }
        std::mem::take(&mut self.out.text)
    }
}

/// Where the next control character is at or after `i` (C0, DEL, or a C1 control, which is
/// `0xC2 0x80..=0x9F` in UTF-8), or the end.
fn next_control(bytes: &[u8], mut i: usize) -> usize {
    const BLOCK: usize = 32;
    loop {
        // Blocks of printable ASCII go in one step; the branch-free fold vectorises.
        while let Some(block) = bytes.get(i..i + BLOCK) {
            if block.iter().fold(false, |any, &b| any | !(0x20..0x7F).contains(&b)) {
                break;
            }
            i += BLOCK;
        }
        let end = (i + BLOCK).min(bytes.len());
        while i < end {
            let b = bytes[i];
            let c1 = b == 0xC2 && bytes.get(i + 1).is_some_and(|n| (0x80..=0x9F).contains(n));
            if b < 0x20 || b == 0x7F || c1 {
                return i;
            }
            i += 1;
        }
        if i >= bytes.len() {
            return bytes.len();
        }
    }
}

/// Whether vte is surely in its ground state, with nothing buffered, after `bytes`: the last
/// ESC starts a complete CSI sequence (`ESC [`, parameter and intermediate bytes, a final
/// byte; vte returns to ground after it whether it dispatches or ignores it) and only valid
/// UTF-8 follows. Anything else answers false, which only costs speed.
fn ends_in_ground(bytes: &[u8]) -> bool {
    let Some(esc) = bytes.iter().rposition(|&b| b == 0x1B) else {
        return false;
    };
    let Some(body) = bytes[esc + 1..].strip_prefix(b"[") else {
        return false;
    };
    let params = body.iter().take_while(|b| (0x20..=0x3F).contains(*b)).count();
    match body.get(params) {
        Some(0x40..=0x7E) => std::str::from_utf8(&body[params + 1..]).is_ok(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `chunks` one at a time and joins the text.
    fn strip(chunks: &[&[u8]]) -> String {
        let mut s = Stripper::new();
        chunks.iter().map(|c| s.feed(c)).collect()
    }

    #[test]
    fn escapes_go_lines_stay_and_split_sequences_survive() {
        let out = strip(&[
            b"\x1b[31mred\x1b[0m plain\r\n\x1b]0;title\x07tab\there\r\n",
            // An escape sequence and a UTF-8 character cut in half between reads.
            b"\x1b[3",
            b"2mgr\xc3",
            b"\xbcn\x1b[0m\r\n",
        ]);
        assert_eq!(out, "red plain\ntab\there\ngrün\n");
    }

    #[test]
    fn carriage_returns_become_line_ends_and_garbage_becomes_replacement_chars() {
        let mut s = Stripper::new();
        assert_eq!(s.feed(b"10%\r20%\r"), "10%\n20%");
        assert_eq!(s.feed(b"\r\ndone\x08\x07\x7f\n"), "\ndone\n");
        assert_eq!(s.feed(b"\xff\xfeok\n"), "\u{fffd}\u{fffd}ok\n");
        assert_eq!(s.feed("a\u{85}b\u{a9}\n".as_bytes()), "ab\u{a9}\n");
    }

    #[test]
    fn plain_chunks_after_open_sequences_still_go_through_the_parser() {
        // A title whose text arrives in the next read must not leak into the output.
        assert_eq!(strip(&[b"a\x1b]0;ti", b"tle\x07b\n"]), "ab\n");
        // An unfinished CSI: the next chunk's first letter is its final byte.
        assert_eq!(strip(&[b"x\x1b[1;3", b"1mred\n"]), "xred\n");
        // After a complete colour sequence the fast path resumes, and agrees with vte.
        assert_eq!(
            strip(&[b"\x1b[1mbold\x1b[0m ", b"then\tplain\r\n", b"more\n"]),
            "bold then\tplain\nmore\n"
        );
        // A partial character at the end of a slow chunk is completed by the parser.
        assert_eq!(strip(&[b"\xff\xc3", b"\xa9\n"]), "\u{fffd}\u{e9}\n");
    }

    #[test]
    fn endless_osc_dcs_and_apc_payloads_are_dropped_and_text_after_them_comes_through() {
        let flood = vec![b'x'; 64 * 1024];
        for (open, close) in [
            (&b"\x1b]0;"[..], &b"\x07"[..]),
            (b"\x1b]8;;", b"\x1b\\"),
            (b"\x1bP1;2q", b"\x1b\\"),
            (b"\x1b_", b"\x1b\\"),
        ] {
            let mut s = Stripper::new();
            let mut out = s.feed(b"before ");
            out += &s.feed(open);
            for _ in 0..160 {
                out += &s.feed(&flood); // 10 MiB
            }
            out += &s.feed(close);
            out += &s.feed(b"after\n");
            assert_eq!(out, "before after\n", "{open:?}");
        }
        // The payload is cut at the cap: the title the parser reports is its first 4 KiB.
        #[derive(Default)]
        struct Title(Vec<u8>);
        impl vte::Perform for Title {
            fn osc_dispatch(&mut self, params: &[&[u8]], _: bool) {
                self.0 = params.get(1).map_or(vec![], |p| p.to_vec());
            }
        }
        let mut title = Title::default();
        let mut parser = vte::Parser::<OSC_CAP>::new_with_size();
        parser.advance(&mut title, b"\x1b]0;");
        parser.advance(&mut title, &flood);
        parser.advance(&mut title, b"\x07");
        // The cap counts the `0` too (the `;` between parameters is not stored).
        assert_eq!(title.0.len(), OSC_CAP - 1);
    }

    #[test]
    fn the_fast_path_and_the_parser_agree() {
        let long = "x".repeat(100) + "\u{85}" + &"y".repeat(31) + "é\r\n" + &"z".repeat(64);
        let samples: [&[u8]; 6] = [
            long.as_bytes(),
            b"plain text\r\nwith\tcontrols\x07 and \x7f del\r",
            "unicode: 日本語 \u{85} \u{9f} é\n".as_bytes(),
            b"\r\r\n\n\r",
            b"",
            b"\x00\x01\x1f end",
        ];
        for sample in samples {
            let mut fast = Stripper::new();
            let mut slow = Collect::default();
            vte::Parser::new().advance(&mut slow, sample);
            assert_eq!(fast.feed(sample), slow.text, "{sample:?}");
        }
    }
}
