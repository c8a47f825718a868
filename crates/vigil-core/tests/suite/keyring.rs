//! The keyring for real: gnome-keyring's Secret Service on a private D-Bus bus, unlocked with
//! a test password. The provider key and an MCP server's secret are stored there, read back
//! from there (the provider gets the key, the server gets its secret) and are in no file under
//! the data folder.
//!
//! Why a child process: the keyring crate reaches the Secret Service through libdbus, which
//! finds the session bus only in `DBUS_SESSION_BUS_ADDRESS` and reads it once per process.
//! Setting that variable in this multi-threaded test binary would race every other test, and
//! could come too late anyway. So the test starts the private session here and runs its other
//! half, [`keyring_session_half`], in a child of this same test binary with the bus in the
//! child's environment only: the path a user's Vigil takes, from the environment.
//!
//! Needs `dbus-daemon`, `gnome-keyring-daemon` and `secret-tool` (Debian `dbus-daemon`,
//! `gnome-keyring`, `libsecret-tools`), which `make deps-test` installs; missing pieces fail
//! the test with what to install, they never skip it.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use vigil_core::protocol::{Event, KeyStorage, McpField, McpSecretField, Op, ProviderKind, ProviderSettings};
use vigil_fake_llm::{FakeLlm, Script, Step};

use super::inhibit::private_bus;
use super::mcp::{node_server, running, view_until};
use super::support::*;

/// The child's data folder (set only for the child).
const DIR_VAR: &str = "VIGIL_KEYRING_TEST_DIR";
const PROVIDER_KEY: &str = "sk-ant-in-the-keyring-7f3a";
const MCP_SECRET: &str = "mcp-token-in-the-keyring-c41d";
/// The keyring accounts Vigil uses for the two (see `secrets.rs` and `mcp`).
const PROVIDER_ACCOUNT: &str = "anthropic-api-key";
const MCP_ACCOUNT: &str = "mcp/everything/env/EVERYTHING_TOKEN";
/// How long the daemons may take to come up before that counts as not happening.
const BOUND: Duration = Duration::from_secs(20);

/// gnome-keyring-daemon with only its Secret Service, on `bus`, its keyrings under `home`,
/// its login keyring created and unlocked with a test password read from stdin.
async fn gnome_keyring(bus: &str, home: &Path) -> Child {
    let runtime_dir = home.join("run");
    std::fs::create_dir_all(&runtime_dir).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&runtime_dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let mut daemon = Command::new("gnome-keyring-daemon")
        .args(["--foreground", "--unlock", "--components=secrets"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_RUNTIME_DIR", &runtime_dir)
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start gnome-keyring-daemon ({e}): the keyring test needs a real Secret Service. \
                 Install the Debian package `gnome-keyring` (`make deps-test` does)."
            )
        });
    let mut stdin = daemon.stdin.take().expect("stdin");
    stdin.write_all(b"vigil-test-password").await.unwrap();
    drop(stdin); // --unlock reads the password up to the end of input.
    let connection = zbus::connection::Builder::address(bus)
        .build()
        .await
        .expect("connect to the private bus");
    let start = std::time::Instant::now();
    while !owns_secrets(&connection).await {
        assert!(
            start.elapsed() < BOUND,
            "gnome-keyring-daemon never took org.freedesktop.secrets on the private bus"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    daemon
}

async fn owns_secrets(connection: &zbus::Connection) -> bool {
    connection
        .call_method(
            Some("org.freedesktop.DBus"),
            "/org/freedesktop/DBus",
            Some("org.freedesktop.DBus"),
            "NameHasOwner",
            &("org.freedesktop.secrets",),
        )
        .await
        .ok()
        .and_then(|reply| reply.body().deserialize::<bool>().ok())
        .unwrap_or(false)
}

/// What the Secret Service holds for Vigil's `account`, read with libsecret's `secret-tool`
/// (not through Vigil or the keyring crate).
async fn secret_tool_lookup(bus: &str, account: &str) -> Option<String> {
    let out = Command::new("secret-tool")
        .args(["lookup", "service", "vigil", "username", account])
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .output()
        .await
        .unwrap_or_else(|e| {
            panic!(
                "cannot run secret-tool ({e}): the keyring test reads the Secret Service with it. Install \
                 the Debian package `libsecret-tools` (`make deps-test` does)."
            )
        });
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The values of `var` in the environments of this process's descendants.
fn environment_of_descendants(var: &str) -> Vec<String> {
    let parent_of = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let me = std::process::id();
    let prefix = format!("{var}=");
    let mut values = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let mut ancestor = parent_of(pid);
        while let Some(a) = ancestor.filter(|&a| a > 1 && a != me) {
            ancestor = parent_of(a);
        }
        if ancestor != Some(me) {
            continue;
        }
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        values.extend(
            environ
                .split(|&b| b == 0)
                .filter_map(|kv| std::str::from_utf8(kv).ok()?.strip_prefix(prefix.as_str()))
                .map(str::to_string),
        );
    }
    values
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && std::fs::read(&path)
                    .unwrap()
                    .windows(needle.len())
                    .any(|w| w == needle.as_bytes())
            {
                found.push(path);
            }
        }
    }
    found
}

#[tokio::test]
async fn the_provider_key_and_an_mcp_secret_live_in_a_real_keyring_and_nowhere_else() {
    let bus = private_bus().await;
    let home = tempfile::tempdir().unwrap();
    let _keyring = gnome_keyring(&bus.address, home.path()).await;
    let data = tempfile::tempdir().unwrap();

    let half = "suite::keyring::keyring_session_half";
    let out = Command::new(std::env::current_exe().unwrap())
        .args([half, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .env(DIR_VAR, data.path())
        // The key comes from the keyring or nowhere: no variable may stand in for it.
        .env_remove("VIGIL_NO_KEYRING")
        .env_remove("VIGIL_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("VIGIL_PROVIDER")
        .env_remove("VIGIL_BASE_URL")
        .env_remove("VIGIL_MODEL")
        .output()
        .await
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && stdout.contains(&format!("test {half} ... ok")),
        "the half in the keyring session failed ({}):\n{stdout}\n{stderr}",
        out.status
    );

    // The Secret Service holds both, as another program reads them.
    assert_eq!(
        secret_tool_lookup(&bus.address, PROVIDER_ACCOUNT).await.as_deref(),
        Some(PROVIDER_KEY)
    );
    assert_eq!(
        secret_tool_lookup(&bus.address, MCP_ACCOUNT).await.as_deref(),
        Some(MCP_SECRET)
    );
    // And nothing under the data folder does: no fallback file, no settings, no mcp.json,
    // no transcript.
    for secret in [PROVIDER_KEY, MCP_SECRET] {
        assert_eq!(files_containing(data.path(), secret), Vec::<PathBuf>::new(), "{secret}");
    }
    assert!(!data.path().join("secrets").exists(), "no fallback file was written");
}

/// The half that runs as the app does, in a child whose session bus has the Secret Service.
#[tokio::test]
#[ignore = "the other half of the_provider_key_and_an_mcp_secret_live_in_a_real_keyring…, which runs it \
            in a private Secret Service session"]
async fn keyring_session_half() {
    let dir = PathBuf::from(std::env::var_os(DIR_VAR).expect("run by the keyring test, not alone"));
    let fake = FakeLlm::start(Script::steps(vec![Step::text("The key works.")]).with_api_key(PROVIDER_KEY))
        .await
        .unwrap();
    let (rt, mut rx) = runtime(&dir, None);
    assert!(rt.start_background());

    // The key as Settings saves it: no warning means the keyring took it.
    assert_eq!(rt.set_api_key(ProviderKind::Anthropic, PROVIDER_KEY), Ok(None));
    let view = rt.apply_settings(
        Some(ProviderSettings {
            kind: ProviderKind::Anthropic,
            base_url: base_url(&fake, ProviderKind::Anthropic),
            model: "fake-model".into(),
            max_tokens: 200,
            context_window: None,
        }),
        vec![],
    );
    assert_eq!((view.key_storage, view.api_key_set), (KeyStorage::Keyring, true));
    assert_eq!(view.warnings, Vec::<String>::new());
    // The provider gets the key read back from the keyring.
    rt.submit(user("hello"));
    let events = until_finished(&mut rx).await;
    let said: String = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(said, "The key works.", "{events:?}");
    assert_eq!(
        fake.requests()[0].headers.get("x-api-key").map(String::as_str),
        Some(PROVIDER_KEY)
    );

    // An MCP server's value marked secret, pasted as Settings takes it.
    let pasted = json!({"mcpServers": {"everything": {
        "command": "node",
        "args": [node_server("server-everything"), "stdio"],
        "env": {"EVERYTHING_TOKEN": MCP_SECRET},
        "trusted": true
    }}});
    rt.submit(Op::AddMcpServers {
        json: pasted.to_string(),
        secret: vec![McpSecretField {
            server: "everything".into(),
            field: McpField::Env,
            name: "EVERYTHING_TOKEN".into(),
        }],
    });
    let view = view_until(&mut rx, |v| running(v, "everything")).await;
    assert_eq!(view.problem, None);
    assert_eq!(view.servers[0].secrets, ["EVERYTHING_TOKEN"]);
    // The server runs with the value read back from the keyring (seen in its environment,
    // not through a tool, whose result the transcript would keep).
    assert_eq!(environment_of_descendants("EVERYTHING_TOKEN"), [MCP_SECRET]);
    rt.shutdown().await;
}
