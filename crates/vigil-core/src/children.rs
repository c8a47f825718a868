//! # children
//!
//! Owns what every process Vigil starts on the agent's behalf (an `exec` command, an MCP
//! server) inherits from it: the environment without the variables it must not see
//! ([`withheld_env`]), and a parent whose `/proc` entries and memory it cannot read
//! ([`hide_parent`]).
//!
//! Must never: let a child see an API key variable it was not given on purpose (a command's
//! own `env`, a server's own `env` in `mcp.json`, both applied after the withholding).

use vigil_protocol::ProviderKind;

/// The phone channels' tokens for the headless runner ([`crate::channels`]).
pub const NTFY_TOKEN_VAR: &str = "VIGIL_NTFY_TOKEN";
pub const TELEGRAM_TOKEN_VAR: &str = "VIGIL_TELEGRAM_TOKEN";
/// Variables no child of Vigil inherits: the channels' tokens.
pub const CHANNEL_TOKEN_VARS: [&str; 2] = [NTFY_TOKEN_VAR, TELEGRAM_TOKEN_VAR];

/// Names (comma-separated) of environment variables the desktop app set for its own use,
/// such as how WebKit draws its window. They are not the user's: every child is started
/// without them and without this marker, so a command behaves as it would in the user's own
/// terminal. A variable the user set themselves is not listed and passes through.
pub const APP_ADDED_ENV: &str = "VIGIL_APP_ADDED_ENV";

/// Variables no child inherits: the desktop app's own ([`APP_ADDED_ENV`]), every variable
/// an API key can come from ([`crate::secrets::env_key_vars`], both providers) and the
/// channels' tokens ([`CHANNEL_TOKEN_VARS`]). A
/// command the model runs or a server it calls must not be able to print the user's key;
/// the child's own `env` is applied afterwards, so such a variable can still be set for a
/// child on purpose.
pub(crate) fn withheld_env() -> Vec<String> {
    let listed = std::env::var(APP_ADDED_ENV).unwrap_or_default();
    let names = listed
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(String::from);
    let keys = [ProviderKind::Anthropic, ProviderKind::Openai]
        .into_iter()
        .flat_map(crate::secrets::env_key_vars);
    let mut all: Vec<String> = names
        .chain(
            [APP_ADDED_ENV]
                .into_iter()
                .chain(keys)
                .chain(CHANNEL_TOKEN_VARS)
                .map(String::from),
        )
        .collect();
    all.sort();
    all.dedup();
    all
}

/// Makes this process non-dumpable (Linux), once, before its first child starts. Removing
/// the key variables from a child's environment is not enough on its own: a child of the
/// same user can read them from `/proc/<parent>/environ` (the environment as the app was
/// started, which no `unsetenv` changes) or attach to the parent and read its memory. A
/// non-dumpable process's `/proc` entries need `CAP_SYS_PTRACE`, as ssh-agent and gpg-agent
/// do it. The cost: no core dumps of Vigil, and a debugger must attach as root. Children
/// are dumpable again after their `exec`, so their own tools are unaffected.
pub(crate) fn hide_parent() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            use rustix::process::{set_dumpable_behavior, DumpableBehavior};
            if let Err(e) = set_dumpable_behavior(DumpableBehavior::NotDumpable) {
                tracing::warn!("children may read Vigil's environment: PR_SET_DUMPABLE failed: {e}");
            }
        });
    }
}
