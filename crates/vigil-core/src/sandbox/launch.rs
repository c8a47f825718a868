//! # sandbox::launch
//!
//! The step between Vigil and bubblewrap, run as `vigil-sandbox launch [--net] -- bwrap …`
//! outside the sandbox (the same helper binary the zygote runs inside). It hands bwrap what
//! can only be handed as descriptors, then becomes bwrap (`exec`, same pid, same process
//! group and terminal), so Vigil waits for and signals it as it would bwrap itself:
//!
//! - **the seccomp filter** (`--seccomp`): `socket(AF_UNIX, …)` fails with `EPERM`, so no
//!   command reaches a host Unix socket, by path (session and system bus, Secret Service,
//!   ssh/gpg agents, X11, `docker.sock`) or abstract; `socketpair` still works (Node and
//!   libuv use it for stdio). `io_uring` is refused too: its `IORING_OP_SOCKET` would make
//!   the same socket without the `socket` system call. The filter is a few instructions
//!   compiled by `seccompiler`; 32-bit and x32 system calls are refused or filtered alike.
//! - **each bound folder and file**, opened here once (see [`super::pin`]).
//! - **the network**, when the run may use it: every sandbox has a network namespace of its
//!   own (`--unshare-net`: host loopback services and abstract sockets are not in it), and
//!   `slirp4netns --disable-host-loopback` gives it a route out through user-mode
//!   networking. bwrap reports its child's pid (`--info-fd`), a relay process waits for
//!   bwrap to bring the namespace's loopback up and then attaches slirp4netns to it, and
//!   bwrap waits (`--block-fd`) until slirp4netns says the network is configured. A relay or slirp4netns that fails leaves the sandbox without a network,
//!   never with the host's.
//!
//! Why a step of its own: the terminal path (portable-pty) closes every descriptor but the
//! standard three before it runs a program, so a descriptor meant for bwrap cannot come
//! from Vigil; made here, after that, it reaches bwrap on every path.
//!
//! Must never: run bwrap without the filter (any failure before `exec` is an exit, and the
//! command never runs); give the sandbox the host's network.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;

/// Where bwrap finds each descriptor. Above the standard three and the zygote's control
/// socket (3), which pass through untouched.
const SECCOMP_FD: RawFd = 10;
const INFO_FD: RawFd = 11;
const BLOCK_FD: RawFd = 12;
/// Held by bwrap and everything in the sandbox; slirp4netns leaves when the last holder
/// has (its `--exit-fd` reads end of file).
const ALIVE_FD: RawFd = 13;
const RESOLV_FD: RawFd = 14;
/// In the relay: the info pipe, slirp4netns's ready pipe (bwrap's block), the alive pipe.
const RELAY_INFO: RawFd = 3;
const RELAY_READY: RawFd = 4;
const RELAY_ALIVE: RawFd = 5;

/// How long slirp4netns keeps forwarding after the sandbox's last process ended: what that
/// process wrote just before it exited is still in flight (the sandbox's kernel sends it on
/// through the tap device, which slirp4netns reads).
const DRAIN_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// The address slirp4netns answers DNS on inside the sandbox.
const SLIRP_DNS: &str = "10.0.2.3";

/// The BPF program bwrap installs: `socket(AF_UNIX)` and io_uring refused with `EPERM`.
pub fn filter(allow_unix: bool) -> Result<Vec<u8>, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
    };
    let arch = if cfg!(target_arch = "x86_64") {
        TargetArch::x86_64
    } else if cfg!(target_arch = "aarch64") {
        TargetArch::aarch64
    } else {
        return Err("the sandbox's socket filter is built for x86_64 and aarch64 only".into());
    };
    let unix = || -> Result<Vec<SeccompRule>, String> {
        let cond = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, libc::AF_UNIX as u64)
            .map_err(|e| e.to_string())?;
        Ok(vec![SeccompRule::new(vec![cond]).map_err(|e| e.to_string())?])
    };
    let mut rules = std::collections::BTreeMap::new();
    if !allow_unix {
        rules.insert(libc::SYS_socket, unix()?);
    }
    for call in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(call, vec![]);
    }
    // x32 system calls share x86_64's architecture word with a high bit set in the number:
    // the same calls under those numbers.
    #[cfg(target_arch = "x86_64")]
    {
        const X32: i64 = 0x4000_0000;
        if !allow_unix {
            rules.insert(X32 | libc::SYS_socket, unix()?);
        }
        for call in [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ] {
            rules.insert(X32 | call, vec![]);
        }
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: seccompiler::BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for insn in program {
        bytes.extend_from_slice(&insn.code.to_ne_bytes());
        bytes.push(insn.jt);
        bytes.push(insn.jf);
        bytes.extend_from_slice(&insn.k.to_ne_bytes());
    }
    Ok(bytes)
}

/// `launch [--unix] [--net <slirp4netns>] -- <bwrap> <args…>`: sets up the descriptors and becomes
/// bwrap. Returns only on failure (the exit code).
pub fn main(args: &[OsString]) -> i32 {
    let allow_unix = args.first().is_some_and(|a| a == "--unix");
    let args = if allow_unix { &args[1..] } else { args };
    let slirp = match args.first().is_some_and(|a| a == "--net") {
        true => args.get(1).cloned(),
        false => None,
    };
    let Some(at) = args.iter().position(|a| a == "--") else {
        eprintln!("vigil-sandbox launch: no `--` before bwrap's command line");
        return 2;
    };
    let Some((bwrap, rest)) = args[at + 1..].split_first() else {
        eprintln!("vigil-sandbox launch: no bwrap to run");
        return 2;
    };
    match prepare(slirp, allow_unix).and_then(|extra| Ok((extra, super::pin::pin(rest)?))) {
        Ok((extra, rest)) => {
            let err = std::process::Command::new(bwrap).args(&extra).args(&rest).exec();
            eprintln!("vigil-sandbox launch: bwrap did not start: {err}");
            127
        }
        Err(why) => {
            eprintln!("vigil-sandbox launch: the sandbox was not started: {why}");
            126
        }
    }
}

/// The descriptors in place (inherited by bwrap), and bwrap's options naming them.
fn prepare(slirp: Option<OsString>, allow_unix: bool) -> Result<Vec<OsString>, String> {
    let io = |what: &'static str| move |e: std::io::Error| format!("{what}: {e}");
    let mut extra: Vec<OsString> = Vec::new();
    let bpf = filter(allow_unix)?;
    let (r, w) = std::io::pipe().map_err(io("no pipe for the filter"))?;
    // A few hundred bytes: far below a pipe's buffer, so this write never blocks.
    (&w).write_all(&bpf).map_err(io("the filter"))?;
    drop(w);
    super::pin::place(OwnedFd::from(r), SECCOMP_FD)?;
    extra.extend(["--seccomp".into(), SECCOMP_FD.to_string().into()]);
    if let Some(slirp) = slirp {
        let (info_r, info_w) = std::io::pipe().map_err(io("no pipe for bwrap's info"))?;
        let (block_r, block_w) = std::io::pipe().map_err(io("no pipe for the network's start"))?;
        let (alive_r, alive_w) = std::io::pipe().map_err(io("no pipe for the network's end"))?;
        let relay_fds = [
            (OwnedFd::from(info_r), RELAY_INFO),
            (OwnedFd::from(block_w), RELAY_READY),
            (OwnedFd::from(alive_r), RELAY_ALIVE),
        ];
        start_relay(&slirp, relay_fds)?;
        super::pin::place(OwnedFd::from(info_w), INFO_FD)?;
        super::pin::place(OwnedFd::from(block_r), BLOCK_FD)?;
        super::pin::place(OwnedFd::from(alive_w), ALIVE_FD)?;
        extra.extend([
            "--unshare-net".into(),
            "--info-fd".into(),
            INFO_FD.to_string().into(),
            "--block-fd".into(),
            BLOCK_FD.to_string().into(),
        ]);
        if let Some(resolv) = loopback_resolver() {
            let (r, w) = std::io::pipe().map_err(io("no pipe for resolv.conf"))?;
            (&w).write_all(resolv.as_bytes()).map_err(io("resolv.conf"))?;
            drop(w);
            super::pin::place(OwnedFd::from(r), RESOLV_FD)?;
            extra.extend([
                "--ro-bind-data".into(),
                RESOLV_FD.to_string().into(),
                "/etc/resolv.conf".into(),
            ]);
        }
    } else {
        extra.push("--unshare-net".into());
    }
    Ok(extra)
}

/// Starts `vigil-sandbox net-relay` with its three pipes, its output discarded (it shares
/// the command's terminal).
fn start_relay(slirp: &OsString, fds: [(OwnedFd, RawFd); 3]) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("where this program is: {e}"))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("net-relay")
        .arg(slirp)
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let raw: Vec<(RawFd, RawFd)> = fds.iter().map(|(fd, to)| (fd.as_raw_fd(), *to)).collect();
    // SAFETY: only dup2 and fcntl between fork and exec, both async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            // Sources may sit on a target's number: move every one above the targets first.
            let mut moved = Vec::with_capacity(raw.len());
            for (from, to) in &raw {
                let high = libc::fcntl(*from, libc::F_DUPFD, 64);
                if high < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                moved.push((high, *to));
            }
            for (from, to) in moved {
                if libc::dup2(from, to) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(|e| format!("the network relay did not start: {e}"))?;
    drop(fds); // the relay holds its own copies; the ready pipe must end when it does
    Ok(())
}

/// A `resolv.conf` naming slirp4netns's DNS when every name server the host names is a
/// loopback address (systemd-resolved's 127.0.0.53), which the sandbox cannot reach.
fn loopback_resolver() -> Option<String> {
    let text = std::fs::read_to_string("/etc/resolv.conf").ok()?;
    let servers: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .map(str::trim)
        .collect();
    let loopback = |s: &&str| s.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    (!servers.is_empty() && servers.iter().all(loopback)).then(|| format!("nameserver {SLIRP_DNS}\n"))
}

/// `net-relay <slirp4netns>`: reads bwrap's info (the sandbox's pid) and becomes
/// slirp4netns attached to it. Returns only on failure; then the ready pipe closes and
/// bwrap goes on with no network.
pub fn relay(slirp: &std::ffi::OsStr) -> i32 {
    // Nothing but the three pipes: an inherited socket (the zygote's control socket) held
    // here would outlive the helper and hide its end from Vigil.
    // SAFETY: closes descriptors this process does not use.
    unsafe { libc::syscall(libc::SYS_close_range, RELAY_ALIVE + 1, u32::MAX, 0) };
    // SAFETY: the relay's descriptors, as `start_relay` placed them.
    let info = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(RELAY_INFO) };
    let mut values =
        serde_json::Deserializer::from_reader(std::io::BufReader::new(info)).into_iter::<serde_json::Value>();
    let pid = match values.next() {
        Some(Ok(v)) => v.get("child-pid").and_then(serde_json::Value::as_u64),
        _ => None,
    };
    let Some(pid) = pid else {
        return 1;
    };
    // bwrap's child brings the namespace's loopback up while this starts; slirp4netns
    // configuring at the same moment makes one of them fail. Wait until the loopback
    // address is routed (readable by its owner, by any user), at most 5 s.
    let routes = format!("/proc/{pid}/net/fib_trie");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match std::fs::read_to_string(&routes) {
            Ok(text) if text.contains("127.0.0.1") => break,
            Err(_) => return 1, // the sandbox is gone
            Ok(_) if std::time::Instant::now() > deadline => return 1,
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
    // slirp4netns ends when its exit pipe ends. Not the sandbox's own: when the last process
    // in the sandbox has ended, what it wrote last may still be on its way out through
    // slirp4netns (an `echo … > /dev/tcp/…` and exit); ended at once, slirp4netns would drop
    // it. This relay holds slirp4netns's exit pipe, and closes it a moment after the
    // sandbox's has ended.
    let Ok((exit_r, exit_w)) = std::io::pipe() else {
        return 1;
    };
    // Inherited by slirp4netns (the write end stays here, not inherited).
    if rustix::io::fcntl_setfd(&exit_r, rustix::io::FdFlags::empty()).is_err() {
        return 1;
    }
    let exit_fd = exit_r.as_raw_fd();
    let slirp_child = std::process::Command::new(slirp)
        .args([
            "--configure".to_string(),
            "--mtu=65520".into(),
            "--disable-host-loopback".into(),
            format!("--userns-path=/proc/{pid}/ns/user"),
            format!("--ready-fd={RELAY_READY}"),
            format!("--exit-fd={exit_fd}"),
            pid.to_string(),
            "tap0".into(),
        ])
        .spawn();
    let Ok(mut slirp_child) = slirp_child else {
        return 1;
    };
    drop(exit_r);
    // SAFETY: the ready pipe is slirp4netns's now (bwrap's block ends when it writes or ends).
    unsafe { libc::close(RELAY_READY) };
    // SAFETY: the relay's descriptor, as `start_relay` placed it.
    let mut alive = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(RELAY_ALIVE) };
    let mut byte = [0u8; 1];
    while matches!(std::io::Read::read(&mut alive, &mut byte), Ok(n) if n > 0) {}
    std::thread::sleep(DRAIN_GRACE);
    drop(exit_w);
    let _ = slirp_child.wait();
    0
}

/// slirp4netns: `VIGIL_SLIRP4NETNS` (a build of one's own; a path that does not exist for a
/// test of the fallback), else on `PATH`, else Debian's place.
pub fn find_slirp() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("VIGIL_SLIRP4NETNS") {
        let p = std::path::PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join("slirp4netns"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let p = std::path::PathBuf::from("/usr/bin/slirp4netns");
        p.is_file().then_some(p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_to_whole_instructions() {
        let bpf = filter(false).unwrap();
        assert!(!bpf.is_empty() && bpf.len().is_multiple_of(8), "{} bytes", bpf.len());
    }
}
