//! # vigil-core
//!
//! Vigil's whole runtime, with no Tauri or GUI dependency: the desktop shell and the
//! `vigil-headless` runner are both thin front ends over [`Runtime`].
//!
//! ## Layout
//!
//! - [`runtime`] — the clonable handle front ends hold: takes `Op`s, runs turns per session lane;
//!   a composition of owners (conversations, agent, processes, unattended work, away), each
//!   with its methods in its own file, and one public `impl Runtime` in `runtime/api.rs`.
//! - [`run`] — one way to start a run ([`run::RunRequest`] → [`run::start::run`]) for every
//!   kind of work, one way to deliver its result ([`run::deliver`]), lanes, the daily budget.
//! - [`agent`] — one turn: save the user message, stream the reply, save the reply.
//! - [`approval`] — may the agent run this command / touch this file? Policy, asking, "always".
//! - [`sandbox`] — bubblewrap around the agent's commands: the workspace writable, the rest
//!   read-only, the data folder hidden, the network optional.
//! - [`shell`] — a command line read as bash reads it: its simple commands, or why it cannot
//!   be proven harmless; the read-only list and the programs "always" never remembers.
//! - [`mcp`] — the MCP servers in `mcp.json` (rmcp, stdio and streamable HTTP): their life,
//!   and their tools offered as `mcp__<server>__<tool>` through the registry and the gate.
//! - [`tools`] — the tool registry the agent runs model calls through, the built-in
//!   workspace file tools `read`, `write` and `edit`, and `exec`/`process` over [`exec`].
//! - [`exec`] — real terminals: the process registry actor (PTY or pipes, process groups,
//!   bounded output, kill, exit notices, shutdown with no orphans).
//! - [`children`] — what every process Vigil starts inherits: the environment without the
//!   API key variables, and a parent it cannot read through `/proc`.
//! - [`images`] — an attached or tool-made image checked, downscaled to 1 568 px and re-encoded,
//!   every decode within a memory budget the process shares.
//! - [`provider`] — streaming clients for the Anthropic and OpenAI-compatible APIs, retries.
//! - [`session`] — everything a session keeps on disk, safe across tasks, processes and crashes:
//!   - [`session::transcript`] — JSONL transcripts, appended whole under the lock, torn tails cut.
//!   - [`session::meta`] — title, type, revision, mailbox; one checksummed atomic write path
//!     (`update_atomic`) with a `.bak` fallback.
//!   - [`session::lock`] — the per-session lock: in-process mutex + `flock`, stale holders reclaimed.
//!   - [`session::repair`] — closes broken tool-call chains before a history is sent.
//! - [`settings`] — `settings.json` + environment overrides → a provider config; its
//!   [`settings::desktop`] entry (close to tray, login, theme…) read leniently.
//! - [`secrets`] — API keys in the OS keyring, or a user-only file when there is none.
//! - [`events`] — stamping events into envelopes and handing them to a sink.
//! - [`system_events`] — per-session in-memory queues of "what happened" lines for the next turn.
//! - [`wake`] — heartbeat wake requests: coalescing, priorities, retry, persisted pending wakes.
//! - [`watch`] — routine triggers beyond the clock (files, …), checks in the read-only sandbox
//!   with their approval, and the bounds on fires; a fire ends in one call into `routines`.
//! - [`inhibit`] — a systemd-logind `sleep` lock held while any turn, job or background command
//!   runs, released when nothing does; what Settings shows about it.
//! - [`away`] — what happened while the user was away: the events a routine's log does not
//!   keep (continuations, heartbeat runs, approvals waiting), and the card's lines.
//! - [`channels`] — the user's phone: pushes to their ntfy server and Telegram bot, approvals
//!   answered from there with one-time tokens, a chat with a conversation over Telegram.
//! - [`presence`] — is the user at the computer? logind's idle and lock hints for the desktop
//!   session, else input in the window.
//! - [`history`] — the full-text index of every transcript (SQLite FTS5), derived from the
//!   JSONL and caught up off the turn's path; searches by the agent and the user.
//! - [`heartbeat`] — `HEARTBEAT.md`, preflight, prompts, `HEARTBEAT_OK`, delivery to the mailbox.
//! - [`routines`] — routines in `HEARTBEAT.md`'s task block: schedules in IANA zones, the one
//!   scheduler loop (heartbeat interval + routines), claims, job sessions, the routine tools.
//! - [`workspace`] — the agent's folder and the prompt files read fresh each turn.
//! - [`beneath`] — opening a file beneath its folder, never through a symlink.
//! - [`durable`] — the seam every durable write goes through: write, fsync, rename, fsync
//!   the folder, and the one atomic whole-file write; tests record its calls in order.
//! - [`leftovers`] — temp files of writes a crash cut off, swept once at start.
//! - [`clock`] — injected time, so tests never sleep.

pub mod agent;
pub mod approval;
pub mod away;
pub mod beneath;
pub mod channels;
pub mod children;
pub mod clock;
pub mod durable;
pub mod events;
pub mod exec;
pub mod heartbeat;
pub mod history;
pub mod images;
pub mod inhibit;
pub mod leftovers;
pub mod mcp;
pub mod presence;
pub mod provider;
pub mod routines;
pub mod run;
pub mod runtime;
pub mod sandbox;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod shell;
pub mod system_events;
pub mod tools;
pub mod wake;
pub mod watch;
pub mod workspace;

pub use runtime::Runtime;
pub use vigil_protocol as protocol;
