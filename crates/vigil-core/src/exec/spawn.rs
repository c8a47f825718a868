//! Starting a child, and the three threads that serve it so the registry actor never blocks:
//! a reader (terminal or pipe → stripped chunks), a waiter (`wait()` → exit status) and a
//! writer (queued input → the child's stdin).
//!
//! Every child is the leader of a process group of its own: under a PTY, portable-pty makes
//! it a session leader (`setsid`, which also gives it the terminal as controlling tty); with
//! pipes, `process_group(0)`. Its pid is therefore its group id, and signalling `-pid`
//! reaches whatever it started (`cmd &` in a non-interactive shell stays in the group).
//!
//! Reads go to a *bounded* channel: when the actor falls behind a flood, the reader blocks,
//! the kernel buffer fills, and the child blocks on write. Memory stays bounded; nothing is
//! lost that the caps would not drop anyway.

use std::io::{Read, Write};
use std::sync::Arc;

use portable_pty::{CommandBuilder, MasterPty, PtySize};
use tokio::sync::{mpsc, oneshot};

use super::strip::Stripper;
use super::{ExecError, ExitStatus, SpawnRequest, TermSize};
use crate::children::{hide_parent, withheld_env};

/// Bytes per read. A PTY hands out at most a few KiB at a time; a pipe up to its buffer.
const READ_CHUNK: usize = 64 * 1024;

/// What the child's threads tell the actor.
pub(super) enum Pump {
    /// Bytes as read, and their stripped text with its length in characters (counted here,
    /// off the actor's thread).
    Output {
        id: Arc<str>,
        raw: Vec<u8>,
        text: String,
        chars: usize,
    },
    /// The terminal or pipe closed: no more output.
    Eof { id: Arc<str> },
    /// The child was reaped.
    Exited { id: Arc<str>, status: ExitStatus },
}

/// Input for the child, answered once written (or failed).
pub(super) struct WriteJob {
    pub data: Vec<u8>,
    /// After the data: end of input (`^D` on a terminal, closing the pipe otherwise).
    pub eof: bool,
    pub reply: oneshot::Sender<Result<(), ExecError>>,
}

/// A started child.
pub(super) struct Spawned {
    pub pid: u32,
    /// The terminal's master side, kept for resizing; `None` with pipes.
    pub master: Option<Box<dyn MasterPty + Send>>,
    /// Why pipes are used although a terminal was asked for.
    pub pty_fallback: Option<String>,
    /// Feeds the writer thread; dropping it ends the thread.
    pub stdin: std::sync::mpsc::Sender<WriteJob>,
}

/// Starts `sh -c <command>` (inside bubblewrap when [`SpawnRequest::sandbox`] says so) with
/// its threads. A terminal is tried first when asked for; if
/// none can be opened the command runs with pipes and `pty_fallback` says why.
pub(super) fn spawn(
    id: &Arc<str>,
    req: &SpawnRequest,
    size: TermSize,
    pump: &mpsc::Sender<Pump>,
) -> Result<Spawned, String> {
    hide_parent();
    #[cfg(target_os = "linux")]
    if let Some(zygote) = req.sandbox.as_ref().and_then(|w| w.zygote.as_ref()) {
        match in_zygote::spawn(id, req, size, zygote, pump) {
            Ok(spawned) => return Ok(spawned),
            Err(crate::sandbox::zygote::SpawnError::Failed(why)) => return Err(why),
            // bwrap of its own, below.
            Err(crate::sandbox::zygote::SpawnError::Unavailable(why)) => {
                tracing::debug!("starting {id} with a bwrap of its own: {why}");
            }
        }
    }
    let mut fallback = None;
    if req.pty {
        let system = portable_pty::native_pty_system();
        let pty_size = PtySize {
            rows: size.rows,
            cols: size.cols,
            pixel_width: 0,
            pixel_height: 0,
        };
        match system.openpty(pty_size) {
            Ok(pair) => return spawn_pty(id, req, pair, pump),
            Err(e) => fallback = Some(format!("no terminal could be opened ({e:#})")),
        }
    }
    let mut spawned = spawn_pipes(id, req, pump)?;
    spawned.pty_fallback = fallback;
    Ok(spawned)
}

/// `sh -c <command>`, under bubblewrap when the request carries its arguments.
fn command_line(req: &SpawnRequest) -> Vec<std::ffi::OsString> {
    let mut argv = req.sandbox.as_ref().map(|w| w.args.clone()).unwrap_or_default();
    argv.extend(["sh".into(), "-c".into(), req.command.clone().into()]);
    argv
}

fn spawn_pty(
    id: &Arc<str>,
    req: &SpawnRequest,
    pair: portable_pty::PtyPair,
    pump: &mpsc::Sender<Pump>,
) -> Result<Spawned, String> {
    let argv = command_line(req);
    let pin = req.sandbox.as_ref().map(|w| w.pin());
    let mut cmd = CommandBuilder::new(&argv[0]);
    cmd.args(&argv[1..]);
    cmd.cwd(&req.cwd);
    for name in withheld_env() {
        cmd.env_remove(name);
    }
    cmd.env("TERM", "xterm-256color");
    for (k, v) in &req.env {
        cmd.env(k, v);
    }
    let child = pair.slave.spawn_command(cmd).map_err(|e| format!("{e:#}"))?;
    // Our copy of the slave must go, or the reader never sees the terminal close.
    drop(pair.slave);
    let pid = child.process_id().unwrap_or(0);
    let child: Box<dyn portable_pty::Child> = child;
    // On unix the child is a std `Child`; as one, its wait status keeps the signal number.
    let child = match child.downcast::<std::process::Child>() {
        Ok(child) => *child,
        Err(_) => {
            signal_group(pid, Sig::Kill);
            return Err("the terminal returned an unexpected kind of child process".into());
        }
    };
    let io = terminal_io(&*pair.master);
    served(id, pid, Some(pair.master), io, wait_child(pid, child, pin), pump)
}

type ChildIo = (Box<dyn Read + Send>, Option<Box<dyn Write + Send>>);

/// A terminal's reading and writing ends.
fn terminal_io(master: &dyn MasterPty) -> Result<ChildIo, String> {
    let reader = master.try_clone_reader().map_err(|e| format!("{e:#}"))?;
    let writer = master.take_writer().map_err(|e| format!("{e:#}"))?;
    Ok((reader, Some(writer)))
}

/// A started child with its threads; if they cannot start, its group is killed.
fn served(
    id: &Arc<str>,
    pid: u32,
    master: Option<Box<dyn MasterPty + Send>>,
    io: Result<ChildIo, String>,
    wait: impl FnOnce() -> ExitStatus + Send + 'static,
    pump: &mpsc::Sender<Pump>,
) -> Result<Spawned, String> {
    let pty = master.is_some();
    match io.and_then(|(reader, writer)| start_threads(id, wait, reader, writer, pty, pump)) {
        Ok(stdin) => Ok(Spawned {
            pid,
            master,
            pty_fallback: None,
            stdin,
        }),
        Err(e) => {
            signal_group(pid, Sig::Kill);
            Err(e)
        }
    }
}

fn spawn_pipes(id: &Arc<str>, req: &SpawnRequest, pump: &mpsc::Sender<Pump>) -> Result<Spawned, String> {
    use std::process::{Command, Stdio};
    // One pipe for stdout and stderr, so the output interleaves as it would on a terminal.
    let (reader, writer) = std::io::pipe().map_err(|e| format!("could not create a pipe: {e}"))?;
    let writer2 = writer
        .try_clone()
        .map_err(|e| format!("could not create a pipe: {e}"))?;
    let argv = command_line(req);
    let pin = req.sandbox.as_ref().map(|w| w.pin());
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(&req.cwd);
    for name in withheld_env() {
        cmd.env_remove(name);
    }
    cmd.env("TERM", "xterm-256color")
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(writer)
        .stderr(writer2);
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    // The command holds our copies of the pipe's write end; without dropping them the
    // reader would never see end of file.
    drop(cmd);
    let pid = child.id();
    let stdin = child.stdin.take().map(|s| Box::new(s) as Box<dyn Write + Send>);
    served(
        id,
        pid,
        None,
        Ok((Box::new(reader), stdin)),
        wait_child(pid, child, pin),
        pump,
    )
}

/// Waits for a child of ours. A sandbox's pin of `HEARTBEAT.md` (taken before it started)
/// is released only once it is reaped: until then it may write a file that replaced the
/// one it bound (see `sandbox::pins`).
fn wait_child(
    pid: u32,
    mut child: std::process::Child,
    pin: Option<crate::sandbox::Pinned>,
) -> impl FnOnce() -> ExitStatus + Send + 'static {
    move || {
        let status = match child.wait() {
            Ok(status) => exit_status(status),
            Err(e) => {
                tracing::warn!(pid, "waiting for an exec child failed: {e}");
                ExitStatus::default()
            }
        };
        drop(pin);
        status
    }
}

fn start_threads(
    id: &Arc<str>,
    wait: impl FnOnce() -> ExitStatus + Send + 'static,
    reader: Box<dyn Read + Send>,
    writer: Option<Box<dyn Write + Send>>,
    pty: bool,
    pump: &mpsc::Sender<Pump>,
) -> Result<std::sync::mpsc::Sender<WriteJob>, String> {
    let thread = |what: &str| std::thread::Builder::new().name(format!("exec-{what}-{id}"));
    let failed = |e: std::io::Error| format!("could not start a thread: {e}");

    let (tx, rx) = std::sync::mpsc::channel();
    let (wid, rid, xid) = (id.clone(), id.clone(), id.clone());
    thread("stdin")
        .spawn(move || serve_stdin(&wid, writer, pty, rx))
        .map_err(failed)?;
    let out = pump.clone();
    thread("read")
        .spawn(move || read_output(rid, reader, out))
        .map_err(failed)?;
    let exits = pump.clone();
    thread("wait")
        .spawn(move || {
            let status = wait();
            let _ = exits.blocking_send(Pump::Exited { id: xid, status });
        })
        .map_err(failed)?;
    Ok(tx)
}

fn read_output(id: Arc<str>, mut reader: Box<dyn Read + Send>, pump: mpsc::Sender<Pump>) {
    let mut strip = Stripper::new();
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let raw = buf[..n].to_vec();
                let text = strip.feed(&raw);
                let chars = text.chars().count();
                if pump
                    .blocking_send(Pump::Output {
                        id: id.clone(),
                        raw,
                        text,
                        chars,
                    })
                    .is_err()
                {
                    return; // the registry is gone
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A PTY reports its closing as EIO (portable-pty maps it to Ok(0)); any other
            // error ends the stream the same way.
            Err(_) => break,
        }
    }
    let _ = pump.blocking_send(Pump::Eof { id });
}

fn serve_stdin(
    id: &str,
    mut writer: Option<Box<dyn Write + Send>>,
    pty: bool,
    jobs: std::sync::mpsc::Receiver<WriteJob>,
) {
    for job in jobs {
        let result = match writer.as_mut() {
            None => Err(ExecError::StdinClosed { id: id.into() }),
            Some(w) => {
                let mut done = w.write_all(&job.data);
                if done.is_ok() && job.eof && pty {
                    // ^D ends input only at the start of a line; after a partial line the
                    // first one just sends the line.
                    let partial = !job.data.is_empty() && !job.data.ends_with(b"\n") && !job.data.ends_with(b"\r");
                    done = w.write_all(if partial { b"\x04\x04" } else { b"\x04" });
                }
                done.and_then(|()| w.flush()).map_err(|e| ExecError::Write {
                    id: id.into(),
                    reason: e.to_string(),
                })
            }
        };
        if job.eof && !pty {
            writer = None; // closes the pipe: the child reads end of file
        }
        let _ = job.reply.send(result);
    }
}

/// Commands started in the sandbox's zygote: the same threads, the same terminal or pipes,
/// but the zygote forks the command and reports its exit.
#[cfg(target_os = "linux")]
mod in_zygote {
    use std::ffi::OsString;
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStringExt;
    use std::os::unix::fs::OpenOptionsExt;

    use super::*;
    use crate::sandbox::zygote::{Ended, SpawnError, Stdio, Zygote};

    pub(super) fn spawn(
        id: &Arc<str>,
        req: &SpawnRequest,
        size: TermSize,
        zygote: &Zygote,
        pump: &mpsc::Sender<Pump>,
    ) -> Result<Spawned, SpawnError> {
        let unavailable = |e: String| SpawnError::Unavailable(e);
        let program = shell();
        let argv: Vec<OsString> = vec!["sh".into(), "-c".into(), req.command.clone().into()];
        let env = environment(req);
        let request = crate::sandbox::zygote::Request {
            program: program.as_os_str(),
            argv: &argv,
            env: &env,
            cwd: &req.cwd,
        };
        if req.pty {
            let pty_size = PtySize {
                rows: size.rows,
                cols: size.cols,
                pixel_width: 0,
                pixel_height: 0,
            };
            // No terminal: the pipe fallback below, with its reason, as outside a zygote.
            if let Ok(pair) = portable_pty::native_pty_system().openpty(pty_size) {
                let name = pair
                    .master
                    .tty_name()
                    .ok_or_else(|| unavailable("the terminal has no name".into()))?;
                let slave: OwnedFd = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
                    .open(&name)
                    .map_err(|e| unavailable(format!("{}: {e}", name.display())))?
                    .into();
                drop(pair.slave);
                let child = zygote.spawn(&request, Stdio::Terminal(slave))?;
                let pid = child.pid;
                let io = terminal_io(&*pair.master);
                return served(id, pid, Some(pair.master), io, waiter(child), pump).map_err(SpawnError::Failed);
            }
        }
        if req.pty {
            return Err(unavailable("no terminal could be opened".into()));
        }
        let pipe = || std::io::pipe().map_err(|e| unavailable(format!("could not create a pipe: {e}")));
        let (out_read, out_write) = pipe()?;
        let (in_read, in_write) = pipe()?;
        let child = zygote.spawn(
            &request,
            Stdio::Pipes {
                input: in_read.into(),
                output: out_write.into(),
            },
        )?;
        let pid = child.pid;
        let io: ChildIo = (Box::new(out_read), Some(Box::new(in_write)));
        served(id, pid, None, Ok(io), waiter(child), pump).map_err(SpawnError::Failed)
    }

    fn waiter(child: crate::sandbox::zygote::Child) -> impl FnOnce() -> ExitStatus + Send + 'static {
        move || match child.wait() {
            Ended::Code(code) => ExitStatus {
                code: Some(code),
                signal: None,
                ..ExitStatus::default()
            },
            Ended::Signal(n) => ExitStatus {
                code: None,
                signal: Some(signal_name(n)),
                ..ExitStatus::default()
            },
            Ended::Lost(why) => {
                tracing::warn!("a sandboxed command's exit was lost: {why}");
                ExitStatus {
                    code: None,
                    signal: Some(signal_name(rustix::process::Signal::KILL.as_raw())),
                    ..ExitStatus::default()
                }
            }
        }
    }

    /// `sh` as this process finds it on `PATH` (nothing is looked up inside the sandbox).
    fn shell() -> std::path::PathBuf {
        std::env::var_os("PATH")
            .and_then(|path| std::env::split_paths(&path).map(|d| d.join("sh")).find(|p| p.is_file()))
            .unwrap_or_else(|| "/bin/sh".into())
    }

    /// What a child outside the sandbox would get: this process's environment without the
    /// withheld variables, `TERM`, then the request's own.
    fn environment(req: &SpawnRequest) -> Vec<OsString> {
        let withheld = withheld_env();
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !withheld.iter().any(|w| k.as_os_str() == w.as_str()))
            .collect();
        let mut set = |k: &str, v: &str| {
            vars.retain(|(key, _)| key.as_os_str() != k);
            vars.push((k.into(), v.into()));
        };
        set("TERM", "xterm-256color");
        for (k, v) in &req.env {
            set(k, v);
        }
        vars.into_iter()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend(v.into_vec());
                OsString::from_vec(kv)
            })
            .collect()
    }
}

/// The signals the registry sends.
#[derive(Debug, Clone, Copy)]
pub(super) enum Sig {
    Term,
    Kill,
}

/// Signals the process group `pgid`; false if there was none (or it could not be signalled).
/// Never signals group 0 or 1 (`kill(-1)` would reach every process we may signal).
pub(super) fn signal_group(pgid: u32, sig: Sig) -> bool {
    #[cfg(unix)]
    {
        use rustix::process::{kill_process_group, Pid, Signal};
        if pgid <= 1 {
            return false;
        }
        let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
            return false;
        };
        let sig = match sig {
            Sig::Term => Signal::TERM,
            Sig::Kill => Signal::KILL,
        };
        kill_process_group(pid, sig).is_ok()
    }
    #[cfg(not(unix))]
    {
        let _ = (pgid, sig);
        false
    }
}

fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        ExitStatus {
            code: status.code(),
            signal: status.signal().map(signal_name),
            ..ExitStatus::default()
        }
    }
    #[cfg(not(unix))]
    {
        ExitStatus {
            code: status.code(),
            signal: None,
            ..ExitStatus::default()
        }
    }
}

/// `SIGTERM` for 15 (numbers differ between platforms, so they come from rustix); a number
/// for the rest (`signal 34` in a label).
#[cfg(unix)]
fn signal_name(n: i32) -> String {
    use rustix::process::Signal as S;
    let known = [
        (S::HUP, "SIGHUP"),
        (S::INT, "SIGINT"),
        (S::QUIT, "SIGQUIT"),
        (S::ILL, "SIGILL"),
        (S::TRAP, "SIGTRAP"),
        (S::ABORT, "SIGABRT"),
        (S::BUS, "SIGBUS"),
        (S::FPE, "SIGFPE"),
        (S::KILL, "SIGKILL"),
        (S::USR1, "SIGUSR1"),
        (S::SEGV, "SIGSEGV"),
        (S::USR2, "SIGUSR2"),
        (S::PIPE, "SIGPIPE"),
        (S::ALARM, "SIGALRM"),
        (S::TERM, "SIGTERM"),
    ];
    known
        .iter()
        .find(|(s, _)| s.as_raw() == n)
        .map_or_else(|| n.to_string(), |(_, name)| (*name).to_string())
}
