//! The tray icon: what runs, the next routine, pause, open, quit; and the icon's "something
//! needs you" state: unread background updates or an approval waiting, as the window
//! reports them, and approvals waiting as the runtime's events say (so the badge shows while
//! an unattended run waits even when the window is hidden and runs no scripts). The menu
//! follows a [`TrayModel`] whenever processes start or exit, background activity is paused or
//! resumed, or the attention state changes.
//!
//! The menu is built once and then edited in place, never replaced: a panel shows items by
//! their D-Bus ids and sends a click to the id it showed, so a rebuilt menu turned a click in
//! flight into "does not refer to a menu item" (lost), and a rebuild whose model was read
//! just before a click landed put the old check mark back over the click's. For the same
//! reason the pause state is read on the main thread, where clicks are handled, at the
//! moment it is shown: what the menu shows is never older than the last click.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuEvent, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager, Wry};
use vigil_core::protocol::{CommandError, ProcessSummary};
use vigil_core::Runtime;

use crate::AppState;

const TRAY_ID: &str = "main";
const ICON: Image<'static> = tauri::include_image!("../icons/tray.png");
const ICON_ATTENTION: Image<'static> = tauri::include_image!("../icons/tray-attention.png");
/// Processes listed by name in the menu; the rest are counted.
const LISTED: usize = 5;
/// Longest command shown in a menu line.
const COMMAND_CHARS: usize = 40;

/// Menu item ids.
pub const PAUSE: &str = "pause";
pub const OPEN: &str = "open";
pub const QUIT: &str = "quit";

/// What the tray shows, decided apart from the menu toolkit so it can be tested.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayModel {
    /// "2 processes running" / "No processes running".
    pub processes: String,
    /// One line per listed process, then "…and N more".
    pub process_lines: Vec<String>,
    pub next_routine: String,
    pub paused: bool,
    /// The icon shows the badge.
    pub attention: bool,
    pub tooltip: String,
}

impl TrayModel {
    /// `attention`: the window's report; `approvals`: requests waiting for an answer.
    pub fn new(
        running: &[ProcessSummary],
        next_routine: String,
        paused: bool,
        attention: bool,
        approvals: usize,
    ) -> Self {
        let processes = match running.len() {
            0 => "No processes running".to_string(),
            1 => "1 process running".to_string(),
            n => format!("{n} processes running"),
        };
        let mut process_lines: Vec<String> = running
            .iter()
            .take(LISTED)
            .map(|p| format!("  {}", shorten(&p.command)))
            .collect();
        if running.len() > LISTED {
            process_lines.push(format!("  …and {} more", running.len() - LISTED));
        }
        let mut tooltip = format!("Vigil — {}", processes.to_lowercase());
        if paused {
            tooltip.push_str(", background activity paused");
        }
        match approvals {
            0 if attention => tooltip.push_str(", something needs you"),
            0 => {}
            1 => tooltip.push_str(", an approval is waiting for you"),
            n => tooltip.push_str(&format!(", {n} approvals are waiting for you")),
        }
        Self {
            processes,
            process_lines,
            next_routine,
            paused,
            attention: attention || approvals > 0,
            tooltip,
        }
    }
}

fn shorten(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default().trim();
    if line.chars().count() <= COMMAND_CHARS {
        return line.to_string();
    }
    let mut s: String = line.chars().take(COMMAND_CHARS - 1).collect();
    s.push('…');
    s
}

/// The next routine's line, e.g. "Next: Disk check at 09:00" (the runtime decides).
pub fn next_routine_line(runtime: &Runtime) -> String {
    runtime.next_routine_line()
}

/// The items of the menu that change, kept to edit them in place.
struct Items {
    menu: Menu<Wry>,
    processes: MenuItem<Wry>,
    routine: MenuItem<Wry>,
    pause: CheckMenuItem<Wry>,
    /// One item per line under "N processes running", in order; added and removed as the
    /// count changes. `std` lock: taken only on the main thread, never across an await.
    process_lines: Mutex<Vec<MenuItem<Wry>>>,
}

/// The tray's shell-side state.
pub struct TrayState {
    icon: TrayIcon<Wry>,
    items: Items,
    /// The window's last report: unread background updates or an approval waiting.
    attention: AtomicBool,
    /// Approval requests not answered yet, from the runtime's events. `std` lock: held to
    /// insert, remove or count.
    approvals: Mutex<HashSet<String>>,
    /// A refresh is queued; more changes meanwhile ride along with it.
    refresh_queued: AtomicBool,
    /// Held by a refresh from reading the processes to handing the edit to the main thread,
    /// so edits reach the menu in the order their reads were made (a Tokio lock: held across
    /// the read's await).
    refreshing: tokio::sync::Mutex<()>,
}

/// Creates the tray icon. Where the desktop has no tray (no StatusNotifier host) it is
/// simply not shown; the window and a second launch still reach the app.
pub fn create(app: &AppHandle) -> tauri::Result<()> {
    let runtime = &app.state::<AppState>().runtime;
    let model = TrayModel::new(&[], next_routine_line(runtime), runtime.is_paused(), false, 0);
    let items = Items {
        menu: Menu::new(app)?,
        processes: MenuItem::with_id(app, "processes", &model.processes, false, None::<&str>)?,
        routine: MenuItem::with_id(app, "routine", &model.next_routine, false, None::<&str>)?,
        pause: CheckMenuItem::with_id(
            app,
            PAUSE,
            "Pause background activity",
            true,
            model.paused,
            None::<&str>,
        )?,
        process_lines: Mutex::default(),
    };
    items.menu.append(&items.processes)?;
    items.menu.append(&items.routine)?;
    items.menu.append(&PredefinedMenuItem::separator(app)?)?;
    items.menu.append(&items.pause)?;
    items.menu.append(&PredefinedMenuItem::separator(app)?)?;
    items
        .menu
        .append(&MenuItem::with_id(app, OPEN, "Open Vigil", true, None::<&str>)?)?;
    items
        .menu
        .append(&MenuItem::with_id(app, QUIT, "Quit", true, None::<&str>)?)?;
    let icon = TrayIconBuilder::with_id(TRAY_ID)
        .icon(ICON)
        .tooltip(&model.tooltip)
        .menu(&items.menu)
        .show_menu_on_left_click(true)
        .on_menu_event(on_menu_event)
        .build(app)?;
    app.manage(TrayState {
        icon,
        items,
        attention: AtomicBool::new(false),
        approvals: Mutex::default(),
        refresh_queued: AtomicBool::new(false),
        refreshing: tokio::sync::Mutex::new(()),
    });
    Ok(())
}

/// Runs on the main thread, as every menu event does.
fn on_menu_event(app: &AppHandle, event: MenuEvent) {
    tracing::debug!(id = event.id().as_ref(), "tray menu event");
    match event.id().as_ref() {
        OPEN => crate::lifecycle::show_main(app),
        QUIT => crate::lifecycle::request_quit(app),
        PAUSE => {
            // One click, one change: toggled from the runtime's state, not from the item's,
            // because a refresh may have set the item back between the toolkit's toggle and
            // this handler; the item is then set to what the runtime now says.
            let runtime = &app.state::<AppState>().runtime;
            let paused = !runtime.is_paused();
            runtime.set_paused(paused);
            if let Some(state) = app.try_state::<TrayState>() {
                if let Err(e) = state.items.pause.set_checked(paused) {
                    tracing::warn!("could not update the tray's pause item: {e}");
                }
            }
        }
        _ => {}
    }
}

/// The window's "something needs you" state, for the tray icon. The tray's own command:
/// the tray calls into the lifecycle (Open, Quit), so the lifecycle does not call back here.
#[tauri::command]
pub async fn set_attention(app: AppHandle, needed: bool) -> Result<(), CommandError> {
    note_attention(&app, needed);
    Ok(())
}

/// Records the window's attention state and refreshes the tray if it changed.
fn note_attention(app: &AppHandle, needed: bool) {
    let Some(state) = app.try_state::<TrayState>() else {
        return;
    };
    if state.attention.swap(needed, Ordering::SeqCst) != needed {
        refresh(app);
    }
}

/// An approval request was asked: the badge shows until it is answered.
pub fn approval_waiting(app: &AppHandle, id: &str) {
    let Some(state) = app.try_state::<TrayState>() else {
        return;
    };
    if state
        .approvals
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id.to_string())
    {
        refresh(app);
    }
}

/// An approval request was answered (or denied by its timeout or a Stop).
pub fn approval_answered(app: &AppHandle, id: &str) {
    let Some(state) = app.try_state::<TrayState>() else {
        return;
    };
    if state.approvals.lock().unwrap_or_else(|e| e.into_inner()).remove(id) {
        refresh(app);
    }
}

/// Brings menu, tooltip and icon up to date with the runtime, soon (coalesced: a burst of
/// process events makes one refresh).
pub fn refresh(app: &AppHandle) {
    let Some(state) = app.try_state::<TrayState>() else {
        return;
    };
    if state.refresh_queued.swap(true, Ordering::SeqCst) {
        return;
    }
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        let state = app.state::<TrayState>();
        let _order = state.refreshing.lock().await;
        state.refresh_queued.store(false, Ordering::SeqCst);
        let running = app.state::<AppState>().runtime.running_processes().await;
        let on_main = app.clone();
        let handed = app.run_on_main_thread(move || {
            if let Err(e) = apply(&on_main, &running) {
                tracing::warn!("could not update the tray: {e}");
            }
        });
        if let Err(e) = handed {
            tracing::warn!("could not update the tray: {e}");
        }
    });
}

/// Edits the menu in place to show `running` and the rest of the runtime's state as it is
/// now. Main thread only: the pause state it reads is then never older than a handled click.
fn apply(app: &AppHandle, running: &[ProcessSummary]) -> tauri::Result<()> {
    let state = app.state::<TrayState>();
    let runtime = &app.state::<AppState>().runtime;
    let model = TrayModel::new(
        running,
        next_routine_line(runtime),
        runtime.is_paused(),
        state.attention.load(Ordering::SeqCst),
        state.approvals.lock().unwrap_or_else(|e| e.into_inner()).len(),
    );
    let items = &state.items;
    items.processes.set_text(&model.processes)?;
    {
        let mut lines = items.process_lines.lock().unwrap_or_else(|e| e.into_inner());
        while lines.len() > model.process_lines.len() {
            if let Some(line) = lines.pop() {
                items.menu.remove(&line)?;
            }
        }
        for (i, text) in model.process_lines.iter().enumerate() {
            match lines.get(i) {
                Some(line) => line.set_text(text)?,
                None => {
                    let line = MenuItem::new(app, text, false, None::<&str>)?;
                    // Under the count, which is the menu's first item.
                    items.menu.insert(&line, 1 + i)?;
                    lines.push(line);
                }
            }
        }
    }
    items.routine.set_text(&model.next_routine)?;
    items.pause.set_checked(model.paused)?;
    state.icon.set_tooltip(Some(&model.tooltip))?;
    state
        .icon
        .set_icon(Some(if model.attention { ICON_ATTENTION } else { ICON }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(command: &str) -> ProcessSummary {
        ProcessSummary {
            id: "p".into(),
            owner: "user".into(),
            command: command.into(),
            cwd: "/".into(),
            pid: Some(1),
            state: "running".into(),
            started_at: 0,
            ended_at: None,
            exit_code: None,
            signal: None,
            background: true,
            pty: true,
        }
    }

    #[test]
    fn nothing_running() {
        assert_eq!(
            TrayModel::new(&[], "No routines".into(), false, false, 0),
            TrayModel {
                processes: "No processes running".into(),
                process_lines: vec![],
                next_routine: "No routines".into(),
                paused: false,
                attention: false,
                tooltip: "Vigil — no processes running".into(),
            }
        );
    }

    #[test]
    fn running_processes_are_counted_and_named_and_long_lists_cut() {
        let one = TrayModel::new(&[process("cargo build")], "No routines".into(), true, true, 0);
        assert_eq!(one.processes, "1 process running");
        assert_eq!(one.process_lines, ["  cargo build"]);
        assert_eq!(
            one.tooltip,
            "Vigil — 1 process running, background activity paused, something needs you"
        );
        let long = "x".repeat(100);
        let many: Vec<ProcessSummary> = ["a", "b", "c", "d", &long, "f", "g"].into_iter().map(process).collect();
        let model = TrayModel::new(&many, "No routines".into(), false, false, 0);
        assert_eq!(model.processes, "7 processes running");
        assert_eq!(model.process_lines.len(), 6);
        assert_eq!(model.process_lines[4], format!("  {}…", "x".repeat(39)));
        assert_eq!(model.process_lines[5], "  …and 2 more");
    }

    #[test]
    fn a_waiting_approval_shows_the_badge_even_when_the_window_reports_nothing() {
        let one = TrayModel::new(&[], "No routines".into(), false, false, 1);
        assert!(one.attention);
        assert_eq!(
            one.tooltip,
            "Vigil — no processes running, an approval is waiting for you"
        );
        let two = TrayModel::new(&[], "No routines".into(), false, true, 2);
        assert!(two.attention);
        assert_eq!(
            two.tooltip,
            "Vigil — no processes running, 2 approvals are waiting for you"
        );
    }
}
