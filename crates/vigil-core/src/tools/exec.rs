//! `exec`: run a shell command in a real terminal, streaming its tail while it runs; yield to
//! the background when it outlives `yieldMs` (seed 000, OpenClaw's defaults).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;
use tokio::time::{sleep_until, Instant};

use super::truncate::group_digits;
use super::{parse_args, truncate_head_tail, Tool, ToolContext, ToolOutput};
use crate::exec::{Outcome, ProcessInfo, ProcessState, RegistryHandle, SpawnRequest, Yielded};
use crate::provider::ToolSpec;
use crate::sandbox::{explain_refusal, Layout, TurnSandbox};

const DEFAULT_YIELD_MS: f64 = 10_000.0;
const MIN_YIELD_MS: f64 = 10.0;
const MAX_YIELD_MS: f64 = 120_000.0;
/// Seed 000's default, for background commands too: a forgotten job must not run until quit.
const DEFAULT_TIMEOUT_SECS: f64 = 1800.0;
/// The longest timeout the agent may give; for longer, `timeout: 0` runs until killed,
/// which the approval card says.
const MAX_TIMEOUT_SECS: f64 = 86_400.0;
/// Live tails at most 4 times a second: enough to watch, little enough for the UI.
const UPDATE_EVERY: Duration = Duration::from_millis(250);
/// Characters of output in one result; the middle goes first.
const MAX_RESULT_CHARS: usize = 100_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecArgs {
    command: String,
    #[serde(default, alias = "cwd")]
    workdir: Option<String>,
    #[serde(default)]
    env: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default, rename = "yieldMs", alias = "yield_ms")]
    yield_ms: Option<f64>,
    #[serde(default)]
    background: Option<bool>,
    #[serde(default)]
    timeout: Option<f64>,
    #[serde(default)]
    pty: Option<bool>,
    /// `false` asks to run outside the sandbox: the user must approve that command.
    #[serde(default)]
    sandbox: Option<bool>,
}

/// The `exec` tool.
pub struct ExecTool {
    registry: RegistryHandle,
}

impl ExecTool {
    pub fn new(registry: RegistryHandle) -> Self {
        Self { registry }
    }
}

/// Kills the process if the call is dropped before it finished or yielded (the registry
/// aborts a tool's task when the user presses Stop).
struct KillOnDrop<'a> {
    registry: &'a RegistryHandle,
    owner: &'a str,
    id: &'a str,
    armed: bool,
}

impl Drop for KillOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.registry.kill_detached(self.owner, self.id);
        }
    }
}

#[async_trait::async_trait]
impl Tool for ExecTool {
    /// Every command goes to the gate before it is started.
    fn asks_gate_first(&self, _input: &serde_json::Value, _workspace: &std::path::Path) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "exec".into(),
            description: "Run a shell command (`sh -c`) in a real terminal (TERM=xterm-256color, \
                 120x32), in the workspace folder unless `workdir` says otherwise. Waits up to \
                 `yieldMs` (default 10000) for it to finish and returns its output (colours and \
                 control sequences stripped) with `(Command exited with code N)` when the code \
                 is not 0. If it is still running then, it keeps running in the background and \
                 you get its session id: use the `process` tool to poll, read the log, write \
                 input, or kill it; you are also told when it exits. Use `background: true` \
                 for servers and long jobs. Every command, in the background too, is killed \
                 after `timeout` seconds (default 1800, at most 86400); `timeout: 0` runs it \
                 until it ends or is killed (a server meant to stay up)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The shell command to run."},
                    "workdir": {"type": "string", "description": "Folder to run in: relative to the workspace, or absolute. Default: the workspace."},
                    "env": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Extra environment variables."},
                    "yieldMs": {"type": "number", "description": "Milliseconds to wait before moving the command to the background (default 10000, 10 to 120000)."},
                    "background": {"type": "boolean", "description": "Move to the background at once and return its session id."},
                    "timeout": {"type": "number", "description": "Kill the command (and everything it started) after this many seconds, in the foreground or the background: default 1800, at most 86400 (24 h). 0: no timeout, it runs until it ends or is killed."},
                    "pty": {"type": "boolean", "description": "Run in a terminal (default true). false: plain pipes, so programs see no terminal."},
                    "sandbox": {"type": "boolean", "description": "Commands run in a sandbox: only the workspace and the command's folder are writable. false asks the user to run this one command outside it; only when a sandboxed run failed on something the sandbox refused."}
                },
                "required": ["command"],
                "additionalProperties": false
            }),
        }
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let args: ExecArgs = match parse_args(&self.spec(), input) {
            Ok(args) => args,
            Err(out) => return out,
        };
        let (background, yield_ms) = (args.background == Some(true), args.yield_ms);
        let wants_out = args.sandbox == Some(false);
        let mut req = match request(args, ctx) {
            Ok(req) => req,
            Err(msg) => return ToolOutput::error(msg),
        };
        let layout = ctx.sandbox.as_ref().map(|sb| sandbox_layout(sb, ctx, &req));
        // Why an unattended command would run outside (bubblewrap cannot start): said with a refusal.
        let mut missing_sandbox = None;
        let outside = match (&ctx.sandbox, &layout) {
            (Some(sb), Some(layout)) => match place(sb, layout, wants_out) {
                Ok(Place::Inside(args)) => {
                    req.sandbox = Some(args);
                    false
                }
                Ok(Place::Outside) => true,
                Ok(Place::NoSandbox(why)) => {
                    missing_sandbox = Some(why);
                    true
                }
                Err(why) => return ToolOutput::error(why),
            },
            _ => false,
        };
        let mut layout = layout;
        if let Some(gate) = &ctx.gate {
            let cwd = req.cwd.display().to_string();
            let env_shown: Vec<String> = req.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let verdict = gate
                .check(
                    vigil_protocol::ApprovalKind::Exec,
                    &req.command,
                    Some(&cwd),
                    &env_shown,
                    outside,
                    Some(vigil_protocol::ExecRun {
                        background,
                        timeout_ms: req.timeout.map(|t| t.as_millis() as u64),
                    }),
                )
                .await;
            // Allowed only as read-only: the read-only sandbox, whatever the program does.
            if let (crate::approval::Verdict::ReadOnly, Some(sb), Some(l), false) =
                (&verdict, &ctx.sandbox, layout.as_mut(), outside)
            {
                l.read_only = true;
                match sb.sandbox.wrap(l) {
                    Ok(wrapped) => req.sandbox = Some(wrapped),
                    Err(why) => return ToolOutput::error(format!("The read-only sandbox cannot start: {why}")),
                }
            }
            if let crate::approval::Verdict::Denied(why) = verdict {
                return ToolOutput::error(match missing_sandbox {
                    Some(missing) => format!(
                        "{why} The sandbox is not available ({missing}), so this unattended command would run outside it; Settings → Approvals shows why."
                    ),
                    None => why,
                });
            }
        }
        let layout = layout.filter(|_| !outside);
        let timeout = req.timeout;
        let info = match self.registry.spawn(req).await {
            Ok(info) => info,
            Err(e) => return ToolOutput::error(e.to_string()),
        };
        ctx.started
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(info.id.clone());
        let owner = ctx.owner.as_str();
        let mut guard = KillOnDrop {
            registry: &self.registry,
            owner,
            id: &info.id,
            armed: true,
        };
        if background {
            guard.armed = false;
            return ToolOutput::ok(running_text(&info));
        }
        let yield_ms = yield_ms.unwrap_or(DEFAULT_YIELD_MS);
        let yield_ms = if yield_ms.is_nan() {
            DEFAULT_YIELD_MS
        } else {
            yield_ms.clamp(MIN_YIELD_MS, MAX_YIELD_MS)
        };
        let yield_at = Instant::now() + Duration::from_millis(yield_ms as u64);

        let mut finished = std::pin::pin!(self.registry.wait(owner, &info.id));
        let mut ticks = tokio::time::interval_at(Instant::now() + UPDATE_EVERY, UPDATE_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_tail = String::new();
        let output = loop {
            tokio::select! {
                biased;
                done = &mut finished => break match done {
                    Ok(outcome) => finished_output(&outcome, timeout, layout.as_ref()),
                    Err(e) => ToolOutput::error(e.to_string()),
                },
                () = ctx.cancel.cancelled() => {
                    let _ = self.registry.kill(owner, &info.id).await;
                    break ToolOutput::error("Cancelled; the command and everything it started were killed.");
                }
                () = sleep_until(yield_at) => break match self.registry.background(owner, &info.id).await {
                    Ok(Yielded::Running(info)) => ToolOutput::ok(running_text(&info)),
                    Ok(Yielded::Finished(outcome)) => finished_output(&outcome, timeout, layout.as_ref()),
                    Err(e) => ToolOutput::error(e.to_string()),
                },
                _ = ticks.tick(), if ctx.updates.is_some() => {
                    if let (Ok((_, tail)), Some(updates)) = (self.registry.tail(owner, &info.id).await, &ctx.updates) {
                        if tail != last_tail {
                            let _ = updates.send(tail.clone());
                            last_tail = tail;
                        }
                    }
                }
            }
        };
        guard.armed = false;
        output
    }
}

fn sandbox_layout(sb: &TurnSandbox, ctx: &ToolContext, req: &SpawnRequest) -> Layout {
    Layout {
        workspace: ctx.workspace.clone(),
        cwd: req.cwd.clone(),
        data_dir: sb.data_dir.clone(),
        settings: sb.settings.clone(),
        attended: sb.attended,
        home: sb.home.clone(),
        read_only: false,
    }
}

/// Where a command runs.
enum Place {
    /// In the sandbox, with these bwrap arguments.
    Inside(crate::sandbox::Wrapped),
    /// Outside it: an attended turn asked to leave it (or has no bubblewrap); the approval
    /// gate asks about it.
    Outside,
    /// Outside it because bubblewrap cannot start (why), in a run nobody watches: the gate
    /// never lets that through on its own — it asks the user (a continuation, a routine) or
    /// refuses (an interval heartbeat). Never silently unsandboxed.
    NoSandbox(String),
}

/// Where a command runs; a run nobody watches never asks to leave the sandbox.
fn place(sb: &TurnSandbox, layout: &Layout, wants_out: bool) -> Result<Place, String> {
    match (sb.attended, wants_out, sb.sandbox.wrap(layout)) {
        (false, true, _) => Err(
            "Commands in runs nobody watches (heartbeat, routines) always run in the sandbox; run it without `sandbox: false`, or ask the user in the conversation."
                .into(),
        ),
        (false, false, Err(why)) => Ok(Place::NoSandbox(why)),
        (_, false, Ok(args)) => Ok(Place::Inside(args)),
        (true, _, _) => Ok(Place::Outside),
    }
}

/// Checks the arguments and turns them into a spawn request.
fn request(args: ExecArgs, ctx: &ToolContext) -> Result<SpawnRequest, String> {
    if args.command.trim().is_empty() {
        return Err("`command` is empty; give the shell command to run.".into());
    }
    let background = args.background.unwrap_or(false);
    let timeout = match args.timeout {
        Some(0.0) => None,
        Some(t) if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_SECS => Some(Duration::from_secs_f64(t)),
        Some(t) if t > MAX_TIMEOUT_SECS => {
            return Err(format!(
                "`timeout` may be at most 86400 seconds (24 h), not {t}; give 0 to run it until it ends or is killed."
            ))
        }
        Some(t) => {
            return Err(format!(
                "`timeout` must be a number of seconds from 0 (no timeout) to 86400 (24 h), not {t}."
            ))
        }
        None => Some(Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS)),
    };
    let mut env = Vec::new();
    for (key, value) in args.env.unwrap_or_default() {
        let value = match value {
            serde_json::Value::String(s) => s,
            v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_)) => v.to_string(),
            _ => return Err(format!("`env.{key}` must be a string.")),
        };
        if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
            return Err(format!("`env` has an invalid variable name or value: {key:?}."));
        }
        env.push((key, value));
    }
    let cwd = workdir(&ctx.workspace, args.workdir.as_deref())?;
    if let Some(data_dir) = &ctx.data_dir {
        if super::path::in_data_dir(&cwd, data_dir, &ctx.workspace) {
            return Err(super::path::data_dir_refusal(
                args.workdir.as_deref().unwrap_or(""),
                &cwd,
            ));
        }
    }
    Ok(SpawnRequest {
        owner: ctx.owner.clone(),
        command: args.command,
        cwd,
        env,
        pty: args.pty.unwrap_or(true),
        size: None,
        timeout,
        background,
        sandbox: None,
    })
}

/// The folder to run in: the workspace, a path relative to it, an absolute path, or `~/…`.
fn workdir(workspace: &Path, raw: Option<&str>) -> Result<PathBuf, String> {
    let Some(raw) = raw.map(str::trim).filter(|r| !r.is_empty()) else {
        return Ok(workspace.to_path_buf());
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let path = match (raw.strip_prefix("~/").or((raw == "~").then_some("")), home) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => workspace.join(raw), // an absolute `raw` replaces the workspace
    };
    match std::fs::metadata(&path) {
        // Its real path, symlinks and `..` resolved by the kernel: what the card shows and
        // what the sandbox sees, not a link's name for somewhere else.
        Ok(m) if m.is_dir() => path
            .canonicalize()
            .map_err(|e| format!("workdir `{raw}` cannot be used: {e}.")),
        Ok(_) => Err(format!("workdir `{raw}` is not a folder ({}).", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
            "workdir `{raw}` does not exist ({}). Relative paths are resolved against the workspace {}; \
             create the folder first or pick an existing one.",
            path.display(),
            workspace.display()
        )),
        Err(e) => Err(format!("workdir `{raw}` cannot be used ({}): {e}.", path.display())),
    }
}

/// OpenClaw's yield message, word for word.
fn running_text(info: &ProcessInfo) -> String {
    let pid = info.pid.map_or_else(|| "n/a".to_string(), |p| p.to_string());
    let mut text = format!(
        "Command still running (session {}, pid {pid}). Use process (list/poll/log/write/kill/clear/remove) for follow-up.",
        info.id
    );
    if let Some(why) = &info.pty_fallback {
        text.push_str(&format!("\n(It runs without a terminal: {why}.)"));
    }
    text
}

/// The result of a command that finished within the call.
fn finished_output(outcome: &Outcome, timeout: Option<Duration>, sandbox: Option<&Layout>) -> ToolOutput {
    let exit = outcome.exit();
    let body = outcome.output.trim_end();
    let mut text = String::new();
    if outcome.dropped_chars > 0 {
        text.push_str(&format!(
            "[… {} earlier characters of output were dropped; the last {} are kept …]\n",
            group_digits(outcome.dropped_chars),
            group_digits(outcome.output.chars().count() as u64)
        ));
    }
    text.push_str(body);
    if text.is_empty() {
        text.push_str("(no output)");
    }
    let mut text = truncate_head_tail(&text, MAX_RESULT_CHARS);
    if let Some(why) = &outcome.info.pty_fallback {
        text.push_str(&format!("\n\n(Ran without a terminal: {why}.)"));
    }
    let killed = outcome.info.state == ProcessState::Killed;
    let footer = if exit.killed_by_user {
        Some(format!(
            "(The user killed this command from the Processes panel; it ended with {})",
            exit.label()
        ))
    } else if exit.timed_out {
        let secs = timeout.map_or(0.0, |t| t.as_secs_f64());
        Some(format!(
            "(Command timed out after {secs} s and was killed, with everything it started)"
        ))
    } else if let Some(sig) = &exit.signal {
        Some(format!("(Command was killed by signal {sig})"))
    } else if killed {
        Some(format!("(Command was killed; it exited with {})", exit.label()))
    } else {
        match exit.code {
            Some(0) => None,
            Some(127) => Some("(Command exited with code 127: the shell could not find the command)".to_string()),
            Some(126) => {
                Some("(Command exited with code 126: the command was found but could not be executed)".to_string())
            }
            Some(code) => Some(format!("(Command exited with code {code})")),
            None => Some("(Command ended with an unknown status)".to_string()),
        }
    };
    if let Some(footer) = footer {
        text.push_str("\n\n");
        text.push_str(&footer);
    }
    if let Some(note) = sandbox
        .filter(|_| exit.code != Some(0))
        .and_then(|l| explain_refusal(body, l))
    {
        text.push_str("\n\n");
        text.push_str(&note);
    }
    // A non-zero exit is an answer, not a failed call: failing tests are worth reading, and
    // re-running them after a fix must not count as the same call failing again.
    ToolOutput {
        content: text,
        is_error: exit.timed_out || killed || exit.signal.is_some(),
        images: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timeout `exec` with these arguments hands the registry.
    fn timeout_sent(args: serde_json::Value) -> Result<Option<Duration>, String> {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        let args: ExecArgs = serde_json::from_value(args).unwrap();
        request(args, &ctx).map(|req| req.timeout)
    }

    #[test]
    fn background_commands_stop_after_30_minutes_unless_told_otherwise() {
        let half_hour = Some(Duration::from_secs(1800));
        assert_eq!(
            timeout_sent(json!({"command": "make", "background": true})),
            Ok(half_hour)
        );
        assert_eq!(timeout_sent(json!({"command": "make"})), Ok(half_hour));
        assert_eq!(
            timeout_sent(json!({"command": "make", "background": true, "timeout": 86_400})),
            Ok(Some(Duration::from_secs(86_400)))
        );
        // 0: until it ends or is killed, in the background or not.
        assert_eq!(
            timeout_sent(json!({"command": "serve", "background": true, "timeout": 0})),
            Ok(None)
        );
        assert_eq!(timeout_sent(json!({"command": "serve", "timeout": 0})), Ok(None));
        assert_eq!(
            timeout_sent(json!({"command": "make", "background": true, "timeout": 90_000})),
            Err("`timeout` may be at most 86400 seconds (24 h), not 90000; give 0 to run it until it ends or is killed.".into())
        );
        assert_eq!(
            timeout_sent(json!({"command": "make", "timeout": -5})),
            Err("`timeout` must be a number of seconds from 0 (no timeout) to 86400 (24 h), not -5.".into())
        );
    }

    #[test]
    fn workdirs_resolve_against_the_workspace_and_missing_ones_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        assert_eq!(workdir(dir.path(), None).unwrap(), dir.path());
        assert_eq!(workdir(dir.path(), Some("sub")).unwrap(), dir.path().join("sub"));
        assert_eq!(workdir(dir.path(), Some("/")).unwrap(), PathBuf::from("/"));
        let missing = workdir(dir.path(), Some("nope")).unwrap_err();
        assert!(missing.starts_with("workdir `nope` does not exist"), "{missing}");
        assert!(workdir(dir.path(), Some("file"))
            .unwrap_err()
            .contains("is not a folder"));
    }
}
