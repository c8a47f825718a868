//! # preferences
//!
//! Owns reading the desktop app's preferences (the `desktop` entry of `settings.json`:
//! close to tray, start at login, theme) from a file a person may have edited by hand.
//! Each field is read on its own: one with a wrong type or an unknown value falls back to
//! its default with a warning naming it, and the others are kept.
//!
//! Must never: write the settings file (the app's store does), or act on a preference
//! (the desktop shell applies them: login item, window close, theme).

use std::path::Path;

use serde_json::Value;
use vigil_protocol::{DesktopSettings, DesktopSettingsView};

use crate::settings::SETTINGS_FILE;

/// The key under which the desktop preferences sit in the store.
pub const DESKTOP_KEY: &str = "desktop";

/// The `desktop` entry of `<data_dir>/settings.json`; missing (or an unreadable file, which
/// [`crate::settings::load_file`] already reports) means defaults.
pub fn load(data_dir: &Path) -> DesktopSettingsView {
    let text = std::fs::read_to_string(data_dir.join(SETTINGS_FILE)).ok();
    let entry = text
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get(DESKTOP_KEY).cloned());
    from_value(entry.as_ref())
}

/// Reads an entry field by field (see the module docs).
pub fn from_value(entry: Option<&Value>) -> DesktopSettingsView {
    let mut settings = DesktopSettings::default();
    let mut warnings = Vec::new();
    let Some(entry) = entry.filter(|e| !e.is_null()) else {
        return DesktopSettingsView { settings, warnings };
    };
    let Some(fields) = entry.as_object() else {
        warnings.push(format!(
            "The \"{DESKTOP_KEY}\" settings are not an object; defaults are in use."
        ));
        return DesktopSettingsView { settings, warnings };
    };
    let mut field = |name: &str, read: &mut dyn FnMut(&Value) -> bool, expected: &str| {
        if let Some(v) = fields.get(name) {
            if !read(v) {
                warnings.push(format!(
                    "Settings: \"{name}\" should be {expected}, not {v}; the default is in use."
                ));
            }
        }
    };
    field(
        "close_to_tray",
        &mut |v| v.as_bool().map(|b| settings.close_to_tray = b).is_some(),
        "true or false",
    );
    field(
        "start_at_login",
        &mut |v| v.as_bool().map(|b| settings.start_at_login = b).is_some(),
        "true or false",
    );
    field(
        "theme",
        &mut |v| serde_json::from_value(v.clone()).map(|t| settings.theme = t).is_ok(),
        "\"system\", \"light\" or \"dark\"",
    );
    DesktopSettingsView { settings, warnings }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use vigil_protocol::Theme;

    #[test]
    fn missing_means_defaults_without_warnings() {
        assert_eq!(
            from_value(None),
            DesktopSettingsView {
                settings: DesktopSettings::default(),
                warnings: vec![]
            }
        );
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).settings, DesktopSettings::default());
        std::fs::write(dir.path().join(SETTINGS_FILE), "{ not json").unwrap();
        assert_eq!(load(dir.path()).settings, DesktopSettings::default());
    }

    #[test]
    fn stored_values_are_read_back() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(SETTINGS_FILE),
            r#"{"provider": {}, "desktop": {"close_to_tray": false, "start_at_login": true, "theme": "dark"}}"#,
        )
        .unwrap();
        assert_eq!(
            load(dir.path()),
            DesktopSettingsView {
                settings: DesktopSettings {
                    close_to_tray: false,
                    start_at_login: true,
                    theme: Theme::Dark
                },
                warnings: vec![]
            }
        );
    }

    #[test]
    fn a_hand_edited_field_of_the_wrong_type_falls_back_alone_and_is_named() {
        let view = from_value(Some(
            &json!({"close_to_tray": "no", "start_at_login": true, "theme": "purple"}),
        ));
        assert_eq!(
            view.settings,
            DesktopSettings {
                close_to_tray: true,
                start_at_login: true,
                theme: Theme::System
            }
        );
        assert_eq!(view.warnings.len(), 2, "{:?}", view.warnings);
        assert!(view.warnings[0].contains("\"close_to_tray\" should be true or false, not \"no\""));
        assert!(view.warnings[1].contains("\"theme\""));
        let view = from_value(Some(&json!([1, 2])));
        assert_eq!(view.settings, DesktopSettings::default());
        assert!(view.warnings[0].contains("not an object"));
    }
}
