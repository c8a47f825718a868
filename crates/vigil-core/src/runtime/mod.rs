//! # runtime
//!
//! Owns the running system: one clonable [`Runtime`] handle that takes [`Op`]s, runs turns
//! (one at a time per session lane, sessions concurrently), and sends events to the sink.
//! Front ends (the Tauri shell, `vigil-headless`) hold a handle and nothing else.
//!
//! The handle is a composition of owners ([`Inner`]), each holding its own state and its
//! own methods in the module of its concept: [`Base`] and [`Life`] here,
//! [`lanes::Conversations`], [`connection::Agent`], [`processes::Processes`],
//! [`background::Unattended`], [`away::Away`], and the MCP manager. Work that spans owners
//! is a function taking the owners it needs (`health::view`, `away::came_back`,
//! `lanes::after_turn`…). `impl Runtime` is in one file, `api.rs` (the public surface, each
//! method picking its owners); `turns.rs` is the turn loop, functions that take the handle
//! because they re-enter it; `ops.rs` hands each op to its owner; `build.rs` wires the
//! owners together.
//!
//! Background work — the wake loop, the heartbeat and its schedule — starts with
//! [`Runtime::start_background`] and lives in [`background`].
//!
//! Must never: block the caller of [`Runtime::submit`]; turns run on spawned tasks. Must
//! never hold logic in `impl Runtime` that belongs to one owner.
//!
//! [`Op`]: vigil_protocol::Op

mod activity;
mod api;
mod attachments;
mod away;
mod background;
mod build;
mod channels;
mod connection;
mod continuation;
mod health;
mod lanes;
mod mcp;
mod ops;
mod process_table;
mod processes;
mod routines;
mod turns;
mod watching;

pub use crate::run::deliver::is_silent;
pub use attachments::{stage_attachment, STAGING_DIR};
pub use continuation::{CONTINUATION_PROMPT, MERGE_WINDOW};
pub use processes::USER_OWNER;

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use vigil_protocol::{ErrorKind, Event, NotificationKind, Source};

use crate::clock::Clock;
use crate::events::Emitter;

/// Titles a conversation has before its first message names it.
const DEFAULT_TITLES: [&str; 2] = ["Conversation", "New conversation"];

/// How long shutdown waits for cancelled turns and background work to finish (seed 004
/// §7.3: `waitForActiveTasks(30000)`).
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// The first line of a message, shortened for the sidebar.
fn title_from(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("Conversation");
    let mut title: String = line.chars().take(48).collect();
    if title.len() < line.len() {
        title.push('…');
    }
    title
}

/// A cheap, clonable handle to the runtime.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

/// The runtime's state: a handful of owners, each holding its own part (and defined in the
/// module of its concept), so a method's home is found in one guess from its owner.
struct Inner {
    base: Base,
    life: Life,
    /// Transcripts, their catalog, the lanes that run their turns, the search index.
    conversations: lanes::Conversations,
    /// What a turn is made of: provider, tools, approvals, workspace.
    agent: connection::Agent,
    /// The process registry and the panel's lines.
    processes: processes::Processes,
    /// The MCP servers of `mcp.json`; they start with the background work.
    mcp: crate::mcp::McpManager,
    /// Work nobody asked for just now: heartbeat, routines, triggers, continuations, budget.
    unattended: background::Unattended,
    /// The user's presence and the ways Vigil reaches them while away.
    away: away::Away,
}

/// What every part reads: where the data lives, the clock, the event emitter.
struct Base {
    pub(super) data_dir: PathBuf,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) emitter: Emitter,
    /// When this runtime opened (its clock's milliseconds), for the health check's uptime.
    pub(super) started_at: i64,
    /// Problems found while opening (an unreadable approvals file…), shown in Settings.
    pub(super) startup_warnings: Vec<String>,
}

/// The runtime's tasks and its one shutdown.
struct Life {
    pub(super) tasks: TaskTracker,
    /// Long-lived loops (wake, heartbeat schedule): not waited for by [`Runtime::idle`].
    pub(super) background: TaskTracker,
    /// Cancelled on shutdown; every turn's token is a child of it.
    pub(super) shutdown: CancellationToken,
    /// Set when [`Runtime::shutdown`] has finished: a later call returns at once, a
    /// concurrent one waits for the first.
    pub(super) shut_down: tokio::sync::OnceCell<()>,
}

impl Base {
    /// Reports a problem that is not part of any turn (an unreadable op, a settings file…).
    fn report(&self, kind: ErrorKind, message: impl Into<String>) {
        self.emitter.emit(
            Source::System,
            Event::Error {
                kind,
                message: message.into(),
            },
        );
    }

    /// Asks the front end to raise a native notification.
    fn notify(&self, title: impl Into<String>, body: impl Into<String>) {
        self.emitter
            .emit(Source::System, Event::notice(NotificationKind::Other, title, body));
    }
}

#[cfg(test)]
mod tests;
