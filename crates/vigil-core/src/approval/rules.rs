//! What a remembered "always" covers and what it would remember (the program, and the
//! subcommand for tools that have them), and which command lines pass without asking:
//! every simple command read-only or covered, no `env`, its files where they may be.
//!
//! Must never: remember a shell, an interpreter or a wrapper; let a rule cover a command
//! that sets variables.

use std::path::Path;

use vigil_protocol::ApprovalKind;

use super::{Approvals, Request, Rule};
use crate::shell::{self, Analysis, SimpleCommand};

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
pub(super) fn env_names(env: &[String]) -> String {
    env.iter()
        .map(|e| e.split('=').next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a remembered rule covers one simple command: its words start with the rule's
/// (`cargo build` covers `cargo build --release`, not `cargo buildx`). A rule naming a
/// program that runs arbitrary code (an old file may hold one) covers nothing, and `find`
/// with `-exec`/`-delete` is never covered.
pub(super) fn rule_covers(rule: &Rule, c: &SimpleCommand) -> bool {
    let words: Vec<&str> = rule.prefix.split_whitespace().collect();
    rule.kind == ApprovalKind::Exec
        && !words.is_empty()
        && words.len() <= c.words.len()
        && words.iter().zip(&c.words).all(|(a, b)| a == b)
        && !shell::never_remembered(c)
        && (c.program() != "find" || shell::read_only(c))
}

pub(super) fn path_rule_covers(rule: &Rule, kind: ApprovalKind, path: &str) -> bool {
    rule.kind == kind && Path::new(path).starts_with(&rule.prefix)
}

impl Approvals {
    pub(super) fn rules_here(&self, request: &Request) -> Vec<Rule> {
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
    pub(super) fn rule_folder(request: &Request) -> Option<String> {
        let cwd = Path::new(request.cwd.as_deref()?).canonicalize().ok()?;
        let workspace = request.workspace.as_deref().and_then(|w| w.canonicalize().ok());
        Some(match workspace {
            Some(w) if cwd.starts_with(&w) => w.display().to_string(),
            _ => cwd.display().to_string(),
        })
    }

    /// Whether the request passes without asking; if not, why (for the agent and the card).
    pub(super) fn covered(&self, request: &Request, line: &Analysis) -> Result<(), String> {
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
    pub(super) fn card_parts(
        &self,
        request: &Request,
        line: &Analysis,
    ) -> (Vec<vigil_protocol::CommandPart>, Option<String>) {
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
    pub(super) fn reach(request: &Request) -> Option<shell::Reach> {
        let (Some(workspace), Some(cwd)) = (&request.workspace, &request.cwd) else {
            return None;
        };
        Some(shell::Reach::new(Path::new(cwd), workspace))
    }

    /// On the read-only list, reading only inside the workspace.
    pub(super) fn reads_only(reach: Option<&shell::Reach>, c: &SimpleCommand) -> bool {
        shell::read_only(c) && reach.is_some_and(|r| r.reads_inside(c))
    }

    /// `path` lies in a folder the user added as writable (resolved as the tools resolve it).
    pub(super) fn in_added_folder(&self, path: &str) -> bool {
        let path = Path::new(path);
        self.sandbox_settings().writable.iter().any(|w| path.starts_with(w))
    }

    /// For the read-only policy: every part of the command on the read-only list.
    pub(super) fn read_only_command(&self, request: &Request, line: &Analysis) -> Result<(), String> {
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

    pub(super) fn remember(&self, request: &Request, now_ms: i64) -> std::io::Result<()> {
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
}
