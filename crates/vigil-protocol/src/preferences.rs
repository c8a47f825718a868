//! The desktop app's own preferences: what happens when the window closes, whether Vigil
//! starts at login, the colour theme, which kinds of notification to raise, and the
//! workspace folder. Kept in the `desktop` entry of `settings.json`.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// The colour theme. `system` follows the OS (`prefers-color-scheme`) and changes with it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
pub enum Theme {
    #[default]
    System,
    Light,
    Dark,
}

/// The `desktop` entry of the settings store; a missing field is its default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct DesktopSettings {
    /// Closing the window hides it to the tray and background work goes on; off, closing
    /// the window quits (asking first when processes run).
    pub close_to_tray: bool,
    /// Start Vigil (hidden, in the tray) when the user logs in.
    pub start_at_login: bool,
    pub theme: Theme,
    /// Which kinds of native notification to raise (the cards in the chat are kept either way).
    pub notifications: NotificationKinds,
    /// The agent's workspace folder (its files, `HEARTBEAT.md`, the routines); `None` is
    /// `<data dir>/workspace`. Read when Vigil starts.
    pub workspace: Option<String>,
    /// How many turns in a row a conversation may run on its own (a background command it
    /// started ended) without a message from the user; `0`: never.
    pub continuation_limit: u32,
    /// How long an unattended run (a continuation, a routine, a woken heartbeat) waits for an
    /// approval before it is denied, in seconds.
    #[ts(type = "number")]
    pub approval_timeout_secs: u64,
    /// Keep the computer from sleeping while a turn, a routine or a background command runs.
    pub keep_awake: bool,
    /// After an absence at least this long (idle or locked, by the desktop session), the
    /// window shows what happened meanwhile in one "While you were away" card.
    pub away_after_minutes: u32,
    /// Keep heartbeat runs out of the agent's `search_history` (the user's search still
    /// finds them).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[ts(as = "Option<bool>", optional)]
    pub search_skips_heartbeats: bool,
    /// The address webhook routines are called on beyond loopback (`0.0.0.0`: every
    /// interface; one of this machine's addresses: that one). Absent: loopback only, the
    /// default. Anyone who can reach that address can try the routines' secret URLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub webhook_bind: Option<String>,
}

/// Continuations in a row without a user message (issue: bounded autonomy).
pub const DEFAULT_CONTINUATION_LIMIT: u32 = 10;
/// One hour for an unattended approval.
pub const DEFAULT_APPROVAL_TIMEOUT_SECS: u64 = 3600;
/// An hour away before the "While you were away" card.
pub const DEFAULT_AWAY_AFTER_MINUTES: u32 = 60;

impl Default for DesktopSettings {
    fn default() -> Self {
        Self {
            close_to_tray: true,
            start_at_login: false,
            theme: Theme::System,
            notifications: NotificationKinds::default(),
            workspace: None,
            continuation_limit: DEFAULT_CONTINUATION_LIMIT,
            approval_timeout_secs: DEFAULT_APPROVAL_TIMEOUT_SECS,
            keep_awake: true,
            away_after_minutes: DEFAULT_AWAY_AFTER_MINUTES,
            search_skips_heartbeats: false,
            webhook_bind: None,
        }
    }
}

/// What a native notification is about; each kind can be turned off in Settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "snake_case")]
pub enum NotificationKind {
    /// A background command finished or failed.
    Process,
    /// A routine's result (a run its schedule or the user started).
    Routine,
    /// A monitor fired: the result of a routine a watch trigger ran (a file changed, a
    /// process printed a line, a URL changed, a webhook was called).
    Monitor,
    /// Something the heartbeat found.
    Heartbeat,
    /// A background run wanted an approval nobody could give.
    Approval,
    /// Background work spent the day's token budget: always shown.
    Budget,
    /// Asked for by the user (the Settings test) or the system: always shown.
    Other,
}

/// The notification switches; all on by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(default)]
pub struct NotificationKinds {
    pub processes: bool,
    pub routines: bool,
    /// A monitor fired ([`NotificationKind::Monitor`]); absent in settings saved before it
    /// existed: on, like the rest.
    pub monitors: bool,
    pub heartbeat: bool,
    pub approvals: bool,
}

impl Default for NotificationKinds {
    fn default() -> Self {
        Self {
            processes: true,
            routines: true,
            monitors: true,
            heartbeat: true,
            approvals: true,
        }
    }
}

impl NotificationKinds {
    /// Whether a notification of `kind` is raised.
    pub fn allows(&self, kind: NotificationKind) -> bool {
        match kind {
            NotificationKind::Process => self.processes,
            NotificationKind::Routine => self.routines,
            NotificationKind::Monitor => self.monitors,
            NotificationKind::Heartbeat => self.heartbeat,
            NotificationKind::Approval => self.approvals,
            NotificationKind::Budget | NotificationKind::Other => true,
        }
    }
}

/// The preferences as in force, and what was wrong with the stored ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct DesktopSettingsView {
    pub settings: DesktopSettings,
    /// A hand-edited entry with a wrong type, a login item that could not be written…
    pub warnings: Vec<String>,
    /// The workspace folder this run uses (the chosen one applies from the next start; a
    /// missing one falls back to the default). Empty where no runtime answers.
    #[serde(default)]
    pub workspace_in_use: String,
    /// Why the computer cannot be kept awake while Vigil works (no systemd-logind on the
    /// system bus…); absent when it can, or when keeping awake is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub keep_awake_problem: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_wire_names() {
        assert_eq!(
            serde_json::to_value(DesktopSettings::default()).unwrap(),
            json!({
                "close_to_tray": true, "start_at_login": false, "theme": "system",
                "notifications": {"processes": true, "routines": true, "monitors": true, "heartbeat": true, "approvals": true},
                "workspace": null, "continuation_limit": 10, "approval_timeout_secs": 3600, "keep_awake": true,
                "away_after_minutes": 60
            })
        );
        assert!(NotificationKinds::default().allows(NotificationKind::Routine));
        let quiet = NotificationKinds {
            routines: false,
            ..Default::default()
        };
        assert!(!quiet.allows(NotificationKind::Routine) && quiet.allows(NotificationKind::Other));
        assert!(quiet.allows(NotificationKind::Monitor), "a monitor's switch is its own");
        // Settings saved before monitors had a switch: on, like the others.
        let old: NotificationKinds = serde_json::from_value(json!({"routines": false})).unwrap();
        assert!(old.monitors && !old.routines);
        assert!(serde_json::from_value::<Theme>(json!("purple")).is_err());
    }
}
