//! `vigil-headless [--data-dir DIR] [--config FILE]`: the Vigil runtime with no window.
//!
//! Reads one JSON `Op` per line on stdin and writes one JSON event envelope per line on
//! stdout, in exactly the shapes the desktop UI receives. Logs go to stderr. The heartbeat
//! runs as in the app: a `heartbeat` event for every run, a `notification` event for every
//! notification the app would raise; `{"type":"wake","reason":"manual"}` asks for a run.
//! At end of input it waits for running turns and requested wakes to finish (approvals
//! they would wait for are denied: nobody is left to answer);
//! `{"type":"shutdown"}`, Ctrl-C and SIGTERM stop them: turns are cancelled keeping what
//! they said, process groups are killed, pending wakes stay saved.
//!
//! A config file's `"channels"` entry sets up the phone channels (ntfy, Telegram) as
//! Settings → Away does; their tokens come from `VIGIL_NTFY_TOKEN` / `VIGIL_TELEGRAM_TOKEN`.
//!
//! The MCP servers of `DIR/mcp.json` start as in the app, and stop with it;
//! `{"type":"list_mcp_servers"}` answers with their states (`mcp_servers_changed`).

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncBufReadExt;
use vigil_core::clock::{Clock, SystemClock};
use vigil_core::events::EventSink;
use vigil_core::protocol::{ErrorKind, EventEnvelope, Op};
use vigil_core::{settings, Runtime};

/// Prints each event as one line; the lock keeps lines whole when turns run concurrently.
struct StdoutSink(Mutex<std::io::Stdout>);

impl EventSink for StdoutSink {
    fn emit(&self, event: EventEnvelope) {
        let Ok(line) = serde_json::to_string(&event) else {
            return;
        };
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

const USAGE: &str = "usage: vigil-headless [--data-dir DIR] [--config FILE]\n\
  Reads JSON ops from stdin (one per line), writes JSON events to stdout.\n\
  DIR defaults to $VIGIL_DATA_DIR, then ./vigil-data.\n\
  FILE is a settings file in the app's store schema ({\"provider\": …, \"heartbeat\": …});\n\
  without it, DIR/settings.json is used.";

struct Args {
    data_dir: PathBuf,
    config: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut dir = std::env::var_os("VIGIL_DATA_DIR").map(PathBuf::from);
    let mut config = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--data-dir" => dir = Some(args.next().ok_or("--data-dir needs a folder")?.into()),
            "--config" => config = Some(args.next().ok_or("--config needs a file")?.into()),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(Args {
        data_dir: dir.unwrap_or_else(|| PathBuf::from("vigil-data")),
        config,
    })
}

/// The `"channels"` entry of a config file, if it has one.
fn channels_entry(path: &std::path::Path) -> Result<Option<vigil_core::protocol::ChannelsSettings>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    match v.get("channels").filter(|c| !c.is_null()) {
        None => Ok(None),
        Some(c) => serde_json::from_value(c.clone()).map(Some).map_err(|e| e.to_string()),
    }
}

/// Resolves on SIGTERM (never elsewhere, or when the handler cannot be installed).
async fn terminate_signal() {
    #[cfg(unix)]
    if let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        term.recv().await;
        return;
    }
    std::future::pending::<()>().await
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("VIGIL_LOG").unwrap_or_else(|_| "warn".into()))
        .init();
    let Args { data_dir, config } = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let sink = Arc::new(StdoutSink(Mutex::new(std::io::stdout())));
    // The data folder's settings.json, read once. With --config, the user's file gives the
    // provider and heartbeat, and the data folder's file (never set aside then) only the
    // workspace folder.
    let (desktop, file, mut warnings) = match &config {
        Some(path) => {
            let (file, warnings) = settings::read_config_file(path);
            (vigil_core::settings::desktop::load(&data_dir).settings, file, warnings)
        }
        None => {
            let start = settings::load_at_start(&data_dir, clock.now_ms());
            let mut warnings = start.warnings;
            warnings.extend(start.heartbeat_warnings);
            (start.desktop, start.file, warnings)
        }
    };
    let runtime = match Runtime::open(&data_dir, clock.clone(), sink, &desktop) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vigil-headless: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    // The config file's "channels" entry, in the shape Settings → Away saves; tokens come
    // from VIGIL_NTFY_TOKEN / VIGIL_TELEGRAM_TOKEN (or the keyring), never from the file.
    if let Some(path) = &config {
        match channels_entry(path) {
            Ok(Some(channels)) => runtime.channels().set_settings(channels),
            Ok(None) => {}
            Err(e) => warnings.push(format!(
                "The channels in {} are invalid ({e}); none are used.",
                path.display()
            )),
        }
    }
    let (provider, heartbeat) = (file.provider, file.heartbeat);
    warnings.extend(runtime.set_heartbeat_settings(&heartbeat.unwrap_or_default()));
    let view = runtime.apply_settings(provider, warnings);
    for w in &view.warnings {
        runtime.report(ErrorKind::Config, w.clone());
    }
    if !runtime.start_background() {
        runtime.report(ErrorKind::Config, "The heartbeat could not start.");
    }

    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let terminated = terminate_signal();
    tokio::pin!(terminated);
    loop {
        let line = tokio::select! {
            l = lines.next_line() => l,
            _ = tokio::signal::ctrl_c() => break,
            // SIGTERM (`kill`, a service manager) shuts down as cleanly as the shutdown op.
            _ = &mut terminated => break,
        };
        match line {
            Ok(Some(line)) if line.trim().is_empty() => continue,
            Ok(Some(line)) => match serde_json::from_str::<Op>(&line) {
                Ok(Op::Shutdown) => break,
                Ok(op) => runtime.submit(op),
                Err(e) => runtime.report(ErrorKind::InvalidOp, format!("could not read op {line:?}: {e}")),
            },
            // End of input: what was asked finishes (a question can no longer be answered,
            // so it is denied), then everything stops as on the shutdown op (MCP servers
            // with their process groups included).
            Ok(None) => {
                runtime.stop_asking();
                runtime.idle().await;
                break;
            }
            Err(e) => {
                runtime.report(ErrorKind::InvalidOp, format!("could not read stdin: {e}"));
                break;
            }
        }
    }
    runtime.shutdown().await;
    // Everything is saved and every process group killed. Exit now: dropping the tokio
    // runtime would wait for its blocking stdin read, which cannot be cancelled, so a
    // runner stopped by a signal would hang until its input closed.
    std::process::exit(0)
}
