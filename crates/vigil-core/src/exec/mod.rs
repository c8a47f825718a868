//! # exec
//!
//! Owns the processes the agent starts: spawning each command in a real terminal (a PTY from
//! portable-pty, or plain pipes when none can be opened or `pty: false`), each in a process
//! group of its own so a kill takes its grandchildren too; the process registry that keeps
//! running and finished processes per owner (the agent session) with bounded output; exit
//! notices for backgrounded processes; and shutdown with no orphans.
//!
//! Must never: block the registry actor on a read, a write or a wait (threads do those); keep
//! output without a bound however much a child writes; show one owner another's processes;
//! leave a process group running after [`RegistryHandle::shutdown`]; let a child see an API
//! key (the key variables are withheld from every child, and before the first child starts
//! the process makes itself non-dumpable so `/proc/<vigil>/environ` is closed to it).
//!
//! ## Layout
//!
//! - [`registry`] — [`RegistryHandle`], the clonable handle: one method per thing a tool or
//!   the UI can ask, each a message to the actor with a `oneshot` reply.
//! - `actor` — the registry actor: owns every process entry, applies output and exits, kills,
//!   sweeps finished processes after their TTL, coalesces output for the UI; its
//!   `commands` answer the handle's messages.
//! - `spawn` — starting a child (PTY or pipes) and its reader, waiter and writer threads.
//! - `output` — the bounded buffers (model text, pending poll text, raw bytes).
//! - `strip` — terminal bytes to plain text for the model (the `vte` parser).
//! - [`events`] — the [`ExecEvents`] seam the runtime connects: live output for the UI,
//!   exits, and the exit notice that wakes the agent.

mod actor;
pub mod events;
mod output;
pub mod registry;
mod spawn;
mod strip;

use std::path::PathBuf;
use std::time::Duration;

pub use events::{exit_notice_text, ChannelExecEvents, ExecEvent, ExecEvents, NoExecEvents, KILLED_BY_USER};
pub use output::{slice_lines, LineSlice};
pub use registry::RegistryHandle;

/// Kept here too: the desktop app names it through `exec`.
pub use crate::children::APP_ADDED_ENV;

/// A terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermSize {
    pub cols: u16,
    pub rows: u16,
}

impl Default for TermSize {
    /// 120×32: wide enough that compilers and test runners don't wrap their lines.
    fn default() -> Self {
        Self { cols: 120, rows: 32 }
    }
}

/// Limits and timings of the registry. The defaults follow issue 4 and seed 000.
#[derive(Debug, Clone)]
pub struct RegistryConfig {
    /// Characters of stripped output kept per process (the newest); also the bound of the
    /// pending poll buffer.
    pub max_output_chars: usize,
    /// Characters in a process's tail (live updates, `list`, the `exited` event).
    pub tail_chars: usize,
    /// Characters of the tail quoted in an exit notice.
    pub notice_tail_chars: usize,
    /// Raw bytes kept per process so the UI can replay its terminal.
    pub max_raw_bytes: usize,
    /// Between SIGTERM to a process group and SIGKILL.
    pub kill_grace: Duration,
    /// How long a finished process stays listed.
    pub finished_ttl: Duration,
    /// The shortest time between two sweeps of finished processes past their TTL (a sweep
    /// is due at the first one's end of TTL; with none finished, nothing wakes).
    pub sweep_every: Duration,
    /// Coalescing window for raw output sent to the UI (16 ms ≈ 60 updates/s).
    pub ui_interval: Duration,
    /// After the child has exited, how long to wait for the end of its output before the
    /// process is marked finished anyway (a grandchild may keep the terminal open).
    pub drain_grace: Duration,
    /// Size of a new terminal.
    pub size: TermSize,
    /// Processes running at once, every owner and the panel together. Each holds a
    /// terminal, three threads and up to ~1 MiB of buffers; a model looping on `exec` with
    /// `background` must hit a clear error, not the machine's limits.
    pub max_running: usize,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        Self {
            max_output_chars: 200_000,
            tail_chars: 2_000,
            notice_tail_chars: 400,
            max_raw_bytes: 512 * 1024,
            kill_grace: Duration::from_secs(3),
            finished_ttl: Duration::from_secs(30 * 60),
            sweep_every: Duration::from_secs(60),
            ui_interval: Duration::from_millis(16),
            drain_grace: Duration::from_secs(1),
            size: TermSize::default(),
            max_running: 64,
        }
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct SpawnRequest {
    /// The agent session the process belongs to; only it sees the process.
    pub owner: String,
    /// Run with `sh -c`.
    pub command: String,
    /// An existing folder (the tool resolves and checks it).
    pub cwd: PathBuf,
    /// Added to the inherited environment, after `TERM=xterm-256color`.
    pub env: Vec<(String, String)>,
    /// A terminal (the default) or plain pipes.
    pub pty: bool,
    /// The terminal's size; the registry default when `None`.
    pub size: Option<TermSize>,
    /// Killed (group, SIGTERM then SIGKILL) when it runs longer.
    pub timeout: Option<Duration>,
    /// Backgrounded from the start: its exit produces an exit notice.
    pub background: bool,
    /// The sandbox to run `sh -c` in; `None` runs it as is (commands the user starts from
    /// the Processes panel, full-auto without bubblewrap).
    pub sandbox: Option<crate::sandbox::Wrapped>,
}

impl SpawnRequest {
    /// A PTY request with no extra environment, timeout or size.
    pub fn new(owner: impl Into<String>, command: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            owner: owner.into(),
            command: command.into(),
            cwd: cwd.into(),
            env: Vec::new(),
            pty: true,
            size: None,
            timeout: None,
            background: false,
            sandbox: None,
        }
    }
}

/// Where a process is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    Running,
    /// Ended on its own (with any code, or by a signal nobody here sent).
    Exited,
    /// Ended after a kill: by request, on timeout, or at shutdown.
    Killed,
    /// Never ran; [`ProcessInfo::error`] says why.
    FailedToStart,
}

impl ProcessState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Exited => "exited",
            Self::Killed => "killed",
            Self::FailedToStart => "failed",
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExitStatus {
    /// The exit code, when it exited rather than died by a signal.
    pub code: Option<i32>,
    /// The signal's name (`SIGTERM`), when it died by one.
    pub signal: Option<String>,
    /// It was killed because its timeout expired.
    pub timed_out: bool,
    /// The user killed it from the Processes panel, not its owner: news to the owner.
    pub killed_by_user: bool,
}

impl ExitStatus {
    /// Exit code 0, no signal, no timeout, no kill by the user.
    pub fn success(&self) -> bool {
        self.code == Some(0) && self.signal.is_none() && !self.timed_out && !self.killed_by_user
    }

    /// `code 2` or `signal SIGKILL`, as in an exit notice.
    pub fn label(&self) -> String {
        match (&self.signal, self.code) {
            (Some(sig), _) => format!("signal {sig}"),
            (None, Some(code)) => format!("code {code}"),
            (None, None) => "code unknown".into(),
        }
    }
}

/// A snapshot of one process, for lists and replies.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessInfo {
    /// 8 hex characters, unique in the registry.
    pub id: String,
    pub owner: String,
    pub command: String,
    pub cwd: PathBuf,
    /// The child's pid, which is also its process group id.
    pub pid: Option<u32>,
    /// Whether it actually runs in a terminal.
    pub pty: bool,
    /// Why it runs with pipes although a terminal was asked for.
    pub pty_fallback: Option<String>,
    /// Milliseconds since the Unix epoch, from the registry's clock.
    pub started_at: i64,
    pub ended_at: Option<i64>,
    pub state: ProcessState,
    /// Set once the process has ended.
    pub exit: Option<ExitStatus>,
    /// Yielded to the background: its exit produces an exit notice.
    pub backgrounded: bool,
    /// Why it failed to start.
    pub error: Option<String>,
}

impl ProcessInfo {
    pub fn is_running(&self) -> bool {
        self.state == ProcessState::Running
    }
}

/// A finished process and everything it wrote (as far as the cap kept).
#[derive(Debug, Clone)]
pub struct Outcome {
    pub info: ProcessInfo,
    /// The stripped output, newest [`RegistryConfig::max_output_chars`] characters.
    pub output: String,
    /// Characters dropped from the start of `output` by the cap.
    pub dropped_chars: u64,
}

impl Outcome {
    /// The exit status (always set on an outcome).
    pub fn exit(&self) -> ExitStatus {
        self.info.exit.clone().unwrap_or_default()
    }
}

/// What a yield found.
#[derive(Debug, Clone)]
pub enum Yielded {
    /// Still running, now in the background.
    Running(ProcessInfo),
    /// It finished before the yield; nothing was backgrounded.
    Finished(Outcome),
}

/// New output since the last poll.
#[derive(Debug, Clone)]
pub struct Polled {
    pub info: ProcessInfo,
    pub output: String,
    /// Characters of pending output dropped by the cap since the last poll.
    pub dropped_chars: u64,
    /// Polls in a row, this one included, that found nothing new (0 when this one did).
    pub empty_polls: u32,
}

/// A process's kept output, for `log`.
#[derive(Debug, Clone)]
pub struct LogView {
    pub info: ProcessInfo,
    pub text: String,
    pub dropped_chars: u64,
}

/// Why a registry call failed; each message tells the model what to do instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// No such process for this owner. Recover: `process list` shows the owner's processes.
    #[error("No process with id `{id}` in this session. Use process list to see the ones you started.")]
    NotFound { id: String },
    /// The process has ended, so it takes no input. Recover: start the command again.
    #[error("Process {id} has already ended ({status}); it no longer reads input.")]
    Ended { id: String, status: String },
    /// The action needs a finished process. Recover: kill or remove it.
    #[error("Process {id} is still running; use kill, or remove to kill and forget it.")]
    StillRunning { id: String },
    /// Input was closed earlier with `eof`. Recover: start the command again.
    #[error("The input of process {id} was closed earlier (eof); nothing more can be written.")]
    StdinClosed { id: String },
    /// The child did not take the input in time. Recover: poll its output; it may be busy.
    #[error("Process {id} did not take the input within {secs} s; it may not be reading its input.")]
    WriteTimedOut { id: String, secs: u64 },
    /// Writing failed at the OS level. Recover: check the process state with poll.
    #[error("Writing to process {id} failed: {reason}")]
    Write { id: String, reason: String },
    /// The process could not be started. Recover: check the command and working directory.
    #[error("Could not start `{command}`: {reason}")]
    Spawn { command: String, reason: String },
    /// The terminal refused the new size. Recover: keep the old size.
    #[error("Could not resize the terminal of process {id}: {reason}")]
    Resize { id: String, reason: String },
    /// The process runs without a terminal. Recover: nothing to resize.
    #[error("Process {id} runs without a terminal (pty: false), so it has no size.")]
    NoTerminal { id: String },
    /// As many processes run as the registry allows. Recover: kill one, or wait for one.
    #[error(
        "{running} processes are already running, the most that may run at once. Stop one with \
         process kill (process list shows them) or wait for one to finish, then start this again."
    )]
    TooMany { running: usize },
    /// The registry has shut down. Recover: none; the app is quitting.
    #[error("The process registry has shut down; no commands can run.")]
    ShutDown,
}
