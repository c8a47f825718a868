//! `process`: follow up on commands `exec` started — list, poll, log, write, send-keys, kill,
//! clear, remove (seed 000 §4). Only the calling session's processes are visible.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::truncate::{counted, group_digits};
use super::{parse_args, Tool, ToolContext, ToolOutput};
use crate::exec::{slice_lines, ExecError, ProcessInfo, ProcessState, RegistryHandle};
use crate::provider::ToolSpec;

/// Longest `poll` wait.
const MAX_POLL_WAIT_MS: f64 = 120_000.0;
/// After the first new output of a waited poll, how long to let the rest of a burst arrive
/// (an answer and the prompt after it often come in separate reads).
const SETTLE: Duration = Duration::from_millis(100);
/// Lines `log` returns by default.
const DEFAULT_LOG_LINES: usize = 200;
/// Empty polls in a row before the reply suggests waiting longer.
const BACKOFF_AFTER: u32 = 3;
/// The waits suggested after 3, 4, 5 and 6+ empty polls.
const BACKOFF_MS: [u64; 4] = [5_000, 10_000, 30_000, 60_000];

#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Action {
    List,
    Poll,
    Log,
    Write,
    #[serde(alias = "send_keys", alias = "sendKeys")]
    SendKeys,
    Kill,
    Clear,
    Remove,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Keys {
    Many(Vec<String>),
    One(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProcessArgs {
    action: Action,
    #[serde(default, rename = "sessionId", alias = "session_id", alias = "id")]
    session_id: Option<String>,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    eof: Option<bool>,
    #[serde(default)]
    keys: Option<Keys>,
}

/// The `process` tool.
pub struct ProcessTool {
    registry: RegistryHandle,
}

impl ProcessTool {
    pub fn new(registry: RegistryHandle) -> Self {
        Self { registry }
    }

    /// Typing into a process runs whatever its program does with the input (a shell or a
    /// REPL runs it), so it passes the approval gate like a command: see
    /// [`crate::approval::Approvals::check`] for `ProcessInput`.
    async fn may_type(&self, ctx: &ToolContext, id: &str) -> Result<(), String> {
        let Some(gate) = &ctx.gate else {
            return Ok(());
        };
        let info = self.registry.info(&ctx.owner, id).await.map_err(|e| e.to_string())?;
        let started_here = ctx.started.lock().unwrap_or_else(|e| e.into_inner()).contains(id);
        match gate
            .check_input(&info.command, &info.cwd.display().to_string(), started_here)
            .await
        {
            crate::approval::Verdict::Allowed | crate::approval::Verdict::ReadOnly => Ok(()),
            crate::approval::Verdict::Denied(why) => Err(why),
        }
    }
}

#[async_trait::async_trait]
impl Tool for ProcessTool {
    /// Looking (`list`, `poll`, `log`) changes nothing; the other actions act on a process.
    /// Typing into a process asks the gate first ([`Self::may_type`]); killing or forgetting
    /// one does not ask.
    fn asks_gate_first(&self, input: &serde_json::Value, _workspace: &std::path::Path) -> bool {
        matches!(
            input.get("action").and_then(|a| a.as_str()),
            Some("write" | "send-keys")
        )
    }

    fn changes_things(&self, input: &serde_json::Value) -> bool {
        !matches!(
            input.get("action").and_then(|a| a.as_str()),
            Some("list" | "poll" | "log")
        )
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "process".into(),
            description: "Manage commands started with `exec` that are still running or have \
                 finished (this conversation's only). Actions: `list` (all, with state and exit \
                 code); `poll` (output since the last poll and whether it has exited; `timeout` \
                 waits up to that many ms for something new); `log` (the kept output by lines: \
                 0-based `offset`, `limit`, default the last 200); `write` (`data` to its \
                 input, `eof: true` to end the input); `send-keys` (`keys`: names like Enter, \
                 Tab, Escape, Up, Down, Left, Right, C-c, C-d, or literal text); `kill` (the \
                 command and everything it started); `clear` (forget a finished one); `remove` \
                 (kill if running, then forget). All but `list` need `sessionId`."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["list", "poll", "log", "write", "send-keys", "kill", "clear", "remove"]},
                    "sessionId": {"type": "string", "description": "The session id `exec` returned."},
                    "timeout": {"type": "number", "description": "poll: wait up to this many ms (max 120000) for new output or the exit."},
                    "offset": {"type": "integer", "minimum": 0, "description": "log: 0-based first line."},
                    "limit": {"type": "integer", "minimum": 1, "description": "log: number of lines (default 200)."},
                    "data": {"type": "string", "description": "write: text for the process's input (add \\n to submit a line)."},
                    "eof": {"type": "boolean", "description": "write: end the input after `data`."},
                    "keys": {"type": "array", "items": {"type": "string"}, "description": "send-keys: key names or literal text, sent in order."}
                },
                "required": ["action"],
                "additionalProperties": false
            }),
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let args: ProcessArgs = match parse_args(&self.spec(), input) {
            Ok(args) => args,
            Err(out) => return out,
        };
        let owner = ctx.owner.as_str();
        if let Action::List = args.action {
            return ToolOutput::ok(self.list(owner).await);
        }
        let Some(id) = args.session_id.as_deref().map(str::trim).filter(|s| !s.is_empty()) else {
            return ToolOutput::error(
                "`sessionId` is required for this action; use action `list` to see your processes.",
            );
        };
        if matches!(args.action, Action::Write | Action::SendKeys) {
            if let Err(why) = self.may_type(ctx, id).await {
                return ToolOutput::error(why);
            }
        }
        let done = match args.action {
            Action::List => unreachable!("handled above"),
            Action::Poll => self.poll(owner, id, args.timeout).await,
            Action::Log => self.log(owner, id, args.offset, args.limit).await,
            Action::Write => {
                let eof = args.eof.unwrap_or(false);
                match args.data {
                    None if !eof => Err("`data` is required for write (or `eof: true` to end the input).".into()),
                    data => {
                        let data = data.unwrap_or_default();
                        let n = data.len();
                        self.registry
                            .write(owner, id, data.into_bytes(), eof)
                            .await
                            .map(|()| {
                                let end = if eof { " and ended its input" } else { "" };
                                format!("Wrote {} to {id}{end}.", counted(n, "byte"))
                            })
                            .map_err(|e| e.to_string())
                    }
                }
            }
            Action::SendKeys => match args.keys {
                None => Err("`keys` is required for send-keys, e.g. [\"C-c\"] or [\"ls\", \"Enter\"].".into()),
                Some(keys) => {
                    let keys = match keys {
                        Keys::Many(k) => k,
                        Keys::One(k) => vec![k],
                    };
                    let bytes = encode_keys(&keys);
                    let n = bytes.len();
                    self.registry
                        .write(owner, id, bytes, false)
                        .await
                        .map(|()| format!("Sent {} ({}) to {id}.", keys.join(" "), counted(n, "byte")))
                        .map_err(|e| e.to_string())
                }
            },
            Action::Kill => match self.registry.info(owner, id).await {
                Ok(info) if !info.is_running() => {
                    Ok(format!("{id} had already ended ({}); nothing to kill.", status(&info)))
                }
                Ok(_) => self
                    .registry
                    .kill(owner, id)
                    .await
                    .map(|o| format!("Killed {id} and everything it started ({}).", status(&o.info)))
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            },
            Action::Clear => self
                .registry
                .clear(owner, id)
                .await
                .map(|_| format!("Cleared {id}; its output is gone."))
                .map_err(|e| e.to_string()),
            Action::Remove => self
                .registry
                .remove(owner, id)
                .await
                .map(|info| match info.state {
                    ProcessState::Killed => format!("Killed and removed {id}."),
                    _ => format!("Removed {id}."),
                })
                .map_err(|e| e.to_string()),
        };
        match done {
            Ok(text) => ToolOutput::ok(text),
            Err(text) => ToolOutput::error(text),
        }
    }
}

impl ProcessTool {
    async fn list(&self, owner: &str) -> String {
        let list = self.registry.list(owner).await;
        if list.is_empty() {
            return "No processes in this conversation.".into();
        }
        let now = self.registry.now_ms();
        list.iter()
            .rev()
            .map(|p| {
                let ran = p.ended_at.unwrap_or(now).saturating_sub(p.started_at);
                let how = match (&p.exit, p.pid) {
                    (Some(exit), _) => exit.label(),
                    (None, Some(pid)) => format!("pid {pid}"),
                    (None, None) => "-".into(),
                };
                format!(
                    "{} {:<7} {:>7} {:<14} :: {} (in {})",
                    p.id,
                    p.state.as_str(),
                    duration(ran),
                    how,
                    p.command,
                    p.cwd.display()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    async fn poll(&self, owner: &str, id: &str, timeout: Option<f64>) -> Result<String, String> {
        let wait = timeout.filter(|t| t.is_finite() && *t > 0.0).unwrap_or(0.0);
        let wait = Duration::from_millis(wait.min(MAX_POLL_WAIT_MS) as u64);
        if !wait.is_zero() {
            let start = tokio::time::Instant::now();
            match tokio::time::timeout(wait, self.registry.changed(owner, id)).await {
                Ok(Err(e)) => return Err(e.to_string()),
                Ok(Ok(())) => {
                    let left = wait.saturating_sub(start.elapsed());
                    let info = self.registry.info(owner, id).await.map_err(|e| e.to_string())?;
                    if info.is_running() {
                        tokio::time::sleep(left.min(SETTLE)).await;
                    }
                }
                Err(_) => {} // waited the whole time: an empty poll
            }
        }
        let polled = self.registry.poll(owner, id).await.map_err(|e| e.to_string())?;
        let mut text = String::new();
        if polled.dropped_chars > 0 {
            text.push_str(&format!(
                "[… {} characters dropped since the last poll (only the newest are kept) …]\n",
                group_digits(polled.dropped_chars)
            ));
        }
        let out = polled.output.trim_end();
        text.push_str(if out.is_empty() && polled.dropped_chars == 0 {
            "(no new output)"
        } else {
            out
        });
        text.push_str("\n\n");
        text.push_str(&state_sentence(&polled.info));
        if polled.info.is_running() && polled.empty_polls >= BACKOFF_AFTER {
            let step = ((polled.empty_polls - BACKOFF_AFTER) as usize).min(BACKOFF_MS.len() - 1);
            text.push_str(&format!(
                "\nNo new output in {} polls in a row; wait longer before polling again (e.g. poll with timeout: {}).",
                polled.empty_polls, BACKOFF_MS[step]
            ));
        }
        Ok(text)
    }

    async fn log(&self, owner: &str, id: &str, offset: Option<usize>, limit: Option<usize>) -> Result<String, String> {
        if limit == Some(0) {
            return Err("`limit` must be at least 1.".into());
        }
        let view = self
            .registry
            .log(owner, id)
            .await
            .map_err(|e: ExecError| e.to_string())?;
        let slice = slice_lines(&view.text, offset, limit.unwrap_or(DEFAULT_LOG_LINES));
        let mut text = String::new();
        if view.dropped_chars > 0 {
            text.push_str(&format!(
                "[… the first {} characters of output were dropped; line numbers count from what is kept …]\n",
                group_digits(view.dropped_chars)
            ));
        }
        if slice.total == 0 {
            text.push_str("(no output)");
        } else if slice.count == 0 {
            text.push_str(&format!(
                "(no lines from offset {}; the log has {})",
                slice.start,
                counted(slice.total, "line")
            ));
        } else {
            text.push_str(&slice.text);
            text.push_str(&format!(
                "\n\n(lines {}–{} of {}, 0-based)",
                slice.start,
                slice.start + slice.count - 1,
                slice.total
            ));
        }
        text.push('\n');
        text.push_str(&state_sentence(&view.info));
        Ok(text)
    }
}

fn status(info: &ProcessInfo) -> String {
    match (&info.exit, &info.error) {
        (Some(exit), _) if exit.killed_by_user => format!("killed by the user, {}", exit.label()),
        (Some(exit), _) if exit.timed_out => format!("timed out, {}", exit.label()),
        (Some(exit), _) => exit.label(),
        (None, Some(e)) => format!("failed to start: {e}"),
        (None, None) => "running".into(),
    }
}

/// `Process still running.`, `Process exited with code 0.` and the like.
fn state_sentence(info: &ProcessInfo) -> String {
    match info.state {
        ProcessState::Running => "Process still running.".into(),
        ProcessState::Exited => format!("Process exited with {}.", status(info)),
        ProcessState::Killed => match &info.exit {
            Some(exit) if exit.killed_by_user => format!("Process was killed by the user ({}).", exit.label()),
            _ => format!("Process was killed ({}).", status(info)),
        },
        ProcessState::FailedToStart => format!("Process {}.", status(info)),
    }
}

/// `850ms`, `12s`, `3m05s`, `1h02m`.
fn duration(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        _ if ms < 1000 => format!("{ms}ms"),
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// The bytes a terminal sends for each key, in order. Names (case-insensitive): Enter,
/// Tab, BTab, Escape/Esc, Space, BSpace/Backspace, Up, Down, Left, Right, Home, End,
/// PageUp/PgUp, PageDown/PgDn, Delete/DC, Insert/IC, F1–F12; `C-x` or `^X` for Ctrl, `M-x`
/// for Alt. Anything else is sent as literal text.
pub fn encode_keys(keys: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for key in keys {
        match named_key(key) {
            Some(bytes) => out.extend_from_slice(&bytes),
            None => out.extend_from_slice(key.as_bytes()),
        }
    }
    out
}

fn named_key(key: &str) -> Option<Vec<u8>> {
    let lower = key.to_ascii_lowercase();
    let fixed: &[u8] = match lower.as_str() {
        "enter" | "return" | "cr" => b"\r",
        "tab" => b"\t",
        "btab" | "s-tab" => b"\x1b[Z",
        "escape" | "esc" => b"\x1b",
        "space" => b" ",
        "bspace" | "backspace" => b"\x7f",
        "up" => b"\x1b[A",
        "down" => b"\x1b[B",
        "right" => b"\x1b[C",
        "left" => b"\x1b[D",
        "home" => b"\x1b[H",
        "end" => b"\x1b[F",
        "pageup" | "pgup" | "ppage" => b"\x1b[5~",
        "pagedown" | "pgdn" | "npage" => b"\x1b[6~",
        "delete" | "dc" => b"\x1b[3~",
        "insert" | "ic" => b"\x1b[2~",
        "f1" => b"\x1bOP",
        "f2" => b"\x1bOQ",
        "f3" => b"\x1bOR",
        "f4" => b"\x1bOS",
        "f5" => b"\x1b[15~",
        "f6" => b"\x1b[17~",
        "f7" => b"\x1b[18~",
        "f8" => b"\x1b[19~",
        "f9" => b"\x1b[20~",
        "f10" => b"\x1b[21~",
        "f11" => b"\x1b[23~",
        "f12" => b"\x1b[24~",
        _ => b"",
    };
    if !fixed.is_empty() {
        return Some(fixed.to_vec());
    }
    let ctrl = key
        .strip_prefix("C-")
        .or_else(|| key.strip_prefix("c-"))
        .or_else(|| key.strip_prefix('^'));
    if let Some(rest) = ctrl {
        let mut chars = rest.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            let byte = match c {
                'a'..='z' | 'A'..='Z' => (c.to_ascii_lowercase() as u8) & 0x1f,
                '@' | ' ' | '2' => 0,
                '[' => 0x1b,
                '\\' => 0x1c,
                ']' => 0x1d,
                '^' => 0x1e,
                '_' | '/' => 0x1f,
                '?' => 0x7f,
                _ => return None,
            };
            return Some(vec![byte]);
        }
        return None;
    }
    let alt = key.strip_prefix("M-").or_else(|| key.strip_prefix("m-"))?;
    if alt.is_empty() {
        return None;
    }
    let mut bytes = vec![0x1b];
    bytes.extend(named_key(alt).unwrap_or_else(|| alt.as_bytes().to_vec()));
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(k: &[&str]) -> Vec<u8> {
        encode_keys(&k.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn keys_map_to_terminal_bytes_and_the_rest_is_literal() {
        assert_eq!(keys(&["ls -l", "Enter"]), b"ls -l\r");
        assert_eq!(keys(&["C-c", "c-d", "^Z", "C-["]), b"\x03\x04\x1a\x1b");
        assert_eq!(
            keys(&["Up", "down", "Left", "RIGHT", "Tab", "Esc"]),
            b"\x1b[A\x1b[B\x1b[D\x1b[C\t\x1b"
        );
        assert_eq!(keys(&["M-x", "M-Enter", "F5", "PageUp"]), b"\x1bx\x1b\r\x1b[15~\x1b[5~");
        // Not a key name: sent as typed.
        assert_eq!(keys(&["C-", "Control", "日本"]), "C-Control日本".as_bytes());
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(12_400), "12s");
        assert_eq!(duration(185_000), "3m05s");
        assert_eq!(duration(3_720_000), "1h02m");
    }
}
