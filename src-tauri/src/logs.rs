//! Logging: to stderr and to a daily-rotated file in the app's log directory
//! (`<data dir>/logs` with `VIGIL_DATA_DIR`, else the platform's app log directory), the
//! last [`KEEP_FILES`] days kept. `VIGIL_LOG` sets the filter (default `info`).
//!
//! Nothing here filters secrets: no code logs an API key or a settings value that could
//! hold one (keys go to the keyring through `vigil_core::secrets`, never to `tracing`).

use std::path::{Path, PathBuf};

use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// Days of logs kept.
pub const KEEP_FILES: usize = 7;

/// The log directory for this data directory override, or the platform's.
pub fn dir(app: &tauri::App) -> Option<PathBuf> {
    use tauri::Manager as _;
    match std::env::var_os("VIGIL_DATA_DIR") {
        Some(d) => Some(PathBuf::from(d).join("logs")),
        None => app.path().app_log_dir().ok(),
    }
}

/// Installs the global subscriber; the file layer only if the directory can be used (then
/// the problem is logged to stderr). Call once.
pub fn init(dir: Option<&Path>) {
    let filter = || EnvFilter::try_from_env("VIGIL_LOG").unwrap_or_else(|_| "info".into());
    let file = dir.map(|d| {
        // The appender prunes old files as it starts, and complains if the folder is missing.
        vigil_core::durable::create_private_dir_all(d).map_err(|e| e.to_string())?;
        RollingFileAppender::builder()
            .rotation(Rotation::DAILY)
            .filename_prefix("vigil")
            .filename_suffix("log")
            .max_log_files(KEEP_FILES)
            .build(d)
            .map_err(|e| e.to_string())
    });
    let (file_layer, problem) = match file {
        Some(Ok(appender)) => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(appender)
                    .with_filter(filter()),
            ),
            None,
        ),
        Some(Err(e)) => (None, Some(e)),
        None => (None, Some("no log directory".to_string())),
    };
    let result = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(filter()),
        )
        .with(file_layer)
        .try_init();
    if let Err(e) = result {
        eprintln!("logging was already set up: {e}");
    }
    match (problem, dir) {
        (Some(p), Some(d)) => tracing::warn!("logging only to stderr: {} ({p})", d.display()),
        (Some(p), None) => tracing::warn!("logging only to stderr: {p}"),
        (None, Some(d)) => tracing::info!(dir = %d.display(), "logging to files"),
        _ => {}
    }
}
