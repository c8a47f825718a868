//! Keeping tool output within what a model should be sent.

/// The share of the kept characters taken from the start; the rest come from the end, where
/// errors and summaries usually are.
const HEAD_PERCENT: usize = 70;

/// How far (as a fraction of each kept part) a cut may move to land on a line boundary.
const SNAP_FRACTION: usize = 10;

/// Shortens `text` to `max_chars` characters (Unicode scalar values) by cutting out its
/// middle: about 70% is kept from the head and 30% from the tail, cut on character
/// boundaries and moved to a line boundary when one is close. A marker line in between says
/// how much was cut, e.g. `[… 12,345 characters cut from the middle of 20,000 …]`.
///
/// The marker comes on top of the kept characters, so the result is at most `max_chars` plus
/// one line. Text that fits is returned unchanged.
pub fn truncate_head_tail(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_string();
    }
    let head_chars = max_chars * HEAD_PERCENT / 100;
    let tail_chars = max_chars - head_chars;

    let mut head_end = byte_at(text, head_chars);
    let mut tail_start = byte_at(text, total - tail_chars);

    let head = &text[..head_end];
    if let Some(nl) = head.rfind('\n') {
        if head[nl + 1..].chars().count() <= head_chars / SNAP_FRACTION {
            head_end = nl + 1;
        }
    }
    let tail = &text[tail_start..];
    let at_line_start = text[..tail_start].ends_with('\n');
    if let (false, Some(nl)) = (at_line_start, tail.find('\n')) {
        // Only when something follows the newline: a tail of nothing says less than a
        // partial line does.
        if nl + 1 < tail.len() && tail[..=nl].chars().count() <= tail_chars / SNAP_FRACTION {
            tail_start += nl + 1;
        }
    }

    let head = &text[..head_end];
    let tail = &text[tail_start..];
    let cut = total - head.chars().count() - tail.chars().count();
    let mut out = String::with_capacity(head.len() + tail.len() + 80);
    out.push_str(head);
    if !head.is_empty() && !head.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[… {} characters cut from the middle of {} …]\n",
        group_digits(cut as u64),
        group_digits(total as u64)
    ));
    out.push_str(tail);
    out
}

/// The byte index of the `n`th character, or the end.
fn byte_at(text: &str, n: usize) -> usize {
    text.char_indices().nth(n).map_or(text.len(), |(i, _)| i)
}

/// `12345` → `12,345`, for numbers people and models read.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// `1 line`, `2 lines`, `1,024 lines`: a count with its noun.
pub fn counted(n: usize, singular: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {singular}{s}", group_digits(n as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_that_fits_is_unchanged() {
        assert_eq!(truncate_head_tail("abc", 3), "abc");
        assert_eq!(truncate_head_tail("", 0), "");
    }

    #[test]
    fn the_middle_is_cut_and_the_marker_counts_characters_not_bytes() {
        assert_eq!(
            truncate_head_tail("abcdefghij", 5),
            "abc\n[… 5 characters cut from the middle of 10 …]\nij"
        );
        // 13 characters, 36 bytes: the counts and the cut points are in characters.
        let text = "日本語のテキストです🙂ok";
        assert_eq!(
            truncate_head_tail(text, 10),
            "日本語のテキス\n[… 3 characters cut from the middle of 13 …]\n🙂ok"
        );
    }

    #[test]
    fn cuts_move_to_nearby_line_boundaries() {
        // 100 lines of 10 characters.
        let text: String = (0..100).map(|i| format!("line {i:04}\n")).collect();
        // 213 head characters end 3 into line 21: the cut moves back to the end of line 20.
        // 92 tail characters start 8 into line 90: the cut moves on to the start of line 91.
        let want = format!(
            "{}[… 700 characters cut from the middle of 1,000 …]\n{}",
            &text[..210],
            &text[910..]
        );
        assert_eq!(truncate_head_tail(&text, 305), want);
        // Cuts already on line boundaries stay put.
        let want = format!(
            "{}[… 700 characters cut from the middle of 1,000 …]\n{}",
            &text[..210],
            &text[910..]
        );
        assert_eq!(truncate_head_tail(&text, 300), want);
    }

    #[test]
    fn big_numbers_are_grouped() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1_000), "1,000");
        assert_eq!(group_digits(12_345_678), "12,345,678");
        assert_eq!(counted(1, "line"), "1 line");
        assert_eq!(counted(1200, "byte"), "1,200 bytes");
    }
}
