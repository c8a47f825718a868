//! # secrets
//!
//! Owns the API keys, and the other secrets the user gives Vigil (an MCP server's token: see
//! [`Secrets::get_named`]). They live in the OS keyring (Secret Service on Linux). Where no keyring
//! service answers (a bare Linux session, CI), a key is kept in a file only the user can read
//! and the settings view carries a visible warning saying so. Environment variables
//! (`VIGIL_API_KEY`, then `ANTHROPIC_API_KEY` / `OPENAI_API_KEY`) override both, for scripts.
//!
//! Must never: write a key into the settings file, a log line or an error message.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use vigil_protocol::{KeyStorage, ProviderKind};

use crate::durable;

pub(crate) const SERVICE: &str = "vigil";
/// A keyring service that does not answer in this long is treated as absent, so a missing
/// or locked Secret Service can never hang a turn or the settings pane.
const KEYRING_TIMEOUT: Duration = Duration::from_secs(3);

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SecretError {
    /// Neither the keyring nor the fallback file could store the key.
    #[error("could not store the API key: {0}")]
    Store(String),
    /// Neither the keyring nor the fallback file could store a named secret (`what`).
    #[error("could not store {what}: {why}")]
    StoreNamed { what: String, why: String },
}

/// Where a key was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundKey {
    pub key: Option<String>,
    pub storage: KeyStorage,
    pub warning: Option<String>,
}

/// The key store for one data directory.
#[derive(Debug, Clone)]
pub struct Secrets {
    dir: PathBuf,
    /// Tests and CI turn the keyring off to prove the fallback (`VIGIL_NO_KEYRING=1`).
    use_keyring: bool,
}

fn account(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => "anthropic-api-key",
        ProviderKind::Openai => "openai-api-key",
    }
}

/// Environment variables that carry a key for `kind`, in priority order.
pub fn env_key_vars(kind: ProviderKind) -> [&'static str; 2] {
    match kind {
        ProviderKind::Anthropic => ["VIGIL_API_KEY", "ANTHROPIC_API_KEY"],
        ProviderKind::Openai => ["VIGIL_API_KEY", "OPENAI_API_KEY"],
    }
}

/// Runs a keyring call on its own thread with a deadline.
pub(crate) fn with_keyring<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, keyring::Error> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(KEYRING_TIMEOUT) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the keyring service did not answer".into()),
    }
}

impl Secrets {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.join("secrets"),
            use_keyring: std::env::var_os("VIGIL_NO_KEYRING").is_none(),
        }
    }

    fn file(&self, kind: ProviderKind) -> PathBuf {
        self.account_file(account(kind))
    }

    /// The fallback file of a keyring account: its name with anything but letters, digits,
    /// `-` and `_` made `_`, so no account names a path outside the folder.
    fn account_file(&self, account: &str) -> PathBuf {
        let name: String = account
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
                _ => '_',
            })
            .collect();
        self.dir.join(format!("{name}.key"))
    }

    fn file_warning(&self, kind: ProviderKind, why: &str) -> String {
        format!(
            "No keyring service is available ({why}); the API key is kept in {}, readable only by you.",
            self.file(kind).display()
        )
    }

    /// Finds the key for `kind`: environment, then keyring, then the fallback file.
    pub fn get(&self, kind: ProviderKind) -> FoundKey {
        for var in env_key_vars(kind) {
            if let Some(key) = std::env::var(var).ok().filter(|k| !k.trim().is_empty()) {
                return FoundKey {
                    key: Some(key.trim().to_string()),
                    storage: KeyStorage::Environment,
                    warning: None,
                };
            }
        }
        let mut keyring_problem = None;
        if self.use_keyring {
            let acct = account(kind);
            match with_keyring(move || keyring::Entry::new(SERVICE, acct)?.get_password()) {
                Ok(key) => {
                    return FoundKey {
                        key: Some(key),
                        storage: KeyStorage::Keyring,
                        warning: None,
                    }
                }
                Err(e) if e.contains("No matching entry") => {}
                Err(e) => keyring_problem = Some(e),
            }
        }
        match fs::read_to_string(self.file(kind)) {
            Ok(key) if !key.trim().is_empty() => FoundKey {
                key: Some(key.trim().to_string()),
                storage: KeyStorage::File,
                warning: Some(self.file_warning(kind, keyring_problem.as_deref().unwrap_or("keyring turned off"))),
            },
            _ => FoundKey {
                key: None,
                storage: KeyStorage::None,
                warning: None,
            },
        }
    }

    /// Stores a key: in the keyring if one answers, else in the user-only file.
    /// Returns where it went and, for the file, the warning to show.
    pub fn set(&self, kind: ProviderKind, key: &str) -> Result<FoundKey, SecretError> {
        let key = key.trim().to_string();
        let why = if self.use_keyring {
            let (acct, k) = (account(kind), key.clone());
            match with_keyring(move || keyring::Entry::new(SERVICE, acct)?.set_password(&k)) {
                Ok(()) => {
                    let _ = fs::remove_file(self.file(kind));
                    return Ok(FoundKey {
                        key: Some(key),
                        storage: KeyStorage::Keyring,
                        warning: None,
                    });
                }
                Err(e) => e,
            }
        } else {
            "keyring turned off".to_string()
        };
        tracing::warn!("keyring unavailable ({why}); storing the API key in a user-only file");
        self.write_file(kind, &key)?;
        Ok(FoundKey {
            key: Some(key),
            storage: KeyStorage::File,
            warning: Some(self.file_warning(kind, &why)),
        })
    }

    /// Forgets the key everywhere Vigil keeps it (not the environment).
    pub fn delete(&self, kind: ProviderKind) {
        if self.use_keyring {
            let acct = account(kind);
            let _ = with_keyring(move || keyring::Entry::new(SERVICE, acct)?.delete_credential());
        }
        let _ = fs::remove_file(self.file(kind));
    }

    /// A secret that is not an API key, under its keyring `account` (`mcp/github/env/TOKEN`):
    /// the keyring, else the user-only file. `None` when neither has it; no environment
    /// variable overrides these.
    pub fn get_named(&self, account: &str) -> Option<String> {
        if self.use_keyring {
            let acct = account.to_string();
            if let Ok(value) = with_keyring(move || keyring::Entry::new(SERVICE, &acct)?.get_password()) {
                return Some(value);
            }
        }
        fs::read_to_string(self.account_file(account))
            .ok()
            .filter(|v| !v.is_empty())
    }

    /// Stores a named secret as [`Self::set`] stores a key; `Some(warning)` when it went to
    /// the file because no keyring answered.
    pub fn set_named(&self, account: &str, value: &str) -> Result<Option<String>, SecretError> {
        let why = if self.use_keyring {
            let (acct, v) = (account.to_string(), value.to_string());
            match with_keyring(move || keyring::Entry::new(SERVICE, &acct)?.set_password(&v)) {
                Ok(()) => {
                    let _ = fs::remove_file(self.account_file(account));
                    return Ok(None);
                }
                Err(e) => e,
            }
        } else {
            "keyring turned off".to_string()
        };
        let path = self.account_file(account);
        self.write_file_at(&path, value).map_err(|e| SecretError::StoreNamed {
            what: account.to_string(),
            why: e.to_string(),
        })?;
        Ok(Some(format!(
            "No keyring service is available ({why}); {account} is kept in {}, readable only by you.",
            path.display()
        )))
    }

    /// Forgets a named secret everywhere Vigil keeps it.
    pub fn delete_named(&self, account: &str) {
        if self.use_keyring {
            let acct = account.to_string();
            let _ = with_keyring(move || keyring::Entry::new(SERVICE, &acct)?.delete_credential());
        }
        let _ = fs::remove_file(self.account_file(account));
    }

    fn write_file(&self, kind: ProviderKind, key: &str) -> Result<(), SecretError> {
        self.write_file_at(&self.file(kind), key)
    }

    fn write_file_at(&self, path: &Path, key: &str) -> Result<(), SecretError> {
        let err = |e: std::io::Error| SecretError::Store(e.to_string());
        durable::create_private_dir_all(&self.dir).map_err(err)?;
        let path = path.to_path_buf();
        let tmp = path.with_extension("key.tmp");
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            opts.mode(0o600);
            let _ = fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700));
        }
        let mut f = opts.open(&tmp).map_err(err)?;
        durable::write_all(&mut f, &tmp, key.as_bytes())
            .and_then(|_| durable::sync_all(&f, &tmp))
            .map_err(err)?;
        durable::rename(&tmp, &path).map_err(err)?;
        // Best effort, as every atomic write: the key is safe in the file; this makes its name last.
        let _ = durable::sync_dir(&self.dir);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_keyring_the_key_goes_to_a_private_file_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = Secrets {
            dir: dir.path().join("secrets"),
            use_keyring: false,
        };
        let stored = secrets.set(ProviderKind::Openai, " sk-abc \n").unwrap();
        assert_eq!(stored.storage, KeyStorage::File);
        assert!(stored.warning.unwrap().contains("readable only by you"));
        let path = secrets.file(ProviderKind::Openai);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        // Environment wins when set, so this test only checks the file path when it is not.
        if std::env::var_os("VIGIL_API_KEY").is_none() && std::env::var_os("OPENAI_API_KEY").is_none() {
            assert_eq!(secrets.get(ProviderKind::Openai).key.as_deref(), Some("sk-abc"));
        }
        secrets.delete(ProviderKind::Openai);
        assert!(!path.exists());
    }

    #[test]
    fn a_named_secret_without_a_keyring_stays_in_the_secrets_folder() {
        let dir = tempfile::tempdir().unwrap();
        let secrets = Secrets {
            dir: dir.path().join("secrets"),
            use_keyring: false,
        };
        let warning = secrets.set_named("mcp/../../github/env/TOKEN", "ghp_1").unwrap();
        assert!(warning.unwrap().contains("readable only by you"));
        assert!(dir.path().join("secrets/mcp_______github_env_TOKEN.key").exists());
        assert_eq!(
            secrets.get_named("mcp/../../github/env/TOKEN").as_deref(),
            Some("ghp_1")
        );
        secrets.delete_named("mcp/../../github/env/TOKEN");
        assert_eq!(secrets.get_named("mcp/../../github/env/TOKEN"), None);
    }
}
