//! Native notifications that lead somewhere: on Linux through notify-rust with a default
//! action, so clicking one brings the window forward and tells the UI which item it is about
//! (`vigil://focus`); elsewhere through tauri-plugin-notification, which has no click
//! callback there.
//!
//! An approval that a run nobody watches waits for (a continuation, a routine) also gets
//! **Allow once**, **Deny** and **Open** as freedesktop actions: the first two answer it
//! (`Op::Approval`) without the window, Open shows its card. Such a notification stays until
//! it is answered, here or on the card; then it is closed ([`resolved`]).
//!
//! The body is often text from a model or a command's output. Servers that render markup in
//! the body (the freedesktop `body-markup` capability: `<b>`, `<i>`, `<u>`, `<a href>`,
//! `<img>`; dunst, GNOME Shell, Plasma) get it escaped, so it is shown as the text it is: no
//! link dressed up as something else, no image fetched. The summary is plain text by the
//! specification and is sent as it is.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde::Serialize;
use tauri::{Emitter, Manager};
use tokio::sync::oneshot;
use vigil_core::protocol::{ApprovalDecision, Op};

/// The event the UI listens on to open the item a clicked notification is about.
pub const FOCUS_EVENT: &str = "vigil://focus";

/// What a clicked notification is about.
#[derive(Debug, Clone, Default, Serialize)]
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

/// Action identifiers sent to the server. `default` is the click on the notification itself.
pub const ACTION_DEFAULT: &str = "default";
pub const ACTION_ALLOW_ONCE: &str = "allow-once";
pub const ACTION_DENY: &str = "deny";
pub const ACTION_OPEN: &str = "open";

/// The actions a notification offers, `(identifier, label)`: Allow once, Deny and Open for
/// an approval that waits (no "always": that is remembered, and only the card shows what);
/// otherwise only the click.
pub fn actions(target: &FocusTarget) -> Vec<(&'static str, &'static str)> {
    if target.approval_id.is_some() {
        vec![
            (ACTION_DEFAULT, "Open"),
            (ACTION_ALLOW_ONCE, "Allow once"),
            (ACTION_DENY, "Deny"),
            (ACTION_OPEN, "Open"),
        ]
    } else {
        vec![(ACTION_DEFAULT, "Open Vigil")]
    }
}

/// What an invoked action does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// Bring the window forward at the notification's item.
    Open,
    /// Answer the approval request `id` without the window.
    Answer { id: String, decision: ApprovalDecision },
    /// Nothing (closed, or an action this notification does not have).
    Nothing,
}

/// The response to `action` on a notification about `target`.
pub fn response(action: &str, target: &FocusTarget) -> Response {
    let answer = |decision| match &target.approval_id {
        Some(id) => Response::Answer {
            id: id.clone(),
            decision,
        },
        None => Response::Nothing,
    };
    match action {
        ACTION_DEFAULT | ACTION_OPEN => Response::Open,
        ACTION_ALLOW_ONCE => answer(ApprovalDecision::Approve),
        ACTION_DENY => answer(ApprovalDecision::Deny),
        _ => Response::Nothing,
    }
}

/// Notifications about approvals still waiting, by request id: a send closes it. `std`
/// lock, held only to insert or take.
#[derive(Default)]
pub struct Waiting(Mutex<HashMap<String, oneshot::Sender<()>>>);

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

/// Carries out what the user chose on a notification.
fn respond(app: &tauri::AppHandle, action: &str, target: FocusTarget) {
    match response(action, &target) {
        Response::Open => focus(app, target),
        Response::Answer { id, decision } => {
            tracing::info!("approval {id} answered from its notification: {decision:?}");
            app.state::<crate::AppState>()
                .runtime
                .submit(Op::Approval { id, decision });
        }
        Response::Nothing => {}
    }
}

/// The approval request `id` was answered (here, on its card, or by its timeout): its
/// notification, if one is up, goes away.
pub fn resolved(app: &tauri::AppHandle, id: &str) {
    let Some(waiting) = app.try_state::<Waiting>() else {
        return;
    };
    let closer = waiting.0.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
    if let Some(closer) = closer {
        let _ = closer.send(());
    }
}

/// Shows a notification; a click on it (its default action) calls [`focus`], and an
/// approval's buttons answer it. Runs on the async runtime: nothing here blocks the caller,
/// and a notification waiting for its click holds no thread.
#[cfg(target_os = "linux")]
pub fn show(app: &tauri::AppHandle, title: &str, body: &str, target: FocusTarget) {
    // Registered before anything is shown, so an answer that comes first is not missed.
    let closed = target.approval_id.as_ref().map(|id| {
        let (tx, rx) = oneshot::channel();
        if let Some(waiting) = app.try_state::<Waiting>() {
            waiting
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id.clone(), tx);
        }
        rx
    });
    let app = app.clone();
    let (title, body) = (title.to_string(), body.to_string());
    tauri::async_runtime::spawn(async move {
        // Asked each time: the server may have changed. If it cannot be asked, escaped anyway
        // (at worst `&amp;` shows through; never markup read from the text). notify-rust
        // only asks blocking, which must not run on the runtime's own threads.
        let markup = tokio::task::spawn_blocking(notify_rust::get_capabilities)
            .await
            .ok()
            .and_then(Result::ok)
            .map(|caps| caps.iter().any(|c| c == "body-markup"))
            .unwrap_or(true);
        let mut notification = notify_rust::Notification::new();
        notification
            .appname("Vigil")
            .summary(&title)
            .body(&body_for_server(&body, markup));
        for (id, label) in actions(&target) {
            notification.action(id, label);
        }
        if closed.is_some() {
            // A question stays until it is answered (or its run stops waiting).
            notification.timeout(notify_rust::Timeout::Never);
        }
        let handle = match notification.show_async().await {
            Ok(handle) => handle,
            Err(e) => return unavailable(&app, &e.to_string()),
        };
        let mut chosen = None;
        let waited = handle.wait_for_action_async(|response| {
            chosen = match response {
                notify_rust::NotificationResponse::Default => Some(ACTION_DEFAULT.to_string()),
                notify_rust::NotificationResponse::Action(action) => Some(action.clone()),
                _ => None,
            }
        });
        match closed {
            Some(closed) => {
                tokio::select! {
                    _ = waited => {}
                    // Answered elsewhere (or the sender is gone with the app's state).
                    _ = closed => {
                        handle.close_async().await;
                        return;
                    }
                }
            }
            None => waited.await,
        }
        if let Some(approval) = &target.approval_id {
            resolved(&app, approval);
        }
        if let Some(action) = chosen {
            respond(&app, &action, target);
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

    fn waiting_for(id: &str) -> FocusTarget {
        FocusTarget {
            approval_id: Some(id.into()),
            session_id: Some("s1".into()),
            ..FocusTarget::default()
        }
    }

    #[test]
    fn an_approval_that_waits_offers_allow_once_deny_and_open_and_never_always() {
        let labels: Vec<_> = actions(&waiting_for("a1")).into_iter().map(|(_, l)| l).collect();
        assert_eq!(labels, ["Open", "Allow once", "Deny", "Open"]);
        assert_eq!(actions(&FocusTarget::default()), [(ACTION_DEFAULT, "Open Vigil")]);
    }

    #[test]
    fn the_buttons_answer_the_request_they_are_about() {
        let target = waiting_for("a1");
        assert_eq!(
            response(ACTION_ALLOW_ONCE, &target),
            Response::Answer {
                id: "a1".into(),
                decision: ApprovalDecision::Approve
            }
        );
        assert_eq!(
            response(ACTION_DENY, &target),
            Response::Answer {
                id: "a1".into(),
                decision: ApprovalDecision::Deny
            }
        );
        assert_eq!(response(ACTION_OPEN, &target), Response::Open);
        assert_eq!(response(ACTION_DEFAULT, &target), Response::Open);
        // "Always" is never sent as an action; nor does a plain notification answer anything.
        assert_eq!(response("always", &target), Response::Nothing);
        assert_eq!(response(ACTION_ALLOW_ONCE, &FocusTarget::default()), Response::Nothing);
    }

    #[test]
    fn a_server_without_markup_gets_the_text_as_it_is() {
        assert_eq!(body_for_server("a < b & <b>c</b>", false), "a < b & <b>c</b>");
    }
}
