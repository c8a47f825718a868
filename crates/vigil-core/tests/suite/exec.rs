//! The process registry and the `exec`/`process` tools, with real programs and real terminals.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use vigil_core::clock::{ManualClock, SystemClock};
use vigil_core::exec::{
    ChannelExecEvents, ExecError, ExecEvent, ProcessState, RegistryConfig, RegistryHandle, SpawnRequest, TermSize,
};
use vigil_core::tools::{ToolContext, ToolOutput, ToolRegistry};

const OWNER: &str = "session-a";

struct Env {
    registry: RegistryHandle,
    events: UnboundedReceiver<ExecEvent>,
    tools: ToolRegistry,
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Self::with(RegistryConfig {
            kill_grace: Duration::from_secs(1),
            ..RegistryConfig::default()
        })
    }

    fn with(config: RegistryConfig) -> Self {
        Self::with_clock(config, Arc::new(SystemClock))
    }

    fn with_clock(config: RegistryConfig, clock: Arc<dyn vigil_core::clock::Clock>) -> Self {
        let (tx, events) = unbounded_channel();
        let registry = RegistryHandle::start(config, clock, Arc::new(ChannelExecEvents(tx)));
        Self {
            tools: ToolRegistry::with_builtins_and_exec(registry.clone()),
            registry,
            events,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn ctx(&self) -> ToolContext {
        ToolContext::new(self.dir.path()).with_owner(OWNER)
    }

    async fn exec(&self, args: Value) -> ToolOutput {
        self.tools.execute("exec", args, &self.ctx()).await
    }

    async fn process(&self, args: Value) -> ToolOutput {
        self.tools.execute("process", args, &self.ctx()).await
    }

    /// Starts a background command and returns its id.
    async fn background(&self, command: &str, extra: Value) -> String {
        let mut args = json!({"command": command, "background": true});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().cloned().unwrap_or_default());
        let out = self.exec(args).await;
        assert!(!out.is_error, "{}", out.content);
        session_id(&out.content)
    }

    /// Polls (waiting up to 1 s each time) until the accumulated output contains `want`.
    async fn poll_until(&self, id: &str, want: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut seen = String::new();
        while Instant::now() < deadline {
            let out = self
                .process(json!({"action": "poll", "sessionId": id, "timeout": 1000}))
                .await;
            assert!(!out.is_error, "{}", out.content);
            seen.push_str(&out.content);
            if seen.contains(want) {
                return seen;
            }
        }
        panic!("{want:?} never appeared; saw {seen:?}");
    }

    /// Events until an exit notice for `id` or `within` has passed.
    async fn notices_for(&mut self, id: &str, within: Duration) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + within;
        let mut notices = Vec::new();
        while let Ok(Some(event)) = tokio::time::timeout_at(deadline, self.events.recv()).await {
            if let ExecEvent::ExitNotice {
                process_id,
                text,
                owner,
            } = event
            {
                if process_id == id {
                    assert_eq!(owner, OWNER);
                    notices.push(text);
                }
            }
        }
        notices
    }
}

/// The id in `Command still running (session <id>, pid <pid>)…`.
fn session_id(text: &str) -> String {
    let rest = text
        .strip_prefix("Command still running (session ")
        .unwrap_or_else(|| panic!("not a yield: {text}"));
    rest[..rest.find(',').unwrap()].to_string()
}

fn pid_of(text: &str) -> u32 {
    let rest = &text[text.find(", pid ").unwrap() + 6..];
    rest[..rest.find(')').unwrap()].parse().unwrap()
}

/// Live (non-zombie) processes in process group `pgid`, from /proc.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, after)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

#[tokio::test]
async fn a_terminal_by_default_and_pipes_on_request() {
    let env = Env::new();
    let cmd = "python3 -c 'import sys; print(sys.stdin.isatty(), sys.stdout.isatty())'";
    let out = env.exec(json!({"command": cmd})).await;
    assert_eq!(out, ToolOutput::ok("True True"));
    let out = env.exec(json!({"command": cmd, "pty": false})).await;
    assert_eq!(out, ToolOutput::ok("False False"));
    let out = env
        .exec(json!({"command": "echo $TERM $FOO", "env": {"FOO": "bar"}}))
        .await;
    assert_eq!(out, ToolOutput::ok("xterm-256color bar"));
}

#[tokio::test]
async fn the_terminal_has_the_set_size_and_follows_a_resize() {
    let env = Env::new();
    let mut req = SpawnRequest::new(OWNER, "stty size; read line; stty size", env.dir.path());
    req.size = Some(TermSize { cols: 100, rows: 30 });
    let info = env.registry.spawn(req).await.unwrap();
    env.poll_until(&info.id, "30 100").await;
    env.registry
        .resize(&info.id, TermSize { cols: 132, rows: 43 })
        .await
        .unwrap();
    env.registry
        .write(OWNER, &info.id, b"\n".to_vec(), false)
        .await
        .unwrap();
    let done = env.registry.wait(OWNER, &info.id).await.unwrap();
    assert!(done.output.ends_with("43 132\n"), "{:?}", done.output);
    // The default size.
    let out = env.exec(json!({"command": "stty size"})).await;
    assert_eq!(out.content, "32 120");
    // A process without a terminal has no size.
    let mut req = SpawnRequest::new(OWNER, "sleep 5", env.dir.path());
    req.pty = false;
    let info = env.registry.spawn(req).await.unwrap();
    let err = env.registry.resize(&info.id, TermSize::default()).await.unwrap_err();
    assert!(matches!(err, ExecError::NoTerminal { .. }), "{err}");
    env.registry.shutdown().await;
}

#[tokio::test]
async fn an_interactive_python_answers_lines_written_to_it() {
    let env = Env::new();
    let id = env.background("python3 -i -q", json!({})).await;
    env.poll_until(&id, ">>>").await;
    let out = env
        .process(json!({"action": "write", "sessionId": id, "data": "print(6 * 7)\n"}))
        .await;
    assert_eq!(out, ToolOutput::ok(format!("Wrote 13 bytes to {id}.")));
    env.poll_until(&id, "42").await;
    let out = env
        .process(json!({"action": "send-keys", "sessionId": id, "keys": ["exit(5)", "Enter"]}))
        .await;
    assert!(!out.is_error, "{}", out.content);
    let done = env.registry.wait(OWNER, &id).await.unwrap();
    assert_eq!(done.exit().code, Some(5));
    // Pipes: `eof` closes the input and `cat` ends.
    let id = env.background("cat", json!({"pty": false})).await;
    let out = env
        .process(json!({"action": "write", "sessionId": id, "data": "hello\n", "eof": true}))
        .await;
    assert_eq!(
        out,
        ToolOutput::ok(format!("Wrote 6 bytes to {id} and ended its input."))
    );
    let done = env.registry.wait(OWNER, &id).await.unwrap();
    assert_eq!((done.output.as_str(), done.exit().code), ("hello\n", Some(0)));
}

#[tokio::test]
async fn colour_is_stripped_for_the_model_and_kept_raw_for_the_terminal() {
    let env = Env::new();
    let out = env
        .exec(json!({"command": r"printf '\033[31mred\033[0m and \033[1mbold\033[0m\n'"}))
        .await;
    assert_eq!(out, ToolOutput::ok("red and bold"));
    let id = env.registry.list(OWNER).await[0].id.clone();
    let raw = String::from_utf8(env.registry.raw_output(&id).await.unwrap()).unwrap();
    assert_eq!(raw, "\x1b[31mred\x1b[0m and \x1b[1mbold\x1b[0m\r\n");
}

#[tokio::test]
async fn a_fast_command_completes_and_a_slow_one_yields_at_about_yield_ms() {
    let env = Env::new();
    let start = Instant::now();
    let out = env
        .exec(json!({"command": "echo hi; echo err >&2", "yieldMs": 5000}))
        .await;
    assert_eq!(out, ToolOutput::ok("hi\nerr"));
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());

    let start = Instant::now();
    let out = env.exec(json!({"command": "sleep 5", "yieldMs": 300})).await;
    let took = start.elapsed();
    assert!(!out.is_error);
    assert!(
        out.content
            .ends_with("Use process (list/poll/log/write/kill/clear/remove) for follow-up."),
        "{}",
        out.content
    );
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_millis(1500),
        "{took:?}"
    );
    let id = session_id(&out.content);
    let list = env.process(json!({"action": "list"})).await.content;
    assert!(
        list.contains(&format!("{id} running")) && list.contains(":: sleep 5"),
        "{list}"
    );
    let out = env.process(json!({"action": "kill", "sessionId": id})).await;
    assert_eq!(
        out,
        ToolOutput::ok(format!("Killed {id} and everything it started (signal SIGTERM)."))
    );

    // Non-zero exits say so; a missing command is exit 127 with the shell's message.
    let out = env.exec(json!({"command": "echo oops; exit 3"})).await;
    assert_eq!(out, ToolOutput::ok("oops\n\n(Command exited with code 3)"));
    let out = env.exec(json!({"command": "no-such-command-xyz"})).await;
    assert!(
        out.content.contains("no-such-command-xyz: not found")
            && out
                .content
                .ends_with("(Command exited with code 127: the shell could not find the command)"),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_timeout_kills_the_command_and_says_so() {
    let env = Env::new();
    let start = Instant::now();
    let out = env
        .exec(json!({"command": "echo started; sleep 30", "timeout": 0.5}))
        .await;
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert_eq!(
        out,
        ToolOutput::error("started\n\n(Command timed out after 0.5 s and was killed, with everything it started)")
    );
}

#[tokio::test]
async fn a_background_command_past_its_timeout_is_killed_with_its_group_and_the_agent_told_why() {
    let mut env = Env::new();
    // Started in the background, and yielded from the foreground: both keep their timeout.
    let started = env
        .exec(json!({"command": "echo started; sleep 100 & sleep 100", "background": true, "timeout": 1}))
        .await;
    let yielded = env
        .exec(json!({"command": "echo yielded; sleep 100", "yieldMs": 50, "timeout": 1.5}))
        .await;
    let begun = Instant::now();
    let runs = [(started, "1", "started"), (yielded, "1.5", "yielded")];
    let mut notices = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while notices.len() < 2 {
        match tokio::time::timeout_at(deadline, env.events.recv()).await {
            Ok(Some(ExecEvent::ExitNotice { text, .. })) => notices.push(text),
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    let want: Vec<String> = runs
        .iter()
        .map(|(out, after, said)| {
            format!(
                "Exec timed out ({}, after {after} s) :: {said}",
                session_id(&out.content)
            )
        })
        .collect();
    assert_eq!(notices, want);
    for (out, _, said) in runs {
        let (id, pid) = (session_id(&out.content), pid_of(&out.content));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !group_members(pid).is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(group_members(pid), Vec::<u32>::new(), "{said}");
        let info = env.registry.info(OWNER, &id).await.unwrap();
        assert!(info.exit.is_some_and(|e| e.timed_out), "{said}");
    }
    // Well before `sleep 100` would have ended: the kill grace is 1 s.
    assert!(begun.elapsed() < Duration::from_secs(8), "{:?}", begun.elapsed());
}

#[tokio::test]
async fn kill_takes_the_whole_process_group_with_a_terminal_or_pipes() {
    let env = Env::new();
    for pty in [true, false] {
        let out = env
            .exec(json!({"command": "sh -c 'sleep 100 & sleep 100' & sleep 100", "background": true, "pty": pty}))
            .await;
        let (id, pid) = (session_id(&out.content), pid_of(&out.content));
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_members(pid).len() < 3 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(group_members(pid).len() >= 3, "pty {pty}: {:?}", group_members(pid));
        let out = env.process(json!({"action": "kill", "sessionId": id})).await;
        assert!(!out.is_error, "{}", out.content);
        // `kill` returns once the leader is reaped and the output is closed. A grandchild may
        // still be exiting then (its files closed, not yet a zombie): on a loaded machine CI
        // saw one. Dying is enough; one that survived the kill (`sleep 100`) fails here.
        let deadline = Instant::now() + Duration::from_secs(5);
        while !group_members(pid).is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(group_members(pid), Vec::<u32>::new(), "pty {pty}");
        let info = env.registry.info(OWNER, &id).await.unwrap();
        assert_eq!(info.state, ProcessState::Killed);
    }
}

#[tokio::test]
async fn a_flood_keeps_the_buffers_at_their_caps_and_finishes() {
    let env = Env::new();
    // ~68 MB of base64 through the terminal; nobody polls while it runs.
    let id = env
        .background("head -c 50000000 /dev/zero | base64; echo END", json!({}))
        .await;
    let done = tokio::time::timeout(Duration::from_secs(20), env.registry.wait(OWNER, &id))
        .await
        .expect("the flood finished")
        .unwrap();
    assert_eq!(done.exit().code, Some(0));
    assert_eq!(done.output.chars().count(), 200_000);
    assert!(
        done.output.ends_with("=\nEND\n"),
        "{:?}",
        &done.output[done.output.len() - 20..]
    );
    assert!(done.dropped_chars > 67_000_000, "{}", done.dropped_chars);
    let polled = env.registry.poll(OWNER, &id).await.unwrap();
    assert_eq!(polled.output.chars().count(), 200_000);
    assert_eq!(polled.dropped_chars, done.dropped_chars);
    assert_eq!(env.registry.raw_output(&id).await.unwrap().len(), 512 * 1024);
    // The model's view says what was dropped; `log` pages by lines.
    let out = env
        .process(json!({"action": "log", "sessionId": id, "limit": 2}))
        .await
        .content;
    let lines = done.output.lines().count();
    let want = format!(
        "=\nEND\n\n(lines {}–{} of {lines}, 0-based)\nProcess exited with code 0.",
        lines - 2,
        lines - 1
    );
    assert!(
        out.contains("characters of output were dropped") && out.ends_with(&want),
        "{out}"
    );
}

#[tokio::test]
async fn fifty_concurrent_processes_finish_with_their_own_exit_codes() {
    let env = Env::new();
    let mut ids = Vec::new();
    for i in 0..50 {
        let mut req = SpawnRequest::new(
            OWNER,
            format!("echo proc {i}; sleep 0.2; exit {}", i % 7),
            env.dir.path(),
        );
        req.pty = i % 5 != 0; // some with pipes too
        ids.push((i, env.registry.spawn(req).await.unwrap().id));
    }
    for (i, id) in ids {
        let done = env.registry.wait(OWNER, &id).await.unwrap();
        assert_eq!(done.exit().code, Some(i % 7), "{i}");
        assert_eq!(done.output, format!("proc {i}\n"));
        assert_eq!(done.info.state, ProcessState::Exited);
    }
    assert_eq!(env.registry.list(OWNER).await.len(), 50);
}

#[tokio::test]
async fn a_background_exit_is_announced_exactly_once_even_when_polled_first() {
    let mut env = Env::new();
    let id = env
        .background("echo building; sleep 0.3; echo done; exit 3", json!({}))
        .await;
    let polled = env.poll_until(&id, "Process exited with code 3.").await;
    assert!(polled.contains("done"), "{polled}");
    let notices = env.notices_for(&id, Duration::from_millis(500)).await;
    assert_eq!(notices, [format!("Exec failed ({id}, code 3) :: building done")]);

    // Yielded (not `background`) commands are announced too; foreground ones never.
    let out = env.exec(json!({"command": "sleep 0.5; echo ok", "yieldMs": 50})).await;
    let id = session_id(&out.content);
    let notices = env.notices_for(&id, Duration::from_secs(2)).await;
    assert_eq!(notices, [format!("Exec completed ({id}, code 0) :: ok")]);
    let out = env.exec(json!({"command": "echo quick"})).await;
    assert_eq!(out.content, "quick");
    let quick = env.registry.list(OWNER).await.last().unwrap().id.clone();
    assert_eq!(
        env.notices_for(&quick, Duration::from_millis(300)).await,
        Vec::<String>::new()
    );
    // A kill the agent asked for is no news to it.
    let id = env.background("sleep 30", json!({})).await;
    env.process(json!({"action": "kill", "sessionId": id})).await;
    assert_eq!(
        env.notices_for(&id, Duration::from_millis(300)).await,
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn poll_waits_for_news_and_suggests_backing_off() {
    let env = Env::new();
    let id = env.background("sleep 0.3; echo late; sleep 30", json!({})).await;
    let start = Instant::now();
    let out = env
        .process(json!({"action": "poll", "sessionId": id, "timeout": 5000}))
        .await;
    assert!(start.elapsed() < Duration::from_secs(2), "{:?}", start.elapsed());
    assert_eq!(out, ToolOutput::ok("late\n\nProcess still running."));
    for n in 1..=4 {
        let out = env.process(json!({"action": "poll", "sessionId": id})).await.content;
        if n < 3 {
            assert_eq!(out, "(no new output)\n\nProcess still running.");
        } else {
            assert!(out.contains(&format!("No new output in {n} polls in a row")), "{out}");
        }
    }
    let out = env.process(json!({"action": "remove", "sessionId": id})).await;
    assert_eq!(out, ToolOutput::ok(format!("Killed and removed {id}.")));
}

#[tokio::test]
async fn bad_inputs_get_clear_results_and_the_registry_stays_healthy() {
    let env = Env::new();
    let cases = [
        (
            json!({"command": "ls", "workdir": "missing/dir"}),
            "workdir `missing/dir` does not exist",
        ),
        (json!({"command": "  "}), "`command` is empty"),
        (
            json!({"command": "ls", "timeout": -1}),
            "`timeout` must be a number of seconds from 0 (no timeout) to 86400 (24 h), not -1",
        ),
        (json!({"command": "ls", "env": {"A": [1]}}), "`env.A` must be a string"),
    ];
    for (args, want) in cases {
        let out = env.exec(args).await;
        assert!(out.is_error && out.content.contains(want), "{want}: {}", out.content);
    }
    let out = env.exec(json!({"command": "exit 0"})).await;
    let finished = env.registry.list(OWNER).await[0].id.clone();
    assert_eq!(out, ToolOutput::ok("(no output)"));
    let cases = [
        (
            json!({"action": "kill", "sessionId": "deadbeef"}),
            "No process with id `deadbeef` in this session",
        ),
        (json!({"action": "poll"}), "`sessionId` is required"),
        (json!({"action": "launch"}), "unknown variant `launch`"),
        (
            json!({"action": "write", "sessionId": finished, "data": "x"}),
            "has already ended (code 0); it no longer reads input",
        ),
        (
            json!({"action": "clear", "sessionId": "nope"}),
            "No process with id `nope`",
        ),
    ];
    for (args, want) in cases {
        let out = env.process(args).await;
        assert!(out.is_error && out.content.contains(want), "{want}: {}", out.content);
    }
    // Binary garbage arrives as replacement characters, not as a broken registry.
    let out = env.exec(json!({"command": "head -c 200000 /dev/urandom"})).await;
    assert!(
        !out.is_error && out.content.contains('\u{fffd}'),
        "{}",
        out.content.len()
    );
    let out = env.process(json!({"action": "clear", "sessionId": finished})).await;
    assert_eq!(out, ToolOutput::ok(format!("Cleared {finished}; its output is gone.")));
    assert_eq!(env.exec(json!({"command": "echo fine"})).await, ToolOutput::ok("fine"));
}

#[tokio::test]
async fn each_session_sees_only_its_own_processes() {
    let env = Env::new();
    let id = env.background("sleep 30", json!({})).await;
    let other = ToolContext::new(env.dir.path()).with_owner("session-b");
    let out = env.tools.execute("process", json!({"action": "list"}), &other).await;
    assert_eq!(out, ToolOutput::ok("No processes in this conversation."));
    let out = env
        .tools
        .execute("process", json!({"action": "kill", "sessionId": id}), &other)
        .await;
    assert!(
        out.is_error && out.content.starts_with("No process with id"),
        "{}",
        out.content
    );
    assert!(env.registry.info(OWNER, &id).await.unwrap().is_running());
    assert_eq!(env.registry.list_all().await.len(), 1);
    env.registry.shutdown().await;
}

#[tokio::test]
async fn finished_processes_are_swept_after_their_ttl() {
    let clock = ManualClock::new(1_700_000_000_000);
    let env = Env::with_clock(RegistryConfig::default(), Arc::new(clock.clone()));
    assert_eq!(env.exec(json!({"command": "echo one"})).await.content, "one");
    let running = env.background("sleep 30", json!({})).await;
    clock.advance(Duration::from_secs(29 * 60));
    assert_eq!(env.registry.sweep().await, 0);
    clock.advance(Duration::from_secs(2 * 60));
    assert_eq!(env.registry.sweep().await, 1);
    let left: Vec<String> = env.registry.list(OWNER).await.into_iter().map(|p| p.id).collect();
    assert_eq!(left, [running]);
    env.registry.shutdown().await;
}

#[tokio::test]
async fn shutdown_kills_every_group_and_refuses_new_work() {
    let env = Env::new();
    let mut pids = Vec::new();
    for pty in [true, false, true] {
        let out = env
            .exec(json!({"command": "sleep 100 & trap '' TERM; sleep 100", "background": true, "pty": pty}))
            .await;
        pids.push(pid_of(&out.content));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let start = Instant::now();
    env.registry.shutdown().await;
    // The shells ignore SIGTERM: SIGKILL after the 1 s grace gets them.
    assert!(start.elapsed() >= Duration::from_secs(1), "{:?}", start.elapsed());
    for pid in pids {
        assert_eq!(group_members(pid), Vec::<u32>::new());
    }
    let out = env.exec(json!({"command": "echo late"})).await;
    assert_eq!(
        out,
        ToolOutput::error("The process registry has shut down; no commands can run.")
    );
}

#[tokio::test]
async fn stop_kills_a_foreground_command() {
    let env = Env::new();
    let ctx = env.ctx();
    let cancel = ctx.cancel.clone();
    let (out, ()) = tokio::join!(
        env.tools.execute("exec", json!({"command": "sleep 100"}), &ctx),
        async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            cancel.cancel();
        }
    );
    assert_eq!(out, ToolOutput::error("Cancelled."));
    let id = env.registry.list(OWNER).await[0].id.clone();
    let done = tokio::time::timeout(Duration::from_secs(5), env.registry.wait(OWNER, &id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.info.state, ProcessState::Killed);
}

#[tokio::test]
async fn live_tails_stream_while_a_foreground_command_runs() {
    let env = Env::new();
    let (tx, mut rx) = unbounded_channel();
    let mut ctx = env.ctx();
    ctx.updates = Some(tx);
    let out = env
        .tools
        .execute(
            "exec",
            json!({"command": "for i in 1 2 3 4; do echo tick $i; sleep 0.3; done"}),
            &ctx,
        )
        .await;
    assert_eq!(out.content, "tick 1\ntick 2\ntick 3\ntick 4");
    let mut updates = Vec::new();
    while let Ok(u) = rx.try_recv() {
        updates.push(u);
    }
    // About one per 250 ms, each a growing tail.
    assert!((2..=6).contains(&updates.len()), "{updates:?}");
    assert!(
        updates.windows(2).all(|w| w[1].starts_with(&w[0]) && w[1] != w[0]),
        "{updates:?}"
    );
}

struct NoSteer;

impl vigil_core::agent::SteerQueue for NoSteer {
    fn drain(&self) -> Vec<vigil_core::agent::UserInput> {
        Vec::new()
    }
}

#[tokio::test]
async fn in_a_turn_exec_runs_in_the_session_and_streams_tool_call_updates() {
    use vigil_core::protocol::Event;
    use vigil_fake_llm::{FakeLlm, Script, Step};

    let env = Env::new();
    let fake = FakeLlm::start(Script::steps(vec![
        Step::tool_call(
            "call_x",
            "exec",
            json!({"command": "for i in 1 2 3; do echo tick $i; sleep 0.3; done"}),
        ),
        Step::text("done"),
    ]))
    .await
    .unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let (tx, mut rx) = unbounded_channel();
    let emitter = vigil_core::events::Emitter::new(Arc::new(super::support::ChannelSink(tx)), Arc::new(clock.clone()));
    let store = vigil_core::session::SessionStore::open(&env.dir.path().join("data")).unwrap();
    let kind = vigil_core::protocol::ProviderKind::Anthropic;
    vigil_core::agent::Turn {
        session_id: "s-42",
        process_owner: "s-42",
        store: &store,
        client: Some(super::support::client(super::support::config(&fake, kind), &clock)),
        tools: env.tools.clone(),
        workspace: vigil_core::workspace::Workspace::open(&env.dir.path().join("ws")).unwrap(),
        emitter,
        clock: Arc::new(clock),
        cancel: tokio_util::sync::CancellationToken::new(),
        steer: &NoSteer,
        config: vigil_core::agent::AgentConfig::default(),
        extras: Default::default(),
        gate: None,
        data_dir: None,
        started: Default::default(),
        sandbox: None,
    }
    .run("count")
    .await;
    let mut updates = Vec::new();
    let mut finished = None;
    while let Ok(env) = rx.try_recv() {
        match env.event {
            Event::ToolCallUpdate { call_id, output } => updates.push((call_id, output)),
            Event::ToolCallFinished { content, .. } => finished = Some(content),
            _ => {}
        }
    }
    assert_eq!(finished.as_deref(), Some("tick 1\ntick 2\ntick 3"));
    assert!(
        !updates.is_empty() && updates.iter().all(|(id, _)| id == "call_x"),
        "{updates:?}"
    );
    assert!(
        updates.iter().any(|(_, out)| out.starts_with("tick 1\n")),
        "{updates:?}"
    );
    // The process belongs to the turn's session.
    assert_eq!(env.registry.list("s-42").await.len(), 1);
    assert_eq!(env.registry.list(OWNER).await.len(), 0);
}
