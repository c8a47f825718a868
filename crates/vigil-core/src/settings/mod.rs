//! # settings
//!
//! Owns reading `settings.json`, the one settings file (the desktop app writes it through
//! tauri-plugin-store): its `provider` entry plus `VIGIL_*` environment overrides plus the
//! key from [`crate::secrets`] become a [`ProviderConfig`] and the view the settings pane
//! shows; its `desktop` entry is read field by field in [`desktop`]. A settings file that
//! cannot be read is moved aside, never overwritten, and the user is told where it went.
//!
//! Must never: write the settings file (the app's store does), or put a key in it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use vigil_protocol::{DesktopSettings, HeartbeatSettings, ProviderKind, ProviderSettings, SettingsView};

use crate::provider::ProviderConfig;
use crate::secrets::Secrets;

pub mod desktop;

/// The store file, relative to the data directory; the app's store plugin uses the same one.
pub const SETTINGS_FILE: &str = "settings.json";
/// The key under which provider settings sit in the store.
pub const PROVIDER_KEY: &str = "provider";
/// The key under which heartbeat settings sit in the store.
pub const HEARTBEAT_KEY: &str = "heartbeat";

/// What Vigil reads from a store file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StoreFile {
    pub provider: Option<ProviderSettings>,
    pub heartbeat: Option<HeartbeatSettings>,
}

/// Reads a settings file named on the command line (`vigil-headless --config FILE`), in
/// the store's schema. It is the user's file: never moved or written. Every problem is a
/// warning and the affected entry falls back to defaults.
pub fn read_config_file(path: &Path) -> (StoreFile, Vec<String>) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            return (
                StoreFile::default(),
                vec![format!("Could not read {}: {e}", path.display())],
            )
        }
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => {
            let (file, provider_error, heartbeat_warnings) = store_entries(&v, path);
            let mut warnings: Vec<String> = provider_error
                .map(|e| {
                    format!(
                        "The provider settings in {} are invalid ({e}); defaults are in use.",
                        path.display()
                    )
                })
                .into_iter()
                .collect();
            warnings.extend(heartbeat_warnings);
            (file, warnings)
        }
        Err(e) => (
            StoreFile::default(),
            vec![format!("{} is not JSON ({e}); defaults are in use.", path.display())],
        ),
    }
}

/// The entries of a store file: the provider entry's parse error apart (a `--config` file
/// reports it, the data folder's file is set aside for it), then the heartbeat entry's
/// problems (the app reports them in a different place).
fn store_entries(v: &serde_json::Value, path: &Path) -> (StoreFile, Option<String>, Vec<String>) {
    let entry = |key: &str| v.get(key).filter(|e| !e.is_null()).cloned();
    let (provider, provider_error) = match entry(PROVIDER_KEY).map(serde_json::from_value::<ProviderSettings>) {
        None => (None, None),
        Some(Ok(p)) => (Some(p), None),
        Some(Err(e)) => (None, Some(e.to_string())),
    };
    let mut heartbeat_warnings = Vec::new();
    let heartbeat = entry(HEARTBEAT_KEY).and_then(|h| match serde_json::from_value::<HeartbeatSettings>(h) {
        Ok(h) => Some(h),
        Err(e) => {
            heartbeat_warnings.push(format!(
                "The heartbeat settings in {} are invalid ({e}); the heartbeat uses its defaults.",
                path.display()
            ));
            None
        }
    });
    (StoreFile { provider, heartbeat }, provider_error, heartbeat_warnings)
}

/// Checks settings a user typed; the message names the field.
pub fn validate(p: &ProviderSettings) -> Result<(), String> {
    let url = reqwest::Url::parse(p.base_url.trim()).map_err(|_| {
        format!(
            "Base URL \"{}\" is not a URL (example: {}).",
            p.base_url,
            p.kind.default_base_url()
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "Base URL must start with http:// or https://, not {}://.",
            url.scheme()
        ));
    }
    if p.model.trim().is_empty() {
        return Err("Model must not be empty.".into());
    }
    if p.max_tokens == 0 {
        return Err("Max tokens must be at least 1.".into());
    }
    Ok(())
}

/// Everything a start reads from `<data_dir>/settings.json`, from one read of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AtStart {
    pub file: StoreFile,
    /// The desktop app's preferences, of which the runtime uses the workspace folder.
    pub desktop: DesktopSettings,
    /// Problems with the file or its provider entry.
    pub warnings: Vec<String>,
    /// Problems with the heartbeat entry (the app shows them with the heartbeat).
    pub heartbeat_warnings: Vec<String>,
    /// Problems with the desktop entry (shown in the settings pane's Desktop part).
    pub desktop_warnings: Vec<String>,
}

/// Reads the store file as Vigil starts. A missing file means defaults. One that is not JSON,
/// or whose provider entry is invalid, is renamed to `settings.json.broken-<ms>` so nothing
/// is lost and a later save cannot overwrite it, with a warning, and everything starts from
/// defaults. A bad heartbeat or desktop entry only falls back itself, with its warnings.
pub fn load_at_start(data_dir: &Path, now_ms: i64) -> AtStart {
    let path = data_dir.join(SETTINGS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return AtStart::default(),
        Err(e) => {
            return AtStart {
                warnings: vec![format!("Could not read {}: {e}", path.display())],
                ..AtStart::default()
            }
        }
    };
    let read = serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| e.to_string())
        .and_then(|v| match store_entries(&v, &path) {
            (file, None, heartbeat_warnings) => Ok((v, file, heartbeat_warnings)),
            (_, Some(e), _) => Err(e),
        });
    match read {
        Ok((v, file, heartbeat_warnings)) => {
            let desktop = desktop::from_value(v.get(desktop::DESKTOP_KEY));
            AtStart {
                file,
                desktop: desktop.settings,
                warnings: vec![],
                heartbeat_warnings,
                desktop_warnings: desktop.warnings,
            }
        }
        Err(e) => {
            let aside = set_aside(&path, now_ms);
            AtStart {
                warnings: vec![format!(
                    "The settings file {} could not be read ({e}). It was kept as {} and defaults are in use.",
                    path.display(),
                    aside.display()
                )],
                ..AtStart::default()
            }
        }
    }
}

/// Moves an unreadable settings file out of the way so a save cannot overwrite it.
pub fn set_aside(path: &Path, now_ms: i64) -> PathBuf {
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".broken-{now_ms}"));
    let aside = PathBuf::from(aside);
    if let Err(e) = std::fs::rename(path, &aside) {
        tracing::error!("could not move {} aside: {e}", path.display());
    }
    aside
}

/// Settings with environment overrides applied, ready to make a client.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub config: ProviderConfig,
    pub view: SettingsView,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Applies `VIGIL_PROVIDER`, `VIGIL_BASE_URL`, `VIGIL_MODEL` (and the key variables through
/// [`Secrets`]) on top of the stored settings. `warnings` are carried into the view.
pub fn resolve(stored: Option<ProviderSettings>, secrets: &Secrets, mut warnings: Vec<String>) -> Resolved {
    let mut provider = stored.unwrap_or_default();
    let mut overrides = Vec::new();
    if let Some(kind) = env("VIGIL_PROVIDER") {
        match kind.trim().to_lowercase().as_str() {
            "anthropic" => provider.kind = ProviderKind::Anthropic,
            "openai" | "openai-compatible" => provider.kind = ProviderKind::Openai,
            other => warnings.push(format!(
                "VIGIL_PROVIDER=\"{other}\" is not anthropic or openai; ignored."
            )),
        }
        overrides.push("kind".to_string());
        // A kind switched by the environment starts from that kind's defaults.
        if env("VIGIL_BASE_URL").is_none() {
            provider.base_url = provider.kind.default_base_url().into();
        }
        if env("VIGIL_MODEL").is_none() {
            provider.model = provider.kind.default_model().into();
        }
    }
    if let Some(url) = env("VIGIL_BASE_URL") {
        provider.base_url = url;
        overrides.push("base_url".to_string());
    }
    if let Some(model) = env("VIGIL_MODEL") {
        provider.model = model;
        overrides.push("model".to_string());
    }
    let found = secrets.get(provider.kind);
    warnings.extend(found.warning.clone());
    let mut config = ProviderConfig::new(provider.kind, provider.base_url.trim(), provider.model.trim());
    config.max_tokens = provider.max_tokens;
    config.api_key = found.key.clone();
    if let Some(ms) = env("VIGIL_IDLE_TIMEOUT_MS").and_then(|v| v.parse().ok()) {
        config.idle_timeout = Duration::from_millis(ms);
    }
    Resolved {
        view: SettingsView {
            provider,
            api_key_set: found.key.is_some(),
            key_storage: found.storage,
            env_overrides: overrides,
            warnings,
        },
        config,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_settings_file_is_kept_aside_with_a_clear_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SETTINGS_FILE);
        std::fs::write(&path, "{\"provider\": {\"kind\": \"anthropic\", ").unwrap();
        let AtStart { file, warnings, .. } = load_at_start(dir.path(), 42);
        assert_eq!(file, StoreFile::default());
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("could not be read"), "{}", warnings[0]);
        assert!(!path.exists(), "moved out of the way so a save cannot overwrite it");
        let kept = std::fs::read_to_string(dir.path().join("settings.json.broken-42")).unwrap();
        assert!(kept.starts_with("{\"provider\""));
        // JSON whose provider entry is wrong is set aside too, with the entry's error.
        std::fs::write(&path, r#"{"provider": {"kind": 5}, "heartbeat": {"every": "5m"}}"#).unwrap();
        let start = load_at_start(dir.path(), 43);
        assert_eq!(start.file, StoreFile::default(), "everything starts from defaults");
        assert!(start.warnings[0].contains("invalid type"), "{:?}", start.warnings);
        assert!(dir.path().join("settings.json.broken-43").exists());
    }

    #[test]
    fn a_good_file_loads_and_a_missing_one_means_defaults() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load_at_start(dir.path(), 0), AtStart::default());
        let p = ProviderSettings {
            kind: ProviderKind::Openai,
            base_url: "http://localhost:11434/v1".into(),
            model: "llama3.2".into(),
            max_tokens: 1000,
            context_window: None,
        };
        std::fs::write(
            dir.path().join(SETTINGS_FILE),
            serde_json::json!({
                "provider": p,
                "heartbeat": {"every": 15},
                "desktop": {"theme": "dark", "close_to_tray": "no"},
            })
            .to_string(),
        )
        .unwrap();
        let start = load_at_start(dir.path(), 0);
        assert_eq!((start.file.provider, start.warnings), (Some(p), vec![]));
        assert_eq!(
            start.file.heartbeat.unwrap().every,
            "15",
            "a number of minutes is read as one"
        );
        assert!(start.heartbeat_warnings.is_empty());
        assert_eq!(start.desktop.theme, vigil_protocol::Theme::Dark);
        assert!(start.desktop.close_to_tray, "a wrong type keeps the default");
        assert!(
            start.desktop_warnings[0].contains("close_to_tray"),
            "{:?}",
            start.desktop_warnings
        );
    }

    #[test]
    fn a_config_file_gives_provider_and_heartbeat_and_names_bad_entries() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vigil.json");
        std::fs::write(
            &path,
            r#"{"provider": {"kind": "openai", "base_url": "http://x/v1", "model": "m", "max_tokens": 5},
                "heartbeat": {"every": "5m", "ackMaxChars": 10}}"#,
        )
        .unwrap();
        let (file, warnings) = read_config_file(&path);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(file.provider.unwrap().model, "m");
        let hb = file.heartbeat.unwrap();
        assert_eq!((hb.every.as_str(), hb.ack_max_chars), ("5m", 10));
        std::fs::write(&path, r#"{"heartbeat": {"enabled": "yes"}}"#).unwrap();
        let (file, warnings) = read_config_file(&path);
        assert_eq!(file, StoreFile::default());
        assert!(warnings[0].contains("heartbeat settings"), "{warnings:?}");
        assert!(path.exists(), "a --config file is never moved");
        let (_, warnings) = read_config_file(&dir.path().join("missing.json"));
        assert!(warnings[0].starts_with("Could not read"));
        std::fs::write(dir.path().join(SETTINGS_FILE), r#"{"heartbeat": {"enabled": "yes"}}"#).unwrap();
        let start = load_at_start(dir.path(), 0);
        assert_eq!(start.file.heartbeat, None);
        assert!(start.heartbeat_warnings[0].contains("heartbeat settings"));
        assert!(
            dir.path().join(SETTINGS_FILE).exists(),
            "a bad heartbeat entry sets nothing aside"
        );
    }

    #[test]
    fn validation_names_the_field() {
        let mut p = ProviderSettings::default();
        assert_eq!(validate(&p), Ok(()));
        p.base_url = "localhost:11434".into();
        assert!(validate(&p).unwrap_err().contains("Base URL"));
        p.base_url = "ftp://x".into();
        assert!(validate(&p).unwrap_err().contains("http://"));
        p = ProviderSettings {
            model: " ".into(),
            ..ProviderSettings::default()
        };
        assert!(validate(&p).unwrap_err().contains("Model"));
    }
}
