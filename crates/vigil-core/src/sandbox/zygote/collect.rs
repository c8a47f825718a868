//! A command run in a zygote to its end, its output and errors collected (a routine's
//! check): what `exec`'s registry does for a command, for a caller that only wants what it
//! printed and how it ended.
//!
//! Owns: the command's pipes (input empty), reading them up to a bound, its deadline.
//! Must never: keep more than the bound of either stream (the rest is read and dropped, so
//! the command never stalls on a full pipe); wait past the deadline (the command's process
//! group is killed there).

use std::io::Read;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::net::sockopt;

use super::{receive, Child, Ended, Request, SpawnError, Stdio, Zygote};

/// How a collected command ended.
#[derive(Debug)]
pub enum Collected {
    /// It ended: how, its output and its errors (each cut at the bound, plus one byte so a
    /// caller can tell it was cut).
    Ended {
        ended: Ended,
        output: Vec<u8>,
        errors: Vec<u8>,
    },
    /// It ran past the deadline and was killed.
    TimedOut,
}

/// Runs `req` in `zygote` with an empty input, keeping at most `max` (+1) bytes of its
/// output and of its errors, and kills it at `limit`. Blocks: call it off the async threads.
pub fn output(zygote: &Zygote, req: &Request<'_>, max: usize, limit: Duration) -> Result<Collected, SpawnError> {
    let deadline = Instant::now() + limit;
    let unavailable = |e: std::io::Error| SpawnError::Unavailable(e.to_string());
    let input: OwnedFd = std::fs::File::open("/dev/null").map_err(unavailable)?.into();
    let (out_r, out_w) = std::io::pipe().map_err(unavailable)?;
    let (err_r, err_w) = std::io::pipe().map_err(unavailable)?;
    let child = zygote.spawn(
        req,
        Stdio::Split {
            input,
            output: out_w.into(),
            errors: err_w.into(),
        },
    )?;
    let mut streams = [(Some(out_r), Vec::new()), (Some(err_r), Vec::new())];
    let mut buf = [0u8; 8192];
    while streams.iter().any(|(r, _)| r.is_some()) {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else {
            return Ok(killed(child));
        };
        let mut fds: Vec<PollFd<'_>> = streams
            .iter()
            .filter_map(|(r, _)| r.as_ref().map(|r| PollFd::new(r, PollFlags::IN)))
            .collect();
        let timeout = Timespec {
            tv_sec: left.as_secs() as _,
            tv_nsec: left.subsec_nanos() as _,
        };
        match poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                return Err(SpawnError::Failed(format!(
                    "the command's output could not be read: {e}"
                )))
            }
        }
        let ready: Vec<bool> = fds.iter().map(|f| !f.revents().is_empty()).collect();
        drop(fds);
        let mut at = 0;
        for (reader, kept) in streams.iter_mut() {
            let Some(r) = reader.as_mut() else { continue };
            let this = ready[at];
            at += 1;
            if !this {
                continue;
            }
            match r.read(&mut buf) {
                Ok(0) => *reader = None,
                Ok(n) => {
                    let room = (max + 1).saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => *reader = None,
            }
        }
    }
    // Both streams ended; the command may still run (it closed them): wait up to the deadline.
    let Some(left) = deadline.checked_duration_since(Instant::now()) else {
        return Ok(killed(child));
    };
    let _ = sockopt::set_socket_timeout(
        &child.reply,
        sockopt::Timeout::Recv,
        Some(left.max(Duration::from_millis(1))),
    );
    let ended = match receive(&child.reply) {
        Ok(Some((msg, _))) => super::parse_exit(&msg),
        Ok(None) => Ended::Lost("the sandbox ended before the command did".into()),
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            return Ok(killed(child));
        }
        Err(e) => Ended::Lost(format!("no word from the sandbox: {e}")),
    };
    let [(_, output), (_, errors)] = streams;
    Ok(Collected::Ended { ended, output, errors })
}

/// Kills the command's process group (it leads one) and waits for the sandbox to say so.
fn killed(child: Child) -> Collected {
    if let Some(pid) = i32::try_from(child.pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    let _ = child.wait();
    Collected::TimedOut
}
