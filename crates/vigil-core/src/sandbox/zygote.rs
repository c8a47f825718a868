//! # sandbox::zygote
//!
//! One long-lived sandbox per layout that starts each command inside itself, instead of a
//! bubblewrap of its own per command: starting bwrap (namespaces, mounts) costs a few
//! milliseconds, several times a short command's whole life; forking inside a sandbox that
//! already stands costs a fraction of one.
//!
//! bwrap runs `vigil-sandbox` (the helper binary, [`serve`]) with the layout's mounts, in a
//! user namespace where it keeps two capabilities: `CAP_SYS_ADMIN`, so each command gets a
//! mount namespace with its own empty `/tmp`, `/var/tmp` and `/dev/shm` (private per
//! command, as with a bwrap of its own), and `CAP_SETPCAP`, so the command can be left with
//! none (bounding set included) before it runs. The helper itself is not dumpable, so a
//! command cannot read its memory.
//!
//! Vigil talks to it over a socket pair (`SOCK_SEQPACKET`, one message per request): a
//! request names the program, its arguments, environment, folder and whether it gets a
//! terminal, and carries the descriptors (the terminal's slave side, or the pipes) and a
//! reply socket of its own. On that reply socket the command, just before it runs, sends
//! one message: with `SO_PASSCRED` the kernel attaches its pid *as Vigil sees it* (the
//! sandbox has its own pid namespace), so signalling the process group works as for any
//! other child. The init of the command's pid namespace (its reaper) sends its exit there as
//! soon as the command and whatever it left have ended; the helper sends it again once that
//! reaper is gone (unread then, unless the reaper died before it could say).
//!
//! Each command gets a pid namespace of its own (the forked child unshares it, its child is
//! that namespace's init and reaper, and the grandchild runs the command), so commands of
//! one zygote cannot see, signal or read through `/proc` each other or the helper. A zygote
//! is still shared only by commands of the same layout *and* the same kind of run (someone
//! at the screen, or nobody). A layout with a writable folder under `/tmp` or `/var/tmp` (the
//! private `/tmp` would hide it), or a command whose folder is not writable already, takes
//! the bwrap-per-command path, as does everything when the helper is not there.
//!
//! Must never: start a command twice (a retry happens only when the helper is known not to
//! have started it: no pid came back); leave a capability to a command; hang Vigil when the
//! helper is gone (every wait for it is bounded or ends with its socket).

use std::ffi::{OsStr, OsString};
use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

mod collect;
mod helper;
pub use collect::{output, Collected};
pub use helper::serve;

use rustix::net::{
    recvmsg, sendmsg, socketpair, sockopt, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

/// The first field of every request; a helper of another version refuses it.
const VERSION: &[u8] = b"vigil-sandbox 1";
/// How long Vigil waits for the helper to be ready, and for a command's pid.
const START_LIMIT: Duration = Duration::from_secs(5);
/// The largest request. A longer command line takes the bwrap-per-command path (Linux
/// refuses a single argument over 128 KiB anyway).
pub const MAX_REQUEST: usize = 160 * 1024;
/// The helper leaves after this long with no command running and none asked for; the next
/// command starts it again. An idle Vigil keeps no sandbox around.
pub const IDLE_EXIT: Duration = Duration::from_secs(300);
/// Where the helper is bound inside the sandbox: under the sandbox's own `/tmp`, which
/// every command then covers with an empty one.
const HELPER_INSIDE: &str = "/tmp/.vigil-sandbox";
/// The helper's control socket, as bwrap hands it down.
const CONTROL_FD: RawFd = 3;

/// What a command gets for its standard streams.
pub enum Stdio {
    /// The slave side of a terminal: stdin, stdout and stderr, and the controlling terminal
    /// of the new session the command leads.
    Terminal(OwnedFd),
    /// Pipes: input, and one output for stdout and stderr; the command leads a new process
    /// group.
    Pipes { input: OwnedFd, output: OwnedFd },
    /// Pipes, with the errors apart from the output (a check keeps them apart); the command
    /// leads a new process group.
    Split {
        input: OwnedFd,
        output: OwnedFd,
        errors: OwnedFd,
    },
}

/// One command to start.
pub struct Request<'a> {
    /// An absolute path (no `PATH` lookup happens inside).
    pub program: &'a OsStr,
    /// `argv`, the program's name first.
    pub argv: &'a [OsString],
    /// The whole environment, `KEY=value` each.
    pub env: &'a [OsString],
    pub cwd: &'a Path,
}

/// Why a zygote did not start a command.
#[derive(Debug)]
pub enum SpawnError {
    /// The helper is not there or not working: start the command the other way.
    Unavailable(String),
    /// The command could not start (its folder is gone, say); the other way would fail too.
    Failed(String),
}

/// How a command started by a zygote ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Code(i32),
    Signal(i32),
    /// The helper went away before it could say (the sandbox was torn down).
    Lost(String),
}

/// A command started in a zygote: its pid as Vigil sees it, and where its exit comes.
pub struct Child {
    pub pid: u32,
    reply: OwnedFd,
}

impl Child {
    /// Blocks until the command ends (or the sandbox it ran in is gone).
    pub fn wait(self) -> Ended {
        // The reply socket had a timeout for the pid; the exit may be days away.
        let _ = sockopt::set_socket_timeout(&self.reply, sockopt::Timeout::Recv, None);
        match receive(&self.reply) {
            Ok(Some((msg, _))) => parse_exit(&msg),
            Ok(None) => Ended::Lost("the sandbox ended before the command did".into()),
            Err(e) => Ended::Lost(format!("no word from the sandbox: {e}")),
        }
    }
}

/// A long-lived sandbox for one layout, started on first use and again after it left.
pub struct Zygote {
    helper: PathBuf,
    idle_exit: Duration,
    /// bwrap and its arguments up to (not including) `--`.
    bwrap: Vec<OsString>,
    state: Mutex<State>,
    /// The real workspace and its `HEARTBEAT.md`: each start records the file it binds
    /// (`super::pins`), released when this sandbox's bwrap has ended.
    task_file: Option<(PathBuf, PathBuf)>,
}

enum State {
    Stopped,
    /// The control socket, and the pid of the bwrap that runs the helper.
    Running(OwnedFd, u32),
    /// It could not start; commands take the other path from now on.
    Broken(String),
}

impl std::fmt::Debug for Zygote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zygote")
            .field("helper", &self.helper)
            .finish_non_exhaustive()
    }
}

impl Zygote {
    /// `bwrap` is the sandbox's command line up to `--`, without the capabilities the helper
    /// keeps (added here).
    pub fn new(helper: PathBuf, mut bwrap: Vec<OsString>, idle_exit: Duration) -> Self {
        for a in ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP", "--ro-bind"] {
            bwrap.push(a.into());
        }
        bwrap.push(helper.clone().into());
        bwrap.push(HELPER_INSIDE.into());
        Self {
            helper,
            idle_exit,
            bwrap,
            state: Mutex::new(State::Stopped),
            task_file: None,
        }
    }

    /// Each start records the task file it binds, until the sandbox ends (`super::pins`).
    pub fn pinning(mut self, task_file: Option<(PathBuf, PathBuf)>) -> Self {
        self.task_file = task_file;
        self
    }

    /// Starts a command. Blocks until it runs (or could not): a few hundred microseconds,
    /// or bwrap's start-up the first time.
    pub fn spawn(&self, req: &Request<'_>, stdio: Stdio) -> Result<Child, SpawnError> {
        let message = encode(req, matches!(stdio, Stdio::Terminal(_))).map_err(SpawnError::Unavailable)?;
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // One retry, only when the helper had left (idle, or killed): nothing was started.
        for attempt in 0..2 {
            let control = match &*state {
                State::Broken(why) => return Err(SpawnError::Unavailable(why.clone())),
                State::Running(control, _) => control,
                State::Stopped => match self.start() {
                    Ok((control, bwrap)) => {
                        *state = State::Running(control, bwrap);
                        let State::Running(control, _) = &*state else {
                            unreachable!()
                        };
                        control
                    }
                    Err(why) => {
                        tracing::warn!("the sandbox helper did not start, commands start one bwrap each: {why}");
                        *state = State::Broken(why.clone());
                        return Err(SpawnError::Unavailable(why));
                    }
                },
            };
            match send_request(control, &message, &stdio) {
                Ok(child) => return Ok(child),
                Err(Sent::Refused(why)) => return Err(SpawnError::Failed(why)),
                Err(Sent::Unusable(why)) => return Err(SpawnError::Unavailable(why)),
                Err(Sent::Unanswered(why)) => {
                    // Stopped or stuck (no command can see it, but the user's other
                    // processes can). Down it goes, with whatever runs in it, and this layout
                    // starts a bwrap per command for the rest of the session: whatever stops
                    // it cannot make every start wait.
                    if let State::Running(_, bwrap) = &*state {
                        let _ = i32::try_from(*bwrap)
                            .ok()
                            .and_then(rustix::process::Pid::from_raw)
                            .map(|pid| rustix::process::kill_process(pid, rustix::process::Signal::KILL));
                    }
                    tracing::warn!("the sandbox helper stopped answering, commands start one bwrap each: {why}");
                    *state = State::Broken(why.clone());
                    return Err(SpawnError::Unavailable(why));
                }
                Err(Sent::HelperGone(why)) => {
                    *state = State::Stopped;
                    if attempt == 1 {
                        return Err(SpawnError::Unavailable(why));
                    }
                }
            }
        }
        unreachable!("the loop returns")
    }

    /// Starts bwrap with the helper and waits for its "ready". bwrap is started by a thread
    /// that stays with it: `--die-with-parent` is tied to the thread that started it.
    fn start(&self) -> Result<(OwnedFd, u32), String> {
        let (mine, theirs) = socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
            .map_err(|e| format!("no socket pair: {e}"))?;
        let mut cmd = std::process::Command::new(&self.bwrap[0]);
        cmd.args(&self.bwrap[1..])
            .arg("--")
            .arg(HELPER_INSIDE)
            .arg(self.idle_exit.as_millis().to_string())
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::inherit());
        let theirs_raw = theirs.as_raw_fd();
        // SAFETY: only dup2 and fcntl, both async-signal-safe, between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
                let fd = BorrowedFd::borrow_raw(theirs_raw);
                if theirs_raw == CONTROL_FD {
                    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
                } else {
                    let mut target = OwnedFd::from_raw_fd(CONTROL_FD);
                    let dup = rustix::io::dup2(fd, &mut target);
                    std::mem::forget(target);
                    dup?;
                }
                Ok(())
            });
        }
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        // Taken before bwrap binds the file; released once bwrap is reaped: while it runs,
        // a command in it may write a file that replaced the one it bound.
        let pin = self.task_file.as_ref().map(|(ws, file)| super::pins::hold(ws, file));
        std::thread::Builder::new()
            .name("sandbox-zygote".into())
            .spawn(move || match cmd.spawn() {
                Ok(mut child) => {
                    drop(cmd); // closes our copy of the helper's end
                    let _ = started_tx.send(Ok(child.id()));
                    let _ = child.wait();
                    drop(pin);
                }
                Err(e) => {
                    let _ = started_tx.send(Err(format!("bwrap did not start: {e}")));
                }
            })
            .map_err(|e| format!("no thread for the sandbox: {e}"))?;
        let bwrap = started_rx
            .recv()
            .map_err(|_| "the sandbox thread ended".to_string())??;
        drop(theirs);
        let ready = sockopt::set_socket_timeout(&mine, sockopt::Timeout::Recv, Some(START_LIMIT))
            .map_err(|e| e.to_string())
            .and_then(|()| self.ready(&mine));
        if ready.is_err() {
            let _ = i32::try_from(bwrap)
                .ok()
                .and_then(rustix::process::Pid::from_raw)
                .map(|pid| rustix::process::kill_process(pid, rustix::process::Signal::KILL));
        }
        ready.map(|()| (mine, bwrap))
    }

    /// The helper's first word: its version.
    fn ready(&self, mine: &OwnedFd) -> Result<(), String> {
        match receive(mine) {
            Ok(Some((msg, _))) if msg == VERSION => {
                sockopt::set_socket_timeout(mine, sockopt::Timeout::Recv, None).map_err(|e| e.to_string())
            }
            Ok(Some((msg, _))) => Err(format!(
                "the helper {} answered {:?}, not {:?}",
                self.helper.display(),
                String::from_utf8_lossy(&msg),
                String::from_utf8_lossy(VERSION)
            )),
            Ok(None) => Err("the sandbox ended as it started (bwrap printed why)".into()),
            Err(e) => Err(format!("the sandbox did not answer: {e}")),
        }
    }
}

enum Sent {
    /// It cannot have started: start the helper again and retry.
    HelperGone(String),
    /// The helper does not take requests or answer them in time (stopped, stuck). The
    /// command cannot have run: it waits for Vigil's go-ahead, which never came.
    Unanswered(String),
    /// It cannot have started, and the helper is fine: start it the other way.
    Unusable(String),
    /// The helper tried and the command could not start.
    Refused(String),
}

fn send_request(control: &OwnedFd, message: &[u8], stdio: &Stdio) -> Result<Child, Sent> {
    let (mine, theirs) = socketpair(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
        .map_err(|e| Sent::Refused(format!("no socket pair: {e}")))?;
    // The kernel attaches the sender's pid, in our pid namespace, to what the command sends.
    sockopt::set_socket_passcred(&mine, true).map_err(|e| Sent::Refused(e.to_string()))?;
    sockopt::set_socket_timeout(&mine, sockopt::Timeout::Recv, Some(START_LIMIT))
        .map_err(|e| Sent::Refused(e.to_string()))?;
    let fds: Vec<BorrowedFd<'_>> = match stdio {
        Stdio::Terminal(tty) => vec![theirs.as_fd(), tty.as_fd()],
        Stdio::Pipes { input, output } => vec![theirs.as_fd(), input.as_fd(), output.as_fd()],
        Stdio::Split { input, output, errors } => {
            vec![theirs.as_fd(), input.as_fd(), output.as_fd(), errors.as_fd()]
        }
    };
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control_msg = SendAncillaryBuffer::new(&mut space);
    control_msg.push(SendAncillaryMessage::ScmRights(&fds));
    use rustix::io::Errno;
    // Never blocks: a helper that does not read (stopped by a command) must not stall Vigil.
    let flags = SendFlags::NOSIGNAL | SendFlags::DONTWAIT;
    sendmsg(control, &[IoSlice::new(message)], &mut control_msg, flags).map_err(|e| match e {
        Errno::PIPE | Errno::CONNRESET | Errno::NOTCONN => Sent::HelperGone(format!("the sandbox is gone: {e}")),
        Errno::AGAIN => Sent::Unanswered("the sandbox takes no more requests".into()),
        // Too long for the socket, out of buffers: the helper is fine, this request is not.
        e => Sent::Unusable(format!("the request could not be sent: {e}")),
    })?;
    drop(theirs);
    match receive(&mine) {
        // The command waits for this before it runs: a command whose pid came too late (or
        // not at all) reads the end of the socket instead, and never runs.
        Ok(Some((msg, Some(pid)))) if msg == b"pid" && pid > 0 => {
            match rustix::net::send(&mine, b"go", SendFlags::NOSIGNAL) {
                Ok(_) => Ok(Child { pid, reply: mine }),
                Err(e) => Err(Sent::HelperGone(format!(
                    "the sandbox left as the command started: {e}"
                ))),
            }
        }
        Ok(Some((msg, _))) => match msg.strip_prefix(b"failed ") {
            Some(why) => Err(Sent::Refused(String::from_utf8_lossy(why).into_owned())),
            // Its reaper's word that it ended before it said its pid: it never ran.
            None if msg.starts_with(b"exit ") || msg.starts_with(b"signal ") => Err(Sent::Refused(format!(
                "the command could not start in the sandbox ({})",
                String::from_utf8_lossy(&msg)
            ))),
            None => Err(Sent::Refused(format!(
                "the sandbox answered {:?}",
                String::from_utf8_lossy(&msg)
            ))),
        },
        Ok(None) => Err(Sent::HelperGone("the sandbox left before the command started".into())),
        Err(e) => Err(Sent::Unanswered(format!(
            "the sandbox did not start the command in time: {e}"
        ))),
    }
}

/// One message and the sender's pid (when credentials came with it); `None` at the end.
fn receive(socket: &OwnedFd) -> std::io::Result<Option<(Vec<u8>, Option<u32>)>> {
    let mut buf = [0u8; 512];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmCredentials(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = loop {
        match recvmsg(
            socket,
            &mut [IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    if got.bytes == 0 {
        return Ok(None);
    }
    let mut pid = None;
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmCredentials(cred) = m {
            pid = u32::try_from(cred.pid.as_raw_nonzero().get()).ok();
        }
    }
    Ok(Some((buf[..got.bytes].to_vec(), pid)))
}

fn parse_exit(msg: &[u8]) -> Ended {
    let text = String::from_utf8_lossy(msg);
    let number = |p: &str| text.strip_prefix(p).and_then(|n| n.trim().parse().ok());
    if let Some(code) = number("exit ") {
        Ended::Code(code)
    } else if let Some(sig) = number("signal ") {
        Ended::Signal(sig)
    } else if text.starts_with("failed ") {
        // It could not be executed after all (as a shell says for a missing program).
        Ended::Code(127)
    } else {
        Ended::Lost(format!("the sandbox said {text:?}"))
    }
}

/// `VERSION`, `pty` or `pipes`, the folder, the program, the number of arguments, the
/// arguments, then the environment: NUL-separated (none of them can hold a NUL).
fn encode(req: &Request<'_>, terminal: bool) -> Result<Vec<u8>, String> {
    let mode: &[u8] = if terminal { b"pty" } else { b"pipes" };
    let count = req.argv.len().to_string();
    let fields = [
        VERSION,
        mode,
        req.cwd.as_os_str().as_bytes(),
        req.program.as_bytes(),
        count.as_bytes(),
    ]
    .into_iter()
    .chain(req.argv.iter().map(|a| a.as_bytes()))
    .chain(req.env.iter().map(|e| e.as_bytes()));
    let mut out = Vec::new();
    for field in fields {
        if field.contains(&0) {
            return Err("an argument or variable holds a NUL byte".into());
        }
        out.extend_from_slice(field);
        out.push(0);
    }
    if out.len() > MAX_REQUEST {
        return Err(format!(
            "the command line is {} bytes, more than a zygote request holds",
            out.len()
        ));
    }
    Ok(out)
}

/// A request as the helper reads it.
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    terminal: bool,
    cwd: PathBuf,
    program: OsString,
    argv: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

fn decode(msg: &[u8]) -> Result<Decoded, String> {
    let body = msg.strip_suffix(&[0]).ok_or("the request does not end with NUL")?;
    let mut fields = body.split(|b| *b == 0);
    let mut next = |what: &str| fields.next().ok_or_else(|| format!("the request has no {what}"));
    if next("version")? != VERSION {
        return Err("the request is of another version".into());
    }
    let terminal = match next("mode")? {
        b"pty" => true,
        b"pipes" => false,
        _ => return Err("the request's mode is neither pty nor pipes".into()),
    };
    let os = |b: &[u8]| OsString::from_vec(b.to_vec());
    let cwd = PathBuf::from(os(next("folder")?));
    let program = os(next("program")?);
    let count: usize = std::str::from_utf8(next("count")?)
        .ok()
        .and_then(|n| n.parse().ok())
        .ok_or("the request's argument count is not a number")?;
    let mut argv = Vec::new();
    for _ in 0..count {
        argv.push(os(next("argument")?));
    }
    let env = fields
        .map(|kv| {
            let at = kv.iter().position(|b| *b == b'=').unwrap_or(kv.len());
            (os(&kv[..at]), os(kv.get(at + 1..).unwrap_or_default()))
        })
        .collect();
    Ok(Decoded {
        terminal,
        cwd,
        program,
        argv,
        env,
    })
}

/// Where the helper binary is: `VIGIL_SANDBOX_HELPER`, else `vigil-sandbox` beside this
/// program, or one folder up when this program is one of cargo's test or bench binaries
/// (`target/<profile>/deps/`).
pub fn find_helper() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("VIGIL_SANDBOX_HELPER") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let beside = dir.join("vigil-sandbox");
    if beside.is_file() {
        return Some(beside);
    }
    let up = dir.parent()?.join("vigil-sandbox");
    (dir.file_name() == Some(OsStr::new("deps")) && up.is_file()).then_some(up)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_written_and_a_nul_is_refused() {
        let argv: Vec<OsString> = vec!["sh".into(), "-c".into(), "echo 'a b' && ls\n".into()];
        let env: Vec<OsString> = vec![
            "A=1".into(),
            "B=x=y".into(),
            "EMPTY=".into(),
            OsString::from_vec(vec![b'U', b'=', 0xff]),
        ];
        let req = Request {
            program: OsStr::new("/bin/sh"),
            argv: &argv,
            env: &env,
            cwd: Path::new("/w s"),
        };
        let decoded = decode(&encode(&req, true).unwrap()).unwrap();
        assert_eq!(
            decoded,
            Decoded {
                terminal: true,
                cwd: "/w s".into(),
                program: "/bin/sh".into(),
                argv: argv.clone(),
                env: vec![
                    ("A".into(), "1".into()),
                    ("B".into(), "x=y".into()),
                    ("EMPTY".into(), "".into()),
                    ("U".into(), OsString::from_vec(vec![0xff])),
                ],
            }
        );
        assert!(!decode(&encode(&req, false).unwrap()).unwrap().terminal);
        let nul: Vec<OsString> = vec!["sh".into(), OsString::from_vec(b"a\0b".to_vec())];
        assert!(encode(&Request { argv: &nul, ..req }, true).is_err());
        let long: Vec<OsString> = vec!["x".repeat(MAX_REQUEST).into()];
        assert!(encode(&Request { argv: &long, ..req }, true).is_err());
        assert!(decode(b"vigil-sandbox 0\0pty\0/\0/bin/sh\x000\0").is_err());
        assert!(decode(b"vigil-sandbox 1\0pty\0/\0/bin/sh\x003\0sh\0").is_err());
    }

    #[test]
    fn an_exit_message_reads_as_a_code_or_a_signal() {
        assert_eq!(parse_exit(b"exit 3"), Ended::Code(3));
        assert_eq!(parse_exit(b"signal 15"), Ended::Signal(15));
        // Started, then could not be executed (the helper's refusal after the go-ahead).
        assert_eq!(parse_exit(b"failed No such file or directory"), Ended::Code(127));
        assert!(matches!(parse_exit(b"garbage"), Ended::Lost(_)));
    }
}
