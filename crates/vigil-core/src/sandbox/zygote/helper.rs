//! The helper's side of the zygote: `vigil-sandbox`, inside bwrap. Reads requests on fd 3,
//! forks each command into a mount namespace of its own with no capabilities, and reports
//! its exit on the request's reply socket.

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendFlags, SocketType};

use super::{decode, Decoded, CONTROL_FD, IDLE_EXIT, MAX_REQUEST, VERSION};
use std::time::Duration;

/// The helper's main loop: reads requests on fd 3, starts each command, reports exits.
/// Its one argument is how long it stays with nothing to do, in milliseconds
/// ([`super::IDLE_EXIT`] without one). Returns the process's exit code: 0 when Vigil closed
/// the socket or it was idle long enough, 2 when it was not started by Vigil.
pub fn serve() -> i32 {
    use rustix::event::{poll, PollFd, PollFlags};
    use std::os::unix::process::ExitStatusExt;

    // SAFETY: fd 3 is the control socket bwrap handed down (checked just below).
    let control = unsafe { OwnedFd::from_raw_fd(CONTROL_FD) };
    if rustix::net::sockopt::socket_type(&control) != Ok(SocketType::SEQPACKET) {
        eprintln!("vigil-sandbox is started by Vigil inside bubblewrap, not by hand");
        std::mem::forget(control);
        return 2;
    }
    // Whatever else bwrap handed down (a descriptor Vigil opened as bwrap was forked and
    // marked close-on-exec a moment too late) reaches no command.
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        for fd in fds
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<RawFd>().ok())
        {
            if fd > 2 {
                // SAFETY: only a flag on a descriptor this process holds (or a closed one).
                let _ = rustix::io::fcntl_setfd(unsafe { BorrowedFd::borrow_raw(fd) }, rustix::io::FdFlags::CLOEXEC);
            }
        }
    }
    // Not dumpable: no command (same user) reads the memory of a process with capabilities.
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
    if rustix::net::send(&control, VERSION, SendFlags::NOSIGNAL).is_err() {
        return 0;
    }
    let private_mounts: Vec<&'static std::ffi::CStr> = [c"/tmp", c"/var/tmp", c"/dev/shm"]
        .into_iter()
        .filter(|p| Path::new(p.to_str().unwrap_or_default()).is_dir())
        .collect();

    struct Running {
        child: std::process::Child,
        pidfd: OwnedFd,
        reply: OwnedFd,
    }
    let idle_exit = std::env::args()
        .nth(1)
        .and_then(|ms| ms.parse().ok())
        .map_or(IDLE_EXIT, Duration::from_millis);
    let idle = rustix::event::Timespec {
        tv_sec: idle_exit.as_secs() as _,
        tv_nsec: idle_exit.subsec_nanos() as _,
    };
    let mut running: Vec<Running> = Vec::new();
    let mut buf = vec![0u8; MAX_REQUEST + 1];
    // Vigil closed its end: no more commands; the helper (and the sandbox) leaves once the
    // running ones have ended. Vigil retires a standing sandbox this way (its task file bind
    // went stale); when Vigil itself ends, `--die-with-parent` ends the sandbox at once.
    let mut closing = false;
    loop {
        if closing && running.is_empty() {
            return 0;
        }
        let (ready_control, ready_children) = {
            // The control socket first, while it is open (a closed one reports a hang-up on
            // every poll).
            let first = usize::from(!closing);
            let mut fds: Vec<PollFd<'_>> = std::iter::once(&control)
                .take(first)
                .map(|c| PollFd::new(c, PollFlags::IN))
                .chain(running.iter().map(|r| PollFd::new(&r.pidfd, PollFlags::IN)))
                .collect();
            let timeout = (running.is_empty() && !closing).then_some(&idle);
            match poll(&mut fds, timeout) {
                Ok(0) => return 0, // idle: Vigil starts another when it needs one
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return 1,
            }
            let control_ready = first == 1 && !fds[0].revents().is_empty();
            // Indexes into `running` (after the control socket while it is in `fds`).
            let children: Vec<usize> = (first..fds.len())
                .filter(|i| !fds[*i].revents().is_empty())
                .map(|i| i - first)
                .collect();
            (control_ready, children)
        };
        for i in ready_children.into_iter().rev() {
            if let Ok(Some(status)) = running[i].child.try_wait() {
                let r = running.swap_remove(i);
                let msg = match (status.code(), status.signal()) {
                    (Some(code), _) => format!("exit {code}"),
                    (None, Some(sig)) => format!("signal {sig}"),
                    (None, None) => "exit -1".to_string(),
                };
                let _ = rustix::net::send(&r.reply, msg.as_bytes(), SendFlags::NOSIGNAL);
            }
        }
        if !ready_control {
            continue;
        }
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
        let mut ancillary = RecvAncillaryBuffer::new(&mut space);
        let got = match recvmsg(
            &control,
            &mut [IoSliceMut::new(&mut buf)],
            &mut ancillary,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(got) => got,
            Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => continue,
            Err(_) => return 1,
        };
        let mut fds: Vec<OwnedFd> = Vec::new();
        for m in ancillary.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = m {
                fds.extend(received);
            }
        }
        if got.bytes == 0 && fds.is_empty() {
            closing = true;
            continue;
        }
        if fds.is_empty() {
            continue; // no reply socket: nobody to answer
        }
        let reply = fds.remove(0);
        let refuse = |why: &str| {
            let _ = rustix::net::send(&reply, format!("failed {why}").as_bytes(), SendFlags::NOSIGNAL);
        };
        if got.bytes > MAX_REQUEST {
            refuse("the request is too long");
            continue;
        }
        let req = match decode(&buf[..got.bytes]) {
            Ok(req) => req,
            Err(why) => {
                refuse(&why);
                continue;
            }
        };
        match start_child(&req, fds, reply.as_raw_fd(), &private_mounts) {
            Ok(child) => match rustix::process::Pid::from_raw(child.id() as i32)
                .ok_or(rustix::io::Errno::SRCH)
                .and_then(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()))
            {
                Ok(pidfd) => running.push(Running { child, pidfd, reply }),
                Err(e) => {
                    // Cannot watch it: wait for it here rather than lose its exit.
                    let mut child = child;
                    let status = child.wait();
                    let msg = match status.map(|s| (s.code(), s.signal())) {
                        Ok((Some(code), _)) => format!("exit {code}"),
                        Ok((None, Some(sig))) => format!("signal {sig}"),
                        _ => format!("exit -1 (pidfd: {e})"),
                    };
                    let _ = rustix::net::send(&reply, msg.as_bytes(), SendFlags::NOSIGNAL);
                }
            },
            Err(e) => refuse(&e.to_string()),
        }
    }
}

/// Forks and runs one command: its own mount namespace with empty `/tmp`, `/var/tmp` and
/// `/dev/shm`, no capabilities at all, a session (terminal) or process group (pipes) of its
/// own, and its pid sent on `reply` just before `exec`.
fn start_child(
    req: &Decoded,
    mut fds: Vec<OwnedFd>,
    reply: RawFd,
    private_mounts: &[&'static std::ffi::CStr],
) -> std::io::Result<std::process::Child> {
    use std::process::Stdio as S;
    let bad = || std::io::Error::other("the request carries the wrong descriptors");
    let mut cmd = std::process::Command::new(&req.program);
    cmd.arg0(req.argv.first().map_or(req.program.as_os_str(), |a| a.as_os_str()));
    cmd.args(req.argv.iter().skip(1))
        .env_clear()
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&req.cwd);
    let terminal = req.terminal;
    if terminal {
        let tty = fds.pop().filter(|_| fds.is_empty()).ok_or_else(bad)?;
        cmd.stdin(S::from(tty.try_clone()?))
            .stdout(S::from(tty.try_clone()?))
            .stderr(S::from(tty));
    } else {
        // Input and output (errors with it), or input, output and errors apart.
        let errors = match fds.len() {
            2 => None,
            3 => fds.pop(),
            _ => return Err(bad()),
        };
        let output = fds.pop().ok_or_else(bad)?;
        let input = fds.pop().ok_or_else(bad)?;
        let errors = match errors {
            Some(e) => e,
            None => output.try_clone()?,
        };
        cmd.stdin(S::from(input))
            .stdout(S::from(output))
            .stderr(S::from(errors));
    }
    let mounts: Vec<&'static std::ffi::CStr> = private_mounts.to_vec();
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only system calls: rustix's wrappers take the `&CStr`s
    // prepared above, libc's are plain calls; nothing allocates.
    unsafe {
        cmd.pre_exec(move || {
            // The forked child (C1) gets a mount and a pid namespace of its own; its child
            // (C2) is that namespace's init and reaper; C2's child (C3) runs the command.
            own_mounts(&mounts)?;
            let (status_r, status_w) = pipe()?;
            match libc::fork() {
                -1 => return Err(std::io::Error::last_os_error()),
                0 => {}
                c2 => mirror(c2, status_r),
            }
            // C2: pid 1 here. A /proc of this namespace: the command sees its own processes
            // and no other command's.
            libc::close(status_r);
            rustix::mount::mount(
                c"proc",
                c"/proc",
                c"proc",
                rustix::mount::MountFlags::NOSUID
                    | rustix::mount::MountFlags::NODEV
                    | rustix::mount::MountFlags::NOEXEC,
                None,
            )?;
            drop_capabilities()?;
            match libc::fork() {
                -1 => return Err(std::io::Error::last_os_error()),
                0 => {}
                c3 => reap_until(c3, status_w, reply),
            }
            // C3: the command, in a session of its own (so its pid is its group's).
            libc::close(status_w);
            rustix::process::setsid()?;
            if terminal {
                rustix::process::ioctl_tiocsctty(BorrowedFd::borrow_raw(0))?;
            }
            let reply = BorrowedFd::borrow_raw(reply);
            rustix::net::send(reply, b"pid", SendFlags::NOSIGNAL)?;
            // Runs only on Vigil's go-ahead: if Vigil gave up waiting for the pid (and closed
            // its end), this reads the end and the command never runs unwatched.
            let mut go = [0u8; 2];
            match rustix::net::recv(reply, &mut go, rustix::net::RecvFlags::empty()) {
                Ok((2, _)) if &go == b"go" => Ok(()),
                _ => Err(std::io::Error::other("Vigil did not say go")),
            }
        });
    }
    cmd.spawn()
}

/// After fork, before exec: a mount namespace with empty `/tmp`, `/var/tmp` and `/dev/shm`
/// (not shared back), and a pid namespace for the next child.
fn own_mounts(mounts: &[&'static std::ffi::CStr]) -> std::io::Result<()> {
    use rustix::mount::{mount, mount_change, MountFlags, MountPropagationFlags};
    use rustix::thread::{self as t};
    // SAFETY: a single-threaded child of fork; nothing shares its descriptor table.
    unsafe { t::unshare_unsafe(t::UnshareFlags::NEWNS | t::UnshareFlags::NEWPID)? };
    mount_change(c"/", MountPropagationFlags::PRIVATE | MountPropagationFlags::REC)?;
    for at in mounts {
        mount(
            c"tmpfs",
            *at,
            c"tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            c"mode=1777",
        )?;
    }
    Ok(())
}

/// After fork, before exec: no capability left, the bounding set included (so not even an
/// exec as uid 0 brings any back).
fn drop_capabilities() -> std::io::Result<()> {
    use rustix::thread::{self as t, CapabilitySet, CapabilitySets};
    for bit in 0..64u32 {
        match t::remove_capability_from_bounding_set(CapabilitySet::from_bits_retain(1 << bit)) {
            Ok(()) => {}
            Err(rustix::io::Errno::INVAL) => break, // past the last capability
            Err(e) => return Err(e.into()),
        }
    }
    t::clear_ambient_capability_set()?;
    t::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )?;
    Ok(())
}

/// A close-on-exec pipe (read end, write end).
fn pipe() -> std::io::Result<(RawFd, RawFd)> {
    let mut fds = [0; 2];
    // SAFETY: a plain system call on a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((fds[0], fds[1]))
}

/// Closes every descriptor above 2 but those in `keep`: what a reaper holds would otherwise
/// keep the helper's spawn waiting (its exec-report pipe) and the command's sockets open.
fn close_all_but(keep: &[RawFd]) {
    let mut sorted = [0; 2];
    let n = keep.len().min(2);
    sorted[..n].copy_from_slice(&keep[..n]);
    sorted[..n].sort_unstable();
    let mut from = 3;
    for &k in &sorted[..n] {
        if k >= from {
            if k > from {
                // SAFETY: close_range on this process's own table.
                unsafe { libc::syscall(libc::SYS_close_range, from as u32, (k - 1) as u32, 0u32) };
            }
            from = k + 1;
        }
    }
    // SAFETY: close_range on this process's own table.
    unsafe { libc::syscall(libc::SYS_close_range, from as u32, u32::MAX, 0u32) };
}

/// C1, in the helper's pid namespace: waits for C2 and ends as the command ended (its
/// code, or its signal), which is what the helper reports. Never returns.
fn mirror(c2: libc::pid_t, status_r: RawFd) -> ! {
    close_all_but(&[status_r]);
    let mut raw = [0u8; 4];
    let mut got = 0;
    // SAFETY: plain system calls on this process's own descriptors and children.
    unsafe {
        while got < 4 {
            let n = libc::read(status_r, raw[got..].as_mut_ptr().cast(), 4 - got);
            if n > 0 {
                got += n as usize;
            } else if n == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
        while libc::waitpid(c2, std::ptr::null_mut(), 0) == -1
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
        if got < 4 {
            libc::_exit(127);
        }
        let status = i32::from_ne_bytes(raw);
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// C2, init of the command's pid namespace: reaps whatever ends in it until the command
/// (C3) does, ends what the command left behind (every process left in the namespace,
/// killed and reaped), then says how the command ended on its reply socket itself and
/// hands C1 its status. Said here, not by the helper once C1 has ended: the namespaces'
/// teardown and two more process exits stay off the time a caller waits for an exit.
/// Never returns.
fn reap_until(c3: libc::pid_t, status_w: RawFd, reply: RawFd) -> ! {
    close_all_but(&[status_w, reply]);
    // SAFETY: plain system calls on this process's own descriptors and children; the message
    // is made in a buffer on the stack (nothing allocates after fork).
    unsafe {
        loop {
            let mut status = 0;
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid == c3 {
                // Pid 1 here: -1 is every other process of the namespace, nothing outside.
                libc::kill(-1, libc::SIGKILL);
                loop {
                    let left = libc::waitpid(-1, std::ptr::null_mut(), 0);
                    if left == -1 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                        break; // no child left: all of them ended
                    }
                }
                let mut buf = [0u8; 32];
                let len = exit_message(status, &mut buf);
                libc::send(reply, buf.as_ptr().cast(), len, libc::MSG_NOSIGNAL);
                let raw = status.to_ne_bytes();
                libc::write(status_w, raw.as_ptr().cast(), 4);
                libc::_exit(0);
            }
            if pid == -1 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(127);
            }
        }
    }
}

/// `exit N` or `signal N` for a wait status, as the helper words it, written into `buf`
/// without allocating; its length.
fn exit_message(status: libc::c_int, buf: &mut [u8; 32]) -> usize {
    let (word, n): (&[u8], i32) = if libc::WIFSIGNALED(status) {
        (b"signal ", libc::WTERMSIG(status))
    } else {
        (b"exit ", libc::WEXITSTATUS(status))
    };
    buf[..word.len()].copy_from_slice(word);
    let mut len = word.len();
    let mut digits = [0u8; 12];
    let mut d = 0;
    let mut n = n.unsigned_abs();
    loop {
        digits[d] = b'0' + (n % 10) as u8;
        d += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        buf[len] = digits[d];
        len += 1;
    }
    len
}
