//! # settings::desktop
//!
//! Owns reading the desktop app's preferences (the `desktop` entry of `settings.json`:
//! close to tray, start at login, theme, notification kinds, workspace folder, how long an
//! absence is before the "While you were away" card) from a file
//! a person may have edited by hand, and choosing the workspace folder from them.
//! Each field is read on its own: one with a wrong type or an unknown value falls back to
//! its default with a warning naming it, and the others are kept.
//!
//! Must never: write the settings file (the app's store does), or act on a preference
//! (the desktop shell applies them: login item, window close, theme).

use std::path::{Path, PathBuf};

use serde_json::Value;
use vigil_protocol::{DesktopSettings, DesktopSettingsView};

use super::SETTINGS_FILE;

/// The key under which the desktop preferences sit in the store.
pub const DESKTOP_KEY: &str = "desktop";

/// Bounds of the settings for working alone: a chain of continuations, and how long an
/// unattended approval may wait (10 s to a week).
pub const MAX_CONTINUATION_LIMIT: u32 = 1000;
pub const MIN_APPROVAL_TIMEOUT_SECS: u64 = 10;
pub const MAX_APPROVAL_TIMEOUT_SECS: u64 = 7 * 24 * 3600;
/// How long an absence must last for the "While you were away" card: a minute to a day.
pub const MIN_AWAY_AFTER_MINUTES: u32 = 1;
pub const MAX_AWAY_AFTER_MINUTES: u32 = 24 * 60;

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
        return DesktopSettingsView {
            settings,
            warnings,
            workspace_in_use: String::new(),
            keep_awake_problem: None,
        };
    };
    let Some(fields) = entry.as_object() else {
        warnings.push(format!(
            "The \"{DESKTOP_KEY}\" settings are not an object; defaults are in use."
        ));
        return DesktopSettingsView {
            settings,
            warnings,
            workspace_in_use: String::new(),
            keep_awake_problem: None,
        };
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
    field(
        "continuation_limit",
        &mut |v| {
            v.as_u64()
                .filter(|n| *n <= MAX_CONTINUATION_LIMIT as u64)
                .map(|n| settings.continuation_limit = n as u32)
                .is_some()
        },
        "a whole number from 0 (never continue on its own) to 1000",
    );
    field(
        "approval_timeout_secs",
        &mut |v| {
            v.as_u64()
                .filter(|n| (MIN_APPROVAL_TIMEOUT_SECS..=MAX_APPROVAL_TIMEOUT_SECS).contains(n))
                .map(|n| settings.approval_timeout_secs = n)
                .is_some()
        },
        "a number of seconds from 10 to 604800 (a week)",
    );
    field(
        "keep_awake",
        &mut |v| v.as_bool().map(|b| settings.keep_awake = b).is_some(),
        "true or false",
    );
    field(
        "search_skips_heartbeats",
        &mut |v| v.as_bool().map(|b| settings.search_skips_heartbeats = b).is_some(),
        "true or false",
    );
    field(
        "webhook_bind",
        &mut |v| {
            v.as_str()
                .filter(|a| a.parse::<std::net::IpAddr>().is_ok())
                .map(|a| settings.webhook_bind = Some(a.to_string()))
                .is_some()
        },
        "an IP address of this machine, such as 0.0.0.0 or 192.168.1.20",
    );
    field(
        "away_after_minutes",
        &mut |v| {
            v.as_u64()
                .filter(|n| (MIN_AWAY_AFTER_MINUTES as u64..=MAX_AWAY_AFTER_MINUTES as u64).contains(n))
                .map(|n| settings.away_after_minutes = n as u32)
                .is_some()
        },
        "a number of minutes from 1 to 1440 (a day)",
    );
    if let Some(kinds) = fields.get("notifications") {
        match kinds.as_object() {
            Some(kinds) => {
                let n = &mut settings.notifications;
                for (name, slot) in [
                    ("processes", &mut n.processes),
                    ("routines", &mut n.routines),
                    ("heartbeat", &mut n.heartbeat),
                    ("approvals", &mut n.approvals),
                ] {
                    match kinds.get(name) {
                        None => {}
                        Some(Value::Bool(b)) => *slot = *b,
                        Some(v) => warnings.push(format!(
                            "Settings: \"notifications.{name}\" should be true or false, not {v}; it is on."
                        )),
                    }
                }
            }
            None => warnings.push(format!(
                "Settings: \"notifications\" should be an object of switches, not {kinds}; all notifications are on."
            )),
        }
    }
    match fields.get("workspace") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if !s.trim().is_empty() => settings.workspace = Some(s.clone()),
        Some(v) => warnings.push(format!(
            "Settings: \"workspace\" should be a folder path, not {v}; the default workspace is in use."
        )),
    }
    DesktopSettingsView {
        settings,
        warnings,
        workspace_in_use: String::new(),
        keep_awake_problem: None,
    }
}

/// Why a path cannot be the workspace folder.
enum Unusable {
    Relative,
    NotAFolder,
    Missing,
    Unreadable(std::io::Error),
    /// The data folder itself, a folder that contains it, or one inside it (other than the
    /// default workspace): the agent's files would include Vigil's own.
    HoldsData,
}

/// Whether `folder` as the workspace would put Vigil's data folder in the agent's reach.
fn holds_data(folder: &Path, data_dir: &Path) -> bool {
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let (folder, data) = (real(folder), real(data_dir));
    data.starts_with(&folder) || (folder.starts_with(&data) && !folder.starts_with(data.join("workspace")))
}

/// The workspace rule: a full path to a folder that exists. Saving refuses a path that
/// breaks it; starting falls back to the default instead (see [`workspace_dir`]).
fn usable_folder(path: &Path, data_dir: &Path) -> Result<(), Unusable> {
    if !path.is_absolute() {
        return Err(Unusable::Relative);
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() && holds_data(path, data_dir) => Err(Unusable::HoldsData),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Unusable::NotAFolder),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Unusable::Missing),
        Err(e) => Err(Unusable::Unreadable(e)),
    }
}

/// Checks a workspace folder the user typed: empty means the default; otherwise a full
/// path to a folder that exists and does not hold Vigil's data folder `data_dir`. Returns
/// the value to store, or why not.
pub fn validate_workspace(typed: Option<&str>, data_dir: &Path) -> Result<Option<String>, String> {
    let Some(typed) = typed.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    usable_folder(Path::new(typed), data_dir).map_err(|why| match why {
        Unusable::Relative => format!("\"{typed}\" is not a full path; write it from the root, like /home/you/notes"),
        Unusable::NotAFolder => format!("{typed} is a file, not a folder"),
        Unusable::Missing => format!("there is no folder {typed}; create it first"),
        Unusable::Unreadable(e) => format!("{typed} cannot be opened: {e}"),
        Unusable::HoldsData => format!(
            "{typed} holds Vigil's own data folder ({}), which the agent must not reach; choose a folder outside it",
            data_dir.display()
        ),
    })?;
    Ok(Some(typed.to_string()))
}

/// The workspace folder to open: the one the preferences name when it is there, else the
/// default `<data_dir>/workspace`. A named folder that is missing (an unplugged drive, a
/// renamed folder) is not created, so nothing lands in the wrong place: the default is used
/// until it is back, with a warning that says so; the preference is kept.
pub fn workspace_dir(data_dir: &Path, settings: &DesktopSettings) -> (PathBuf, Option<String>) {
    let default = data_dir.join("workspace");
    let Some(chosen) = settings.workspace.as_deref().map(PathBuf::from) else {
        return (default, None);
    };
    let warning = match usable_folder(&chosen, data_dir) {
        Ok(()) => return (chosen, None),
        Err(Unusable::Relative) => format!(
            "The workspace folder \"{}\" is not an absolute path; using {} instead. Choose a full path in Settings → Desktop.",
            chosen.display(),
            default.display()
        ),
        Err(Unusable::HoldsData) => format!(
            "The workspace folder {} holds Vigil's own data folder, which the agent must not reach; using {} instead. Choose another folder in Settings → Desktop.",
            chosen.display(),
            default.display()
        ),
        Err(_) => format!(
            "The workspace folder {} is missing; using {} until it is back. Your files and routines there are untouched. Choose another folder in Settings → Desktop.",
            chosen.display(),
            default.display()
        ),
    };
    (default, Some(warning))
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
                warnings: vec![],
                workspace_in_use: String::new(),
                keep_awake_problem: None,
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
                    theme: Theme::Dark,
                    ..Default::default()
                },
                warnings: vec![],
                workspace_in_use: String::new(),
                keep_awake_problem: None,
            }
        );
    }

    #[test]
    fn webhooks_stay_on_loopback_unless_the_entry_names_an_ip_address() {
        assert_eq!(from_value(Some(&json!({}))).settings.webhook_bind, None);
        let set = from_value(Some(&json!({"webhook_bind": "0.0.0.0"})));
        assert_eq!(set.settings.webhook_bind.as_deref(), Some("0.0.0.0"));
        let bad = from_value(Some(&json!({"webhook_bind": "everywhere"})));
        assert_eq!(
            bad.settings.webhook_bind, None,
            "a hand edit that is no address binds nothing new"
        );
        assert!(bad.warnings[0].contains("\"webhook_bind\""), "{:?}", bad.warnings);
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
                theme: Theme::System,
                ..Default::default()
            }
        );
        assert_eq!(view.warnings.len(), 2, "{:?}", view.warnings);
        assert!(view.warnings[0].contains("\"close_to_tray\" should be true or false, not \"no\""));
        assert!(view.warnings[1].contains("\"theme\""));
        let view = from_value(Some(&json!([1, 2])));
        assert_eq!(view.settings, DesktopSettings::default());
        assert!(view.warnings[0].contains("not an object"));
    }

    #[test]
    fn the_settings_for_working_alone_are_read_and_bounded() {
        let view = from_value(Some(
            &json!({"continuation_limit": 3, "approval_timeout_secs": 600, "keep_awake": false}),
        ));
        assert_eq!(
            (
                view.settings.continuation_limit,
                view.settings.approval_timeout_secs,
                view.settings.keep_awake
            ),
            (3, 600, false)
        );
        assert!(view.warnings.is_empty(), "{:?}", view.warnings);
        let view = from_value(Some(
            &json!({"continuation_limit": -1, "approval_timeout_secs": 1, "keep_awake": "yes"}),
        ));
        assert_eq!(view.settings, DesktopSettings::default());
        assert_eq!(view.warnings.len(), 3, "{:?}", view.warnings);
        assert!(view.warnings[1].contains("from 10 to 604800"), "{:?}", view.warnings);
    }

    #[test]
    fn the_absence_before_the_while_away_card_is_read_and_bounded() {
        assert_eq!(
            from_value(Some(&json!({"away_after_minutes": 5})))
                .settings
                .away_after_minutes,
            5
        );
        for bad in [json!(0), json!(1441), json!("an hour")] {
            let view = from_value(Some(&json!({ "away_after_minutes": bad })));
            assert_eq!(view.settings.away_after_minutes, 60, "{bad}");
            assert!(view.warnings[0].contains("from 1 to 1440"), "{:?}", view.warnings);
        }
    }

    #[test]
    fn notification_switches_and_workspace_are_read_field_by_field() {
        let view = from_value(Some(&json!({
            "notifications": {"processes": false, "routines": "off", "heartbeat": true},
            "workspace": "/srv/notes"
        })));
        let n = view.settings.notifications;
        assert!(!n.processes && n.routines && n.heartbeat && n.approvals, "{n:?}");
        assert_eq!(view.settings.workspace.as_deref(), Some("/srv/notes"));
        assert_eq!(view.warnings.len(), 1, "{:?}", view.warnings);
        assert!(view.warnings[0].contains("\"notifications.routines\" should be true or false"));
        let view = from_value(Some(&json!({"notifications": 3, "workspace": 7})));
        assert_eq!(view.settings, DesktopSettings::default());
        assert_eq!(view.warnings.len(), 2, "{:?}", view.warnings);
    }

    #[test]
    fn a_missing_workspace_folder_falls_back_to_the_default_without_creating_it() {
        let data = tempfile::tempdir().unwrap();
        let mine = tempfile::tempdir().unwrap();
        let mut settings = DesktopSettings::default();
        assert_eq!(
            workspace_dir(data.path(), &settings),
            (data.path().join("workspace"), None)
        );
        settings.workspace = Some(mine.path().display().to_string());
        assert_eq!(workspace_dir(data.path(), &settings), (mine.path().to_path_buf(), None));
        let gone = mine.path().join("unplugged");
        settings.workspace = Some(gone.display().to_string());
        let (dir, warning) = workspace_dir(data.path(), &settings);
        assert_eq!(dir, data.path().join("workspace"));
        let warning = warning.unwrap();
        assert!(
            warning.contains("is missing") && warning.contains("unplugged"),
            "{warning}"
        );
        assert!(!gone.exists(), "a missing folder is not created");
        settings.workspace = Some("notes".into());
        assert!(workspace_dir(data.path(), &settings)
            .1
            .unwrap()
            .contains("not an absolute path"));
    }

    #[test]
    fn a_typed_workspace_must_be_a_full_path_to_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let validate = |typed: Option<&str>| validate_workspace(typed, data.path());
        let here = dir.path().display().to_string();
        assert_eq!(validate(None), Ok(None));
        assert_eq!(validate(Some("  ")), Ok(None));
        assert_eq!(validate(Some(&format!(" {here} "))), Ok(Some(here.clone())));
        assert!(validate(Some("notes")).unwrap_err().contains("not a full path"));
        let missing = format!("{here}/nope");
        assert!(validate(Some(&missing)).unwrap_err().contains("there is no folder"));
        let file = dir.path().join("f.txt");
        std::fs::write(&file, "x").unwrap();
        assert!(validate(Some(&file.display().to_string()))
            .unwrap_err()
            .contains("not a folder"));
    }

    #[test]
    fn the_workspace_cannot_hold_the_data_folder() {
        let home = tempfile::tempdir().unwrap();
        let data = home.path().join(".local/share/vigil");
        std::fs::create_dir_all(data.join("workspace/project")).unwrap();
        std::fs::create_dir_all(data.join("sessions")).unwrap();
        std::os::unix::fs::symlink(&data, home.path().join("data-link")).unwrap();
        let at = |p: &std::path::Path| p.display().to_string();
        for refused in [
            at(home.path()),
            at(&home.path().join(".local")),
            at(&data),
            at(&data.join("sessions")),
            at(&home.path().join("data-link")),
            format!("{}/.local/../.local/share", at(home.path())),
        ] {
            let err = validate_workspace(Some(&refused), &data).unwrap_err();
            assert!(err.contains("holds Vigil's own data folder"), "{refused}: {err}");
        }
        for allowed in [data.join("workspace"), data.join("workspace/project")] {
            assert!(validate_workspace(Some(&at(&allowed)), &data).is_ok(), "{allowed:?}");
        }
        // A stored one from before the rule: the default is used, with a warning.
        let settings = DesktopSettings {
            workspace: Some(at(home.path())),
            ..DesktopSettings::default()
        };
        let (used, warning) = workspace_dir(&data, &settings);
        assert_eq!(used, data.join("workspace"));
        assert!(warning.unwrap().contains("holds Vigil's own data folder"));
    }
}
