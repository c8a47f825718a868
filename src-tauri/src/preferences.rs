//! The desktop preferences (close to tray, start at login, theme, notification kinds,
//! workspace folder, continuing on its own, the unattended approval timeout, the absence
//! before the "While you were away" card): thin adapters
//! between the settings pane, the store's `desktop` entry, the login item
//! (tauri-plugin-autostart), [`crate::lifecycle`] and the runtime's limits of acting alone.
//! Reading a hand-edited entry is core's job ([`vigil_core::settings::desktop`]); the theme is
//! applied by the window.

use std::sync::atomic::Ordering;
use std::sync::Mutex;

use tauri::{AppHandle, Manager, State};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_store::StoreExt as _;
use vigil_core::protocol::{CommandError, DesktopSettings, DesktopSettingsView, NotificationKind};
use vigil_core::settings::desktop::DESKTOP_KEY;

use crate::lifecycle::Lifecycle;
use crate::AppState;

/// The preferences in force and the problems found reading them.
pub struct Preferences(pub Mutex<DesktopSettingsView>);

fn error(code: &str, message: impl std::fmt::Display) -> CommandError {
    CommandError {
        code: code.to_string(),
        message: message.to_string(),
        field: None,
    }
}

/// Applies stored preferences at start-up: close behaviour, and the login item if the
/// user asked for one (re-written, so it points at this binary after a reinstall).
pub fn restore(app: &AppHandle, view: DesktopSettingsView) {
    let mut view = view;
    app.state::<Lifecycle>()
        .close_to_tray
        .store(view.settings.close_to_tray, Ordering::SeqCst);
    if view.settings.start_at_login {
        if let Err(e) = app.autolaunch().enable() {
            view.warnings
                .push(format!("Vigil could not add itself to the login items: {e}"));
        }
    }
    for w in &view.warnings {
        tracing::warn!("{w}");
    }
    app.manage(Preferences(Mutex::new(view)));
}

/// Hands what the preferences say about acting alone to the runtime: continuations in a
/// row, how long an unattended approval waits, keeping the computer awake. At start and on
/// every save.
pub fn apply_autonomy(runtime: &vigil_core::Runtime, settings: &DesktopSettings) {
    runtime.apply_desktop(settings);
}

/// Whether the user wants notifications of `kind` (all kinds until the preferences load).
pub fn notifies(app: &AppHandle, kind: NotificationKind) -> bool {
    app.try_state::<Preferences>().is_none_or(|prefs| {
        let view = prefs.0.lock().unwrap_or_else(|e| e.into_inner());
        view.settings.notifications.allows(kind)
    })
}

fn current(app: &AppHandle, prefs: &Preferences) -> DesktopSettingsView {
    let mut view = prefs.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let runtime = &app.state::<AppState>().runtime;
    view.workspace_in_use = runtime.workspace().display().to_string();
    view.keep_awake_problem = match runtime.keep_awake_status() {
        vigil_core::inhibit::InhibitorStatus::Unavailable { reason } => Some(reason),
        _ => None,
    };
    // The login item is the truth: the user may have removed it elsewhere.
    if let Ok(enabled) = app.autolaunch().is_enabled() {
        view.settings.start_at_login = enabled;
    }
    view
}

#[tauri::command]
pub async fn get_desktop_settings(
    app: AppHandle,
    prefs: State<'_, Preferences>,
) -> Result<DesktopSettingsView, CommandError> {
    Ok(current(&app, &prefs))
}

/// Saves and applies at once: the login item first (if the desktop refuses it, nothing is
/// saved), then the store, then the close behaviour and the limits of acting alone.
#[tauri::command]
pub async fn save_desktop_settings(
    app: AppHandle,
    state: State<'_, AppState>,
    prefs: State<'_, Preferences>,
    settings: DesktopSettings,
) -> Result<DesktopSettingsView, CommandError> {
    let mut settings = settings;
    if settings.approval_timeout_secs == 0 {
        return Err(CommandError {
            field: Some("approval_timeout_secs".into()),
            ..error(
                "invalid_approval_timeout",
                "An unanswered approval must wait at least a minute before it is denied.",
            )
        });
    }
    if !(vigil_core::settings::desktop::MIN_AWAY_AFTER_MINUTES..=vigil_core::settings::desktop::MAX_AWAY_AFTER_MINUTES)
        .contains(&settings.away_after_minutes)
    {
        return Err(CommandError {
            field: Some("away_after_minutes".into()),
            ..error(
                "invalid_away_after",
                "An absence is at least a minute and at most a day (1440 minutes).",
            )
        });
    }
    if let Some(bind) = &settings.webhook_bind {
        if bind.trim().parse::<std::net::IpAddr>().is_err() {
            return Err(CommandError {
                field: Some("webhook_bind".into()),
                ..error(
                    "invalid_webhook_bind",
                    "Webhooks listen on an IP address of this computer, such as 0.0.0.0 or 192.168.1.20.",
                )
            });
        }
        settings.webhook_bind = Some(bind.trim().to_string());
    }
    settings.workspace =
        vigil_core::settings::desktop::validate_workspace(settings.workspace.as_deref(), state.runtime.data_dir())
            .map_err(|m| CommandError {
                field: Some("workspace".into()),
                ..error("invalid_workspace", m)
            })?;
    let autolaunch = app.autolaunch();
    let enabled = autolaunch.is_enabled().unwrap_or(false);
    if settings.start_at_login != enabled {
        let done = if settings.start_at_login {
            autolaunch.enable()
        } else {
            autolaunch.disable()
        };
        done.map_err(|e| error("autostart", format!("Could not change the login items: {e}")))?;
    }
    let store = app.store(&state.settings_path).map_err(|e| error("storage", e))?;
    store.set(
        DESKTOP_KEY,
        serde_json::to_value(&settings).map_err(|e| error("storage", e))?,
    );
    store.save().map_err(|e| error("storage", e))?;
    app.state::<Lifecycle>()
        .close_to_tray
        .store(settings.close_to_tray, Ordering::SeqCst);
    apply_autonomy(&state.runtime, &settings);
    *prefs.0.lock().unwrap_or_else(|e| e.into_inner()) = DesktopSettingsView {
        settings,
        warnings: vec![],
        workspace_in_use: String::new(),
        keep_awake_problem: None,
    };
    Ok(current(&app, &prefs))
}
