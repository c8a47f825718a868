//! The seam between the process registry and the rest of the app.
//!
//! The registry calls an [`ExecEvents`] from inside its actor; the runtime implements it to
//! forward raw output to the Processes panel, and to turn an exit notice into a system event
//! for the owner's session, a heartbeat wake with reason `exec:<id>:exit`, and a native
//! notification. Implementations must return at once: a slow one stalls every process.

use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::{ExitStatus, ProcessInfo};

/// What the registry tells the app. Every method has a no-op default.
pub trait ExecEvents: Send + Sync + 'static {
    /// A process started (for the panel's list).
    fn started(&self, _info: &ProcessInfo) {}

    /// Raw terminal bytes, coalesced to at most one call per process per UI interval
    /// (≈ 60 per second), for a live terminal view.
    fn output(&self, _process_id: &str, _owner: &str, _raw: &[u8]) {}

    /// A process ended (every process, foreground or background); `tail` is the end of its
    /// stripped output.
    fn exited(&self, _process_id: &str, _owner: &str, _exit: &ExitStatus, _tail: &str) {}

    /// A backgrounded process ended: `text` is `Exec completed|failed (<id8>, code N) :: <tail>`,
    /// `Exec timed out (<id8>, after N s) :: <tail>` when its timeout killed it, or `Exec
    /// killed by the user (<id8>, signal SIGTERM) :: <tail>` when the user killed it from the
    /// panel (a kill its owner asked for has no notice: the owner knows).
    /// Called exactly once per such process. The runtime enqueues it as a system event for
    /// `owner`, requests a heartbeat wake with reason `exec:<process_id>:exit`, and raises a
    /// native notification.
    fn exit_notice(&self, _owner: &str, _process_id: &str, _text: &str) {}
}

/// Ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoExecEvents;

impl ExecEvents for NoExecEvents {}

/// One call to [`ExecEvents`], as data.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecEvent {
    Started(ProcessInfo),
    Output {
        process_id: String,
        owner: String,
        raw: Vec<u8>,
    },
    Exited {
        process_id: String,
        owner: String,
        exit: ExitStatus,
        tail: String,
    },
    ExitNotice {
        owner: String,
        process_id: String,
        text: String,
    },
}

/// Sends every call down a channel, for a runtime task (or a test) to consume.
#[derive(Debug, Clone)]
pub struct ChannelExecEvents(pub UnboundedSender<ExecEvent>);

impl ExecEvents for ChannelExecEvents {
    fn started(&self, info: &ProcessInfo) {
        let _ = self.0.send(ExecEvent::Started(info.clone()));
    }

    fn output(&self, process_id: &str, owner: &str, raw: &[u8]) {
        let _ = self.0.send(ExecEvent::Output {
            process_id: process_id.into(),
            owner: owner.into(),
            raw: raw.to_vec(),
        });
    }

    fn exited(&self, process_id: &str, owner: &str, exit: &ExitStatus, tail: &str) {
        let _ = self.0.send(ExecEvent::Exited {
            process_id: process_id.into(),
            owner: owner.into(),
            exit: exit.clone(),
            tail: tail.into(),
        });
    }

    fn exit_notice(&self, owner: &str, process_id: &str, text: &str) {
        let _ = self.0.send(ExecEvent::ExitNotice {
            owner: owner.into(),
            process_id: process_id.into(),
            text: text.into(),
        });
    }
}

/// How the notice of a process the user killed from the panel starts.
pub const KILLED_BY_USER: &str = "Exec killed by the user";

/// `Exec completed (<id8>, code 0) :: <tail>` or `Exec failed (<id8>, signal SIGTERM) :: …`
/// (seed 000 `maybeNotifyOnExit`): completed only for exit code 0; `tail` is already cut to
/// its length and is collapsed to one line here; with no output the ` :: …` part is left out.
/// A command its `timeout` killed reads `Exec timed out (<id8>, after 1800 s) :: …`: the
/// signal it died of says nothing the agent can act on, the limit does (start it again with
/// a longer one, or with `timeout: 0`). One the user killed reads `Exec killed by the user
/// (<id8>, signal SIGTERM) :: …` ("failed" would invite the agent to start it again; the
/// notice is the agent's, so "the user", not "you").
pub fn exit_notice_text(process_id: &str, exit: &ExitStatus, timeout: Option<Duration>, tail: &str) -> String {
    let id8: String = process_id.chars().take(8).collect();
    let head = match timeout.filter(|_| exit.timed_out) {
        _ if exit.killed_by_user => format!("{KILLED_BY_USER} ({id8}, {})", exit.label()),
        Some(t) => format!("Exec timed out ({id8}, after {} s)", t.as_secs_f64()),
        None if exit.success() => format!("Exec completed ({id8}, {})", exit.label()),
        None => format!("Exec failed ({id8}, {})", exit.label()),
    };
    let output = super::output::one_line(tail);
    if output.is_empty() {
        head
    } else {
        format!("{head} :: {output}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_follow_the_seed_shape() {
        let ok = ExitStatus {
            code: Some(0),
            ..ExitStatus::default()
        };
        assert_eq!(
            exit_notice_text("abcdef0123", &ok, None, "All 142 tests passed.\n"),
            "Exec completed (abcdef01, code 0) :: All 142 tests passed."
        );
        let failed = ExitStatus {
            code: Some(2),
            ..ExitStatus::default()
        };
        assert_eq!(
            exit_notice_text("12345678", &failed, Some(Duration::from_secs(1800)), "  \n"),
            "Exec failed (12345678, code 2)"
        );
        let killed = ExitStatus {
            code: None,
            signal: Some("SIGTERM".into()),
            ..ExitStatus::default()
        };
        assert_eq!(
            exit_notice_text("12345678", &killed, Some(Duration::from_secs(1800)), "a\n  b"),
            "Exec failed (12345678, signal SIGTERM) :: a b"
        );
        let timed_out = ExitStatus {
            timed_out: true,
            ..killed
        };
        assert_eq!(
            exit_notice_text("12345678", &timed_out, Some(Duration::from_secs(1800)), "a\n  b"),
            "Exec timed out (12345678, after 1800 s) :: a b"
        );
        assert_eq!(
            exit_notice_text("12345678", &timed_out, Some(Duration::from_millis(500)), ""),
            "Exec timed out (12345678, after 0.5 s)"
        );
        // Killed from the panel: who did it, then how it ended (the seed's label), even when a
        // trap made it exit with a code.
        let by_user = ExitStatus {
            signal: Some("SIGTERM".into()),
            killed_by_user: true,
            ..ExitStatus::default()
        };
        assert_eq!(
            exit_notice_text(
                "12345678",
                &by_user,
                Some(Duration::from_secs(1800)),
                "listening on :8080\n"
            ),
            "Exec killed by the user (12345678, signal SIGTERM) :: listening on :8080"
        );
        let trapped = ExitStatus {
            code: Some(0),
            killed_by_user: true,
            ..ExitStatus::default()
        };
        assert!(!trapped.success());
        assert_eq!(
            exit_notice_text("12345678", &trapped, None, ""),
            "Exec killed by the user (12345678, code 0)"
        );
    }
}
