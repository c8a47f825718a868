//! # vigil-protocol
//!
//! The wire types every Vigil front end speaks: [`Op`]s go in, [`EventEnvelope`]s come out.
//! The Tauri shell carries them over IPC, `vigil-headless` over JSON lines on stdin/stdout;
//! both use exactly these serde shapes, so a script written against one works with the other.
//!
//! ## Layout
//!
//! - [`Op`] (`op.rs`) — commands into the runtime, tagged by `"type"` (`user_message`, …).
//! - [`EventEnvelope`] / [`Event`] (`event.rs`) — one envelope for every event (`id`, `ts`,
//!   `session_id`, `scope`, `source`, `run_id`) with the tagged payload flattened into it.
//! - [`Message`] / [`ContentBlock`] (`transcript.rs`) — the transcript: what is stored on disk
//!   and shown as history.
//! - `approval.rs` — an approval card's kind, parts and the user's [`ApprovalDecision`].
//! - [`Usage`] (`usage.rs`), [`ErrorKind`] / [`CommandError`] (`error.rs`), the sidebar's and
//!   the Processes panel's [`SessionSummary`] / [`ProcessSummary`] (`views.rs`).
//! - [`typescript_bindings`] (`typescript.rs`) — the generated TypeScript, in order.
//! - [`settings`] — provider settings and the views the settings pane shows.
//! - [`heartbeat`] — wake reasons, heartbeat statuses and settings, the background-update card.
//! - [`routines`] — the routine list, drafts, run history and schedule previews.
//! - [`away`] — the "While you were away" card: what ran, failed, waits and was missed.
//! - [`health`] — the health check: what runs now, lock waits, mailbox and delivery counters.
//! - [`preferences`] — the desktop app's own preferences (close to tray, start at login, theme).
//! - [`mcp`] — MCP servers as Settings → Tools shows them, and an MCP call's approval card.
//! - [`images`] — images sent with a message: the attachment op field and the limits.
//! - [`triggers`] — a routine's trigger, check and action, and its watch status.
//! - [`triggers`] — a routine's trigger, check and action, and its watch status.
//!
//! Rules: plain string ids, integer millisecond `ts`/`*_at` timestamps, no logic. TypeScript
//! types are generated from these with ts-rs into `ui/src/lib/protocol.ts`; the test in
//! `tests/bindings.rs` fails when the checked-in file drifts from the Rust types.

pub mod away;
pub mod channels;
pub mod health;
pub mod heartbeat;
pub mod history;
pub mod images;
pub mod mcp;
pub mod preferences;
pub mod routines;
pub mod settings;
pub mod triggers;

mod approval;
mod error;
mod event;
mod op;
mod transcript;
mod typescript;
mod usage;
mod views;

pub use approval::{ApprovalDecision, ApprovalKind, CommandPart, ExecRun};
pub use away::{AwayKind, AwayLine, AwaySummary, AwayTarget};
pub use channels::{
    ChannelKinds, ChannelName, ChannelOp, ChannelStatus, ChannelView, ChannelWhen, ChannelsSettings, ChannelsView,
    NtfySettings, PairingView, TelegramSettings,
};
pub use error::{CommandError, ErrorKind};
pub use event::{Event, EventEnvelope, Scope, Source, StopReason};
pub use health::{
    ChannelsHealth, HealthStatus, HealthView, HeartbeatHealth, LaneHealth, LockHealth, MailboxHealth, RoutinesHealth,
};
pub use heartbeat::{
    ActiveHours, BackgroundUpdate, HeartbeatSettings, HeartbeatSkip, HeartbeatStats, HeartbeatStatus, HeartbeatView,
    WakeReason,
};
pub use history::{HistoryHit, SnippetPart};
pub use images::{image_extension, Attachment, IMAGE_MIME_TYPES, MAX_ATTACHMENT_BYTES, MAX_IMAGE_SIDE};
pub use mcp::{
    McpCallCard, McpField, McpSecretField, McpServerState, McpServerView, McpToolView, McpTransport, McpView,
    DEFAULT_MCP_CALL_TIMEOUT_SECS,
};
pub use op::Op;
pub use preferences::{
    DesktopSettings, DesktopSettingsView, NotificationKind, NotificationKinds, Theme, DEFAULT_APPROVAL_TIMEOUT_SECS,
    DEFAULT_AWAY_AFTER_MINUTES, DEFAULT_CONTINUATION_LIMIT,
};
pub use routines::{
    CatchUp, ExecutionMode, HeartbeatChecks, ParseStatus, RoutineDraft, RoutineRun, RoutineSaved, RoutineSource,
    RoutineState, RoutineView, RoutinesView, RunOutcome, SchedulePreview, WakeMode,
};
pub use settings::{
    ApprovalPolicy, ApprovalRule, ApprovalsView, ConnectionVerdict, KeyStorage, ProviderKind, ProviderSettings,
    SandboxView, SettingsView, DEFAULT_MAX_TOKENS,
};
pub use transcript::{ContentBlock, History, Message, MessageKind, Role, SavedMessage};
pub use triggers::{Action, Check, Trigger, UrlWhen, WatchStatus};
pub use typescript::typescript_bindings;
pub use usage::Usage;
pub use views::{ProcessSummary, SessionSummary};

#[cfg(test)]
mod envelope_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headless_names_are_stable() {
        let op: Op = serde_json::from_value(json!({"type": "user_message", "text": "hi"})).unwrap();
        assert_eq!(
            op,
            Op::UserMessage {
                text: "hi".into(),
                session_id: None,
                attachments: vec![],
            }
        );
        let env = EventEnvelope {
            id: "e1".into(),
            ts: 5,
            session_id: Some("s".into()),
            scope: Scope::Primary,
            source: Source::Provider,
            run_id: Some("r".into()),
            event: Event::TextDelta { text: "x".into() },
        };
        assert_eq!(
            serde_json::to_value(&env).unwrap(),
            json!({"id":"e1","ts":5,"session_id":"s","scope":"primary","source":"provider","run_id":"r","type":"text_delta","text":"x"})
        );
        let back: EventEnvelope = serde_json::from_value(serde_json::to_value(&env).unwrap()).unwrap();
        assert_eq!(back, env);
    }

    #[test]
    fn wake_ops_and_heartbeat_events_have_their_headless_shapes() {
        let op: Op = serde_json::from_value(json!({"type": "wake", "reason": "manual"})).unwrap();
        assert_eq!(
            op,
            Op::Wake {
                reason: WakeReason::Manual
            }
        );
        let op: Op = serde_json::from_value(json!({"type": "wake"})).unwrap();
        assert_eq!(
            op,
            Op::Wake {
                reason: WakeReason::Manual
            }
        );
        let op: Op = serde_json::from_value(json!({"type": "wake", "reason": "exec-event"})).unwrap();
        assert_eq!(
            op,
            Op::Wake {
                reason: WakeReason::ExecEvent
            }
        );
        let event = Event::Heartbeat {
            reason: WakeReason::Interval,
            status: HeartbeatStatus::Skipped,
            skip_reason: Some(HeartbeatSkip::RequestsInFlight),
            detail: None,
            retrying: false,
            usage: None,
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type":"heartbeat","reason":"interval","status":"skipped","skip_reason":"requests-in-flight"})
        );
        let ok = Event::Heartbeat {
            reason: WakeReason::Retry,
            status: HeartbeatStatus::OkToken,
            skip_reason: None,
            detail: None,
            retrying: false,
            usage: None,
        };
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"type":"heartbeat","reason":"retry","status":"ok-token"})
        );
    }
}
