//! `vigil-fake-llm [--script FILE] [--port N] [--log FILE]` — the fake provider as a process,
//! for end-to-end tests of the built app. Glue only: parse arguments, start [`FakeLlm`],
//! announce the address, wait for a signal.
//!
//! Exit codes: 0 after SIGTERM/SIGINT, 2 for bad arguments or a bad script, 1 when the
//! server cannot start.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use vigil_fake_llm::{FakeLlm, Options, Script};

const USAGE: &str = "usage: vigil-fake-llm [--script FILE] [--port N] [--log FILE]";

struct Args {
    script: Option<PathBuf>,
    port: u16,
    log: Option<PathBuf>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut parsed = Args {
        script: None,
        port: 0,
        log: None,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--script" => parsed.script = Some(PathBuf::from(value("--script")?)),
            "--log" => parsed.log = Some(PathBuf::from(value("--log")?)),
            "--port" => {
                let v = value("--port")?;
                parsed.port = v.parse().map_err(|_| format!("invalid --port {v:?}"))?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}

#[tokio::main]
async fn main() -> ExitCode {
    // stderr only: stdout carries the single announce line a parent process parses.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let args = match parse_args(args.into_iter()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("vigil-fake-llm: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let script = match &args.script {
        Some(path) => match Script::from_file(path) {
            Ok(script) => script,
            Err(e) => {
                eprintln!("vigil-fake-llm: {e}");
                return ExitCode::from(2);
            }
        },
        None => Script::default(),
    };
    let options = Options {
        addr: SocketAddr::from(([127, 0, 0, 1], args.port)),
        log: args.log,
        ..Options::default()
    };
    let server = match FakeLlm::start_with(script, options).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("vigil-fake-llm: cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    // Listening for SIGTERM/SIGINT before the announce line: a parent that signals as soon
    // as it has read the line must find them handled, not take the default action.
    let signals = match Signals::listen() {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("vigil-fake-llm: cannot wait for signals: {e}");
            return ExitCode::from(1);
        }
    };
    // The parent process reads this one line to learn the port: flush it now, and treat a
    // closed stdout as the parent having gone away.
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "listening on http://{}", server.addr())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    drop(stdout);
    signals.received().await;
    server.shutdown().await;
    ExitCode::SUCCESS
}

/// SIGTERM and SIGINT, handled from [`Signals::listen`] on.
#[cfg(unix)]
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn listen() -> std::io::Result<Self> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Self {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    async fn received(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

/// Ctrl-C, handled from the first poll of [`Signals::received`] on.
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn listen() -> std::io::Result<Self> {
        Ok(Self)
    }

    async fn received(self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
