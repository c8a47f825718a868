//! # sandbox::probe
//!
//! Whether bubblewrap can run here: found (on `PATH`, or `VIGIL_BWRAP`), started once with
//! the namespaces commands will use, within 5 s, and new enough to bind descriptors.
//!
//! Must never: block longer than its bound; call a bwrap without `--bind-fd` ready.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Availability;

pub(super) fn probe() -> Availability {
    // `VIGIL_BWRAP` names the program to use instead of `bwrap` on PATH (a build of one's
    // own; a test or screenshot of a machine without it, with a path that does not exist).
    let chosen = std::env::var_os("VIGIL_BWRAP").map(PathBuf::from);
    let Some(bwrap) = chosen.map_or_else(|| find_on_path("bwrap"), |p| p.is_file().then_some(p)) else {
        return Availability::Unavailable(
            "bubblewrap (bwrap) is not installed; install the `bubblewrap` package".into(),
        );
    };
    let mut cmd = std::process::Command::new(&bwrap);
    cmd.args([
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--unshare-user",
        "--cap-drop",
        "ALL",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-net",
        "--die-with-parent",
        "--",
        "true",
    ])
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::piped());
    let outcome = cmd
        .spawn()
        .and_then(|child| wait_bounded(child, Duration::from_secs(5)));
    match outcome {
        Ok(out) if out.status.success() && binds_descriptors(&bwrap) => Availability::Ready { bwrap },
        Ok(out) if out.status.success() => Availability::Unavailable(
            "this bubblewrap is too old: it has no --bind-fd (Debian 12's 0.8 and 0.10 upstream have it)".into(),
        ),
        Ok(out) => Availability::Unavailable(format!(
            "bubblewrap cannot start here ({}); user namespaces may be disabled",
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Availability::Unavailable(format!("bubblewrap cannot start here ({e})")),
    }
}

/// bwrap binds an open descriptor (`--bind-fd`): every folder is bound that way.
fn binds_descriptors(bwrap: &Path) -> bool {
    std::process::Command::new(bwrap)
        .arg("--help")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("--ro-bind-fd"))
}

fn wait_bounded(mut child: std::process::Child, limit: Duration) -> std::io::Result<std::process::Output> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if child.try_wait()?.is_some() {
            return child.wait_with_output();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "it did not finish in 5 s",
            ));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}
