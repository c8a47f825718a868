//! `make sandbox-compare` (issue 30; not part of `make test`): the reachability probe of
//! `walls.rs`, run on one planted machine in Vigil's three sandboxes and in the sandboxes two
//! peers ship — Codex's `codex sandbox` (npm `@openai/codex`) and Anthropic's `srt` (npm
//! `@anthropic-ai/sandbox-runtime`) — and printed side by side as a Markdown table.
//!
//! The peers are installed by that make target only, at the versions locked in
//! `bench/sandbox-compare/`, and found through `VIGIL_COMPARE_CODEX` and `VIGIL_COMPARE_SRT`
//! (their `node_modules/.bin` programs); a column whose variable is unset says "not
//! installed". A peer that cannot start here gets "n/a" cells and a footnote with its own
//! words, never a guessed column. Every column runs the same probe file with the same
//! request; its writes are counted by the marks they leave on the host, as in `walls.rs`.

use std::collections::BTreeSet;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;
use vigil_core::exec::SpawnRequest;
use vigil_core::sandbox::{Layout, Sandbox, SandboxSettings};

use super::support::outside_tmp;
use super::walls::{context, facts, outside, plant, ready, registry_and_tools, writes_left, Planted};

/// How long one column's probe may take (a peer's first start unpacks its helpers).
const LIMIT: Duration = Duration::from_secs(120);

/// One sandbox's answer: the facts the probe reached, or why it could not run there.
struct Column {
    name: &'static str,
    /// What the sandbox was given, for the legend under the table.
    given: String,
    reached: Result<BTreeSet<String>, String>,
    /// Which part of a socket pair failed, when it did.
    socketpair: Option<String>,
}

/// One line of the table: the facts any of which counts as reached, or why it does not
/// apply on this machine.
struct Row {
    label: String,
    facts: Result<Vec<String>, String>,
}

/// A path socket under `/run`: the system bus when this machine runs one, else one the test
/// plants there (removed when dropped), else none (not root, say).
struct RunSocket {
    path: Option<PathBuf>,
    planted: Option<UnixListener>,
    why_none: String,
}

impl RunSocket {
    fn find() -> Self {
        let bus = PathBuf::from("/run/dbus/system_bus_socket");
        if std::os::unix::net::UnixStream::connect(&bus).is_ok() {
            return Self {
                path: Some(bus),
                planted: None,
                why_none: String::new(),
            };
        }
        let planted = PathBuf::from(format!("/run/vigil-compare-{}.sock", std::process::id()));
        match UnixListener::bind(&planted) {
            Ok(l) => Self {
                path: Some(planted),
                planted: Some(l),
                why_none: String::new(),
            },
            Err(e) => Self {
                path: None,
                planted: None,
                why_none: format!("no system bus here, and /run is not writable to plant one ({e})"),
            },
        }
    }
}

impl Drop for RunSocket {
    fn drop(&mut self) {
        if let (Some(_), Some(path)) = (&self.planted, &self.path) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The interpreter every column runs the probe with: the system's, so no sandbox that hides
/// `$HOME` (where pyenv and friends live) fails for want of Python.
fn python() -> String {
    ["/usr/bin/python3", "/bin/python3"]
        .iter()
        .find(|p| Path::new(p).exists())
        .map_or_else(|| "python3".to_string(), |p| p.to_string())
}

/// The probe's output, or why it did not finish; the marks of a run that failed are removed
/// all the same.
fn finished(output: String, p: &Planted) -> Result<BTreeSet<String>, String> {
    if output.lines().any(|l| l.trim() == "done") {
        Ok(facts(&output, p))
    } else {
        writes_left(p);
        let tail: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(3)..].join(" / ");
        Err(format!("the probe did not finish: {}", tail.trim()))
    }
}

/// The probe by `exec` in the sandbox of a user turn (`attended`) or of a run nobody watches.
async fn vigil(p: &Planted, attended: bool, python: &str) -> Result<BTreeSet<String>, String> {
    let (registry, tools) = registry_and_tools();
    let ctx = context(p, SandboxSettings::default(), attended);
    let command = format!("{python} reach.py '{}'", p.request);
    let out = tools
        .execute(
            "exec",
            json!({ "command": command, "pty": false, "yieldMs": LIMIT.as_millis() as u64 }),
            &ctx,
        )
        .await;
    registry.shutdown().await;
    finished(out.content, p)
}

/// The probe in the read-only sandbox, as `exec` starts a command the gate allowed because
/// it only reads (the gate would ask about `python3`, so the layout is made here).
async fn vigil_read_only(p: &Planted, python: &str) -> Result<BTreeSet<String>, String> {
    let layout = Layout {
        workspace: p.workspace.clone(),
        cwd: p.workspace.clone(),
        data_dir: p.data.clone(),
        settings: SandboxSettings::default(),
        attended: true,
        home: Some(p.home.clone()),
        read_only: true,
    };
    let wrapped = Sandbox::new().wrap(&layout)?;
    let (registry, _tools) = registry_and_tools();
    let mut req = SpawnRequest::new("compare", format!("{python} reach.py '{}'", p.request), &p.workspace);
    req.pty = false;
    req.timeout = Some(LIMIT);
    req.sandbox = Some(wrapped);
    let out = match registry.spawn(req).await {
        Ok(info) => registry.wait("compare", &info.id).await.map(|o| o.output),
        Err(e) => Err(e),
    };
    registry.shutdown().await;
    finished(out.map_err(|e| e.to_string())?, p)
}

/// A peer's program run with `args`, in the workspace, `$HOME` the planted home; its output
/// (stdout then stderr), or why it did not finish in time. Killed with everything it started
/// (its own process group) when it outlives [`LIMIT`].
fn run_peer(program: &Path, args: &[String], env: &[(&str, &Path)], p: &Planted) -> Result<String, String> {
    let (out, err) = (p.root.join("peer.out"), p.root.join("peer.err"));
    let mut cmd = std::process::Command::new(program);
    cmd.args(args)
        .current_dir(&p.workspace)
        .env("HOME", &p.home)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).map_err(|e| e.to_string())?)
        .stderr(std::fs::File::create(&err).map_err(|e| e.to_string())?)
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{} does not start: {e}", program.display()))?;
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            // Our child's own group: what it started and nothing else.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            return Err(format!("it did not finish in {} s", LIMIT.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |f: &Path| std::fs::read_to_string(f).unwrap_or_default();
    let text = format!("{}\n{}", read(&out), read(&err));
    if !status.success() && !text.lines().any(|l| l.trim() == "done") {
        let said: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let said = said[said.len().saturating_sub(3)..].join(" / ");
        return Err(format!("exited with {status}: {}", said.trim()));
    }
    Ok(text)
}

/// A peer's sandbox: its program and what goes before the probe's command line.
struct Peer {
    program: PathBuf,
    before: Vec<String>,
    env: Vec<(&'static str, PathBuf)>,
    /// The command goes in as one shell string (`srt -c`), not as arguments.
    shell: bool,
}

impl Peer {
    /// `argv` run in this sandbox, in the workspace.
    fn run(&self, argv: &[String], p: &Planted) -> Result<String, String> {
        let mut args = self.before.clone();
        if self.shell {
            let quoted: Vec<String> = argv.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
            args.push(quoted.join(" "));
        } else {
            args.extend(argv.iter().cloned());
        }
        let env: Vec<(&str, &Path)> = self.env.iter().map(|(k, v)| (*k, v.as_path())).collect();
        run_peer(&self.program, &args, &env, p)
    }

    /// The probe in this sandbox; when its `socketpair` failed, a note saying which part
    /// (a filter that refuses `send`/`recv` but not `read`/`write` is not one that breaks
    /// every program's stdio).
    fn probe(&self, p: &Planted, python: &str) -> (Result<BTreeSet<String>, String>, Option<String>) {
        let argv = [python.to_string(), "reach.py".into(), p.request.to_string()];
        let reached = self.run(&argv, p).and_then(|out| finished(out, p));
        let note = match &reached {
            Ok(r) if !r.contains("P socketpair") => {
                let pair = self.run(&[python.to_string(), "-c".into(), SOCKETPAIR.into()], p);
                Some(match pair {
                    Ok(out) => out
                        .lines()
                        .filter(|l| l.starts_with("socketpair"))
                        .collect::<Vec<_>>()
                        .join("; "),
                    Err(why) => why,
                })
            }
            _ => None,
        };
        (reached, note)
    }
}

/// Which part of a socket pair a sandbox refuses: making it, `read`/`write`, `send`/`recv`.
const SOCKETPAIR: &str = "import os, socket
try:
    a, b = socket.socketpair()
except OSError as e:
    print('socketpair(): refused:', e); raise SystemExit
os.write(a.fileno(), b'x')
print('socketpair(): made; read/write on it:', 'work' if os.read(b.fileno(), 1) == b'x' else 'fail')
try:
    a.send(b'y'); print('socketpair send/recv: work' if b.recv(1) == b'y' else 'socketpair send/recv: fail')
except OSError as e:
    print('socketpair send/recv: refused:', e)
";

/// `codex sandbox` under one of its built-in permission profiles (`:read-only`,
/// `:workspace`), with a fresh `CODEX_HOME` (no config of the user's) outside `/tmp`, where
/// Codex refuses to put its helpers.
fn codex(program: &Path, profile: &str, p: &Planted) -> Peer {
    let home = p.root.join("codex-home");
    let _ = std::fs::create_dir_all(&home);
    Peer {
        program: program.to_path_buf(),
        before: vec![
            "sandbox".into(),
            "-P".into(),
            profile.into(),
            "-C".into(),
            p.workspace.display().to_string(),
            "--".into(),
        ],
        env: vec![("CODEX_HOME", home)],
        shell: false,
    }
}

/// The settings `srt` gets: the README's example (the workspace writable, `denyRead` empty
/// as by default, no domain allowed).
fn srt_settings(p: &Planted) -> serde_json::Value {
    json!({
        "filesystem": {"denyRead": [], "allowWrite": [p.workspace], "denyWrite": []},
        "network": {"allowedDomains": [], "deniedDomains": []},
    })
}

fn srt(program: &Path, p: &Planted) -> Peer {
    let file = p.root.join("srt-settings.json");
    std::fs::write(&file, srt_settings(p).to_string()).unwrap();
    Peer {
        program: program.to_path_buf(),
        before: vec!["--settings".into(), file.display().to_string(), "-c".into()],
        env: vec![],
        shell: true,
    }
}

/// What `program --version` says, for the table's heading.
fn version(program: &Path) -> String {
    std::process::Command::new(program)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|e| format!("? ({e})"))
}

fn rows(p: &Planted, run: &RunSocket) -> Vec<Row> {
    let home = |rel: &str| p.home.join(rel).display().to_string();
    let row = |label: &str, facts: Vec<String>| Row {
        label: label.into(),
        facts: Ok(facts),
    };
    let run_row = match &run.path {
        Some(path) => Row {
            label: match run.planted {
                Some(_) => "path socket under /run (one the test planted)".into(),
                None => format!("path socket under /run (`{}`)", path.display()),
            },
            // /var/run is the same folder: the probe walks both.
            facts: Ok(vec![
                format!("S {}", path.display()),
                format!("S /var{}", path.display()),
            ]),
        },
        None => Row {
            label: "path socket under /run".into(),
            facts: Err(run.why_none.clone()),
        },
    };
    vec![
        row("write `$HOME`", vec![format!("W {}", p.home.display())]),
        row(
            "write `~/.config/autostart`",
            vec![format!("W {}", home(".config/autostart"))],
        ),
        row("write `~/.bashrc`", vec![format!("W {}", home(".bashrc"))]),
        row(
            "write around the workspace (the data folder, its parent)",
            vec![format!("W {}", p.data.display()), format!("W {}", p.root.display())],
        ),
        row(
            "write `/etc` or `/usr` (as root)",
            vec!["W /etc".into(), "W /usr".into()],
        ),
        row("write the host's `/tmp`", vec!["W /tmp".into()]),
        row("write the workspace", vec![format!("W {}", p.workspace.display())]),
        row(
            "read `~/.ssh` (list it, or `id_ed25519`)",
            vec![format!("R {}", home(".ssh")), format!("R {}", home(".ssh/id_ed25519"))],
        ),
        row(
            "read `~/.aws/credentials`",
            vec![format!("R {}", home(".aws/credentials"))],
        ),
        row(
            "read `~/.netrc`, `~/.config/gh`, keyrings",
            vec![
                format!("R {}", home(".netrc")),
                format!("R {}", home(".config/gh")),
                format!("R {}", home(".local/share/keyrings")),
            ],
        ),
        row(
            "read an app's data (Vigil's `approvals.json`)",
            vec![format!("R {}", p.data.join("approvals.json").display())],
        ),
        row(
            "path socket in the planted folder",
            vec![format!("S {}", p.socket.display())],
        ),
        run_row,
        row("abstract socket", vec![format!("A {}", p.abstract_name)]),
        row(
            "host loopback TCP (`127.0.0.1`, slirp's `10.0.2.2`)",
            vec![format!("T 127.0.0.1:{}", p.port), format!("T 10.0.2.2:{}", p.port)],
        ),
        Row {
            label: "this machine's LAN address (the network)".into(),
            facts: match &p.lan {
                Some((ip, port)) => Ok(vec![format!("T {ip}:{port}")]),
                None => Err("this machine has no address on a network".into()),
            },
        },
        row(
            "`socketpair`, and `send`/`recv` on it (must work)",
            vec!["P socketpair".into()],
        ),
    ]
}

/// The table, a legend of what each column was given, the footnotes, and per column what
/// it reached that no row names (so nothing it reached goes unprinted).
fn table(rows: &[Row], columns: &[Column]) -> String {
    let mut notes: Vec<String> = Vec::new();
    let mut note = |text: String| -> usize {
        if let Some(i) = notes.iter().position(|n| *n == text) {
            return i + 1;
        }
        notes.push(text);
        notes.len()
    };
    let mut out = format!(
        "| | {} |\n|---|{}\n",
        columns.iter().map(|c| c.name).collect::<Vec<_>>().join(" | "),
        "---|".repeat(columns.len())
    );
    for row in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| match (&row.facts, &c.reached) {
                (Err(why), _) => format!("n/a [{}]", note(why.clone())),
                (_, Err(why)) => format!("n/a [{}]", note(format!("{}: {why}", c.name))),
                (Ok(facts), Ok(reached)) if facts.iter().any(|f| reached.contains(f)) => "**reached**".into(),
                (Ok(facts), Ok(_)) => match (&c.socketpair, facts.iter().any(|f| f == "P socketpair")) {
                    (Some(why), true) => format!("blocked [{}]", note(format!("{}: {why}", c.name))),
                    _ => "blocked".into(),
                },
            })
            .collect();
        out.push_str(&format!("| {} | {} |\n", row.label, cells.join(" | ")));
    }
    out.push('\n');
    for (i, n) in notes.iter().enumerate() {
        out.push_str(&format!("[{}] {n}\n", i + 1));
    }
    out.push_str("\nWhat each column was given:\n");
    let named: BTreeSet<&String> = rows.iter().filter_map(|r| r.facts.as_ref().ok()).flatten().collect();
    for c in columns {
        out.push_str(&format!("- **{}**: {}\n", c.name, c.given));
        if let Ok(reached) = &c.reached {
            let other: Vec<&String> = reached.iter().filter(|f| !named.contains(f)).collect();
            if !other.is_empty() {
                let shown: Vec<&str> = other.iter().take(6).map(|s| s.as_str()).collect();
                out.push_str(&format!(
                    "  - also reached, in no row: {}{}\n",
                    shown.join(", "),
                    if other.len() > shown.len() { ", …" } else { "" }
                ));
            }
        }
    }
    out
}

#[tokio::test]
#[ignore = "`make sandbox-compare`: needs the peers installed; prints a table"]
async fn sandbox_compare() {
    ready();
    let mut p = plant(outside_tmp());
    let run = RunSocket::find();
    if let Some(path) = &run.path {
        p.request["sockets"]
            .as_array_mut()
            .unwrap()
            .push(json!(path.display().to_string()));
    }
    // The host's own /tmp, where other programs keep their sockets and files (Vigil gives
    // each command a private one).
    p.request["writable"].as_array_mut().unwrap().push(json!("/tmp"));
    let python = python();
    // Each planted thing is reachable without a sandbox: a "blocked" below is the sandbox's.
    let host = outside(&p);
    for row in rows(&p, &run).iter().filter_map(|r| r.facts.as_ref().ok()) {
        assert!(
            row.iter().any(|f| host.contains(f)),
            "outside any sandbox the probe missed {row:?}: {host:?}"
        );
    }
    let vigil_given = |what: &str| {
        format!("`exec` of `{python} reach.py '<request>'` with the default settings, {what}, `home` the planted home")
    };
    let mut columns = vec![
        Column {
            name: "no sandbox",
            given: "the probe as a plain child of the test (this is what there is to reach)".into(),
            reached: Ok(host),
            socketpair: None,
        },
        Column {
            name: "Vigil read-only",
            given: "the read-only sandbox (`Layout { read_only: true }`), as `exec` starts a command allowed because it only reads; `home` the planted home".into(),
            reached: vigil_read_only(&p, &python).await,
            socketpair: None,
        },
        Column {
            name: "Vigil user turn",
            given: vigil_given("a user's turn (network on, the default)"),
            reached: vigil(&p, true, &python).await,
            socketpair: None,
        },
        Column {
            name: "Vigil unattended",
            given: vigil_given("a run nobody watches (no network, the default)"),
            reached: vigil(&p, false, &python).await,
            socketpair: None,
        },
    ];
    let mut heading = vec![format!("node {}", version(Path::new("node")))];
    let codex_given = |profile: &str| {
        format!(
            "`codex sandbox -P {profile} -C <workspace> -- {python} reach.py <request>` in the workspace, `HOME` the planted home, `CODEX_HOME` an empty folder beside it (no config: its defaults)"
        )
    };
    let srt_given = format!(
        "`srt --settings <file> -c \"{python} reach.py '<request>'\"` in the workspace, `HOME` the planted home; the file (the README's example, `denyRead` empty as by default): `{}`",
        srt_settings(&p)
            .to_string()
            .replace(&p.workspace.display().to_string(), "<workspace>")
    );
    let peers = [
        ("codex :read-only", "VIGIL_COMPARE_CODEX", codex_given(":read-only")),
        ("codex :workspace", "VIGIL_COMPARE_CODEX", codex_given(":workspace")),
        ("srt", "VIGIL_COMPARE_SRT", srt_given),
    ];
    for (name, var, given) in peers {
        let peer = std::env::var_os(var).map(PathBuf::from).map(|bin| match name {
            "srt" => srt(&bin, &p),
            _ => codex(&bin, name.trim_start_matches("codex "), &p),
        });
        let (reached, socketpair) = match peer {
            Some(peer) => {
                let v = version(&peer.program);
                let v = if name == "srt" { format!("srt {v}") } else { v };
                if !heading.contains(&v) {
                    heading.push(v);
                }
                peer.probe(&p, &python)
            }
            None => (
                Err(format!("not installed ({var} unset: run `make sandbox-compare`)")),
                None,
            ),
        };
        columns.push(Column {
            name,
            given,
            reached,
            socketpair,
        });
    }
    println!(
        "\nThe reachability probe (crates/vigil-core/tests/probe/reach.py) in each sandbox ({}); planted in {}\n",
        heading.join(", "),
        p.root.display()
    );
    println!("{}", table(&rows(&p, &run), &columns));
    if run.planted.is_some() {
        println!(
            "(This machine has no system bus: the test planted {} and removed it after.)",
            run.path.as_ref().map_or(String::new(), |p| p.display().to_string())
        );
    }
}
