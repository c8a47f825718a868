//! # mcp::stdio
//!
//! Owns a stdio server's process: started in a process group of its own (so stopping it
//! reaches whatever it started, `npx` and the `node` under it alike) with the environment
//! `exec`'s commands get (see [`crate::children`]), stdin and stdout for
//! JSON-RPC, stderr read in fixed chunks and split into lines for Vigil's log and a short
//! tail Settings shows.
//! Stopping follows the MCP spec's order: close stdin, wait, SIGTERM, wait, SIGKILL — each
//! to the whole group.
//!
//! Must never: leave a process of the group running after [`StdioChild::stop`], or let a
//! server's stderr grow Vigil's memory (lines are cut, the tail is bounded).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Lines of stderr Settings shows.
const TAIL_LINES: usize = 20;
/// A longer stderr line is cut (the log and the tail alike).
const MAX_LINE: usize = 500;
/// What is kept of a line while it comes: [`MAX_LINE`] characters are at most this many bytes
/// in UTF-8, so a line cut here still has all the characters that are shown of it.
const MAX_LINE_BYTES: usize = MAX_LINE * 4;
/// Bytes of stderr read at a time.
const READ_CHUNK: usize = 8 * 1024;
/// How long each stopping step waits for the group to go.
const STOP_STEP: Duration = Duration::from_millis(1500);

/// The last lines a server wrote to stderr, shared with Settings. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct StderrTail(Arc<Mutex<VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }

    /// Oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Forgets what an earlier run wrote (a restart begins a new tail).
    pub fn clear(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// Splits stderr into lines as it comes. Of a line it keeps at most [`MAX_LINE_BYTES`] and
/// drops the rest as it arrives, so a server that never writes a newline costs a fixed
/// buffer, not what it wrote. Bytes that are not UTF-8 are shown as `�`, not lost.
#[derive(Debug, Default)]
struct Lines {
    line: Vec<u8>,
    /// Bytes of the current line were dropped.
    cut: bool,
}

impl Lines {
    /// Hands `emit` each line `chunk` ends.
    fn feed(&mut self, chunk: &[u8], emit: &mut impl FnMut(String)) {
        let mut rest = chunk;
        while let Some(end) = newline(rest) {
            self.keep(&rest[..end]);
            emit(self.take());
            rest = &rest[end + 1..];
        }
        self.keep(rest);
    }

    fn keep(&mut self, part: &[u8]) {
        let room = MAX_LINE_BYTES - self.line.len();
        self.line.extend_from_slice(&part[..part.len().min(room)]);
        self.cut |= part.len() > room;
    }

    /// The line so far, cut to [`MAX_LINE`] characters and marked `…` when it was longer.
    fn take(&mut self) -> String {
        let bytes = std::mem::take(&mut self.line);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(&bytes);
        let text = String::from_utf8_lossy(bytes);
        let mut line: String = text.chars().take(MAX_LINE).collect();
        if std::mem::take(&mut self.cut) || line.len() < text.len() {
            line.push('…');
        }
        line
    }

    /// What the server wrote after its last newline, if anything.
    fn finish(&mut self) -> Option<String> {
        (!self.line.is_empty() || self.cut).then(|| self.take())
    }
}

/// Where the first newline in `bytes` is. `skip_until` searches with the standard library's
/// `memchr`, which stays fast in a debug build; a byte-by-byte search there is about twenty
/// times slower, enough to make a flood outlast a server's time to start.
fn newline(bytes: &[u8]) -> Option<usize> {
    use std::io::BufRead;
    let mut rest = bytes;
    // Reading a slice cannot fail.
    let through = rest.skip_until(b'\n').unwrap_or(0);
    (through > 0 && bytes[through - 1] == b'\n').then(|| through - 1)
}

/// A running stdio server.
pub struct StdioChild {
    child: Child,
    /// Its pid, which is also its process group's id.
    pgid: Option<u32>,
}

/// What [`spawn`] needs.
pub struct Spawn<'a> {
    pub server: &'a str,
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub cwd: Option<&'a std::path::Path>,
    pub tail: StderrTail,
}

/// Starts the server; returns it with the stdout and stdin the transport reads and writes.
pub fn spawn(s: Spawn<'_>) -> std::io::Result<(StdioChild, ChildStdout, ChildStdin)> {
    // As `exec` starts a command: no key variable unless the server's own `env` sets it,
    // and no reading them back from this process's `/proc` entries.
    crate::children::hide_parent();
    let mut cmd = Command::new(s.command);
    for name in crate::children::withheld_env() {
        cmd.env_remove(name);
    }
    cmd.args(s.args)
        .envs(s.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // A last resort if the runtime is dropped without stopping it: the leader at least.
        .kill_on_drop(true);
    if let Some(cwd) = s.cwd {
        cmd.current_dir(cwd);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    let (Some(stdout), Some(stdin), Some(stderr)) = (child.stdout.take(), child.stdin.take(), child.stderr.take())
    else {
        return Err(std::io::Error::other("the server's pipes were not set up"));
    };
    let server = s.server.to_string();
    let tail = s.tail;
    tokio::spawn(async move {
        let mut stderr = stderr;
        let mut buf = vec![0; READ_CHUNK];
        let mut lines = Lines::default();
        let mut log = |line: String| {
            tracing::info!(target: "vigil_core::mcp::stderr", server, "{line}");
            tail.push(line);
        };
        while let Ok(n @ 1..) = stderr.read(&mut buf).await {
            lines.feed(&buf[..n], &mut log);
        }
        if let Some(line) = lines.finish() {
            log(line);
        }
    });
    let pgid = child.id();
    Ok((StdioChild { child, pgid }, stdout, stdin))
}

impl StdioChild {
    /// Its exit, once it exited: "exit status 3", "killed by signal 9".
    pub async fn exit_within(&mut self, wait: Duration) -> Option<String> {
        match tokio::time::timeout(wait, self.child.wait()).await {
            Ok(Ok(status)) => Some(describe(status)),
            _ => None,
        }
    }

    /// Stops it and everything in its group. Its stdin must already be closed (the
    /// transport owns it and closes it when the connection ends).
    pub async fn stop(mut self) {
        if self.exit_within(STOP_STEP).await.is_none() {
            signal_group(self.pgid, Signal::Term);
            if self.exit_within(STOP_STEP).await.is_none() {
                signal_group(self.pgid, Signal::Kill);
                let _ = self.child.wait().await;
            }
        }
        // The leader is gone; whatever it started in its group goes too.
        signal_group(self.pgid, Signal::Kill);
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return format!("killed by signal {sig}");
        }
    }
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => status.to_string(),
    }
}

#[derive(Debug, Clone, Copy)]
enum Signal {
    Term,
    Kill,
}

/// Signals the process group; never group 0 or 1.
fn signal_group(pgid: Option<u32>, sig: Signal) {
    #[cfg(unix)]
    {
        use rustix::process::{kill_process_group, Pid, Signal as S};
        let Some(pid) = pgid
            .filter(|p| *p > 1)
            .and_then(|p| i32::try_from(p).ok())
            .and_then(Pid::from_raw)
        else {
            return;
        };
        let _ = kill_process_group(
            pid,
            match sig {
                Signal::Term => S::TERM,
                Signal::Kill => S::KILL,
            },
        );
    }
    #[cfg(not(unix))]
    let _ = (pgid, sig);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]]) -> Vec<String> {
        let mut out = Vec::new();
        let mut lines = Lines::default();
        for chunk in chunks {
            lines.feed(chunk, &mut |l| out.push(l));
        }
        out.extend(lines.finish());
        out
    }

    #[test]
    fn stderr_is_split_into_lines_across_reads_and_long_lines_are_cut() {
        assert_eq!(
            lines_of(&[b"one\r\ntw", b"o\n\nthr", b"ee"]),
            ["one", "two", "", "three"]
        );
        let long = "é".repeat(MAX_LINE_BYTES);
        let cut = format!("{}…", "é".repeat(MAX_LINE));
        assert_eq!(
            lines_of(&[long.as_bytes(), long.as_bytes(), b"\nafter\n"]),
            [cut.clone(), "after".into()]
        );
        // Cut where the bytes run out, or only by characters: marked alike.
        assert_eq!(lines_of(&["é".repeat(MAX_LINE + 1).as_bytes()]), [cut]);
        assert_eq!(lines_of(&[b"bad \xff byte\n"]), ["bad \u{fffd} byte"]);
    }

    #[tokio::test]
    async fn stopping_reaches_what_the_server_started_and_stderr_is_kept() {
        let tail = StderrTail::default();
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("grandchild");
        // A server that starts a child of its own which ignores SIGTERM, then waits.
        let script = format!(
            "echo starting >&2; (trap '' TERM; sleep 300) & echo $! > {}; echo ready >&2; wait",
            pidfile.display()
        );
        let args = ["-c".to_string(), script];
        let (child, _stdout, stdin) = spawn(Spawn {
            server: "t",
            command: "sh",
            args: &args,
            env: &[],
            cwd: None,
            tail: tail.clone(),
        })
        .unwrap();
        let grandchild = loop {
            if let Ok(pid) = std::fs::read_to_string(&pidfile) {
                if let Ok(pid) = pid.trim().parse::<i32>() {
                    break pid;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        while tail.lines().len() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(tail.lines(), ["starting", "ready"]);
        drop(stdin);
        child.stop().await;
        // A signal is delivered a moment after `kill` returns; a zombie is gone for good.
        let alive =
            || std::fs::read_to_string(format!("/proc/{grandchild}/stat")).is_ok_and(|stat| !stat.contains(") Z"));
        let mut waited = 0;
        while alive() && waited < 100 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            waited += 1;
        }
        assert!(!alive(), "the server's own child outlived it");
    }
}
