//! # mcp::server
//!
//! Owns one configured server's life, as a supervisor task: start it, initialize it, list its
//! tools, keep them current on `notifications/tools/list_changed`, and when it ends on its own
//! start it again after a backoff (1 s, doubling to 30 s), giving up after five failures in a
//! row until the user restarts it. Calls find the live connection here ([`Server::connection`])
//! and wait for a server that is (re)starting.
//!
//! Must never: run two processes for one server, or outlive its stop token.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient};
use tokio::sync::{watch, Notify};
use tokio_util::sync::CancellationToken;
use vigil_protocol::McpServerState;

use super::client::{self, Endpoint, Handler, Live, ProgressRoutes};
use super::config::{ConfigValue, ServerConfig, Target};
use super::schema;
use super::stdio::StderrTail;
use crate::clock::Clock;
use crate::provider::ToolSpec;
use crate::secrets::Secrets;

/// The timings of the supervisor; tests shorten them.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    /// Starting and `initialize` (and the first `tools/list`) together.
    pub init_timeout: Duration,
    /// The wait before the first restart; it doubles up to `max_backoff`.
    pub first_backoff: Duration,
    pub max_backoff: Duration,
    /// A server that ran this long before it ended starts its count of failures afresh.
    pub stable_after: Duration,
    /// Failures in a row before the supervisor stops trying.
    pub max_tries: u32,
    /// How long a call waits for a server that is starting or restarting.
    pub start_wait: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Self {
            init_timeout: client::INIT_TIMEOUT,
            first_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            stable_after: Duration::from_secs(60),
            max_tries: 5,
            start_wait: Duration::from_secs(20),
        }
    }
}

/// One tool of a running server, as offered to the model.
#[derive(Debug, Clone)]
pub struct OfferedTool {
    /// The server's own name for it, which calls use.
    pub name: String,
    /// `mcp__<server>__<tool>`, its description and its sanitized schema.
    pub spec: ToolSpec,
    /// `readOnlyHint: true`.
    pub read_only: bool,
}

/// A live connection: where calls go.
pub struct Connection {
    pub peer: Peer<RoleClient>,
    pub tools: Vec<OfferedTool>,
    pub progress: ProgressRoutes,
}

/// What a server is doing.
#[derive(Clone)]
pub enum Status {
    Starting,
    Running(Arc<Connection>),
    Failed {
        error: String,
        retry_at: Option<i64>,
    },
    Disabled,
    /// Removed, replaced, or Vigil is quitting.
    Stopped,
}

impl Status {
    pub fn view(&self) -> McpServerState {
        match self {
            Status::Starting => McpServerState::Starting,
            Status::Running(_) => McpServerState::Running,
            Status::Failed { error, retry_at } => McpServerState::Failed {
                error: error.clone(),
                retry_at: *retry_at,
            },
            Status::Disabled => McpServerState::Disabled,
            Status::Stopped => McpServerState::Failed {
                error: "stopped".into(),
                retry_at: None,
            },
        }
    }
}

/// One configured server: its entry, its state, and the handles that stop or restart it.
pub struct Server {
    pub name: String,
    /// Its entry in `mcp.json`, or why it cannot be read.
    pub config: Result<ServerConfig, String>,
    /// Changed from Settings without a restart.
    trusted: AtomicBool,
    status: watch::Sender<Status>,
    pub tail: StderrTail,
    restart: Notify,
    stop: CancellationToken,
}

impl Server {
    pub fn new(name: &str, config: Result<ServerConfig, String>, stop: CancellationToken) -> Arc<Self> {
        let trusted = config.as_ref().is_ok_and(|c| c.trusted);
        Arc::new(Self {
            name: name.to_string(),
            config,
            trusted: AtomicBool::new(trusted),
            status: watch::channel(Status::Starting).0,
            tail: StderrTail::default(),
            restart: Notify::new(),
            stop,
        })
    }

    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    pub fn trusted(&self) -> bool {
        self.trusted.load(Ordering::Relaxed)
    }

    pub fn set_trusted(&self, trusted: bool) {
        self.trusted.store(trusted, Ordering::Relaxed);
    }

    /// How long one call may take.
    pub fn call_timeout(&self) -> Duration {
        self.config
            .as_ref()
            .map(|c| c.timeout)
            .unwrap_or(Duration::from_secs(vigil_protocol::DEFAULT_MCP_CALL_TIMEOUT_SECS))
    }

    /// Stops it for good (removed, replaced, quitting).
    pub fn stop(&self) {
        self.stop.cancel();
    }

    pub fn request_restart(&self) {
        self.restart.notify_one();
    }

    /// The live connection; waits up to `wait` for a server that is starting or will be
    /// restarted, and says why not in words for the model.
    pub async fn connection(&self, wait: Duration) -> Result<Arc<Connection>, String> {
        let mut rx = self.status.subscribe();
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(deadline);
        loop {
            let why = match &*rx.borrow_and_update() {
                Status::Running(c) => return Ok(c.clone()),
                Status::Failed { error, retry_at: None } => {
                    return Err(format!("The MCP server `{}` is not running ({error}).", self.name))
                }
                Status::Disabled => return Err(format!("The MCP server `{}` is turned off.", self.name)),
                Status::Stopped => return Err(format!("The MCP server `{}` was stopped.", self.name)),
                Status::Starting => "it is starting".to_string(),
                Status::Failed { error, .. } => format!("{error}; it is being restarted"),
            };
            tokio::select! {
                changed = rx.changed() => if changed.is_err() {
                    return Err(format!("The MCP server `{}` was stopped.", self.name));
                },
                () = &mut deadline => return Err(format!(
                    "The MCP server `{}` is not running ({why}); try again in a moment.",
                    self.name
                )),
            }
        }
    }

    fn set(&self, status: Status, deps: &Deps) {
        self.status.send_replace(status);
        (deps.changed)();
    }
}

/// What a supervisor needs besides its server.
#[derive(Clone)]
pub struct Deps {
    pub secrets: Secrets,
    pub clock: Arc<dyn Clock>,
    /// Called after every change of state (the manager tells Settings).
    pub changed: Arc<dyn Fn() + Send + Sync>,
    pub timings: Timings,
}

/// How one connection ended.
enum Ended {
    /// The stop token fired: nothing more to do.
    Stopped,
    /// The user asked for a restart: start again at once, no failure counted.
    Restart,
    /// Retrying cannot help (a secret is missing): wait for the user.
    Permanent(String),
    /// It failed to start, or ended on its own after running `ran`.
    Failed { error: String, ran: Duration },
}

/// Runs `server` until its stop token fires.
pub async fn supervise(server: Arc<Server>, deps: Deps) {
    let config = match &server.config {
        Err(e) => {
            return server.set(
                Status::Failed {
                    error: format!("its entry in mcp.json is wrong: {e}"),
                    retry_at: None,
                },
                &deps,
            )
        }
        Ok(c) if c.disabled => return server.set(Status::Disabled, &deps),
        Ok(c) => c.clone(),
    };
    let t = deps.timings;
    let mut failures = 0u32;
    while !server.stop.is_cancelled() {
        server.set(Status::Starting, &deps);
        let (error, permanent) = match run_once(&server, &config, &deps).await {
            Ended::Stopped => break,
            Ended::Restart => {
                failures = 0;
                continue;
            }
            Ended::Permanent(error) => (error, true),
            Ended::Failed { error, ran } => {
                if ran >= t.stable_after {
                    failures = 0;
                }
                (error, false)
            }
        };
        failures += 1;
        tracing::warn!(server = server.name, failures, "MCP server: {error}");
        if permanent || failures >= t.max_tries {
            let error = match permanent {
                true => error,
                false => format!("{error}; gave up after {failures} tries in a row"),
            };
            server.set(Status::Failed { error, retry_at: None }, &deps);
            tokio::select! {
                () = server.restart.notified() => failures = 0,
                () = server.stop.cancelled() => break,
            }
            continue;
        }
        let delay = backoff(&t, failures);
        let retry_at = deps.clock.now_ms().saturating_add(delay.as_millis() as i64);
        server.set(
            Status::Failed {
                error,
                retry_at: Some(retry_at),
            },
            &deps,
        );
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = server.restart.notified() => failures = 0,
            () = server.stop.cancelled() => break,
        }
    }
    server.set(Status::Stopped, &deps);
}

fn backoff(t: &Timings, failures: u32) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    t.first_backoff.saturating_mul(factor).min(t.max_backoff)
}

/// Reads the values kept in the keyring (off the async threads: a keyring can be slow).
async fn resolve(
    server: &str,
    values: &[(String, ConfigValue)],
    secrets: &Secrets,
) -> Result<Vec<(String, String)>, String> {
    let (values, secrets) = (values.to_vec(), secrets.clone());
    let server = server.to_string();
    tokio::task::spawn_blocking(move || {
        values
            .into_iter()
            .map(|(name, value)| match value {
                ConfigValue::Plain(v) => Ok((name, v)),
                ConfigValue::Keyring(account) => match secrets.get_named(&account) {
                    Some(v) => Ok((name, v)),
                    None => Err(format!(
                        "the secret value of {name} is not in the keyring ({account}); remove the server and add it again"
                    )),
                },
            })
            .collect()
    })
    .await
    .unwrap_or_else(|e| Err(format!("reading the secrets of {server} failed: {e}")))
}

async fn run_once(server: &Arc<Server>, config: &ServerConfig, deps: &Deps) -> Ended {
    let t = deps.timings;
    let endpoint = match &config.target {
        Target::Stdio {
            command,
            args,
            env,
            cwd,
        } => match resolve(&server.name, env, &deps.secrets).await {
            Ok(env) => Endpoint::Stdio {
                // Each start shows its own stderr: a retry's tail is not the earlier run's
                // lines again (they are in the log).
                tail: {
                    server.tail.clear();
                    server.tail.clone()
                },
                command,
                args,
                env,
                cwd: cwd.as_deref(),
            },
            Err(e) => return Ended::Permanent(e),
        },
        Target::Http { url, headers } => match resolve(&server.name, headers, &deps.secrets).await {
            Ok(headers) => Endpoint::Http { url, headers },
            Err(e) => return Ended::Permanent(e),
        },
    };
    let handler = Handler::new(&server.name);
    // This connection's own token, so a restart can end it without stopping the server.
    let ct = server.stop.child_token();
    let started = Instant::now();
    let connected = tokio::select! {
        c = client::connect(&server.name, endpoint, handler.clone(), ct.clone(), t.init_timeout) => c,
        () = server.stop.cancelled() => return Ended::Stopped,
    };
    let Live { service, mut child } = match connected {
        Ok(live) => live,
        Err(_) if server.stop.is_cancelled() => return Ended::Stopped,
        Err(error) => {
            return Ended::Failed {
                error,
                ran: started.elapsed(),
            }
        }
    };
    let peer = service.peer().clone();
    let left = t.init_timeout.saturating_sub(started.elapsed());
    match list_tools(&server.name, &peer, left).await {
        Ok(tools) => server.set(Status::Running(connection(&peer, tools, &handler)), deps),
        Err(error) => {
            ct.cancel();
            let _ = service.waiting().await;
            if let Some(child) = child {
                child.stop().await;
            }
            return Ended::Failed {
                error,
                ran: started.elapsed(),
            };
        }
    }
    let running_since = Instant::now();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    let mut restart = false;
    loop {
        tokio::select! {
            _ = &mut waiting => break,
            () = handler.list_changed.notified() => match list_tools(&server.name, &peer, t.init_timeout).await {
                Ok(tools) => server.set(Status::Running(connection(&peer, tools, &handler)), deps),
                Err(e) => tracing::warn!(server = server.name, "could not list the changed tools: {e}"),
            },
            () = server.restart.notified() => {
                restart = true;
                ct.cancel();
            }
        }
    }
    let exit = match &mut child {
        Some(c) if !ct.is_cancelled() => c.exit_within(Duration::from_millis(500)).await,
        _ => None,
    };
    if let Some(child) = child {
        child.stop().await;
    }
    if server.stop.is_cancelled() {
        return Ended::Stopped;
    }
    if restart {
        return Ended::Restart;
    }
    let error = match (exit, &config.target) {
        (Some(status), _) => format!("exited ({status})"),
        (None, Target::Stdio { .. }) => "closed its connection".to_string(),
        (None, Target::Http { .. }) => "the HTTP connection ended".to_string(),
    };
    Ended::Failed {
        error,
        ran: running_since.elapsed(),
    }
}

fn connection(peer: &Peer<RoleClient>, tools: Vec<OfferedTool>, handler: &Handler) -> Arc<Connection> {
    Arc::new(Connection {
        peer: peer.clone(),
        tools,
        progress: handler.progress.clone(),
    })
}

async fn list_tools(server: &str, peer: &Peer<RoleClient>, wait: Duration) -> Result<Vec<OfferedTool>, String> {
    let tools = match tokio::time::timeout(wait, peer.list_all_tools()).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(e)) => return Err(format!("could not list its tools: {e}")),
        Err(_) => return Err(format!("did not list its tools within {} s", wait.as_secs())),
    };
    Ok(tools
        .into_iter()
        .map(|tool| {
            let name = tool.name.to_string();
            let annotations = tool.annotations.as_ref();
            let title = tool.title.clone().or_else(|| annotations.and_then(|a| a.title.clone()));
            OfferedTool {
                spec: ToolSpec {
                    name: schema::qualified_name(server, &name),
                    description: schema::description(server, tool.description.as_deref(), title.as_deref(), &name),
                    parameters: schema::sanitize(&tool.input_schema),
                },
                read_only: annotations.and_then(|a| a.read_only_hint).unwrap_or(false),
                name,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_back_off_by_doubling_up_to_the_cap() {
        let t = Timings::default();
        let waits: Vec<u64> = (1..=7).map(|n| backoff(&t, n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
    }

    /// The README's "restarted after a crash (after 1 s, then 2, 4 …); after five failures in
    /// a row it waits for Restart", with the timings Vigil uses, on paused time: a server
    /// whose program is missing fails at every start.
    #[tokio::test(start_paused = true)]
    async fn after_five_failures_in_a_row_it_waits_for_restart_and_restart_counts_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let config =
            super::super::config::parse_entry(&serde_json::json!({"command": "/nonexistent/vigil-mcp-server"}));
        let stop = CancellationToken::new();
        let server = Server::new("gone", config, stop.clone());
        // Every state the server goes through, with the seconds since the start.
        let seen: Arc<std::sync::Mutex<Vec<(u64, String)>>> = Arc::default();
        let t0 = tokio::time::Instant::now();
        let changed = {
            let (seen, server) = (seen.clone(), server.clone());
            Arc::new(move || {
                let state = match server.status() {
                    Status::Starting => "starting".to_string(),
                    Status::Failed { error, retry_at: None } => format!("waits: {error}"),
                    Status::Failed { .. } => "retries".to_string(),
                    Status::Running(_) => "running".to_string(),
                    Status::Disabled | Status::Stopped => "stopped".to_string(),
                };
                seen.lock().unwrap().push((t0.elapsed().as_secs(), state));
            })
        };
        let deps = Deps {
            secrets: Secrets::new(dir.path()),
            clock: Arc::new(crate::clock::ManualClock::new(0)),
            changed,
            timings: Timings::default(),
        };
        let task = tokio::spawn(supervise(server.clone(), deps));
        let starts = |seen: &[(u64, String)]| -> Vec<u64> {
            seen.iter().filter(|(_, s)| s == "starting").map(|(t, _)| *t).collect()
        };

        // An hour later: five starts, 1, 2, 4 and 8 s apart, then none.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        let log = seen.lock().unwrap().clone();
        assert_eq!(starts(&log), [0, 1, 3, 7, 15], "{log:?}");
        let (at, last) = log.last().unwrap();
        assert_eq!(*at, 15, "{log:?}");
        assert!(
            last.starts_with("waits: could not start `/nonexistent/vigil-mcp-server`")
                && last.ends_with("; gave up after 5 tries in a row"),
            "{last}"
        );

        // Restart: it starts at once and counts its failures afresh (five more tries).
        server.request_restart();
        tokio::time::sleep(Duration::from_secs(3600)).await;
        let log = seen.lock().unwrap().clone();
        assert_eq!(starts(&log), [0, 1, 3, 7, 15, 3600, 3601, 3603, 3607, 3615], "{log:?}");
        assert!(log.last().unwrap().1.ends_with("gave up after 5 tries in a row"));
        stop.cancel();
        task.await.unwrap();
    }
}
