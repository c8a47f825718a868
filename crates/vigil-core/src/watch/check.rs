//! A routine's check: its command run in the read-only sandbox (nothing writable, no
//! network unless the user granted the routine one, no host socket, Vigil's data folder
//! hidden) and its condition decided on the output: it fires when the condition turns true
//! (not again while it stays true). No model, nothing billed.
//!
//! Must never: run a check outside the sandbox (no bubblewrap → the check fails, says why);
//! hand a check the environment of Vigil (keys live there); keep more output than
//! [`MAX_OUTPUT`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use super::shape::{parse_condition, Condition};
use crate::sandbox::{Layout, Sandbox, SandboxSettings};

/// Output kept from a check, as evidence (the rest is cut).
pub const MAX_OUTPUT: usize = 8 * 1024;
/// A check that runs longer is killed and counts as failed.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// Where checks run.
#[derive(Clone)]
pub struct CheckSandbox {
    pub sandbox: Sandbox,
    pub settings: SandboxSettings,
    pub data_dir: PathBuf,
    pub workspace: PathBuf,
    pub home: Option<PathBuf>,
}

/// What one check run showed.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckRun {
    /// `None`: killed (timeout) or ended by a signal.
    pub code: Option<i32>,
    /// Its output and errors, cut at [`MAX_OUTPUT`].
    pub output: String,
}

/// The check's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Nothing happened: no run, nothing billed.
    Quiet,
    /// The condition holds: act, with this evidence.
    Fire(String),
    /// The check could not run or its output could not be read: said to the user.
    Broken(String),
}

/// What each routine's checks showed last (in memory: after a restart the first check only
/// remembers again): the output, for `changed`, and whether the condition held, so a
/// condition fires when it turns true and not again at every check while it stays true.
#[derive(Default)]
pub struct Memory(Mutex<HashMap<String, Seen>>);

#[derive(Default)]
struct Seen {
    output: Option<String>,
    held: bool,
}

impl CheckSandbox {
    /// The layout a check of `routine` runs in: read-only, with the network only if the
    /// user granted the routine one.
    pub fn layout(&self, routine: &str) -> Layout {
        let mut settings = self.settings.clone();
        settings.check_network = settings.network_routines.iter().any(|g| g == routine);
        Layout {
            workspace: self.workspace.clone(),
            cwd: self.workspace.clone(),
            data_dir: self.data_dir.clone(),
            settings,
            attended: false,
            home: self.home.clone(),
            read_only: true,
        }
    }

    /// Runs `command` for `routine` in the read-only sandbox: in the standing one for its
    /// layout (a fork, where a bwrap of its own costs milliseconds more than a short check
    /// runs), else a bwrap of its own.
    pub async fn run(&self, routine: &str, command: &str) -> Result<CheckRun, String> {
        let layout = self.layout(routine);
        let wrapped = self
            .sandbox
            .wrap(&layout)
            .map_err(|why| format!("the read-only sandbox cannot start ({why}), so the check did not run"))?;
        #[cfg(target_os = "linux")]
        if let Some(zygote) = wrapped.zygote.clone() {
            if let Some(run) = self.run_standing(zygote, command).await {
                return run;
            }
        }
        let mut argv = wrapped.without_zygote().args;
        argv.extend(["sh".into(), "-c".into(), command.into()]);
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(&self.workspace)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LANG", "C.UTF-8")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(home) = &self.home {
            cmd.env("HOME", home);
        }
        let mut child = cmd.spawn().map_err(|e| format!("the check could not start: {e}"))?;
        let mut out = child.stdout.take().map(|o| o.take(MAX_OUTPUT as u64 + 1));
        let mut err = child.stderr.take().map(|e| e.take(MAX_OUTPUT as u64 + 1));
        let work = async {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let read_out = async {
                if let Some(o) = out.as_mut() {
                    let _ = o.read_to_end(&mut a).await;
                }
            };
            let read_err = async {
                if let Some(e) = err.as_mut() {
                    let _ = e.read_to_end(&mut b).await;
                }
            };
            tokio::join!(read_out, read_err);
            let status = child.wait().await;
            (a, b, status)
        };
        let (a, b, status) = tokio::time::timeout(CHECK_TIMEOUT, work).await.map_err(|_| {
            format!(
                "the check ran longer than {} s and was stopped",
                CHECK_TIMEOUT.as_secs()
            )
        })?;
        let status = status.map_err(|e| format!("the check could not be waited for: {e}"))?;
        let mut output = String::from_utf8_lossy(&a).into_owned();
        if !b.is_empty() {
            output.push_str(&String::from_utf8_lossy(&b));
        }
        Ok(CheckRun {
            code: status.code(),
            output: cut(&output, MAX_OUTPUT),
        })
    }
}

#[cfg(target_os = "linux")]
impl CheckSandbox {
    /// The check in the layout's standing sandbox, with the environment and folder the
    /// other path gives it; `None` when that sandbox is not available (the caller starts a
    /// bwrap of its own).
    async fn run_standing(
        &self,
        zygote: std::sync::Arc<crate::sandbox::zygote::Zygote>,
        command: &str,
    ) -> Option<Result<CheckRun, String>> {
        use crate::sandbox::zygote::{output, Collected, Ended, Request, SpawnError};
        const PATH: &str = "/usr/local/bin:/usr/bin:/bin";
        // No lookup happens inside: `sh` as the check's PATH finds it (the system's folders
        // are the same inside the read-only sandbox).
        let sh = std::env::split_paths(PATH)
            .map(|d| d.join("sh"))
            .find(|p| p.is_file())?;
        let mut env: Vec<std::ffi::OsString> = vec![format!("PATH={PATH}").into(), "LANG=C.UTF-8".into()];
        if let Some(home) = &self.home {
            let mut h = std::ffi::OsString::from("HOME=");
            h.push(home);
            env.push(h);
        }
        let argv: Vec<std::ffi::OsString> = vec!["sh".into(), "-c".into(), command.into()];
        let cwd = self.workspace.clone();
        let job = tokio::task::spawn_blocking(move || {
            let req = Request {
                program: sh.as_os_str(),
                argv: &argv,
                env: &env,
                cwd: &cwd,
            };
            output(&zygote, &req, MAX_OUTPUT, CHECK_TIMEOUT)
        });
        let (ended, a, b) = match job.await {
            Ok(Ok(Collected::Ended { ended, output, errors })) => (ended, output, errors),
            Ok(Ok(Collected::TimedOut)) => {
                return Some(Err(format!(
                    "the check ran longer than {} s and was stopped",
                    CHECK_TIMEOUT.as_secs()
                )))
            }
            Ok(Err(SpawnError::Failed(why))) => return Some(Err(format!("the check could not start: {why}"))),
            Ok(Err(SpawnError::Unavailable(_))) | Err(_) => return None,
        };
        let mut output = String::from_utf8_lossy(&a).into_owned();
        if !b.is_empty() {
            output.push_str(&String::from_utf8_lossy(&b));
        }
        let code = match ended {
            Ended::Code(c) => Some(c),
            Ended::Signal(_) | Ended::Lost(_) => None,
        };
        Some(Ok(CheckRun {
            code,
            output: cut(&output, MAX_OUTPUT),
        }))
    }
}

/// `s` cut to at most `max` bytes on a character boundary, marked when cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… (cut)", &s[..end])
}

/// The first number in `output` (`83%` → 83, `-1.5` → -1.5).
pub fn first_number(output: &str) -> Option<f64> {
    let bytes = output.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let starts = c.is_ascii_digit() || (c == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit));
        if starts {
            let mut j = i + 1;
            while j < bytes.len() && (bytes[j].is_ascii_digit() || bytes[j] == b'.') {
                j += 1;
            }
            return output[i..j].trim_end_matches('.').parse().ok();
        }
        i += 1;
    }
    None
}

impl Memory {
    /// Decides `when` on what a check of `routine` showed.
    pub fn decide(&self, routine: &str, when: &str, run: &CheckRun) -> Verdict {
        let condition = match parse_condition(when) {
            Ok(c) => c,
            Err(e) => return Verdict::Broken(e),
        };
        let code = run.code.map_or("killed".to_string(), |c| c.to_string());
        let evidence = format!("exit code {code}\n{}", run.output.trim_end());
        let mut memory = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let seen = memory.entry(routine.to_string()).or_default();
        let holds = match condition {
            Condition::Nonzero => run.code != Some(0),
            Condition::Changed => {
                let before = seen.output.replace(run.output.clone());
                return match before {
                    Some(before) if before != run.output => {
                        Verdict::Fire(format!("{evidence}\n(before: {})", cut(before.trim_end(), 1024)))
                    }
                    _ => Verdict::Quiet,
                };
            }
            Condition::Compare(cmp, bound) => match first_number(&run.output) {
                Some(n) => cmp.holds(n, bound),
                None => {
                    return Verdict::Broken(format!(
                        "the check's output has no number to compare ({}): {}",
                        when.trim(),
                        cut(run.output.trim(), 200)
                    ))
                }
            },
        };
        // Fires when it turns true; while it stays true, quiet.
        let was = std::mem::replace(&mut seen.held, holds);
        if holds && !was {
            Verdict::Fire(evidence)
        } else {
            Verdict::Quiet
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(code: i32, output: &str) -> CheckRun {
        CheckRun {
            code: Some(code),
            output: output.into(),
        }
    }

    #[test]
    fn a_disk_over_eighty_percent_fires_and_under_it_stays_quiet() {
        let m = Memory::default();
        assert_eq!(m.decide("disk", "> 80", &ran(0, " 79%\n")), Verdict::Quiet);
        assert!(matches!(m.decide("disk", "> 80", &ran(0, " 83%\n")), Verdict::Fire(e) if e.contains("83%")));
        // Still over: said once, not at every check.
        assert_eq!(m.decide("disk", "> 80", &ran(0, " 85%\n")), Verdict::Quiet);
        assert_eq!(m.decide("disk", "> 80", &ran(0, " 70%\n")), Verdict::Quiet);
        assert!(matches!(m.decide("disk", "> 80", &ran(0, " 90%\n")), Verdict::Fire(_)));
        assert!(matches!(
            m.decide("disk", "> 80", &ran(0, "no disk")),
            Verdict::Broken(_)
        ));
    }

    #[test]
    fn nonzero_and_changed_fire_only_on_what_they_say() {
        let m = Memory::default();
        assert_eq!(m.decide("a", "nonzero", &ran(0, "ok")), Verdict::Quiet);
        assert!(matches!(m.decide("a", "nonzero", &ran(2, "down")), Verdict::Fire(_)));
        assert_eq!(m.decide("b", "changed", &ran(0, "v1")), Verdict::Quiet);
        assert_eq!(m.decide("b", "changed", &ran(0, "v1")), Verdict::Quiet);
        assert!(matches!(m.decide("b", "changed", &ran(0, "v2")), Verdict::Fire(e) if e.contains("before: v1")));
    }
}
