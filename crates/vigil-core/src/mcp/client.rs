//! # mcp::client
//!
//! Owns one connection to a server on `rmcp`: starting it (a stdio process of our own, or a
//! streamable HTTP session), the `initialize` handshake under a deadline, the first
//! `tools/list`, and what the server tells us unasked — progress of a call (routed to that
//! call's live updates) and `notifications/tools/list_changed`.
//!
//! Must never: wait on a server without a deadline, or keep a process that failed to
//! initialize.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::stdio::{self, StderrTail, StdioChild};

/// How long a server may take to start and answer `initialize` and `tools/list`.
pub const INIT_TIMEOUT: Duration = Duration::from_secs(10);

/// Progress notifications for tokens no call waits on (yet) are kept, this many at most.
const EARLY_PROGRESS: usize = 64;

/// Where a server's progress notifications go: to the call that holds the token. Cheap to
/// clone. A `std` lock: never held across an await.
#[derive(Clone, Default)]
pub struct ProgressRoutes(Arc<Mutex<HashMap<ProgressToken, Route>>>);

enum Route {
    Waiting(UnboundedSender<String>),
    /// Arrived before the call subscribed (the request is on its way before its token is
    /// known here); handed over on subscription.
    Early(String),
}

impl ProgressRoutes {
    fn deliver(&self, p: &ProgressNotificationParam) {
        let text = progress_text(p);
        let mut routes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match routes.get(&p.progress_token) {
            Some(Route::Waiting(tx)) => {
                let _ = tx.send(text);
            }
            _ if routes.len() < EARLY_PROGRESS => {
                routes.insert(p.progress_token.clone(), Route::Early(text));
            }
            _ => {}
        }
    }

    /// The progress of the call with `token`, until the guard is dropped.
    pub fn subscribe(&self, token: ProgressToken) -> (UnboundedReceiver<String>, RouteGuard) {
        let (tx, rx) = unbounded_channel();
        let mut routes = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Route::Early(text)) = routes.insert(token.clone(), Route::Waiting(tx.clone())) {
            let _ = tx.send(text);
        }
        (
            rx,
            RouteGuard {
                routes: self.clone(),
                token,
            },
        )
    }
}

/// Unsubscribes a call from progress when it ends.
pub struct RouteGuard {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.routes
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.token);
    }
}

/// "Progress 3 of 5: reading files", for the tool card.
pub fn progress_text(p: &ProgressNotificationParam) -> String {
    let num = |n: f64| match n.fract() == 0.0 && n.abs() < 1e15 {
        true => format!("{}", n as i64),
        false => format!("{n:.1}"),
    };
    let mut text = match p.total {
        Some(total) => format!("Progress {} of {}", num(p.progress), num(total)),
        None => format!("Progress {}", num(p.progress)),
    };
    if let Some(message) = p.message.as_deref().filter(|m| !m.trim().is_empty()) {
        text.push_str(": ");
        text.push_str(message.trim());
    }
    text
}

/// What a server tells Vigil unasked.
#[derive(Clone)]
pub struct Handler {
    server: String,
    pub progress: ProgressRoutes,
    /// Signalled by `notifications/tools/list_changed`; the supervisor lists the tools again.
    pub list_changed: Arc<Notify>,
}

impl Handler {
    pub fn new(server: &str) -> Self {
        Self {
            server: server.to_string(),
            progress: ProgressRoutes::default(),
            list_changed: Arc::new(Notify::new()),
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("vigil", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _: NotificationContext<RoleClient>) {
        self.progress.deliver(&params);
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        tracing::info!(server = self.server, "the MCP server's tools changed");
        self.list_changed.notify_one();
    }
}

/// A connection that initialized.
pub struct Live {
    pub service: RunningService<RoleClient, Handler>,
    /// A stdio server's process, to stop when the connection ends.
    pub child: Option<StdioChild>,
}

/// How to reach the server, its secrets already read from the keyring.
pub enum Endpoint<'a> {
    Stdio {
        command: &'a str,
        args: &'a [String],
        env: Vec<(String, String)>,
        cwd: Option<&'a std::path::Path>,
        tail: StderrTail,
    },
    Http {
        url: &'a str,
        headers: Vec<(String, String)>,
    },
}

/// Starts and initializes the server within `init_timeout`; the error says what went wrong
/// in words for Settings.
pub async fn connect(
    server: &str,
    endpoint: Endpoint<'_>,
    handler: Handler,
    ct: CancellationToken,
    init_timeout: Duration,
) -> Result<Live, String> {
    let secs = init_timeout.as_secs_f64();
    match endpoint {
        Endpoint::Stdio {
            command,
            args,
            env,
            cwd,
            tail,
        } => {
            let spawned = stdio::spawn(stdio::Spawn {
                server,
                command,
                args,
                env: &env,
                cwd,
                tail,
            });
            let (mut child, stdout, stdin) = spawned.map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("could not start `{command}`: it was not found (is it installed, and on PATH?)")
                }
                _ => format!("could not start `{command}`: {e}"),
            })?;
            let started = tokio::time::timeout(init_timeout, handler.serve_with_ct((stdout, stdin), ct)).await;
            match started {
                Ok(Ok(service)) => Ok(Live {
                    service,
                    child: Some(child),
                }),
                Ok(Err(e)) => {
                    let exit = child.exit_within(Duration::from_millis(500)).await;
                    child.stop().await;
                    Err(match exit {
                        Some(status) => format!("exited during initialize ({status})"),
                        None => format!("could not initialize: {e}"),
                    })
                }
                Err(_) => {
                    child.stop().await;
                    Err(format!("did not answer `initialize` within {secs} s"))
                }
            }
        }
        Endpoint::Http { url, headers } => {
            let mut custom = HashMap::new();
            for (name, value) in headers {
                let header = http::HeaderName::try_from(name.as_str())
                    .map_err(|_| format!("{name:?} is not a valid HTTP header name"))?;
                let value = http::HeaderValue::try_from(value.as_str())
                    .map_err(|_| format!("the value of the header {name} is not valid in HTTP"))?;
                custom.insert(header, value);
            }
            let config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom);
            let transport = StreamableHttpClientTransport::from_config(config);
            match tokio::time::timeout(init_timeout, handler.serve_with_ct(transport, ct)).await {
                Ok(Ok(service)) => Ok(Live { service, child: None }),
                Ok(Err(e)) => Err(format!("could not initialize over HTTP at {url}: {e}")),
                Err(_) => Err(format!("did not answer `initialize` at {url} within {secs} s")),
            }
        }
    }
}

/// Makes rustls use the ring provider (the one the provider clients already build), so the
/// HTTP transport can open `https://` URLs. Once per process; later calls do nothing.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(token: u32, done: f64, total: Option<f64>, message: Option<&str>) -> ProgressNotificationParam {
        let mut p =
            ProgressNotificationParam::new(ProgressToken(rmcp::model::NumberOrString::Number(token as i64)), done);
        p.total = total;
        p.message = message.map(str::to_string);
        p
    }

    #[test]
    fn progress_reaches_its_call_even_when_it_comes_before_the_subscription() {
        let routes = ProgressRoutes::default();
        let token = |n: i64| ProgressToken(rmcp::model::NumberOrString::Number(n));
        routes.deliver(&progress(1, 1.0, Some(5.0), None));
        let (mut rx, guard) = routes.subscribe(token(1));
        routes.deliver(&progress(1, 2.0, Some(5.0), Some("reading")));
        routes.deliver(&progress(2, 7.5, None, None));
        assert_eq!(rx.try_recv().unwrap(), "Progress 1 of 5");
        assert_eq!(rx.try_recv().unwrap(), "Progress 2 of 5: reading");
        assert!(rx.try_recv().is_err(), "another call's progress is not this one's");
        drop(guard);
        assert!(!routes.0.lock().unwrap().contains_key(&token(1)));
        assert_eq!(progress_text(&progress(2, 7.5, None, None)), "Progress 7.5");
    }
}
