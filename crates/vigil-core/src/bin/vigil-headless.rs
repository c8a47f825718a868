//! `vigil-headless --data-dir DIR`: the Vigil runtime with no window.
//!
//! Reads one JSON `Op` per line on stdin and writes one JSON event envelope per line on
//! stdout, in exactly the shapes the desktop UI receives. Logs go to stderr.
//! At end of input it waits for running turns to finish; `{"type":"shutdown"}` stops them.

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

const USAGE: &str = "usage: vigil-headless [--data-dir DIR]\n\
  Reads JSON ops from stdin (one per line), writes JSON events to stdout.\n\
  DIR defaults to $VIGIL_DATA_DIR, then ./vigil-data.";

fn data_dir_from_args() -> Result<PathBuf, String> {
    let mut args = std::env::args().skip(1);
    let mut dir = std::env::var_os("VIGIL_DATA_DIR").map(PathBuf::from);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--data-dir" => dir = Some(args.next().ok_or("--data-dir needs a folder")?.into()),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(dir.unwrap_or_else(|| PathBuf::from("vigil-data")))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("VIGIL_LOG").unwrap_or_else(|_| "warn".into()))
        .init();
    let data_dir = match data_dir_from_args() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::from(2);
        }
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let sink = Arc::new(StdoutSink(Mutex::new(std::io::stdout())));
    let runtime = match Runtime::new(&data_dir, clock.clone(), sink) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vigil-headless: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let (stored, warnings) = settings::load_file(&data_dir, clock.now_ms());
    let view = runtime.apply_settings(stored, warnings);
    for w in &view.warnings {
        runtime.report(ErrorKind::Config, w.clone());
    }

    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        let line = tokio::select! {
            l = lines.next_line() => l,
            _ = tokio::signal::ctrl_c() => break,
        };
        match line {
            Ok(Some(line)) if line.trim().is_empty() => continue,
            Ok(Some(line)) => match serde_json::from_str::<Op>(&line) {
                Ok(Op::Shutdown) => break,
                Ok(op) => runtime.submit(op),
                Err(e) => runtime.report(ErrorKind::InvalidOp, format!("could not read op {line:?}: {e}")),
            },
            Ok(None) => {
                runtime.idle().await;
                return std::process::ExitCode::SUCCESS;
            }
            Err(e) => {
                runtime.report(ErrorKind::InvalidOp, format!("could not read stdin: {e}"));
                break;
            }
        }
    }
    runtime.shutdown().await;
    std::process::ExitCode::SUCCESS
}
