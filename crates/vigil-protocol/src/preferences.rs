//! The desktop app's own preferences: what happens when the window closes, whether Vigil
//! starts at login, and the colour theme. Kept in the `desktop` entry of `settings.json`.

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

/// The `desktop` entry of the settings store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct DesktopSettings {
    /// Closing the window hides it to the tray and background work goes on; off, closing
    /// the window quits (asking first when processes run).
    pub close_to_tray: bool,
    /// Start Vigil (hidden, in the tray) when the user logs in.
    pub start_at_login: bool,
    pub theme: Theme,
}

impl Default for DesktopSettings {
    fn default() -> Self {
        Self {
            close_to_tray: true,
            start_at_login: false,
            theme: Theme::System,
        }
    }
}

/// The preferences as in force, and what was wrong with the stored ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct DesktopSettingsView {
    pub settings: DesktopSettings,
    /// A hand-edited entry with a wrong type, a login item that could not be written…
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_and_wire_names() {
        assert_eq!(
            serde_json::to_value(DesktopSettings::default()).unwrap(),
            json!({"close_to_tray": true, "start_at_login": false, "theme": "system"})
        );
        let s: DesktopSettings =
            serde_json::from_value(json!({"close_to_tray": false, "start_at_login": true, "theme": "dark"})).unwrap();
        assert_eq!(s.theme, Theme::Dark);
        assert!(serde_json::from_value::<Theme>(json!("purple")).is_err());
    }
}
