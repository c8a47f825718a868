//! The actor's messages: what a [`RegistryHandle`](crate::exec::RegistryHandle) asks, each
//! with its `oneshot` reply, and what the actor's own timers tell it. Here, with the actor
//! that answers them, so the handle depends on the actor and not the reverse.
//!
//! Must never: carry anything a reply could block on (the actor never waits on a handle).

use std::sync::Arc;

use tokio::sync::oneshot;

use crate::exec::{ExecError, LogView, Outcome, Polled, ProcessInfo, SpawnRequest, TermSize, Yielded};

pub(in crate::exec) type Reply<T> = oneshot::Sender<Result<T, ExecError>>;

/// The actor's mailbox. `owner: None` means unscoped (the panel).
pub(in crate::exec) enum Msg {
    Spawn {
        req: SpawnRequest,
        reply: Reply<ProcessInfo>,
    },
    Info {
        owner: String,
        id: String,
        reply: Reply<ProcessInfo>,
    },
    List {
        owner: Option<String>,
        reply: oneshot::Sender<Vec<ProcessInfo>>,
    },
    Yield {
        owner: String,
        id: String,
        reply: Reply<Yielded>,
    },
    Wait {
        owner: String,
        id: String,
        reply: Reply<Outcome>,
    },
    Changed {
        owner: String,
        id: String,
        reply: Reply<()>,
    },
    Tail {
        owner: String,
        id: String,
        reply: Reply<(ProcessInfo, String)>,
    },
    Poll {
        owner: String,
        id: String,
        reply: Reply<Polled>,
    },
    Log {
        owner: String,
        id: String,
        reply: Reply<LogView>,
    },
    Write {
        owner: String,
        id: String,
        data: Vec<u8>,
        eof: bool,
        reply: Reply<()>,
    },
    Kill {
        owner: Option<String>,
        id: String,
        by: Killer,
        reply: Option<Reply<Outcome>>,
    },
    Clear {
        owner: String,
        id: String,
        reply: Reply<ProcessInfo>,
    },
    Remove {
        owner: String,
        id: String,
        reply: Reply<ProcessInfo>,
    },
    Resize {
        id: String,
        size: TermSize,
        reply: Reply<()>,
    },
    Raw {
        id: String,
        reply: Reply<Vec<u8>>,
    },
    Sweep {
        reply: oneshot::Sender<usize>,
    },
    Shutdown {
        reply: oneshot::Sender<()>,
    },
    /// From the actor's own timers.
    TimedOut {
        id: Arc<str>,
    },
    Drained {
        id: Arc<str>,
    },
}

/// Who asked for a kill, which decides who hears of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::exec) enum Killer {
    /// The owner (its agent's `process kill`, a cancelled turn): it knows, so no exit notice.
    Owner,
    /// The user, from the Processes panel: news to the owner, whose exit notice says so.
    User,
}
