//! The TypeScript the window imports, generated from these types with ts-rs.
//!
//! Owns: the list of exported types and their order (dependencies first) in
//! `ui/src/lib/protocol.ts`.
//! Must never: be edited by hand downstream: `tests/bindings.rs` fails when the checked-in
//! file drifts; regenerate with `UPDATE_BINDINGS=1 cargo test -p vigil-protocol`.

use ts_rs::TS;

use crate::*;

/// Every type the UI needs, in dependency order, for the generated bindings.
pub fn typescript_bindings() -> String {
    let cfg = ts_rs::Config::default();
    let decls = [
        Op::decl(&cfg),
        Attachment::decl(&cfg),
        Scope::decl(&cfg),
        Source::decl(&cfg),
        EventEnvelope::decl(&cfg),
        Event::decl(&cfg),
        StopReason::decl(&cfg),
        Usage::decl(&cfg),
        ErrorKind::decl(&cfg),
        Role::decl(&cfg),
        Message::decl(&cfg),
        ContentBlock::decl(&cfg),
        MessageKind::decl(&cfg),
        ApprovalDecision::decl(&cfg),
        ApprovalKind::decl(&cfg),
        CommandPart::decl(&cfg),
        ExecRun::decl(&cfg),
        ApprovalPolicy::decl(&cfg),
        ApprovalRule::decl(&cfg),
        SandboxView::decl(&cfg),
        ApprovalsView::decl(&cfg),
        SessionSummary::decl(&cfg),
        ProcessSummary::decl(&cfg),
        SavedMessage::decl(&cfg),
        History::decl(&cfg),
        CommandError::decl(&cfg),
        ProviderKind::decl(&cfg),
        ProviderSettings::decl(&cfg),
        KeyStorage::decl(&cfg),
        SettingsView::decl(&cfg),
        ConnectionVerdict::decl(&cfg),
        WakeReason::decl(&cfg),
        HeartbeatStatus::decl(&cfg),
        HeartbeatSkip::decl(&cfg),
        BackgroundUpdate::decl(&cfg),
        ActiveHours::decl(&cfg),
        HeartbeatSettings::decl(&cfg),
        HeartbeatStats::decl(&cfg),
        HeartbeatView::decl(&cfg),
        ExecutionMode::decl(&cfg),
        WakeMode::decl(&cfg),
        CatchUp::decl(&cfg),
        RoutineState::decl(&cfg),
        RoutineSource::decl(&cfg),
        ParseStatus::decl(&cfg),
        RoutineView::decl(&cfg),
        RoutinesView::decl(&cfg),
        RoutineDraft::decl(&cfg),
        RunOutcome::decl(&cfg),
        RoutineRun::decl(&cfg),
        SchedulePreview::decl(&cfg),
        RoutineSaved::decl(&cfg),
        Trigger::decl(&cfg),
        UrlWhen::decl(&cfg),
        Check::decl(&cfg),
        Action::decl(&cfg),
        WatchStatus::decl(&cfg),
        HeartbeatChecks::decl(&cfg),
        Theme::decl(&cfg),
        NotificationKind::decl(&cfg),
        NotificationKinds::decl(&cfg),
        DesktopSettings::decl(&cfg),
        DesktopSettingsView::decl(&cfg),
        HealthStatus::decl(&cfg),
        LaneHealth::decl(&cfg),
        LockHealth::decl(&cfg),
        HeartbeatHealth::decl(&cfg),
        MailboxHealth::decl(&cfg),
        RoutinesHealth::decl(&cfg),
        ChannelsHealth::decl(&cfg),
        HealthView::decl(&cfg),
        McpTransport::decl(&cfg),
        McpServerState::decl(&cfg),
        McpToolView::decl(&cfg),
        McpServerView::decl(&cfg),
        McpView::decl(&cfg),
        McpField::decl(&cfg),
        McpSecretField::decl(&cfg),
        McpCallCard::decl(&cfg),
        AwaySummary::decl(&cfg),
        AwayLine::decl(&cfg),
        AwayKind::decl(&cfg),
        AwayTarget::decl(&cfg),
        HistoryHit::decl(&cfg),
        SnippetPart::decl(&cfg),
        ChannelWhen::decl(&cfg),
        ChannelKinds::decl(&cfg),
        NtfySettings::decl(&cfg),
        TelegramSettings::decl(&cfg),
        ChannelsSettings::decl(&cfg),
        ChannelName::decl(&cfg),
        ChannelOp::decl(&cfg),
        ChannelStatus::decl(&cfg),
        ChannelView::decl(&cfg),
        PairingView::decl(&cfg),
        ChannelsView::decl(&cfg),
    ];
    let mut out = String::from(
        "// Generated from crates/vigil-protocol by `UPDATE_BINDINGS=1 cargo test -p vigil-protocol`.\n// Do not edit by hand.\n\nexport type JsonValue = number | string | boolean | Array<JsonValue> | { [key in string]?: JsonValue } | null;\n",
    );
    for decl in decls {
        out.push_str("\nexport ");
        out.push_str(&decl);
        out.push('\n');
    }
    out
}
