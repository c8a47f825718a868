//! `read`: a window of a text file, numbered like `cat -n`, the entries of a folder, or an
//! image file (PNG, JPEG, GIF, WebP) as the picture itself, for the model to look at.

use std::fs;
use std::io::{self, BufRead, BufReader, Read};

use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::files::{binary_message, io_message, nul_in, sniff_kind, SNIFF_BYTES};
use super::path::{resolve_for, ResolvedPath};
use super::truncate::group_digits;
use super::{blocking, parse_args, Tool, ToolContext, ToolOutput};
use crate::provider::ToolSpec;

/// Lines returned when the model gives no `limit`.
const DEFAULT_LIMIT: usize = 2000;
/// Characters of one line shown before it is cut; minified files are one huge line.
const MAX_LINE_CHARS: usize = 2000;
/// Characters of one reply: 2000 long lines would otherwise be ~4M characters, far more
/// than a context window; the continuation note tells the model where to pick up.
const MAX_OUTPUT_CHARS: usize = 100_000;
/// Entries of a folder listed before the rest are summarised.
const MAX_ENTRIES: usize = 1000;
/// Lines scanned between looks at the cancellation token.
const CANCEL_CHECK_LINES: usize = 4096;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

/// The built-in `read` tool.
pub struct ReadTool;

#[async_trait::async_trait]
impl Tool for ReadTool {
    fn changes_things(&self, _input: &serde_json::Value) -> bool {
        false
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read".into(),
            description: format!(
                "Read a UTF-8 text file in the workspace. Returns its lines numbered like \
                 `cat -n`: the line number, a tab, then the line. The numbers are not part of \
                 the file: never copy them into `edit`. Returns at most {DEFAULT_LIMIT} lines \
                 (and about {} characters) from `offset`; when the file continues, a note at \
                 the end says which offset to read next. Lines longer than {MAX_LINE_CHARS} \
                 characters are cut. Image files (PNG, JPEG, GIF, WebP, up to 20 MB) are \
                 returned as the image itself. Other binary files are refused. Given a folder, lists its \
                 entries (folders end in `/`). Relative paths are resolved against the \
                 workspace folder; paths outside it are refused.",
                group_digits(MAX_OUTPUT_CHARS as u64)
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "description": "The file to read, relative to the workspace (e.g. `src/main.rs`) or absolute inside it."
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "The 1-based line number to start at. Default 1."
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": format!("How many lines to return. Default {DEFAULT_LIMIT}.")
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let args: ReadArgs = match parse_args(&self.spec(), input) {
            Ok(args) => args,
            Err(out) => return out,
        };
        if args.limit == Some(0) {
            return ToolOutput::error("`limit` must be at least 1.");
        }
        let path = match resolve_for(ctx, &args.path, false).await {
            Ok(p) => p,
            Err(message) => return ToolOutput::error(message),
        };
        let cancel = ctx.cancel.clone();
        blocking("read", move || {
            // Offset 0 is a common off-by-one from models; it can only mean the start.
            let start = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
            if let Some(image) = read_image(&path) {
                return image;
            }
            match read_window(&path, start, limit, &cancel) {
                Ok(text) => ToolOutput::ok(text),
                Err(msg) => ToolOutput::error(msg),
            }
        })
        .await
    }
}

/// An image file as the picture itself (the turn checks and downscales it); `None` when the
/// path is not an image file.
fn read_image(path: &ResolvedPath) -> Option<ToolOutput> {
    let mut head = [0u8; 16];
    let mut file = path.open().ok()?;
    let n = file.read(&mut head).ok()?;
    let mime = crate::images::sniff(&head[..n])?;
    let size = file.metadata().ok()?.len();
    let kind = sniff_kind(&head[..n]).unwrap_or("an image");
    if size > vigil_protocol::MAX_ATTACHMENT_BYTES {
        return Some(ToolOutput::error(format!(
            "{} is {kind} of {} bytes; images up to 20 MB can be read.",
            path.display,
            group_digits(size)
        )));
    }
    let mut bytes = head[..n].to_vec();
    Some(match file.read_to_end(&mut bytes) {
        Ok(_) => ToolOutput::ok(format!(
            "{} is {kind} ({} bytes); here it is.",
            path.display,
            group_digits(size)
        ))
        .with_image(bytes, mime),
        Err(e) => ToolOutput::error(io_message("read", path, &e)),
    })
}

/// Lines `start ..= start + limit - 1` of the file (or fewer, to stay in budget), numbered.
fn read_window(path: &ResolvedPath, start: usize, limit: usize, cancel: &CancellationToken) -> Result<String, String> {
    let mut file = path.open().map_err(|e| io_message("read", path, &e))?;
    let meta = file.metadata().map_err(|e| io_message("read", path, &e))?;
    if meta.is_dir() {
        return list_folder(path, &file);
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| io_message("read", path, &e))?;
    if let Some(why) = nul_in(&head) {
        return Err(binary_message(path, meta.len(), &head, why));
    }
    // Streamed, not read whole: a multi-gigabyte log must still be readable by window.
    let mut reader = BufReader::new(io::Cursor::new(head.clone()).chain(file));

    let end = start.saturating_add(limit - 1);
    let mut out = String::new();
    let mut out_chars = 0;
    let mut last_shown = 0;
    let mut full = false;
    let mut line_no = 0;
    let mut byte_pos = 0usize;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = read_line_bounded(&mut reader, &mut buf).map_err(|e| io_message("read", path, &e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line_no % CANCEL_CHECK_LINES == 0 && cancel.is_cancelled() {
            return Err("Cancelled.".into());
        }
        let kept = kept_text(&buf, n).map_err(|e| {
            let at = (byte_pos + e.valid_up_to()) as u64;
            let why = format!("not valid UTF-8 at byte {}", group_digits(at));
            binary_message(path, meta.len(), &head, &why)
        })?;
        // Only the start of a huge line was kept: its length is known in bytes.
        let line = kept;
        let cut_from = (n > buf.len()).then_some(n);
        byte_pos += n;
        if line_no < start || line_no > end || full {
            continue;
        }
        let numbered = number_line(line_no, line, cut_from);
        let chars = numbered.chars().count() + 1;
        // Always show the first line asked for, whatever its size.
        if last_shown != 0 && out_chars + chars > MAX_OUTPUT_CHARS {
            full = true;
            continue;
        }
        if last_shown != 0 {
            out.push('\n');
        }
        out.push_str(&numbered);
        out_chars += chars;
        last_shown = line_no;
    }
    let total = line_no;
    if total == 0 {
        return Ok(format!("[{} is an empty file]", path.display));
    }
    if start > total {
        return Err(format!(
            "offset {start} is past the end of {}, which has {} lines.",
            path.display,
            group_digits(total as u64)
        ));
    }
    if last_shown < total {
        out.push_str(&format!(
            "\n\n[… file continues: showed lines {start}–{last_shown} of {total}; use offset={} to read more]",
            last_shown + 1
        ));
    }
    Ok(out)
}

/// The most of one line kept in memory: a file of one multi-gigabyte line is still read
/// in constant memory. More than [`MAX_LINE_CHARS`] characters of any script.
const LINE_KEEP_BYTES: usize = 4 * MAX_LINE_CHARS + 4;

/// Reads one line into `buf`, keeping at most [`LINE_KEEP_BYTES`] of it and skipping the
/// rest; returns the line's whole length in bytes (0 at the end of the file).
fn read_line_bounded(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> io::Result<usize> {
    let mut total = 0;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(total);
        }
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = LINE_KEEP_BYTES.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..take.min(room)]);
        reader.consume(take);
        total += take;
        if done {
            return Ok(total);
        }
    }
}

/// The kept part of a line as text: all of it, or, when the line was cut (`whole` is longer
/// than what was kept), up to the last whole character.
fn kept_text(buf: &[u8], whole: usize) -> Result<&str, std::str::Utf8Error> {
    match std::str::from_utf8(buf) {
        Ok(s) => Ok(s),
        // A cut may fall inside a character; anything else is not text.
        Err(e) if whole > buf.len() && e.error_len().is_none() => {
            Ok(std::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or(""))
        }
        Err(e) => Err(e),
    }
}

/// `cat -n` style: the number right-aligned in six columns, a tab, the line. `whole_bytes`
/// is the line's real length when only its start was read.
fn number_line(n: usize, line: &str, whole_bytes: Option<usize>) -> String {
    let line = line.strip_suffix('\n').unwrap_or(line);
    // A CRLF file's `\r` is line-ending noise; `edit` copes with CRLF files.
    let line = line.strip_suffix('\r').unwrap_or(line);
    let shown = group_digits(MAX_LINE_CHARS as u64);
    match (line.char_indices().nth(MAX_LINE_CHARS), whole_bytes) {
        (None, None) => format!("{n:>6}\t{line}"),
        (cut, None) => {
            let cut = cut.map_or(line.len(), |(i, _)| i);
            format!(
                "{n:>6}\t{}… [line cut: {shown} of {} characters shown]",
                &line[..cut],
                group_digits(line.chars().count() as u64)
            )
        }
        (cut, Some(bytes)) => {
            let cut = cut.map_or(line.len(), |(i, _)| i);
            format!(
                "{n:>6}\t{}… [line cut: {shown} characters shown of a line of {} bytes]",
                &line[..cut],
                group_digits(bytes as u64)
            )
        }
    }
}

/// The entries of a folder, sorted, folders marked with `/`. Reading a folder is more
/// likely a guess at its contents than a mistake, so this answers instead of refusing.
fn list_folder(path: &ResolvedPath, opened: &fs::File) -> Result<String, String> {
    use std::os::fd::AsRawFd;
    // The folder that was opened (at exactly its checked path), not whatever its path names now.
    let entries =
        fs::read_dir(format!("/proc/self/fd/{}", opened.as_raw_fd())).map_err(|e| io_message("list", path, &e))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // file_type does not follow links, so a link to a folder is listed as a file;
            // reading it resolves it.
            match e.file_type() {
                Ok(t) if t.is_dir() => format!("{name}/"),
                _ => name,
            }
        })
        .collect();
    if names.is_empty() {
        return Ok(format!("{} is an empty folder.", path.display));
    }
    names.sort();
    let total = names.len();
    let mut out = format!(
        "{} is a folder with {total} entries (read a file inside it to see its text):\n",
        path.display
    );
    out.push_str(&names[..total.min(MAX_ENTRIES)].join("\n"));
    if total > MAX_ENTRIES {
        out.push_str(&format!("\n[… {} more entries]", total - MAX_ENTRIES));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    async fn read(dir: &Path, input: serde_json::Value) -> ToolOutput {
        ReadTool.run(input, &ToolContext::new(dir)).await
    }

    fn ws(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let p = dir.path().join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content).unwrap();
        }
        dir
    }

    #[tokio::test]
    async fn lines_are_numbered_like_cat_n() {
        let d = ws(&[("a.txt", b"one\ntwo\r\n\nlast"), ("e.txt", b"")]);
        assert_eq!(
            read(d.path(), json!({"path": "a.txt"})).await,
            ToolOutput::ok("     1\tone\n     2\ttwo\n     3\t\n     4\tlast")
        );
        assert_eq!(
            read(d.path(), json!({"path": "e.txt"})).await,
            ToolOutput::ok("[e.txt is an empty file]")
        );
    }

    #[tokio::test]
    async fn offset_and_limit_pick_a_window_and_say_what_is_left() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let d = ws(&[("a.txt", text.as_bytes())]);
        assert_eq!(
            read(d.path(), json!({"path": "a.txt", "offset": 3, "limit": 2})).await,
            ToolOutput::ok(
                "     3\tl3\n     4\tl4\n\n[… file continues: showed lines 3–4 of 10; use offset=5 to read more]"
            )
        );
        assert_eq!(
            read(d.path(), json!({"path": "a.txt", "offset": 9})).await,
            ToolOutput::ok("     9\tl9\n    10\tl10")
        );
        assert_eq!(
            read(d.path(), json!({"path": "a.txt", "offset": 11})).await,
            ToolOutput::error("offset 11 is past the end of a.txt, which has 10 lines.")
        );
        assert_eq!(
            read(d.path(), json!({"path": "a.txt", "limit": 0})).await,
            ToolOutput::error("`limit` must be at least 1.")
        );
    }

    #[tokio::test]
    async fn long_lines_are_cut_and_long_outputs_stop_at_the_budget() {
        let long = "x".repeat(2500);
        let d = ws(&[("min.js", long.as_bytes())]);
        let want = format!(
            "     1\t{}… [line cut: 2,000 of 2,500 characters shown]",
            "x".repeat(2000)
        );
        assert_eq!(read(d.path(), json!({"path": "min.js"})).await, ToolOutput::ok(want));

        // 60 lines of ~2,008 numbered characters: 49 fit in 100,000.
        let text: String = (0..60).map(|_| format!("{}\n", "y".repeat(2000))).collect();
        let d = ws(&[("big.txt", text.as_bytes())]);
        let out = read(d.path(), json!({"path": "big.txt"})).await;
        assert!(!out.is_error);
        assert!(
            out.content
                .ends_with("[… file continues: showed lines 1–49 of 60; use offset=50 to read more]"),
            "{}",
            &out.content[out.content.len() - 200..]
        );
    }

    #[tokio::test]
    async fn an_image_file_comes_back_as_the_image_itself() {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.extend([0u8; 12]);
        let d = ws(&[("shots/img.png", &png)]);
        assert_eq!(
            read(d.path(), json!({"path": "shots/img.png"})).await,
            ToolOutput::ok("shots/img.png is a PNG image (20 bytes); here it is.").with_image(png, "image/png")
        );
    }

    #[tokio::test]
    async fn binary_files_are_refused_with_size_and_kind() {
        let mut pdf = b"%PDF-1.7\n".to_vec();
        pdf.extend([0u8; 11]);
        let d = ws(&[("doc.pdf", &pdf), ("blob", b"ab\0cd"), ("latin1.txt", b"caf\xe9\n")]);
        let cases = [
            ("doc.pdf", "doc.pdf is not a text file (20 bytes; a PDF document)."),
            (
                "blob",
                "blob is not a text file (5 bytes; it contains NUL bytes, so it looks binary).",
            ),
            (
                "latin1.txt",
                "latin1.txt is not a text file (5 bytes; not valid UTF-8 at byte 3).",
            ),
        ];
        for (path, want) in cases {
            assert_eq!(
                read(d.path(), json!({"path": path})).await,
                ToolOutput::error(format!("{want} Only UTF-8 text files can be read or edited."))
            );
        }
    }

    #[tokio::test]
    async fn missing_files_folders_and_outside_paths() {
        let d = ws(&[("src/a.rs", b""), ("src/sub/b.rs", b"")]);
        let root = d.path().canonicalize().unwrap();
        assert_eq!(
            read(d.path(), json!({"path": "nope.txt"})).await,
            ToolOutput::error(format!(
                "File not found: nope.txt (looked for {}).",
                root.join("nope.txt").display()
            ))
        );
        assert_eq!(
            read(d.path(), json!({"path": "src"})).await,
            ToolOutput::ok("src is a folder with 2 entries (read a file inside it to see its text):\na.rs\nsub/")
        );
        let out = read(d.path(), json!({"path": "src/../../x"})).await;
        assert!(out.is_error);
        assert!(out.content.contains("is outside the workspace"), "{}", out.content);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_symlink_out_of_the_workspace_is_not_followed() {
        let outside = ws(&[("secret.txt", b"s3cret")]);
        let d = ws(&[]);
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), d.path().join("link")).unwrap();
        let out = read(d.path(), json!({"path": "link"})).await;
        assert!(out.is_error);
        assert!(!out.content.contains("s3cret"));
        assert!(
            out.content.starts_with("link is outside the workspace"),
            "{}",
            out.content
        );
    }
}
