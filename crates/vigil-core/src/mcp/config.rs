//! # mcp::config
//!
//! Owns `<data dir>/mcp.json`, in the shape Claude Desktop and Cursor write:
//! `{"mcpServers": {"<name>": {"command", "args", "env"} | {"url", "headers"}}}`, plus three
//! keys of Vigil's own per server (`trusted`, `timeout` in seconds, `disabled`). Reading it:
//! a file that is not such JSON is kept aside as `mcp.json.broken-<time>` and reported; one
//! wrong entry fails that server alone. Editing it (import, remove, trusted): entries are kept
//! as written, so keys Vigil does not know survive, and the file is written whole through the
//! atomic write.
//!
//! A value the user marked secret is stored as `{"keyring": "<account>"}`: the value itself is
//! in the keyring (see [`crate::secrets::Secrets::get_named`]), never in this file.
//!
//! Must never: write a secret value into the file, or lose an entry it could not read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};
use vigil_protocol::{McpField, DEFAULT_MCP_CALL_TIMEOUT_SECS};

/// The file's name in the data folder.
pub const FILE_NAME: &str = "mcp.json";

/// The longest per-call timeout an entry may set: a day.
const MAX_TIMEOUT_SECS: u64 = 24 * 3600;

/// One value of `env` or `headers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigValue {
    Plain(String),
    /// Kept in the keyring under this account.
    Keyring(String),
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, ConfigValue)>,
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        headers: Vec<(String, ConfigValue)>,
    },
}

/// One server's entry, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    pub target: Target,
    pub trusted: bool,
    /// How long one call may take.
    pub timeout: Duration,
    pub disabled: bool,
}

impl ServerConfig {
    /// The command line or the URL, for Settings.
    pub fn target_text(&self) -> String {
        match &self.target {
            Target::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Target::Http { url, .. } => url.clone(),
        }
    }

    /// The names of the variables and headers kept in the keyring.
    pub fn secret_names(&self) -> Vec<String> {
        let values = match &self.target {
            Target::Stdio { env, .. } => env,
            Target::Http { headers, .. } => headers,
        };
        values
            .iter()
            .filter(|(_, v)| matches!(v, ConfigValue::Keyring(_)))
            .map(|(k, _)| k.clone())
            .collect()
    }
}

/// The keyring account a server's secret value is kept under.
pub fn account(server: &str, field: McpField, name: &str) -> String {
    let field = match field {
        McpField::Env => "env",
        McpField::Header => "header",
    };
    format!("mcp/{server}/{field}/{name}")
}

/// `mcp.json` as written, by server name.
#[derive(Debug, Clone, Default)]
pub struct McpFile {
    path: PathBuf,
    /// Top-level keys besides `mcpServers`, kept as written.
    other: Map<String, Value>,
    servers: BTreeMap<String, Value>,
}

impl McpFile {
    /// Reads `<data_dir>/mcp.json`; no file is no servers. A file that is not a JSON object
    /// whose `mcpServers` is an object is moved aside (so a save cannot overwrite it) and the
    /// problem returned for Settings.
    pub fn load(data_dir: &Path, now_ms: i64) -> (Self, Option<String>) {
        let path = data_dir.join(FILE_NAME);
        let empty = Self {
            path: path.clone(),
            ..Self::default()
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (empty, None),
            Err(e) => return (empty, Some(format!("{} could not be read ({e}).", path.display()))),
        };
        match parse_file(&text) {
            Ok((other, servers)) => (Self { path, other, servers }, None),
            Err(why) => {
                let aside = crate::settings::set_aside(&path, now_ms);
                let problem = format!(
                    "{} is not a valid MCP config ({why}); it was kept as {} and no server from it was started. Fix it and put it back, or add the servers again.",
                    path.display(),
                    aside.display()
                );
                tracing::warn!("{problem}");
                (empty, Some(problem))
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry, read or with why it cannot be.
    pub fn entries(&self) -> Vec<(String, Result<ServerConfig, String>)> {
        self.servers
            .iter()
            .map(|(name, entry)| (name.clone(), parse_entry(entry)))
            .collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.servers.contains_key(name)
    }

    /// The entry as written.
    pub fn raw(&self, name: &str) -> Option<&Value> {
        self.servers.get(name)
    }

    /// Adds or replaces an entry (not saved yet).
    pub fn insert(&mut self, name: &str, entry: Value) {
        self.servers.insert(name.to_string(), entry);
    }

    /// Removes an entry (not saved yet); returns it.
    pub fn remove(&mut self, name: &str) -> Option<Value> {
        self.servers.remove(name)
    }

    /// Sets or clears `trusted` (not saved yet).
    pub fn set_trusted(&mut self, name: &str, trusted: bool) -> Result<(), String> {
        let Some(Value::Object(entry)) = self.servers.get_mut(name) else {
            return Err(format!("No MCP server is named {name:?}."));
        };
        match trusted {
            true => entry.insert("trusted".into(), Value::Bool(true)),
            false => entry.remove("trusted"),
        };
        Ok(())
    }

    /// Writes the file whole (temp file, fsync, rename).
    pub fn save(&self) -> std::io::Result<()> {
        let mut top = self.other.clone();
        let servers: Map<String, Value> = self.servers.clone().into_iter().collect();
        top.insert("mcpServers".into(), Value::Object(servers));
        let mut json = serde_json::to_vec_pretty(&Value::Object(top)).map_err(std::io::Error::other)?;
        json.push(b'\n');
        crate::durable::write_atomic(&self.path, &json).map(|_| ())
    }
}

type Parsed = (Map<String, Value>, BTreeMap<String, Value>);

fn parse_file(text: &str) -> Result<Parsed, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let Value::Object(mut top) = value else {
        return Err("it is not a JSON object".into());
    };
    let servers = match top.remove("mcpServers") {
        None => Map::new(),
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err("`mcpServers` is not an object".into()),
    };
    Ok((top, servers.into_iter().collect()))
}

/// The servers of a pasted config: `{"mcpServers": {…}}`, or the map of servers alone. Names
/// must be non-empty and printable; each entry must read (see [`parse_entry`]).
pub fn parse_import(json: &str) -> Result<BTreeMap<String, Value>, String> {
    let value: Value = serde_json::from_str(json.trim()).map_err(|e| format!("That is not valid JSON: {e}."))?;
    let Value::Object(mut top) = value else {
        return Err("Paste a JSON object: {\"mcpServers\": {\"name\": {\"command\": …}}}.".into());
    };
    let servers = match top.remove("mcpServers") {
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err("`mcpServers` must be an object of servers by name.".into()),
        // A lone server object has no name to go by.
        None if top.contains_key("command") || top.contains_key("url") => {
            return Err("That is one server without a name: paste it as {\"mcpServers\": {\"name\": {…}}}.".into())
        }
        None => top,
    };
    if servers.is_empty() {
        return Err("The pasted config names no server.".into());
    }
    for (name, entry) in &servers {
        check_name(name)?;
        parse_entry(entry).map_err(|why| format!("Server {name:?}: {why}."))?;
    }
    Ok(servers.into_iter().collect())
}

/// A server name: what the user calls it, and part of its tools' names.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("A server needs a name.".into());
    }
    if name.chars().any(|c| c.is_control()) || name.len() > 100 {
        return Err(format!(
            "{name:?} cannot be a server name (control characters, or too long)."
        ));
    }
    Ok(())
}

/// Replaces the value of a marked secret in a pasted entry by its keyring reference and
/// returns the value, to be stored there.
pub fn take_secret(entry: &mut Value, field: McpField, name: &str, account: &str) -> Result<String, String> {
    let key = match field {
        McpField::Env => "env",
        McpField::Header => "headers",
    };
    let slot = entry
        .get_mut(key)
        .and_then(|m| m.get_mut(name))
        .ok_or_else(|| format!("there is no {key} value named {name:?} to keep secret"))?;
    match std::mem::replace(slot, serde_json::json!({ "keyring": account })) {
        Value::String(value) => Ok(value),
        other => {
            *slot = other;
            Err(format!("{key} {name:?} is not a plain text value"))
        }
    }
}

/// Reads one entry, or says what is wrong with it in words the user can act on.
pub fn parse_entry(entry: &Value) -> Result<ServerConfig, String> {
    let Value::Object(entry) = entry else {
        return Err("its entry is not an object".into());
    };
    let text = |key: &str| -> Result<Option<String>, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => Err(format!("`{key}` is empty")),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(_) => Err(format!("`{key}` must be text")),
        }
    };
    let flag = |key: &str| -> Result<bool, String> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("`{key}` must be true or false")),
        }
    };
    if let Some(kind) = text("type")? {
        if kind == "sse" {
            return Err(
                "the old SSE transport is not supported; give the server's streamable HTTP URL (often ending in /mcp)"
                    .into(),
            );
        }
    }
    let target = match (text("command")?, text("url")?) {
        (Some(_), Some(_)) => return Err("it has both `command` and `url`; keep one".into()),
        (None, None) => return Err("it needs a `command` (a program to start) or a `url` (an HTTP server)".into()),
        (Some(command), None) => Target::Stdio {
            command,
            args: strings(entry.get("args"), "args")?,
            env: values(entry.get("env"), "env")?,
            cwd: text("cwd")?.map(PathBuf::from),
        },
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(format!("`url` must start with http:// or https:// (it is {url:?})"));
            }
            Target::Http {
                url,
                headers: values(entry.get("headers"), "headers")?,
            }
        }
    };
    let timeout = match entry.get("timeout") {
        None | Some(Value::Null) => DEFAULT_MCP_CALL_TIMEOUT_SECS,
        Some(v) => match v.as_u64() {
            Some(s) if (1..=MAX_TIMEOUT_SECS).contains(&s) => s,
            _ => {
                return Err(format!(
                    "`timeout` must be a whole number of seconds from 1 to {MAX_TIMEOUT_SECS}"
                ))
            }
        },
    };
    Ok(ServerConfig {
        target,
        trusted: flag("trusted")?,
        timeout: Duration::from_secs(timeout),
        disabled: flag("disabled")?,
    })
}

fn strings(v: Option<&Value>, key: &str) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(vec![]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.clone()),
                // `"args": ["--port", 3000]` means what it says.
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(format!("`{key}` must be a list of text")),
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be a list of text")),
    }
}

fn values(v: Option<&Value>, key: &str) -> Result<Vec<(String, ConfigValue)>, String> {
    let map = match v {
        None | Some(Value::Null) => return Ok(vec![]),
        Some(Value::Object(map)) => map,
        Some(_) => return Err(format!("`{key}` must be an object of names and values")),
    };
    map.iter()
        .map(|(name, value)| {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(format!("{name:?} cannot be a name in `{key}`"));
            }
            let value = match value {
                Value::String(s) => ConfigValue::Plain(s.clone()),
                Value::Number(n) => ConfigValue::Plain(n.to_string()),
                Value::Bool(b) => ConfigValue::Plain(b.to_string()),
                Value::Object(o) => match o.get("keyring") {
                    Some(Value::String(acct)) if o.len() == 1 => ConfigValue::Keyring(acct.clone()),
                    _ => return Err(format!("`{key}.{name}` must be text or {{\"keyring\": \"<account>\"}}")),
                },
                _ => return Err(format!("`{key}.{name}` must be text")),
            };
            Ok((name.clone(), value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claude_desktop_config_reads_as_it_is_written() {
        let pasted = r#"{"mcpServers": {
            "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"], "env": {"DEBUG": "1"}},
            "remote": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer x"}, "timeout": 5, "trusted": true}
        }}"#;
        let servers = parse_import(pasted).unwrap();
        let fs = parse_entry(&servers["filesystem"]).unwrap();
        assert_eq!(
            fs,
            ServerConfig {
                target: Target::Stdio {
                    command: "npx".into(),
                    args: vec![
                        "-y".into(),
                        "@modelcontextprotocol/server-filesystem".into(),
                        "/home/me".into()
                    ],
                    env: vec![("DEBUG".into(), ConfigValue::Plain("1".into()))],
                    cwd: None,
                },
                trusted: false,
                timeout: Duration::from_secs(60),
                disabled: false,
            }
        );
        assert_eq!(
            fs.target_text(),
            "npx -y @modelcontextprotocol/server-filesystem /home/me"
        );
        let remote = parse_entry(&servers["remote"]).unwrap();
        assert_eq!((remote.trusted, remote.timeout), (true, Duration::from_secs(5)));
        // The inner map alone works too.
        assert_eq!(parse_import(r#"{"a": {"command": "x"}}"#).unwrap().len(), 1);
    }

    #[test]
    fn a_wrong_paste_says_what_is_wrong() {
        let cases = [
            ("{nope", "That is not valid JSON"),
            (r#"{"command": "npx"}"#, "one server without a name"),
            (r#"{"mcpServers": {}}"#, "names no server"),
            (r#"{"mcpServers": {"a": {"args": []}}}"#, "needs a `command`"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "url": "http://y"}}}"#,
                "both `command` and `url`",
            ),
            (r#"{"mcpServers": {"a": {"url": "ftp://y"}}}"#, "must start with http"),
            (
                r#"{"mcpServers": {"a": {"type": "sse", "url": "http://y/sse"}}}"#,
                "SSE transport",
            ),
            (r#"{"mcpServers": {"a": {"command": "x", "timeout": 0}}}"#, "`timeout`"),
            (
                r#"{"mcpServers": {"a": {"command": "x", "env": {"A": [1]}}}}"#,
                "`env.A` must be text",
            ),
        ];
        for (pasted, want) in cases {
            let err = parse_import(pasted).unwrap_err();
            assert!(err.contains(want), "{pasted}: {err}");
        }
    }

    #[test]
    fn a_file_that_is_not_json_is_kept_aside_and_one_bad_entry_fails_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), "{\"mcpServers\": {,}").unwrap();
        let (file, problem) = McpFile::load(dir.path(), 7);
        assert!(file.entries().is_empty());
        let problem = problem.unwrap();
        assert!(problem.contains("mcp.json.broken-7"), "{problem}");
        assert!(dir.path().join("mcp.json.broken-7").exists());
        assert!(!dir.path().join(FILE_NAME).exists());

        std::fs::write(
            dir.path().join(FILE_NAME),
            r#"{"mcpServers": {"good": {"command": "a"}, "bad": {"command": 3}}, "other": 1}"#,
        )
        .unwrap();
        let (mut file, problem) = McpFile::load(dir.path(), 8);
        assert_eq!(problem, None);
        let entries = file.entries();
        assert_eq!(entries[0], ("bad".into(), Err("`command` must be text".into())));
        assert!(entries[1].1.is_ok());
        // Edits keep what they do not touch, the bad entry and unknown keys included.
        file.set_trusted("good", true).unwrap();
        file.save().unwrap();
        let saved: Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap()).unwrap();
        assert_eq!(
            saved,
            json!({"other": 1, "mcpServers": {"good": {"command": "a", "trusted": true}, "bad": {"command": 3}}})
        );
    }

    #[test]
    fn a_secret_value_leaves_the_entry_for_a_keyring_reference() {
        let mut entry = json!({"command": "x", "env": {"TOKEN": "ghp_1", "PLAIN": "p"}});
        let account = account("github", McpField::Env, "TOKEN");
        assert_eq!(
            take_secret(&mut entry, McpField::Env, "TOKEN", &account).unwrap(),
            "ghp_1"
        );
        assert_eq!(
            entry,
            json!({"command": "x", "env": {"TOKEN": {"keyring": "mcp/github/env/TOKEN"}, "PLAIN": "p"}})
        );
        let read = parse_entry(&entry).unwrap();
        assert_eq!(read.secret_names(), ["TOKEN"]);
        assert!(take_secret(&mut entry, McpField::Header, "TOKEN", &account).is_err());
    }
}
