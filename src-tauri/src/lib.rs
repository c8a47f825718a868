//! # vigil (desktop shell)
//!
//! Glue between the window and `vigil-core`: builds the runtime in `setup`, forwards `Op`s
//! from IPC, emits events to the window in batches as `vigil://events`, turns `notification`
//! events into native notifications, and keeps provider settings in tauri-plugin-store.
//! No runtime logic lives here; errors are mapped to one `{ code, message }` shape.
//!
//! ## Layout
//!
//! - `commands` — the IPC commands over the runtime (chat, settings, heartbeat, processes,
//!   routines).
//! - `notify` — native notifications that bring the window forward at their item.
//! - `tray` — the tray icon and its menu.
//! - `lifecycle` — close to tray, quit (asking while processes run), second launches.
//! - `preferences` — the desktop preferences: close to tray, start at login, theme,
//!   notification kinds, workspace folder.
//! - `logs` — stderr plus a rotating log file.
//! - `navigation` — the guard that keeps the window on the app's own origin.
//! - `webkit` — how often the page's web process measures its own memory (Linux).

mod commands;
mod lifecycle;
mod logs;
mod mcp;
mod navigation;
mod notify;
mod preferences;
mod tray;
#[cfg(target_os = "linux")]
mod webkit;

use std::path::PathBuf;
use std::sync::Arc;

use tauri::{Emitter as _, Manager};
use vigil_core::clock::{Clock, SystemClock};
use vigil_core::events::EventSink;
use vigil_core::protocol::{Event, EventEnvelope};
use vigil_core::Runtime;

/// When the process started, for the log's "interactive after" line.
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Marks the process start; call first thing in `main`.
pub fn started() {
    STARTED.get_or_init(std::time::Instant::now);
}

/// The signals that ask a desktop app to quit.
#[cfg(unix)]
struct QuitSignals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    quit: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl QuitSignals {
    /// Takes them over from their default (dying on the spot); `None`, logged, if the OS
    /// refuses, and the defaults stay.
    fn new() -> Option<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::quit()),
        ) {
            (Ok(term), Ok(int), Ok(quit)) => Some(Self { term, int, quit }),
            (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                tracing::warn!("cannot handle quit signals, they end Vigil without shutting down: {e}");
                None
            }
        }
    }

    /// The name of the next one to arrive.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
            _ = self.quit.recv() => "SIGQUIT",
        }
    }
}

/// Set to draw the window with WebKit's accelerated compositing (GPU layers) as WebKit
/// decides; by default Vigil draws it without.
pub const GPU_ENV: &str = "VIGIL_GPU";

/// Turns WebKitGTK's accelerated compositing off unless `VIGIL_GPU` is set or the user set
/// `WEBKIT_DISABLE_COMPOSITING_MODE` themselves. Vigil's window is text, forms and one
/// terminal: compositing buys it nothing a user sees. Without a GPU (virtual machines,
/// remote desktops, Xvfb) WebKit composites in software GL (llvmpipe), which held ~160 MiB
/// more in the web process and cost ~150 ms before the first paint (`make bench-app`); with
/// one, it is WebKitGTK's usual cause of blank windows. Set through the environment because
/// WebKit reads it as the webview is made (changing the policy of a live webview restarts
/// its page); call it first thing in `main`, while the process has one thread. The
/// commands Vigil runs start without it ([`vigil_core::exec::APP_ADDED_ENV`]).
pub fn software_drawing() {
    const WEBKIT_ENV: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";
    if std::env::var_os(GPU_ENV).is_none() && std::env::var_os(WEBKIT_ENV).is_none() {
        std::env::set_var(WEBKIT_ENV, "1");
        // Vigil's choice, not the user's: the commands it runs do not inherit it.
        std::env::set_var(vigil_core::exec::APP_ADDED_ENV, WEBKIT_ENV);
    }
}

/// The window's history and settings are in and events flow: logged with the time since the
/// process started, and printed as `READY` on stdout when `VIGIL_REPORT_READY` is set (the
/// launch benchmark, `make bench-app`, waits for that line).
#[tauri::command]
fn ui_ready(script_ms: f64, page_ms: f64) {
    let ms = STARTED.get().map_or(0, |t| t.elapsed().as_millis());
    tracing::info!(
        "the window is interactive {ms} ms after start (page: script ran at {script_ms:.0} ms, ready at {page_ms:.0} ms)"
    );
    if std::env::var_os("VIGIL_REPORT_READY").is_some() {
        println!("READY {ms} ms after start, page {page_ms:.0} ms");
    }
}

/// The event name the UI listens on: a batch (`[EventEnvelope]`) of the events since the
/// last one, in order.
pub const EVENTS_NAME: &str = "vigil://events";

/// How long events gather before they go to the window as one batch. Each delivery runs a
/// script in the webview: 50 terminals streaming sent ~1 300 a second one by one and the
/// window drew 2 frames a second (tests/e2e/load.test.mjs); one batch a frame keeps it fluid.
const BATCH_WINDOW: std::time::Duration = std::time::Duration::from_millis(16);

/// Forwards runtime events to the window in batches and raises native notifications.
struct WindowSink {
    app: tauri::AppHandle,
    batch: Arc<std::sync::Mutex<Vec<EventEnvelope>>>,
}

impl WindowSink {
    fn new(app: tauri::AppHandle) -> Self {
        Self {
            app,
            batch: Arc::default(),
        }
    }
}

impl EventSink for WindowSink {
    fn emit(&self, envelope: EventEnvelope) {
        match &envelope.event {
            Event::Notification {
                kind,
                title,
                body,
                event_id,
                process_id,
                approval_id,
                target_session_id: session_id,
                message_ts,
            } if preferences::notifies(&self.app, *kind) => {
                let target = notify::FocusTarget {
                    event_id: event_id.clone(),
                    process_id: process_id.clone(),
                    approval_id: approval_id.clone(),
                    session_id: session_id.clone(),
                    message_ts: *message_ts,
                };
                notify::show(&self.app, title, body, target);
            }
            // The tray's badge shows while any request waits, whether or not the window
            // runs its scripts (hidden to the tray, it may not).
            Event::ApprovalRequested { approval_id: id, .. } => tray::approval_waiting(&self.app, id),
            Event::ApprovalResolved { approval_id: id, .. } => {
                tray::approval_answered(&self.app, id);
                notify::resolved(&self.app, id);
            }
            _ => {}
        }
        if matches!(
            envelope.event,
            Event::ProcessStarted { .. }
                | Event::ProcessExited { .. }
                | Event::BackgroundPaused { .. }
                | Event::RoutinesChanged { .. }
        ) {
            tray::refresh(&self.app);
        }
        let first = {
            let mut batch = self.batch.lock().unwrap_or_else(|e| e.into_inner());
            batch.push(envelope);
            batch.len() == 1
        };
        // The first event of a batch schedules its delivery; the rest ride along.
        if first {
            let (app, batch) = (self.app.clone(), self.batch.clone());
            tauri::async_runtime::spawn(async move {
                tokio::time::sleep(BATCH_WINDOW).await;
                let events = std::mem::take(&mut *batch.lock().unwrap_or_else(|e| e.into_inner()));
                if let Err(e) = app.emit(EVENTS_NAME, &events) {
                    tracing::warn!("could not send {} events to the window: {e}", events.len());
                }
            });
        }
    }
}

/// What every command can reach.
pub struct AppState {
    pub runtime: Runtime,
    /// Absolute path of the store file (`<data dir>/settings.json`).
    pub settings_path: PathBuf,
    /// Problems found at start-up (an unreadable settings file…), shown in Settings.
    pub startup_warnings: std::sync::Mutex<Vec<String>>,
}

fn data_dir(app: &tauri::App) -> Result<PathBuf, Box<dyn std::error::Error>> {
    if let Some(dir) = std::env::var_os("VIGIL_DATA_DIR") {
        return Ok(PathBuf::from(dir));
    }
    Ok(app.path().app_data_dir()?)
}

/// Window position and size, kept in the data directory when it is overridden (tests,
/// scripts); otherwise in the platform's app config directory. Visibility is not restored:
/// whether the window shows at start is [`lifecycle::first_show`]'s decision.
fn window_state_plugin() -> tauri::plugin::TauriPlugin<tauri::Wry> {
    use tauri_plugin_window_state::StateFlags;
    let mut builder =
        tauri_plugin_window_state::Builder::new().with_state_flags(StateFlags::all() - StateFlags::VISIBLE);
    if let Some(dir) = std::env::var_os("VIGIL_DATA_DIR") {
        // The plugin joins this to its directory; an absolute path replaces it.
        builder = builder.with_filename(PathBuf::from(dir).join("window-state.json").to_string_lossy());
    }
    builder.build()
}

pub fn run() {
    // Before the window's WebKit context exists.
    #[cfg(target_os = "linux")]
    webkit::check_page_memory_every(webkit::PAGE_MEMORY_CHECK);
    let result = tauri::Builder::default()
        // First: a second launch must hand over before anything else starts.
        .plugin(tauri_plugin_single_instance::init(lifecycle::on_second_instance))
        .plugin(
            tauri_plugin_autostart::Builder::new()
                .args([lifecycle::BACKGROUND_ARG])
                .build(),
        )
        // Before any window exists: the window never navigates to another origin.
        .plugin(navigation::guard())
        .plugin(window_state_plugin())
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_store::Builder::new().build())
        .setup(|app| {
            logs::init(logs::dir(app).as_deref());
            let dir = data_dir(app)?;
            vigil_core::durable::make_private_dir(&dir)?;
            let clock: Arc<dyn Clock> = Arc::new(SystemClock);
            // settings.json is read once for the start. Core checks it first and sets an
            // unreadable one aside, so the store never starts empty over it and a later
            // save cannot destroy it.
            let start = vigil_core::settings::load_at_start(&dir, clock.now_ms());
            let sink = Arc::new(WindowSink::new(app.handle().clone()));
            let runtime = Runtime::open(&dir, clock.clone(), sink, &start.desktop)?;
            preferences::apply_autonomy(&runtime, &start.desktop);
            let mut warnings = start.warnings;
            runtime.apply_settings(start.file.provider, warnings.clone());
            warnings.extend(start.heartbeat_warnings);
            warnings.extend(runtime.set_heartbeat_settings(&start.file.heartbeat.unwrap_or_default()));
            tracing::info!(data_dir = %dir.display(), "Vigil started");
            app.manage(notify::Notifications::default());
            app.manage(AppState {
                runtime,
                settings_path: dir.join(vigil_core::settings::SETTINGS_FILE),
                startup_warnings: std::sync::Mutex::new(warnings),
            });
            commands::restore_approval_policy(app.handle(), &app.state::<AppState>());
            app.manage(lifecycle::Lifecycle {
                close_to_tray: std::sync::atomic::AtomicBool::new(true),
            });
            preferences::restore(
                app.handle(),
                vigil_core::protocol::DesktopSettingsView {
                    settings: start.desktop,
                    warnings: start.desktop_warnings,
                    workspace_in_use: String::new(),
                    keep_awake_problem: None,
                },
            );
            if let Err(e) = tray::create(app.handle()) {
                tracing::warn!("no tray icon: {e}");
            }
            lifecycle::first_show(app.handle());
            // SIGTERM (logging out, `kill`, a service manager), SIGINT (Ctrl+C where `make
            // run` was started) and SIGQUIT quit like the tray's Quit, through the exit
            // handler below: turns cancelled, process groups killed. A second signal while
            // that runs exits at once.
            #[cfg(unix)]
            {
                let handle = app.handle().clone();
                tauri::async_runtime::spawn(async move {
                    let Some(mut signals) = QuitSignals::new() else { return };
                    let name = signals.next().await;
                    tracing::info!("{name}: quitting");
                    lifecycle::shutdown_and_exit(&handle);
                    let again = signals.next().await;
                    tracing::warn!("{again} during shutdown: exiting at once");
                    std::process::exit(130);
                });
            }
            // The heartbeat's wake loop lives on the async runtime.
            let runtime = app.state::<AppState>().runtime.clone();
            tauri::async_runtime::spawn(async move {
                if !runtime.start_background() {
                    tracing::error!("the heartbeat could not start");
                }
            });
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::submit,
            commands::history,
            commands::list_sessions,
            commands::get_settings,
            commands::save_settings,
            commands::test_connection,
            commands::notify,
            commands::heartbeat_view,
            commands::health,
            commands::list_processes,
            commands::process_output,
            commands::save_heartbeat_settings,
            commands::get_approvals,
            commands::set_approval_policy,
            commands::forget_approval,
            commands::set_sandbox_network,
            commands::set_sandbox_writable,
            commands::set_sandbox_unattended_network,
            commands::set_routine_network,
            commands::set_sandbox_sockets,
            commands::set_sandbox_hidden,
            commands::list_routines,
            commands::add_routine,
            commands::update_routine,
            commands::remove_routine,
            commands::restore_routine,
            commands::run_routine_now,
            commands::retry_routine_run,
            commands::dismiss_routine_run,
            commands::set_routine_enabled,
            commands::approve_routine,
            commands::routine_history,
            commands::preview_schedule,
            commands::restore_routines,
            commands::trust_heartbeat_file,
            commands::heartbeat_checks,
            commands::save_heartbeat_checks,
            mcp::get_mcp,
            mcp::add_mcp_servers,
            mcp::remove_mcp_server,
            mcp::set_mcp_server_trusted,
            mcp::restart_mcp_server,
            commands::stage_attachment,
            commands::image_blob,
            preferences::get_desktop_settings,
            preferences::save_desktop_settings,
            lifecycle::quit,
            tray::set_attention,
            ui_ready,
        ])
        .on_window_event(lifecycle::on_window_event)
        .build(tauri::generate_context!());
    let app = match result {
        Ok(app) => app,
        Err(e) => {
            eprintln!("Vigil could not start: {e}");
            std::process::exit(1);
        }
    };
    app.run(|handle, event| {
        if let tauri::RunEvent::Exit = event {
            // Returns at once after `lifecycle::shutdown_and_exit`; shuts down for any
            // other way the event loop ends.
            let runtime = handle.state::<AppState>().runtime.clone();
            tauri::async_runtime::block_on(runtime.shutdown());
        }
    });
}
