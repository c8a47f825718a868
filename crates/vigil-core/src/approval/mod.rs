//! # approval
//!
//! Owns the question "may the agent do this?" for shell commands and file access outside
//! the workspace. The policy (`ask`, `allowlist`, `full-auto`, `read-only`) decides; under
//! `ask` the user is asked through an `approval_requested` event and answers with the
//! `approval` op. A command line is first read by [`crate::shell`] into the simple commands
//! it runs: it passes without asking only when every one of them is on the built-in
//! read-only list (with its files in the workspace) or covered by a remembered rule, and no
//! `env` is set. "Always" remembers one simple command's program and subcommand in
//! `approvals.json` (written atomically), never a shell, interpreter or wrapper. A run with
//! nobody at the screen (heartbeat, routines) never waits on a prompt: what is not already
//! approved is denied, with a notification saying so.
//!
//! An MCP tool call is its own kind ([`ApprovalKind::McpCall`]): asked per call under `ask`,
//! "always" remembers that tool of that server, a server the user marked trusted passes, and
//! `read-only` allows only tools their server marks `readOnlyHint: true`.
//!
//! Must never: run anything itself, or block a turn on a question nobody can answer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use vigil_protocol::{ApprovalDecision, ApprovalKind, ApprovalPolicy, Event, NotificationKind, Source};

use crate::events::Emitter;
use crate::sandbox::{Sandbox, SandboxSettings};
use crate::shell::{self, Analysis, SimpleCommand};

/// One thing the agent wants to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub kind: ApprovalKind,
    /// The command, or the path.
    pub subject: String,
    pub cwd: Option<String>,
    /// The variables the agent sets for a command (`exec`'s `env`), as `NAME=value`: a command
    /// with any is never passed by a rule or the read-only list.
    pub env: Vec<String>,
    /// The agent's workspace, where read-only commands may read without asking.
    pub workspace: Option<PathBuf>,
    /// Whether someone can be asked (a user turn) or not (heartbeat, routine).
    pub interactive: bool,
    /// For [`ApprovalKind::ProcessInput`]: whether this same run started the process.
    pub started_here: bool,
    /// For [`ApprovalKind::Exec`]: the command would run outside the sandbox. No rule and no
    /// read-only listing covers that; only the user (or full-auto) allows it, each time.
    pub outside_sandbox: bool,
    /// For [`ApprovalKind::Exec`]: in the background or not, and its timeout, for the card.
    pub exec_run: Option<vigil_protocol::ExecRun>,
    /// For [`ApprovalKind::McpCall`]: the server, the tool and the arguments (`subject` is
    /// the tool's name as the model calls it, which "always" remembers).
    pub mcp: Option<McpAsk>,
}

/// An MCP tool call, as the gate judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAsk {
    pub server: String,
    /// The server's own name for the tool.
    pub tool: String,
    pub arguments: serde_json::Value,
    /// The server marks the tool `readOnlyHint: true` (a hint; only `read-only` relies on it).
    pub read_only: bool,
    /// The user marked the server trusted: its calls pass under `ask` and `allowlist`.
    pub trusted: bool,
}

/// The answer, with the reason the agent is told when it is a no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Allowed without asking only because every part is on the read-only list: the command
    /// runs in the read-only sandbox (nothing writable, no network), so a program that runs
    /// code from its configuration (`git`'s hooks and pagers, `sort --compress-program`)
    /// can change and reach nothing.
    ReadOnly,
    Denied(String),
}

impl Verdict {
    /// It may go ahead (in whichever sandbox the verdict says).
    pub fn allows(&self) -> bool {
        !matches!(self, Verdict::Denied(_))
    }
}

/// A remembered "always" (the wire type, so the settings pane shows exactly what is stored).
pub type Rule = vigil_protocol::ApprovalRule;

#[derive(Debug, Default, Serialize, Deserialize)]
struct RuleFile {
    rules: Vec<Rule>,
    /// Kept here, in the data folder no tool reaches, so the agent cannot widen its sandbox.
    #[serde(default)]
    sandbox: SandboxSettings,
}

/// The approval gate: cheap to clone, shared by every tool.
#[derive(Clone)]
pub struct Approvals {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// `std` locks: never held across an await.
    policy: Mutex<ApprovalPolicy>,
    rules: Mutex<Vec<Rule>>,
    sandbox_settings: Mutex<SandboxSettings>,
    /// Replaceable for tests and platforms without bubblewrap.
    sandbox: Mutex<Sandbox>,
    pending: Mutex<HashMap<String, oneshot::Sender<ApprovalDecision>>>,
    /// Nobody can answer any more (the headless runner's input ended): what waits is denied
    /// and what would ask is denied at once.
    unanswerable: std::sync::atomic::AtomicBool,
}

/// Programs whose first argument is a subcommand with its own risk (`git status` vs
/// `git push`), so "always" remembers the pair for them and the program alone otherwise.
const SUBCOMMAND_PROGRAMS: [&str; 16] = [
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "docker",
    "podman",
    "kubectl",
    "go",
    "pip",
    "pip3",
    "apt",
    "apt-get",
    "systemctl",
    "brew",
    "make",
];

/// What "always" remembers: for a command, [`remembered_prefix`] (empty when "always" is
/// not offered); for a path, its folder.
pub fn prefix_of(kind: ApprovalKind, subject: &str) -> String {
    match kind {
        ApprovalKind::Exec => remembered_prefix(subject).unwrap_or_default(),
        // Input is judged anew each time: "always" would let any text into the program.
        // A file that steers every future run is shown each time it changes.
        ApprovalKind::ProcessInput | ApprovalKind::SteerFile => String::new(),
        // That tool of that server, whatever its arguments.
        ApprovalKind::McpCall => subject.to_string(),
        ApprovalKind::ReadOutside | ApprovalKind::WriteOutside => Path::new(subject)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| subject.to_string()),
    }
}

/// The rule "always" would save for `command`: the program and, for tools with subcommands,
/// the subcommand (`cargo build`, `git status`), so approving `git status` does not approve
/// `git push`. `None` — only "once" is offered — for anything but one simple command, for
/// the programs [`shell::never_remembered`] names, and for a tool with subcommands called
/// with a flag first (`git -C x push`).
pub fn remembered_prefix(command: &str) -> Option<String> {
    let Analysis::Commands(commands) = shell::analyze(command) else {
        return None;
    };
    let [c] = commands.as_slice() else {
        return None;
    };
    if shell::never_remembered(c) {
        return None;
    }
    let has_subcommand = SUBCOMMAND_PROGRAMS.contains(&c.program());
    match (c.subcommand(), c.words.len()) {
        (Some(sub), _) if has_subcommand => Some(format!("{} {sub}", c.program())),
        (None, n) if has_subcommand && n > 1 => None,
        _ => Some(c.program().to_string()),
    }
}

/// `A, B` from `A=1`, `B=2`.
fn env_names(env: &[String]) -> String {
    env.iter()
        .map(|e| e.split('=').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a remembered rule covers one simple command: its words start with the rule's
/// (`cargo build` covers `cargo build --release`, not `cargo buildx`). A rule naming a
/// program that runs arbitrary code (an old file may hold one) covers nothing, and `find`
/// with `-exec`/`-delete` is never covered.
fn rule_covers(rule: &Rule, c: &SimpleCommand) -> bool {
    let words: Vec<&str> = rule.prefix.split_whitespace().collect();
    rule.kind == ApprovalKind::Exec
        && !words.is_empty()
        && words.len() <= c.words.len()
        && words.iter().zip(&c.words).all(|(a, b)| a == b)
        && !shell::never_remembered(c)
        && (c.program() != "find" || shell::read_only(c))
}

fn path_rule_covers(rule: &Rule, kind: ApprovalKind, path: &str) -> bool {
    rule.kind == kind && Path::new(path).starts_with(&rule.prefix)
}

impl Approvals {
    /// Loads remembered rules from `<data_dir>/approvals.json`; an unreadable file is kept
    /// aside and reported, and no rule is assumed.
    pub fn open(data_dir: &Path, policy: ApprovalPolicy) -> (Self, Vec<String>) {
        let path = data_dir.join("approvals.json");
        let mut warnings = Vec::new();
        let file = match std::fs::read_to_string(&path) {
            Ok(text) => match serde_json::from_str::<RuleFile>(&text) {
                Ok(f) => f,
                Err(e) => {
                    let aside = crate::settings::set_aside(&path, 0);
                    warnings.push(format!(
                        "Remembered approvals in {} could not be read ({e}); kept as {} and none are assumed.",
                        path.display(),
                        aside.display()
                    ));
                    RuleFile::default()
                }
            },
            Err(_) => RuleFile::default(),
        };
        let inner = Inner {
            path,
            policy: Mutex::new(policy),
            rules: Mutex::new(file.rules),
            sandbox_settings: Mutex::new(file.sandbox),
            sandbox: Mutex::new(Sandbox::new()),
            pending: Mutex::new(HashMap::new()),
            unanswerable: Default::default(),
        };
        (Self { inner: Arc::new(inner) }, warnings)
    }

    /// The sandbox commands run in.
    pub fn sandbox(&self) -> Sandbox {
        self.inner.sandbox.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the sandbox (a test's unavailable one, say).
    pub fn set_sandbox(&self, sandbox: Sandbox) {
        *self.inner.sandbox.lock().unwrap_or_else(|e| e.into_inner()) = sandbox;
    }

    pub fn sandbox_settings(&self) -> SandboxSettings {
        self.inner
            .sandbox_settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The settings pane's view.
    pub fn view(&self) -> vigil_protocol::ApprovalsView {
        vigil_protocol::ApprovalsView {
            policy: self.policy(),
            policy_from_env: std::env::var("VIGIL_APPROVAL_POLICY")
                .ok()
                .and_then(|p| ApprovalPolicy::parse(&p))
                .is_some(),
            rules: self.rules(),
            sandbox: self.sandbox_view(),
        }
    }

    pub fn policy(&self) -> ApprovalPolicy {
        *self.inner.policy.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn set_policy(&self, policy: ApprovalPolicy) {
        *self.inner.policy.lock().unwrap_or_else(|e| e.into_inner()) = policy;
    }

    pub fn rules(&self) -> Vec<Rule> {
        self.inner.rules.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Forgets a remembered rule.
    pub fn forget(&self, kind: ApprovalKind, prefix: &str) -> std::io::Result<()> {
        self.inner
            .rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|r| !(r.kind == kind && r.prefix == prefix));
        self.save()
    }

    /// The command rules that apply in the request's folder (see [`Rule::folder`]).
    fn rules_here(&self, request: &Request) -> Vec<Rule> {
        let real = |p: &Path| p.canonicalize().ok();
        let Some(cwd) = request.cwd.as_deref().and_then(|c| real(Path::new(c))) else {
            return vec![];
        };
        let workspace = request.workspace.as_deref().and_then(real);
        self.inner
            .rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|r| r.kind == ApprovalKind::Exec)
            .filter(|r| {
                let folder = r.folder.as_deref().map(Path::new).and_then(real).or(workspace.clone());
                folder.is_some_and(|f| cwd.starts_with(f))
            })
            .cloned()
            .collect()
    }

    /// Where "always" binds a command rule: the workspace when the command runs inside it,
    /// else the command's own folder.
    fn rule_folder(request: &Request) -> Option<String> {
        let cwd = Path::new(request.cwd.as_deref()?).canonicalize().ok()?;
        let workspace = request.workspace.as_deref().and_then(|w| w.canonicalize().ok());
        Some(match workspace {
            Some(w) if cwd.starts_with(&w) => w.display().to_string(),
            _ => cwd.display().to_string(),
        })
    }

    /// Whether the request passes without asking; if not, why (for the agent and the card).
    fn covered(&self, request: &Request, line: &Analysis) -> Result<(), String> {
        let here = self.rules_here(request);
        let rules = self.inner.rules.lock().unwrap_or_else(|e| e.into_inner());
        if request.kind == ApprovalKind::McpCall {
            let trusted = request.mcp.as_ref().is_some_and(|m| m.trusted);
            let remembered = rules
                .iter()
                .any(|r| r.kind == ApprovalKind::McpCall && r.prefix == request.subject);
            return match trusted || remembered {
                true => Ok(()),
                false => Err("its server is not trusted and the user has not always allowed this tool".into()),
            };
        }
        if request.kind == ApprovalKind::SteerFile {
            return Err("a file that steers every future run is asked about each time".into());
        }
        if request.kind == ApprovalKind::ProcessInput {
            // Only a command the user chose to always allow may take input unasked.
            return match line {
                Analysis::Commands(cs) if cs.iter().all(|c| here.iter().any(|r| rule_covers(r, c))) => Ok(()),
                _ => Err("its command is not one the user always allows".into()),
            };
        }
        if request.kind != ApprovalKind::Exec {
            return match rules
                .iter()
                .any(|r| path_rule_covers(r, request.kind, &request.subject))
            {
                true => Ok(()),
                false => Err("no remembered rule covers it".into()),
            };
        }
        if request.outside_sandbox {
            return Err("it would run outside the sandbox".into());
        }
        if !request.env.is_empty() {
            return Err(format!("it sets environment variables ({})", env_names(&request.env)));
        }
        let commands = match line {
            Analysis::Commands(commands) => commands,
            Analysis::Unprovable(why) => return Err(why.clone()),
        };
        let reach = Self::reach(request);
        let uncovered: Vec<String> = commands
            .iter()
            .filter(|c| !(Self::reads_only(reach.as_ref(), c) || here.iter().any(|r| rule_covers(r, c))))
            .map(|c| format!("`{}`", shell::visible(&c.display())))
            .collect();
        match uncovered.is_empty() {
            true => Ok(()),
            false => Err(format!("not covered: {}", uncovered.join(", "))),
        }
    }

    /// What the card shows of a command line: each simple command and whether it is
    /// covered, or why the line could not be read into simple commands.
    fn card_parts(&self, request: &Request, line: &Analysis) -> (Vec<vigil_protocol::CommandPart>, Option<String>) {
        if request.kind != ApprovalKind::Exec {
            return (vec![], None);
        }
        match line {
            Analysis::Commands(cs) => {
                let here = self.rules_here(request);
                let reach = Self::reach(request);
                let parts = cs
                    .iter()
                    .map(|c| vigil_protocol::CommandPart {
                        text: shell::visible(&c.display()),
                        covered: !request.outside_sandbox
                            && request.env.is_empty()
                            && (Self::reads_only(reach.as_ref(), c) || here.iter().any(|r| rule_covers(r, c))),
                    })
                    .collect();
                (parts, None)
            }
            Analysis::Unprovable(why) => (vec![], Some(why.clone())),
        }
    }

    /// Where the request's read-only commands may read: inside the workspace.
    fn reach(request: &Request) -> Option<shell::Reach> {
        let (Some(workspace), Some(cwd)) = (&request.workspace, &request.cwd) else {
            return None;
        };
        Some(shell::Reach::new(Path::new(cwd), workspace))
    }

    /// On the read-only list, reading only inside the workspace.
    fn reads_only(reach: Option<&shell::Reach>, c: &SimpleCommand) -> bool {
        shell::read_only(c) && reach.is_some_and(|r| r.reads_inside(c))
    }

    /// `path` lies in a folder the user added as writable (resolved as the tools resolve it).
    fn in_added_folder(&self, path: &str) -> bool {
        let path = Path::new(path);
        self.sandbox_settings().writable.iter().any(|w| path.starts_with(w))
    }

    /// For the read-only policy: every part of the command on the read-only list.
    fn read_only_command(&self, request: &Request, line: &Analysis) -> Result<(), String> {
        if !request.env.is_empty() {
            return Err(format!("it sets environment variables ({})", env_names(&request.env)));
        }
        let reach = Self::reach(request);
        match line {
            Analysis::Commands(cs) => match cs.iter().find(|c| !Self::reads_only(reach.as_ref(), c)) {
                None => Ok(()),
                Some(c) => Err(format!(
                    "`{}` is not a read-only command reading inside the workspace",
                    shell::visible(&c.display())
                )),
            },
            Analysis::Unprovable(why) => Err(why.clone()),
        }
    }

    fn remember(&self, request: &Request, now_ms: i64) -> std::io::Result<()> {
        let kind = request.kind;
        {
            let mut rules = self.inner.rules.lock().unwrap_or_else(|e| e.into_inner());
            let prefix = prefix_of(kind, &request.subject);
            if prefix.is_empty() {
                // "Always" is not offered for this; an answer that says it anyway counts once.
                return Ok(());
            }
            let folder = (kind == ApprovalKind::Exec)
                .then(|| Self::rule_folder(request))
                .flatten();
            if !rules
                .iter()
                .any(|r| r.kind == kind && r.prefix == prefix && r.folder == folder)
            {
                rules.push(Rule {
                    kind,
                    prefix,
                    created_at: now_ms,
                    folder,
                });
            }
        }
        self.save()
    }

    fn save(&self) -> std::io::Result<()> {
        self.write(self.rules(), self.sandbox_settings())
    }

    /// Replaces `approvals.json` with these rules and sandbox settings.
    fn write(&self, rules: Vec<Rule>, sandbox: SandboxSettings) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(&RuleFile { rules, sandbox }).map_err(std::io::Error::other)?;
        crate::durable::write_atomic(&self.inner.path, &json).map(|_| ())
    }

    /// Decides; under `ask` with someone at the screen, asks and waits for the answer
    /// (or for `cancel`, which denies). A run nobody watches is denied at once.
    pub async fn check(&self, request: Request, emitter: &Emitter, now_ms: i64, cancel: &CancellationToken) -> Verdict {
        self.check_away(request, emitter, now_ms, cancel, None).await
    }

    /// [`Self::check`] for a run nobody watches that may still ask (`away: Some(timeout)`:
    /// a continuation, a routine, a woken heartbeat): the question goes to its conversation
    /// and to a notification with Allow once / Deny / Open, and waits up to `timeout`, then
    /// denies. `away: None` keeps deny-at-once for runs that must not leave questions (the
    /// heartbeat's interval polls).
    pub async fn check_away(
        &self,
        request: Request,
        emitter: &Emitter,
        now_ms: i64,
        cancel: &CancellationToken,
        away: Option<Duration>,
    ) -> Verdict {
        let policy = self.policy();
        let what = match request.kind {
            ApprovalKind::Exec if request.outside_sandbox => {
                format!("the command `{}` outside the sandbox", shell::visible(&request.subject))
            }
            ApprovalKind::Exec => format!("the command `{}`", shell::visible(&request.subject)),
            ApprovalKind::ReadOutside => format!("reading {} (outside the workspace)", request.subject),
            ApprovalKind::WriteOutside => format!("changing {} (outside the workspace)", request.subject),
            ApprovalKind::SteerFile => format!("changing {}, a file that steers every future run", request.subject),
            ApprovalKind::ProcessInput => {
                format!("typing into the running command `{}`", shell::visible(&request.subject))
            }
            ApprovalKind::McpCall => match &request.mcp {
                Some(m) => format!(
                    "the tool `{}` of the MCP server `{}`",
                    shell::visible(&m.tool),
                    shell::visible(&m.server)
                ),
                None => format!("the MCP tool `{}`", shell::visible(&request.subject)),
            },
        };
        // The command line is read once per decision: parsing it is most of what one costs.
        let line = match request.kind {
            ApprovalKind::Exec | ApprovalKind::ProcessInput => shell::analyze(&request.subject),
            _ => Analysis::Unprovable(String::new()),
        };
        let covered = self.covered(&request, &line);
        // Outside the sandbox with nobody at the screen (bubblewrap cannot start): no policy
        // lets that through on its own. The user is asked if the run may ask, else refused.
        let unwatched_outside = request.outside_sandbox && !request.interactive;
        match policy {
            // Full-auto never asks and never leaves the box: outside the sandbox (asked for,
            // or because bubblewrap cannot start) or a write outside the workspace and the
            // folders the user added is refused; the user changes the policy to allow it.
            ApprovalPolicy::FullAuto if request.kind == ApprovalKind::Exec && unwatched_outside => {
                return Self::nobody_to_ask(emitter, &what)
            }
            ApprovalPolicy::FullAuto if request.kind == ApprovalKind::Exec && request.outside_sandbox => {
                return Verdict::Denied(format!(
                    "Denied: {what}: full-auto runs commands only inside the sandbox. The user can switch the approval policy to `ask` in Settings and approve this one command."
                ))
            }
            ApprovalPolicy::FullAuto
                if request.kind == ApprovalKind::WriteOutside && !self.in_added_folder(&request.subject) =>
            {
                return Verdict::Denied(format!(
                    "Denied: {what}: full-auto changes files only in the workspace and the folders the user added in Settings → Approvals. The user can add the folder, or switch the approval policy to `ask` and approve this change."
                ))
            }
            ApprovalPolicy::Ask if unwatched_outside => {}
            ApprovalPolicy::ReadOnly | ApprovalPolicy::Allowlist if unwatched_outside => {
                return Verdict::Denied(format!(
                    "Denied: {what}: nobody is at the screen, and this approval policy never asks."
                ))
            }
            ApprovalPolicy::FullAuto => return Verdict::Allowed,
            ApprovalPolicy::ReadOnly if request.kind == ApprovalKind::McpCall => {
                return match request.mcp.as_ref().is_some_and(|m| m.read_only) {
                    true => Verdict::Allowed,
                    false => Verdict::Denied(format!(
                        "Denied: {what}: its server does not mark it read-only, and the approval policy is read-only; ask the user to change it in Settings."
                    )),
                };
            }
            ApprovalPolicy::ReadOnly if request.kind == ApprovalKind::Exec && request.outside_sandbox => {
                return Verdict::Denied(format!(
                    "Denied: {what}: under the read-only policy commands run only in the read-only sandbox; ask the user to change the policy in Settings."
                ))
            }
            ApprovalPolicy::ReadOnly if request.kind == ApprovalKind::Exec => {
                return match self.read_only_command(&request, &line) {
                    Ok(()) => Verdict::ReadOnly,
                    Err(why) => Verdict::Denied(format!(
                        "Denied: {what} ({why}). The approval policy is read-only; ask the user to change it in Settings."
                    )),
                };
            }
            ApprovalPolicy::ReadOnly
                if matches!(
                    request.kind,
                    ApprovalKind::WriteOutside | ApprovalKind::ProcessInput | ApprovalKind::SteerFile
                ) =>
            {
                return Verdict::Denied(format!(
                    "Denied: {what}. The approval policy is read-only; ask the user to change it in Settings."
                ))
            }
            // Covered by the read-only list alone (no remembered rule needed): read-only box.
            _ if covered.is_ok()
                && request.kind == ApprovalKind::Exec
                && !request.outside_sandbox
                && self.read_only_command(&request, &line).is_ok() =>
            {
                return Verdict::ReadOnly
            }
            _ if covered.is_ok() => return Verdict::Allowed,
            // Nobody can be asked, but this run started the process with a command the gate
            // let through: its own follow-up input goes on (an installer's "y", a REPL it opened).
            _ if request.kind == ApprovalKind::ProcessInput && request.started_here && !request.interactive => {
                return Verdict::Allowed
            }
            ApprovalPolicy::Allowlist => {
                let why = covered.err().unwrap_or_default();
                return Verdict::Denied(format!(
                    "Denied: {what} is not on the allowlist ({why}). The user can approve it with \"always\" when the policy is `ask`."
                ));
            }
            // Reading outside the workspace under read-only asks like any other policy.
            ApprovalPolicy::Ask | ApprovalPolicy::ReadOnly => {}
        }
        let timeout = match (request.interactive, away) {
            (true, _) => None,
            (false, Some(timeout)) => Some(timeout),
            (false, None) => return Self::nobody_to_ask(emitter, &what),
        };
        let (parts, unprovable) = self.card_parts(&request, &line);
        let id = uuid::Uuid::new_v4().to_string();
        let (tx, rx) = oneshot::channel();
        {
            // Under the lock `stop_asking` takes: a question is either denied here or
            // waiting where it will deny it.
            let mut pending = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner());
            if self.inner.unanswerable.load(std::sync::atomic::Ordering::SeqCst) {
                drop(pending);
                return Self::nobody_to_ask(emitter, &what);
            }
            pending.insert(id.clone(), tx);
        }
        let expires_at = timeout.map(|t| now_ms.saturating_add(t.as_millis() as i64));
        emitter.emit(
            Source::Agent,
            Event::ApprovalRequested {
                approval_id: id.clone(),
                kind: request.kind,
                prefix: match request.outside_sandbox {
                    true => String::new(),
                    false => prefix_of(request.kind, &request.subject),
                },
                command: shell::visible(&request.subject),
                cwd: request.cwd.clone(),
                outside_sandbox: request.outside_sandbox,
                env: request.env.iter().map(|e| shell::visible(e)).collect(),
                parts,
                unprovable,
                exec_run: request.exec_run,
                mcp: request.mcp.as_ref().map(|m| vigil_protocol::McpCallCard {
                    server: shell::visible(&m.server),
                    tool: shell::visible(&m.tool),
                    arguments: shell::visible(&serde_json::to_string_pretty(&m.arguments).unwrap_or_default()),
                    read_only: m.read_only,
                }),
                expires_at,
            },
        );
        if timeout.is_some() {
            // Nobody is at the screen: the question also goes out as a notification whose
            // buttons answer it (Allow once, Deny; "always" is only on the card).
            emitter.emit(
                Source::System,
                Event::Notification {
                    kind: NotificationKind::Approval,
                    title: "Vigil needs your approval".into(),
                    body: format!("A task running on its own wants to run {what}."),
                    event_id: None,
                    process_id: None,
                    approval_id: Some(id.clone()),
                    target_session_id: emitter.session_id().map(str::to_string),
                    message_ts: None,
                },
            );
        }
        // From here the card is up: dropped unanswered (its tool call aborted when the run
        // stopped), it is resolved all the same, or it would ask for ever.
        let mut open = OpenQuestion {
            approvals: self,
            id: id.clone(),
            emitter,
            unattended: timeout.is_some(),
            resolved: false,
        };
        let unanswered = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        let (decision, ended) = tokio::select! {
            d = rx => (d.unwrap_or(ApprovalDecision::Deny), None),
            _ = cancel.cancelled() => {
                self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                (ApprovalDecision::Deny, Some(Unanswered::RunEnded))
            }
            _ = unanswered => {
                self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
                (ApprovalDecision::Deny, Some(Unanswered::TimedOut))
            }
        };
        open.resolve(decision, ended.is_some());
        match decision {
            ApprovalDecision::Approve => Verdict::Allowed,
            ApprovalDecision::Always if request.outside_sandbox => Verdict::Allowed,
            ApprovalDecision::Always => {
                if let Err(e) = self.remember(&request, now_ms) {
                    tracing::warn!("could not save the approval: {e}");
                }
                Verdict::Allowed
            }
            ApprovalDecision::Deny if ended == Some(Unanswered::RunEnded) => {
                Verdict::Denied(format!("Not run: {what} was still waiting for an answer when the run was stopped."))
            }
            ApprovalDecision::Deny if ended == Some(Unanswered::TimedOut) => Verdict::Denied(format!(
                "Denied: {what} needed the user's approval, and nobody answered within {} (they were asked in the conversation and by a notification). Go on without it, or leave the question for the user.",
                spoken_duration(timeout.unwrap_or_default())
            )),
            ApprovalDecision::Deny => Verdict::Denied(format!("The user denied {what}.")),
        }
    }

    /// Deny-at-once for a run that must not ask, with a notification saying so.
    fn nobody_to_ask(emitter: &Emitter, what: &str) -> Verdict {
        emitter.emit(
            Source::System,
            Event::Notification {
                kind: NotificationKind::Approval,
                title: "Vigil needs your approval".into(),
                body: format!("A background task wanted to run {what}; it was denied because nobody was asked."),
                event_id: None,
                process_id: None,
                approval_id: None,
                target_session_id: None,
                message_ts: None,
            },
        );
        Verdict::Denied(format!(
            "Denied: {what} needs the user's approval and this run has nobody to ask. Ask the user in the conversation instead."
        ))
    }

    /// From now on nobody answers (the headless runner's input ended): every question
    /// waiting is denied, and later ones are denied at once, so what was asked can finish.
    pub fn stop_asking(&self) {
        let waiting: Vec<_> = {
            let mut pending = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner());
            self.inner.unanswerable.store(true, std::sync::atomic::Ordering::SeqCst);
            pending.drain().collect()
        };
        for (_, tx) in waiting {
            let _ = tx.send(ApprovalDecision::Deny);
        }
    }

    /// Delivers the user's answer; false if nothing waits under `id` (already answered).
    pub fn answer(&self, id: &str, decision: ApprovalDecision) -> bool {
        let waiting = self.inner.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        waiting.is_some_and(|tx| tx.send(decision).is_ok())
    }
}

/// A question on screen until [`Self::resolve`]d; dropped before that (its run stopped), it
/// leaves the pending answers and resolves its card as ended unanswered.
struct OpenQuestion<'a> {
    approvals: &'a Approvals,
    id: String,
    emitter: &'a Emitter,
    /// Asked by a run nobody watches.
    unattended: bool,
    resolved: bool,
}

impl OpenQuestion<'_> {
    /// Emits `approval_resolved`. `unanswered`: nobody answered (its time ran out, its run
    /// ended). Such a question from a run nobody watches expired; in the user's own turn it is
    /// their Stop, a denial.
    fn resolve(&mut self, decision: ApprovalDecision, unanswered: bool) {
        self.resolved = true;
        self.emitter.emit(
            Source::User,
            Event::ApprovalResolved {
                approval_id: self.id.clone(),
                decision,
                expired: unanswered && self.unattended,
            },
        );
    }
}

impl Drop for OpenQuestion<'_> {
    fn drop(&mut self) {
        if !self.resolved {
            let pending = &self.approvals.inner.pending;
            pending.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
            self.resolve(ApprovalDecision::Deny, true);
        }
    }
}

/// Why a question ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unanswered {
    /// Its own timeout passed.
    TimedOut,
    /// The run that asked was stopped first.
    RunEnded,
}

/// "1 h", "30 min", "45 s": how long an unattended question waited.
pub fn spoken_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s if s >= 1 => format!("{s} s"),
        _ => format!("{} ms", d.as_millis()),
    }
}

/// The gate of one turn: this policy, this turn's emitter and Stop, and whether someone is
/// there to ask.
pub struct TurnGate {
    pub approvals: Approvals,
    pub workspace: PathBuf,
    pub emitter: Emitter,
    pub cancel: CancellationToken,
    pub interactive: bool,
    /// Nobody at the screen, but the run may ask and wait this long (see
    /// [`Approvals::check_away`]); `None` with `interactive: false` denies at once.
    pub away: Option<Duration>,
    pub now_ms: i64,
}

#[async_trait::async_trait]
impl crate::tools::Gate for TurnGate {
    async fn check(
        &self,
        kind: ApprovalKind,
        subject: &str,
        cwd: Option<&str>,
        env: &[String],
        outside_sandbox: bool,
        exec_run: Option<vigil_protocol::ExecRun>,
    ) -> Verdict {
        let request = Request {
            kind,
            subject: subject.to_string(),
            cwd: cwd.map(str::to_string),
            env: env.to_vec(),
            workspace: Some(self.workspace.clone()),
            interactive: self.interactive,
            started_here: false,
            outside_sandbox,
            exec_run,
            mcp: None,
        };
        self.approvals
            .check_away(request, &self.emitter, self.now_ms, &self.cancel, self.away)
            .await
    }

    async fn check_mcp(&self, qualified_name: &str, call: &McpAsk) -> Verdict {
        let request = Request {
            kind: ApprovalKind::McpCall,
            subject: qualified_name.to_string(),
            cwd: None,
            env: vec![],
            workspace: Some(self.workspace.clone()),
            interactive: self.interactive,
            started_here: false,
            outside_sandbox: false,
            exec_run: None,
            mcp: Some(call.clone()),
        };
        self.approvals
            .check_away(request, &self.emitter, self.now_ms, &self.cancel, self.away)
            .await
    }

    async fn check_input(&self, command: &str, cwd: &str, started_here: bool) -> Verdict {
        let request = Request {
            kind: ApprovalKind::ProcessInput,
            subject: command.to_string(),
            cwd: Some(cwd.to_string()),
            env: vec![],
            workspace: Some(self.workspace.clone()),
            interactive: self.interactive,
            started_here,
            outside_sandbox: false,
            exec_run: None,
            mcp: None,
        };
        self.approvals
            .check_away(request, &self.emitter, self.now_ms, &self.cancel, self.away)
            .await
    }
}

mod sandbox_settings;
pub use sandbox_settings::SettingError;

#[cfg(test)]
mod tests;
