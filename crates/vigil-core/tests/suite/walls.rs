//! The sandbox's walls, proven by what a probe inside can reach (issue 30): before each run
//! the test plants a path socket, an abstract socket, a host-loopback listener and secrets
//! in a fake `$HOME`, proves each reachable from outside, then runs the same probe through
//! `exec` in the sandbox and asserts the exact set it reached. A new hole anywhere (a
//! socket under /run, a secret folder, a writable place) changes the set and fails.

use std::collections::BTreeSet;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::path::{Path, PathBuf};

use serde_json::json;
use vigil_core::exec::{ChannelExecEvents, RegistryConfig, RegistryHandle};
use vigil_core::sandbox::{Availability, Sandbox, SandboxSettings, TurnSandbox};
use vigil_core::tools::{ToolContext, ToolRegistry};

use super::support::outside_tmp;

const PROBE: &str = include_str!("../probe/reach.py");

/// What the test planted, and the probe's request naming it.
pub(super) struct Planted {
    _dir: tempfile::TempDir,
    pub(super) root: PathBuf,
    pub(super) workspace: PathBuf,
    pub(super) home: PathBuf,
    pub(super) data: PathBuf,
    pub(super) request: serde_json::Value,
    pub(super) socket: PathBuf,
    pub(super) abstract_name: String,
    pub(super) port: u16,
    /// This machine's address on its network (not loopback), when it has one: reachable
    /// through the network when a run may use it.
    pub(super) lan: Option<(String, u16)>,
    _listeners: (
        UnixListener,
        UnixListener,
        std::net::TcpListener,
        Option<std::net::TcpListener>,
    ),
}

pub(super) fn plant(base: tempfile::TempDir) -> Planted {
    let root = base.path().canonicalize().unwrap();
    let (workspace, home, data) = (root.join("data/workspace"), root.join("home"), root.join("data"));
    std::fs::create_dir_all(&workspace).unwrap();
    for d in [
        ".ssh",
        ".aws",
        ".config/autostart",
        ".config/gh",
        ".local/share/keyrings",
    ] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET KEY").unwrap();
    std::fs::write(home.join(".aws/credentials"), "[default]\naws_secret_access_key = x\n").unwrap();
    std::fs::write(home.join(".config/gh/hosts.yml"), "oauth_token: x\n").unwrap();
    std::fs::write(home.join(".local/share/keyrings/login.keyring"), "x").unwrap();
    std::fs::write(home.join(".netrc"), "machine x login y password z\n").unwrap();
    std::fs::write(home.join(".bashrc"), "# the user's\n").unwrap();
    std::fs::write(data.join("approvals.json"), "{}").unwrap();
    std::fs::write(workspace.join("reach.py"), PROBE).unwrap();
    let socket = root.join("agent.sock");
    let path_listener = UnixListener::bind(&socket).unwrap();
    let abstract_name = format!("vigil-walls-{}", root.file_name().unwrap().to_string_lossy());
    let abstract_listener =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap()).unwrap();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let lan_listener = lan_address().and_then(|ip| std::net::TcpListener::bind((ip.as_str(), 0)).ok());
    let lan = lan_listener
        .as_ref()
        .map(|l| (l.local_addr().unwrap().ip().to_string(), l.local_addr().unwrap().port()));
    let s = |p: PathBuf| p.display().to_string();
    let mut tcp_targets = vec![json!(["127.0.0.1", port]), json!(["10.0.2.2", port])];
    if let Some((ip, p)) = &lan {
        tcp_targets.push(json!([ip, p]));
    }
    let request = json!({
        "mark": mark(&root),
        "writable": [s(home.clone()), s(home.join(".config/autostart")), s(home.join(".bashrc")),
                     s(workspace.clone()), s(data.clone()), s(root.clone()), "/etc", "/usr"],
        "secrets": [s(home.join(".ssh")), s(home.join(".ssh/id_ed25519")), s(home.join(".aws/credentials")),
                    s(home.join(".netrc")), s(home.join(".config/gh")), s(home.join(".local/share/keyrings")),
                    s(data.join("approvals.json"))],
        "sockets": [s(socket.clone())],
        "abstract": [abstract_name.clone()],
        "tcp": tcp_targets,
    });
    Planted {
        _dir: base,
        root,
        workspace,
        home,
        data,
        request,
        socket,
        abstract_name,
        port,
        lan,
        _listeners: (path_listener, abstract_listener, tcp, lan_listener),
    }
}

/// The probe's mark for this test's writes: its own, since tests run side by side and the
/// probe run outside the sandbox (as root, in CI) writes `/etc` and `/usr` too.
fn mark(root: &Path) -> String {
    format!("vigil-probe-{}", root.file_name().unwrap().to_string_lossy())
}

/// The address this machine's default route leaves from (a UDP "connect" sends nothing).
fn lan_address() -> Option<String> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("192.0.2.1:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then(|| ip.to_string())
}

/// What the probe reached: its own report for reads and connections, and for writes the
/// marks it left on the host (removed again), so a write into a private copy of a folder
/// does not count and one the probe failed to notice does.
pub(super) fn facts(output: &str, p: &Planted) -> BTreeSet<String> {
    assert!(output.contains("done"), "the probe did not finish: {output}");
    let mut found: BTreeSet<String> = output
        .lines()
        .map(str::trim)
        .filter(|l| ["R ", "S ", "A ", "T ", "P "].iter().any(|p| l.starts_with(p)))
        .map(str::to_string)
        .collect();
    found.extend(writes_left(p));
    found
}

/// The writes the probe's marks show on the host (`W path`), each mark removed again: also
/// after a run that did not finish, so the next run starts clean.
pub(super) fn writes_left(p: &Planted) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for path in p.request["writable"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
    {
        let path = Path::new(path);
        let name = mark(&p.root);
        let left = path.join(format!(".{name}"));
        if path.is_dir() && left.exists() {
            std::fs::remove_file(&left).unwrap();
            found.insert(format!("W {}", path.display()));
        } else if path.is_file() {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let line = format!("\n# {name}\n");
            if text.contains(&line) {
                std::fs::write(path, text.replace(&line, "")).unwrap();
                found.insert(format!("W {}", path.display()));
            }
        }
    }
    found
}

/// The probe run as a plain child of the test, outside any sandbox.
pub(super) fn outside(p: &Planted) -> BTreeSet<String> {
    let out = std::process::Command::new("python3")
        .arg(p.workspace.join("reach.py"))
        .arg(p.request.to_string())
        .output()
        .unwrap();
    facts(&String::from_utf8_lossy(&out.stdout), p)
}

/// A process registry and the tools over it, with no one listening to its events.
pub(super) fn registry_and_tools() -> (RegistryHandle, ToolRegistry) {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let registry = RegistryHandle::start(
        RegistryConfig::default(),
        std::sync::Arc::new(vigil_core::clock::SystemClock),
        std::sync::Arc::new(ChannelExecEvents(tx)),
    );
    (registry.clone(), ToolRegistry::with_builtins_and_exec(registry))
}

/// What `exec` runs with: the planted workspace, its data folder and fake home, in the
/// sandbox of a run that is `attended` or not.
pub(super) fn context(p: &Planted, settings: SandboxSettings, attended: bool) -> ToolContext {
    let mut ctx = ToolContext::new(&p.workspace).with_owner("walls");
    ctx.data_dir = Some(p.data.clone());
    ctx.sandbox = Some(TurnSandbox {
        sandbox: Sandbox::new(),
        settings,
        data_dir: p.data.clone(),
        attended,
        home: Some(p.home.clone()),
    });
    ctx
}

/// The probe run by `exec` in the sandbox of a run that is `attended` or not.
pub(super) async fn inside(p: &Planted, settings: SandboxSettings, attended: bool) -> BTreeSet<String> {
    let (_registry, tools) = registry_and_tools();
    let ctx = context(p, settings, attended);
    let command = format!("python3 reach.py '{}'", p.request);
    let out = tools
        .execute("exec", json!({ "command": command, "pty": false }), &ctx)
        .await;
    facts(&out.content, p)
}

pub(super) fn set(items: &[String]) -> BTreeSet<String> {
    items.iter().cloned().collect()
}

pub(super) fn ready() {
    assert!(
        matches!(Sandbox::new().availability(), Availability::Ready { .. }),
        "these tests need bubblewrap (`make test` installs it)"
    );
    assert!(
        Sandbox::network_helper().is_some(),
        "these tests need slirp4netns (`make test` installs it)"
    );
}

async fn walls_hold(base: tempfile::TempDir) {
    let p = plant(base);
    let s = |p: &Path| p.display().to_string();
    let planted_reachable = outside(&p);
    // Everything planted is there to reach from outside: the probe can see what it looks for.
    for fact in [
        format!("S {}", s(&p.socket)),
        format!("A {}", p.abstract_name),
        format!("T 127.0.0.1:{}", p.port),
        format!("R {}", s(&p.home.join(".ssh/id_ed25519"))),
        format!("R {}", s(&p.data.join("approvals.json"))),
        format!("W {}", s(&p.home.join(".config/autostart"))),
        "P socketpair".to_string(),
    ] {
        assert!(
            planted_reachable.contains(&fact),
            "outside, the probe missed {fact}: {planted_reachable:?}"
        );
    }

    let workspace_only = format!("W {}", s(&p.workspace));
    let lan = p.lan.as_ref().map(|(ip, port)| format!("T {ip}:{port}"));

    // The user's turn, network on (the default): the workspace writable, the network out,
    // and nothing of the host's: no socket, no loopback service, no secret.
    let attended = inside(&p, SandboxSettings::default(), true).await;
    let mut want = set(&[workspace_only.clone(), "P socketpair".into()]);
    want.extend(lan.clone());
    assert_eq!(
        attended, want,
        "a user turn's sandbox reached more (or less) than it may"
    );

    // A run nobody watches: no network at all by default.
    let unattended = inside(&p, SandboxSettings::default(), false).await;
    assert_eq!(
        unattended,
        set(&[workspace_only.clone(), "P socketpair".into()]),
        "an unattended sandbox reached more than it may"
    );

    // The user's network switch off: the same as unattended.
    let offline = SandboxSettings {
        network: false,
        ..SandboxSettings::default()
    };
    assert_eq!(
        inside(&p, offline, true).await,
        set(&[workspace_only, "P socketpair".into()])
    );
    let _ = &p.root;
}

/// In a standing sandbox (a workspace outside /tmp) and in a bwrap per command (under /tmp).
#[tokio::test]
async fn no_sandbox_reaches_a_host_socket_loopback_service_secret_or_unapproved_folder() {
    ready();
    walls_hold(outside_tmp()).await;
    walls_hold(tempfile::tempdir().unwrap()).await;
}

/// Commands of one standing sandbox still talk to each other over its own loopback: a
/// server started in the background and the client that tests it.
#[tokio::test]
async fn a_server_and_its_client_in_one_sandbox_still_talk() {
    ready();
    let p = plant(outside_tmp());
    let (registry, tools) = registry_and_tools();
    let ctx = context(&p, SandboxSettings::default(), true);
    std::fs::write(p.workspace.join("page.txt"), "served from inside\n").unwrap();
    let server = tools
        .execute(
            "exec",
            json!({"command": "python3 -m http.server 18931 --bind 127.0.0.1", "background": true}),
            &ctx,
        )
        .await;
    assert!(!server.is_error, "{}", server.content);
    let client = tools
        .execute(
            "exec",
            json!({"command": "for i in $(seq 50); do python3 -c \"import urllib.request as u; print(u.urlopen('http://127.0.0.1:18931/page.txt').read().decode())\" 2>/dev/null && break; sleep 0.1; done"}),
            &ctx,
        )
        .await;
    assert!(client.content.contains("served from inside"), "{}", client.content);
    registry.shutdown().await;
}

/// "Read-only" programs that run code from their configuration (issue 30's first class):
/// a repository whose `.git/config` names an fsmonitor hook, an external diff and a pager
/// that each try to leave a mark in the workspace and in the home. Under `ask` `git status`,
/// `git diff` and `git log` run without a question (they are on the read-only list), so they
/// run in the read-only sandbox: git still shows the status, and no hook leaves a mark.
#[tokio::test]
async fn config_driven_hooks_of_read_only_programs_change_nothing() {
    use super::support::{runtime, until_finished, user};
    use vigil_core::protocol::{ApprovalPolicy, Event, ProviderKind};
    use vigil_fake_llm::{FakeLlm, Script, Step};
    ready();
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    rt.approvals().set_policy(ApprovalPolicy::Ask);
    assert!(rt.start_background());
    let ws = rt.workspace().canonicalize().unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&ws)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    std::fs::write(ws.join("notes.txt"), "one\n").unwrap();
    git(&["-c", "user.email=t@t", "-c", "user.name=t", "add", "notes.txt"]);
    git(&["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "first"]);
    std::fs::write(ws.join("notes.txt"), "one\ntwo\n").unwrap();
    let outside_mark = dir.path().canonicalize().unwrap().join("hooked-outside");
    let hook = |name: &str| {
        format!(
            "sh -c 'touch {ws}/hooked-{name} {out}-{name}; echo hooked-{name} ran'",
            ws = ws.display(),
            out = outside_mark.display()
        )
    };
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    std::fs::write(
        ws.join(".git/config"),
        format!(
            "{config}\tfsmonitor = \"{}\"\n\tpager = \"{}\"\n[diff]\n\texternal = \"{}\"\n",
            hook("fsmonitor"),
            hook("pager"),
            hook("diff")
        ),
    )
    .unwrap();
    fake.set_script(Script::steps(vec![
        Step::tool_call("c1", "exec", json!({ "command": "git status" })),
        Step::tool_call("c2", "exec", json!({ "command": "git diff" })),
        Step::tool_call("c3", "exec", json!({ "command": "git log" })),
        Step::text("done"),
    ]));
    rt.submit(user("what changed?"));
    let events = until_finished(&mut rx).await;
    assert!(
        !events.iter().any(|e| matches!(e, Event::ApprovalRequested { .. })),
        "read-only commands ran without a question"
    );
    let results: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { content, .. } => Some(content.clone()),
            _ => None,
        })
        .collect();
    assert!(
        results[0].contains("notes.txt"),
        "git status still shows the status: {}",
        results[0]
    );
    // The pager is the hook: it runs, and its write is refused.
    assert!(results[2].contains("Read-only file system"), "{}", results[2]);
    for name in ["fsmonitor", "pager", "diff"] {
        assert!(
            !ws.join(format!("hooked-{name}")).exists(),
            "the {name} hook wrote the workspace: {results:?}"
        );
        assert!(
            !Path::new(&format!("{}-{name}", outside_mark.display())).exists(),
            "the {name} hook wrote outside: {results:?}"
        );
    }
    rt.shutdown().await;
}

/// Running a command in a folder does not make that folder writable: `workdir` set to the
/// home, to a folder outside, or to a workspace symlink pointing at the autostart folder —
/// each write is refused and leaves no file; the tool's result names the real folder.
#[tokio::test]
async fn a_commands_folder_outside_the_workspace_is_never_made_writable() {
    ready();
    for (base, standing) in [(outside_tmp(), true), (tempfile::tempdir().unwrap(), false)] {
        let p = plant(base);
        std::os::unix::fs::symlink(p.home.join(".config/autostart"), p.workspace.join("autostart")).unwrap();
        let (registry, tools) = registry_and_tools();
        for attended in [true, false] {
            let ctx = context(&p, SandboxSettings::default(), attended);
            for workdir in [
                p.home.display().to_string(),
                p.root.display().to_string(),
                "autostart".to_string(),
            ] {
                let out = tools
                    .execute(
                        "exec",
                        json!({"command": "touch planted.desktop; pwd", "workdir": workdir, "pty": false}),
                        &ctx,
                    )
                    .await;
                // Under /tmp the folder is not even there (each command's /tmp is its own):
                // the write lands in that private copy. Either way, nothing on the host.
                if standing {
                    assert!(
                        out.content.contains("Read-only file system"),
                        "{workdir}: {}",
                        out.content
                    );
                }
                for place in [&p.home, &p.root, &p.home.join(".config/autostart")] {
                    assert!(
                        !place.join("planted.desktop").exists(),
                        "{workdir} wrote {}",
                        place.display()
                    );
                }
                if workdir == "autostart" {
                    // The real folder, not the link's name.
                    let real = p.home.join(".config/autostart");
                    assert!(out.content.contains(&real.display().to_string()), "{}", out.content);
                }
            }
        }
        registry.shutdown().await;
    }
}

/// A prompt file made a symlink into Vigil's data folder (or anywhere) is refused, not read
/// into the system prompt: the approvals file never reaches the provider.
#[tokio::test]
async fn a_prompt_file_linked_into_the_data_folder_never_reaches_the_provider() {
    use super::support::{runtime, until_finished, user};
    use vigil_core::protocol::ProviderKind;
    use vigil_fake_llm::{FakeLlm, Script, Step};
    let dir = outside_tmp();
    let fake = FakeLlm::start(Script::steps(vec![Step::text("ok")])).await.unwrap();
    let (rt, mut rx) = runtime(dir.path(), Some((&fake, ProviderKind::Anthropic)));
    let data = dir.path().canonicalize().unwrap();
    std::fs::write(
        data.join("approvals.json"),
        "{\"rules\": [], \"marker\": \"APPROVALS-FILE-CONTENT\"}",
    )
    .unwrap();
    let ws = rt.workspace().to_path_buf();
    for name in ["MEMORY.md", "USER.md", "AGENTS.md"] {
        std::os::unix::fs::symlink(data.join("approvals.json"), ws.join(name)).unwrap();
    }
    std::fs::write(ws.join("SKILLS.md"), "PLAIN-SKILLS-FILE").unwrap();
    rt.submit(user("hello"));
    until_finished(&mut rx).await;
    let sent = serde_json::to_string(&fake.requests()).unwrap();
    assert!(sent.contains("PLAIN-SKILLS-FILE"), "a plain prompt file is still read");
    assert!(
        !sent.contains("APPROVALS-FILE-CONTENT"),
        "the data folder reached the provider"
    );
    rt.shutdown().await;
}

/// Nothing a command does can create, replace, rename, link over or change `HEARTBEAT.md`
/// (its task block registers routines): `cp`, `mv`, `ln`, `rm`, an append, and — with the
/// file absent — creating it. The file's own replacement by Vigil (as the routine tools
/// write it) is seen by the next command, and a command already running in the standing
/// sandbox keeps running while that sandbox is retired.
#[tokio::test]
async fn no_command_can_create_or_change_the_task_file() {
    ready();
    for (base, standing) in [(outside_tmp(), true), (tempfile::tempdir().unwrap(), false)] {
        let p = plant(base);
        let task = p.workspace.join("HEARTBEAT.md");
        let original = "# Tasks\n- check the disk\n";
        std::fs::write(&task, original).unwrap();
        std::fs::write(
            p.workspace.join("evil.md"),
            "```json\n{\"routines\": [\"planted\"]}\n```\n",
        )
        .unwrap();
        let (registry, tools) = registry_and_tools();
        let ctx = context(&p, SandboxSettings::default(), false);
        let exec = |command: &str, background: bool| {
            tools.execute(
                "exec",
                json!({"command": command, "pty": false, "background": background}),
                &ctx,
            )
        };
        // A long command started before the file is replaced.
        let sleeper = exec("sleep 30", true).await;
        assert!(!sleeper.is_error, "{}", sleeper.content);
        for attack in [
            "cp evil.md HEARTBEAT.md",
            "mv evil.md HEARTBEAT.md",
            "ln -sf evil.md HEARTBEAT.md",
            "rm -f HEARTBEAT.md",
            "echo '- planted' >> HEARTBEAT.md",
            "cat evil.md > HEARTBEAT.md",
        ] {
            let out = exec(attack, false).await;
            assert_eq!(
                std::fs::read_to_string(&task).unwrap(),
                original,
                "{attack}: {}",
                out.content
            );
            assert!(std::fs::symlink_metadata(&task).unwrap().is_file(), "{attack}");
        }
        // Vigil replaces the file (a new inode, as the routine tools write it).
        let edited = "# Tasks\n- check the disk\n- water the plants\n";
        vigil_core::durable::write_atomic(&task, edited.as_bytes()).unwrap();
        let seen = exec("cat HEARTBEAT.md; mv evil.md HEARTBEAT.md", false).await;
        assert!(
            seen.content.contains("water the plants"),
            "the new file is seen: {}",
            seen.content
        );
        assert_eq!(std::fs::read_to_string(&task).unwrap(), edited, "{}", seen.content);
        if standing {
            let list = registry.list("walls").await;
            assert!(
                list.iter().any(|i| i.command == "sleep 30" && i.ended_at.is_none()),
                "the command started before the replacement still runs: {list:?}"
            );
        }
        // Absent: a command cannot create it.
        std::fs::remove_file(&task).unwrap();
        let out = exec("cp evil.md HEARTBEAT.md; echo '- planted' > HEARTBEAT.md", false).await;
        let now = std::fs::read_to_string(&task).unwrap_or_default();
        assert!(!now.contains("planted"), "created from inside: {now:?} {}", out.content);
        registry.shutdown().await;
    }
}
