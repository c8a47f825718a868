//! Native notifications that lead somewhere: on Linux straight over the session bus, with a
//! default action, so clicking one brings the window forward and tells the UI which item it is
//! about (`vigil://focus`); elsewhere through tauri-plugin-notification, which has no click
//! callback there.
//!
//! An approval that a run nobody watches waits for (a continuation, a routine) also gets
//! **Allow once**, **Deny** and **Open** as freedesktop actions: the first two answer it
//! (`Op::Approval`) without the window, Open shows its card. Such a notification stays until
//! it is answered, here or on the card; then it is closed ([`resolved`]). An answer counts
//! only from the bus name that owns `org.freedesktop.Notifications`, for a notification Vigil
//! sent that is still up, under that notification's one-time key ([`ledger`]): any program on
//! the session bus can emit `ActionInvoked`.
//!
//! The body is often text from a model or a command's output. Servers that render markup in
//! the body (the freedesktop `body-markup` capability: `<b>`, `<i>`, `<u>`, `<a href>`,
//! `<img>`; dunst, GNOME Shell, Plasma) get it escaped, so it is shown as the text it is: no
//! link dressed up as something else, no image fetched. The summary is plain text by the
//! specification and is sent as it is.
//!
//! - `ledger` — which answers count: the decision, with no bus in it.
//! - `bus` — the connection to the notification server and the task that listens on it.

#[cfg(target_os = "linux")]
mod bus;
// The decision is plain data; only the Linux path sends actions.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
mod ledger;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use tauri::{Emitter, Manager};
#[cfg(target_os = "linux")]
use vigil_core::protocol::Op;

use ledger::Ledger;

/// The event the UI listens on to open the item a clicked notification is about.
pub const FOCUS_EVENT: &str = "vigil://focus";

/// What a clicked notification is about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FocusTarget {
    /// The background update to open, if the notification announced one.
    pub event_id: Option<String>,
    /// The process to open in the Processes panel, for a finished command.
    pub process_id: Option<String>,
    /// The approval request whose card to show (an unattended run waits for it).
    pub approval_id: Option<String>,
    /// The conversation to open: a continuation's answer, or where it stopped.
    pub session_id: Option<String>,
    /// The message to scroll to in that conversation, by its timestamp.
    pub message_ts: Option<i64>,
}

/// The desktop's notifications: what counts as an answer, and the connection to the
/// notification server, made on the first notification (a session with no bus or no server
/// costs nothing until then, and a failed attempt is tried again on the next one).
#[derive(Default)]
pub struct Notifications {
    /// Shared with the listener. A `std` mutex: held only to read or change it, never across
    /// an await, so sync code (the event sink) notes questions and answers at once.
    ledger: Arc<Mutex<Ledger>>,
    #[cfg(target_os = "linux")]
    notifier: tokio::sync::OnceCell<bus::Notifier>,
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

/// Carries out an answer the ledger let through.
#[cfg(target_os = "linux")]
fn respond(app: &tauri::AppHandle, outcome: ledger::Outcome) {
    match outcome {
        ledger::Outcome::Open(target) => focus(app, target),
        ledger::Outcome::Answer { id, decision } => {
            tracing::info!("approval {id} answered from its notification: {decision:?}");
            if let Some(state) = app.try_state::<crate::AppState>() {
                state.runtime.submit(Op::Approval { id, decision });
            }
        }
        ledger::Outcome::Closed | ledger::Outcome::Ignored(_) => {}
    }
}

/// The approval request `id` was answered (here, on its card, or by its timeout): its
/// notification's keys are used up at once, and the notification, if one is up, goes away.
pub fn resolved(app: &tauri::AppHandle, id: &str) {
    let Some(state) = app.try_state::<Notifications>() else {
        return;
    };
    let up = ledger::lock(&state.ledger).resolved(id);
    #[cfg(target_os = "linux")]
    if let (Some((server, nid)), Some(notifier)) = (up, state.notifier.get().cloned()) {
        tauri::async_runtime::spawn(async move { notifier.close(&server, nid).await });
    }
    #[cfg(not(target_os = "linux"))]
    let _ = up;
}

/// The connection to the notification server, made (and its listener started) on first use.
#[cfg(target_os = "linux")]
async fn notifier<'a>(app: &tauri::AppHandle, state: &'a Notifications) -> zbus::Result<&'a bus::Notifier> {
    state
        .notifier
        .get_or_try_init(|| async {
            // A server that hangs must not hold a notification's task for ever.
            let conn = zbus::connection::Builder::session()
                .method_timeout(std::time::Duration::from_secs(25))
                .build()
                .await?;
            let app = app.clone();
            let on: bus::OnOutcome = Arc::new(move |outcome| respond(&app, outcome));
            bus::Notifier::start(conn, state.ledger.clone(), on).await
        })
        .await
}

/// Shows a notification; a click on it (its default action) calls [`focus`], and an
/// approval's buttons answer it. Runs on the async runtime: nothing here blocks the caller,
/// and a notification waiting for its click holds no task.
#[cfg(target_os = "linux")]
pub fn show(app: &tauri::AppHandle, title: &str, body: &str, target: FocusTarget) {
    let Some(state) = app.try_state::<Notifications>() else {
        return;
    };
    // Noted before anything is shown, so an answer on the card that comes first is not missed.
    if let Some(id) = &target.approval_id {
        ledger::lock(&state.ledger).expect(id);
    }
    let app = app.clone();
    let (title, body) = (title.to_string(), body.to_string());
    tauri::async_runtime::spawn(async move {
        let state = app.state::<Notifications>();
        let shown = match notifier(&app, &state).await {
            Ok(notifier) => notifier.show(&title, &body, target).await.map(drop),
            Err(e) => Err(e),
        };
        if let Err(e) = shown {
            unavailable(&app, &e.to_string());
        }
    });
}

#[cfg(not(target_os = "linux"))]
pub fn show(app: &tauri::AppHandle, title: &str, body: &str, _target: FocusTarget) {
    use tauri_plugin_notification::NotificationExt;
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        unavailable(app, &e.to_string());
    }
}

/// The body as sent to a server that renders markup in it (`markup`) or shows it as it is.
pub fn body_for_server(body: &str, markup: bool) -> std::borrow::Cow<'_, str> {
    if markup {
        escape_markup(body)
    } else {
        std::borrow::Cow::Borrowed(body)
    }
}

/// `text` with `&`, `<` and `>` escaped for freedesktop notification body markup.
pub fn escape_markup(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['&', '<', '>']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_in_a_body_is_escaped_for_servers_that_render_it() {
        let body = r#"<b>Done</b> & <i>ok</i> <a href="https://evil.example">Open Vigil</a> <img src="file:///x.png"/> &amp; a < b > c"#;
        let sent = body_for_server(body, true);
        assert_eq!(
            sent,
            r#"&lt;b&gt;Done&lt;/b&gt; &amp; &lt;i&gt;ok&lt;/i&gt; &lt;a href="https://evil.example"&gt;Open Vigil&lt;/a&gt; &lt;img src="file:///x.png"/&gt; &amp;amp; a &lt; b &gt; c"#
        );
        assert!(!sent.contains(['<', '>']));
        // Every `&` left starts an entity this function wrote.
        let rest = sent.replace("&amp;", "").replace("&lt;", "").replace("&gt;", "");
        assert!(!rest.contains('&'), "{rest}");
    }

    #[test]
    fn plain_text_is_unchanged() {
        let text = "build finished: 3 warnings, \"quoted\" and 'single', ünïcode ✓\nsecond line";
        assert!(matches!(escape_markup(text), std::borrow::Cow::Borrowed(_)));
        assert_eq!(body_for_server(text, true), text);
    }

    #[test]
    fn a_server_without_markup_gets_the_text_as_it_is() {
        assert_eq!(body_for_server("a < b & <b>c</b>", false), "a < b & <b>c</b>");
    }
}
