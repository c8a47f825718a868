//! Native notifications that lead somewhere: on Linux through notify-rust with a default
//! action, so clicking one brings the window forward and tells the UI which item it is about
//! (`vigil://focus`); elsewhere through tauri-plugin-notification, which has no click
//! callback there.
//!
//! The body is often text from a model or a command's output. Servers that render markup in
//! the body (the freedesktop `body-markup` capability: `<b>`, `<i>`, `<u>`, `<a href>`,
//! `<img>`; dunst, GNOME Shell, Plasma) get it escaped, so it is shown as the text it is: no
//! link dressed up as something else, no image fetched. The summary is plain text by the
//! specification and is sent as it is.

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
        // Asked each time: the server may have changed. If it cannot be asked, escaped anyway
        // (at worst `&amp;` shows through; never markup read from the text).
        let markup = notify_rust::get_capabilities()
            .map(|caps| caps.iter().any(|c| c == "body-markup"))
            .unwrap_or(true);
        let shown = notify_rust::Notification::new()
            .appname("Vigil")
            .summary(&title)
            .body(&body_for_server(&body, markup))
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
