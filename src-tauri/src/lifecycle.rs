//! The app's life around its window: closing hides to the tray (or quits, per the user's
//! preference), quitting asks first while processes run, a second launch brings the running
//! window forward, and a login start stays in the tray.
//!
//! Quitting never kills without the user's word: [`request_quit`] exits at once only when
//! nothing runs; otherwise the window asks ("N processes are running") and the `quit`
//! command, sent on confirm, exits. Every way out goes through [`shutdown_and_exit`]: the
//! runtime shuts down first (turns cancelled and saved, process groups killed), then the app
//! exits.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use tauri::{AppHandle, Emitter as _, Manager, WindowEvent};
use vigil_core::protocol::{CommandError, ProcessSummary};

use crate::AppState;

/// The event that asks the window to confirm quitting.
pub const QUIT_EVENT: &str = "vigil://quit-requested";
/// The argument a login start passes: start hidden in the tray.
pub const BACKGROUND_ARG: &str = "--background";

/// What the quit prompt shows.
#[derive(Debug, Clone, Serialize)]
pub struct QuitRequest {
    pub processes: Vec<ProcessSummary>,
}

/// Lifecycle state the shell keeps.
pub struct Lifecycle {
    /// The user's "close to tray" preference, read on every close.
    pub close_to_tray: AtomicBool,
}

/// Shows, unminimises and focuses the main window.
pub fn show_main(app: &AppHandle) {
    if let Some(window) = app.get_webview_window("main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// A second launch (forwarded by tauri-plugin-single-instance): the running window comes
/// forward and the new process exits.
pub fn on_second_instance(app: &AppHandle, argv: Vec<String>, _cwd: String) {
    tracing::info!("a second launch was redirected to this instance");
    if !argv.iter().any(|a| a == BACKGROUND_ARG) {
        show_main(app);
    }
}

/// The first show: hidden in the tray when started at login, otherwise visible.
pub fn first_show(app: &AppHandle) {
    if std::env::args().any(|a| a == BACKGROUND_ARG) {
        tracing::info!("started at login: staying in the tray");
    } else {
        show_main(app);
    }
}

/// The window's close button: hide to the tray, or quit (asking first when processes run).
pub fn on_window_event(window: &tauri::Window, event: &WindowEvent) {
    let WindowEvent::CloseRequested { api, .. } = event else {
        return;
    };
    api.prevent_close();
    let app = window.app_handle();
    if app.state::<Lifecycle>().close_to_tray.load(Ordering::SeqCst) {
        if let Err(e) = window.hide() {
            tracing::warn!("could not hide the window: {e}");
        }
    } else {
        request_quit(app);
    }
}

/// Quits now if no process runs; otherwise brings the window forward to ask.
pub fn request_quit(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let processes = app.state::<AppState>().runtime.running_processes().await;
        if processes.is_empty() {
            return shutdown_and_exit(&app);
        }
        show_main(&app);
        if let Err(e) = app.emit(QUIT_EVENT, QuitRequest { processes }) {
            // Without the window there is no one to ask: keep running rather than kill.
            tracing::warn!("could not ask about quitting: {e}");
        }
    });
}

/// The quit prompt's "Kill them and quit": shuts down (killing the process groups) and exits.
#[tauri::command]
pub async fn quit(app: AppHandle) -> Result<(), CommandError> {
    tracing::info!("quitting at the user's request");
    shutdown_and_exit(&app);
    Ok(())
}

/// Shuts the runtime down (turns cancelled with what was said saved, process groups
/// killed, pending wakes kept) on the async runtime, then exits. Shutting down inside
/// `RunEvent::Exit` instead blocks the main thread while a cancelled turn's last events and
/// the tray's refresh still need it: with a reply streaming, quitting hung.
pub fn shutdown_and_exit(app: &AppHandle) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let runtime = app.state::<AppState>().runtime.clone();
        runtime.shutdown().await;
        tracing::info!("shut down; exiting");
        app.exit(0);
    });
}
