//! The window never leaves the app: a navigation guard refuses every navigation of a webview
//! to another origin, whatever started it (a link the UI failed to catch, the context menu's
//! "Open Link", a dropped URL, a script setting `location`). The app's pages hold the IPC
//! bridge; a page from elsewhere in that window could call it.
//!
//! Allowed: the app's own origin (`tauri://localhost`, and `http(s)://tauri.localhost` where
//! Tauri serves the app that way: Windows and Android) and, in a dev build, the dev server's
//! origin. Links from untrusted text are copied by the UI instead (`ui/src/lib/links.ts`);
//! a refused navigation is only logged.

use tauri::plugin::{Builder, TauriPlugin};
use tauri::{Manager as _, Runtime, Url};

/// The plugin that installs the guard on every webview of the app.
pub fn guard<R: Runtime>() -> TauriPlugin<R> {
    Builder::new("vigil-navigation-guard")
        .on_navigation(|webview, url| {
            let dev_url = if tauri::is_dev() {
                webview.config().build.dev_url.clone()
            } else {
                None
            };
            let allowed = allowed(url, dev_url.as_ref());
            if !allowed {
                tracing::warn!(
                    webview = webview.label(),
                    "refused a navigation of the window to {}",
                    describe(url)
                );
            }
            allowed
        })
        .build()
}

/// Whether a webview of the app may navigate to `url`: only within the app's own origin
/// (or the dev server's, passed as `dev_url` in a dev build).
pub fn allowed(url: &Url, dev_url: Option<&Url>) -> bool {
    if is_app_origin(url) {
        return true;
    }
    match dev_url {
        Some(dev) => url.origin().is_tuple() && url.origin() == dev.origin(),
        None => false,
    }
}

/// The origin Tauri serves the bundled UI from on this platform.
fn is_app_origin(url: &Url) -> bool {
    let host = url.host_str();
    match url.scheme() {
        // Linux and macOS: the custom protocol itself.
        "tauri" => host == Some("localhost"),
        // Windows and Android serve the custom protocol as http(s)://tauri.localhost. Elsewhere
        // that name resolves to the loopback (RFC 6761), where any local server could answer.
        "http" | "https" if cfg!(any(windows, target_os = "android")) => {
            host == Some("tauri.localhost") && url.port().is_none()
        }
        _ => false,
    }
}

/// A URL for the log: its origin, not its path and query, which may carry tokens.
fn describe(url: &Url) -> String {
    let origin = url.origin();
    if origin.is_tuple() {
        origin.ascii_serialization()
    } else {
        format!("a {}: URL", url.scheme())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn the_apps_own_pages_are_allowed() {
        for u in [
            "tauri://localhost",
            "tauri://localhost/",
            "tauri://localhost/index.html",
            "tauri://localhost/index.html?mock=chat#bottom",
        ] {
            assert!(allowed(&url(u), None), "{u}");
        }
    }

    #[test]
    fn other_origins_are_refused() {
        for u in [
            "https://example.com/",
            "http://example.com/login",
            "http://127.0.0.1:8080/",
            "http://localhost:5173/",
            "tauri://evil/",
            "tauri://localhost.evil.example/",
            "file:///etc/passwd",
            "data:text/html,<script>alert(1)</script>",
            "javascript:alert(1)",
            "about:blank",
            "blob:https://example.com/1234",
            "ftp://example.com/",
        ] {
            assert!(!allowed(&url(u), None), "{u}");
        }
    }

    #[test]
    fn tauri_localhost_over_http_only_where_tauri_serves_it() {
        let windows_like = cfg!(any(windows, target_os = "android"));
        assert_eq!(allowed(&url("http://tauri.localhost/"), None), windows_like);
        assert_eq!(allowed(&url("https://tauri.localhost/index.html"), None), windows_like);
        // Never with a port: that is some local server, not the app.
        assert!(!allowed(&url("http://tauri.localhost:8080/"), None));
    }

    #[test]
    fn the_dev_server_only_in_a_dev_build() {
        let dev = url("http://localhost:5173");
        assert!(allowed(&url("http://localhost:5173/"), Some(&dev)));
        assert!(allowed(&url("http://localhost:5173/src/main.ts?x=1"), Some(&dev)));
        assert!(!allowed(&url("http://localhost:5174/"), Some(&dev)));
        assert!(!allowed(&url("https://localhost:5173/"), Some(&dev)));
        assert!(!allowed(&url("http://127.0.0.1:5173/"), Some(&dev)));
        assert!(!allowed(&url("https://example.com/"), Some(&dev)));
        assert!(!allowed(&url("http://localhost:5173/"), None));
    }

    #[test]
    fn the_log_shows_the_origin_only() {
        assert_eq!(
            describe(&url("https://example.com/reset?token=secret")),
            "https://example.com"
        );
        assert_eq!(describe(&url("data:text/html,hi")), "a data: URL");
    }
}
