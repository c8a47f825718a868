//! Native notifications that lead somewhere: on Linux through notify-rust with a default
//! action, so clicking one brings the window forward and tells the UI which item it is about
//! (`vigil://focus`); elsewhere through tauri-plugin-notification, which has no click
//! callback there.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use tauri::{Emitter, Manager};

/// The event the UI listens on to open the item a clicked notification is about.
pub const FOCUS_EVENT: &str = "vigil://focus";

/// What a clicked notification is about.
#[derive(Debug, Clone, Serialize)]
pub struct FocusTarget {
    /// The background update to open, if the notification announced one.
    pub event_id: Option<String>,
    /// The process to open in the Processes panel, for a finished command.
    pub process_id: Option<String>,
}

/// Brings the main window forward and asks the UI to open `target`.
pub fn focus(app: &tauri::AppHandle, target: FocusTarget) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
    if let Err(e) = app.emit(FOCUS_EVENT, target) {
        tracing::warn!("could not send the focus event: {e}");
    }
}

/// Shows a notification; a click on it (its default action) calls [`focus`].
#[cfg(target_os = "linux")]
pub fn show(app: &tauri::AppHandle, title: &str, body: &str, target: FocusTarget) {
    let app = app.clone();
    let (title, body) = (title.to_string(), body.to_string());
    // One thread per notification waits for its click or close; it ends with the notification.
    let spawned = std::thread::Builder::new().name("notification".into()).spawn(move || {
        let shown = notify_rust::Notification::new()
            .appname("Vigil")
            .summary(&title)
            .body(&body)
            .action("default", "Open Vigil")
            .show();
        match shown {
            Ok(handle) => handle.wait_for_action(|action| {
                if action == "default" {
                    focus(&app, target);
                }
            }),
            Err(e) => unavailable(&app, &e.to_string()),
        }
    });
    if let Err(e) = spawned {
        tracing::warn!("could not start the notification thread: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
pub fn show(app: &tauri::AppHandle, title: &str, body: &str, _target: FocusTarget) {
    use tauri_plugin_notification::NotificationExt;
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        unavailable(app, &e.to_string());
    }
}

/// Whether the window was told, this run, that notifications cannot be shown.
static TOLD: AtomicBool = AtomicBool::new(false);

/// A notification that could not be shown: logged each time, and said in the window the
/// first time in a run (what it announced is still under the bell and in the chat).
fn unavailable(app: &tauri::AppHandle, error: &str) {
    tracing::warn!("could not show a notification: {error}");
    if TOLD.swap(true, Ordering::Relaxed) {
        return;
    }
    if let Some(state) = app.try_state::<crate::AppState>() {
        state
            .runtime
            .report(vigil_core::protocol::ErrorKind::Desktop, unavailable_message(error));
    }
}

/// What the window says when a notification could not be shown.
pub fn unavailable_message(error: &str) -> String {
    let error = error.trim().trim_end_matches('.');
    format!(
        "Desktop notifications cannot be shown: is a notification service running? Nothing is lost: \
         background updates stay under the bell and in the conversation. ({error})"
    )
}
