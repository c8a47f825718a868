//! # settings
//!
//! Owns turning what the user configured (the `provider` entry of `settings.json`, which the
//! desktop app writes through tauri-plugin-store) plus `VIGIL_*` environment overrides plus
//! the key from [`crate::secrets`] into a [`ProviderConfig`] and the view the settings pane
//! shows. A settings file that cannot be read is moved aside, never overwritten, and the
//! user is told where it went.
//!
//! Must never: write the settings file (the app's store does), or put a key in it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use vigil_protocol::{HeartbeatSettings, ProviderKind, ProviderSettings, SettingsView};

use crate::provider::ProviderConfig;
use crate::secrets::Secrets;

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
            let (file, mut warnings, heartbeat_warnings) = store_entries(&v, path);
            warnings.extend(heartbeat_warnings);
            (file, warnings)
        }
        Err(e) => (
            StoreFile::default(),
            vec![format!("{} is not JSON ({e}); defaults are in use.", path.display())],
        ),
    }
}

/// The `heartbeat` entry of `<data_dir>/settings.json`; missing means defaults.
pub fn load_heartbeat(data_dir: &Path) -> (Option<HeartbeatSettings>, Vec<String>) {
    let path = data_dir.join(SETTINGS_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        return (None, vec![]);
    };
    match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => {
            let (file, _, heartbeat_warnings) = store_entries(&v, &path);
            (file.heartbeat, heartbeat_warnings)
        }
        Err(_) => (None, vec![]),
    }
}

/// The entries of a store file, with the problems of the provider entry and of the
/// heartbeat entry apart (the app reports them in different places).
fn store_entries(v: &serde_json::Value, path: &Path) -> (StoreFile, Vec<String>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut heartbeat_warnings = Vec::new();
    let entry = |key: &str| v.get(key).filter(|e| !e.is_null()).cloned();
    let provider = entry(PROVIDER_KEY).and_then(|p| match serde_json::from_value::<ProviderSettings>(p) {
        Ok(p) => Some(p),
        Err(e) => {
            warnings.push(format!(
                "The provider settings in {} are invalid ({e}); defaults are in use.",
                path.display()
            ));
            None
        }
    });
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
    (StoreFile { provider, heartbeat }, warnings, heartbeat_warnings)
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

/// Reads the provider entry of a store file. A missing file means defaults; an unreadable
/// one is renamed to `settings.json.broken-<ms>` so nothing is lost, with a warning.
pub fn load_file(data_dir: &Path, now_ms: i64) -> (Option<ProviderSettings>, Vec<String>) {
    let path = data_dir.join(SETTINGS_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (None, vec![]),
        Err(e) => return (None, vec![format!("Could not read {}: {e}", path.display())]),
    };
    let parsed = serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| e.to_string())
        .and_then(|v| match v.get(PROVIDER_KEY) {
            None => Ok(None),
            Some(p) => serde_json::from_value::<ProviderSettings>(p.clone())
                .map(Some)
                .map_err(|e| e.to_string()),
        });
    match parsed {
        Ok(p) => (p, vec![]),
        Err(e) => {
            let aside = set_aside(&path, now_ms);
            (
                None,
                vec![format!(
                    "The settings file {} could not be read ({e}). It was kept as {} and defaults are in use.",
                    path.display(),
                    aside.display()
                )],
            )
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
        let (provider, warnings) = load_file(dir.path(), 42);
        assert_eq!(provider, None);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("could not be read"), "{}", warnings[0]);
        assert!(!path.exists(), "moved out of the way so a save cannot overwrite it");
        let kept = std::fs::read_to_string(dir.path().join("settings.json.broken-42")).unwrap();
        assert!(kept.starts_with("{\"provider\""));
    }

    #[test]
    fn a_good_file_loads_and_a_missing_one_means_defaults() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load_file(dir.path(), 0), (None, vec![]));
        let p = ProviderSettings {
            kind: ProviderKind::Openai,
            base_url: "http://localhost:11434/v1".into(),
            model: "llama3.2".into(),
            max_tokens: 1000,
            context_window: None,
        };
        std::fs::write(
            dir.path().join(SETTINGS_FILE),
            serde_json::json!({ "provider": p }).to_string(),
        )
        .unwrap();
        assert_eq!(load_file(dir.path(), 0), (Some(p), vec![]));
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
        std::fs::write(dir.path().join(SETTINGS_FILE), r#"{"heartbeat": {"every": 15}}"#).unwrap();
        assert_eq!(load_heartbeat(dir.path()).0.unwrap().every, "15");
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
