//! The two built-in lists, decided once here and documented in the README: commands that
//! only read (run without asking when their files are in the workspace), and programs that
//! run arbitrary code, which "always" never remembers.

use std::path::{Component, Path, PathBuf};

use super::SimpleCommand;

/// Programs that only read and print, whatever their plain arguments.
const READ_ONLY: &[&str] = &[
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "pwd", "echo", "printf", "true", "false",
    "stat", "file", "du", "tree", "cut", "tr", "diff", "cmp", "basename", "dirname", "realpath", "readlink", "nl",
    "whoami", "id", "uname", "which", "date", "sort",
];

/// `git` subcommands that only read.
const GIT_READ_ONLY: &[&str] = &["status", "log", "diff", "show", "blame", "rev-parse", "ls-files"];

/// Flags that turn one of these readers into a writer or a runner: `sort -o`, `rg --pre`,
/// `git diff --output`, `find -exec`, `date -s`…
fn writing_flags(program: &str) -> &'static [&'static str] {
    match program {
        "sort" | "tree" => &["-o", "--output"],
        "git" => &["--output", "--ext-diff", "--textconv"],
        "rg" => &["--pre", "--pre-glob"],
        "date" => &["-s", "--set", "-f", "--file"],
        "find" => &[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
        ],
        _ => &[],
    }
}

/// Whether `flag` is a one-letter option (`-o`) found in `arg` as part of a cluster of
/// them (`-uo`) or with its value attached (`-ofile`): either way it is there.
fn short_in_cluster(flag: &str, arg: &str) -> bool {
    let letter = flag.strip_prefix('-').filter(|l| l.len() == 1);
    match (letter, arg.strip_prefix('-')) {
        (Some(l), Some(rest)) if !rest.starts_with('-') => rest.contains(l),
        _ => false,
    }
}

/// Programs that run code they are given, or another program: a rule for one would cover
/// everything. "Always" is not offered for them, and an old rule naming one covers nothing.
const NEVER_REMEMBERED: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "fish",
    "csh",
    "tcsh",
    "busybox",
    "env",
    "sudo",
    "doas",
    "su",
    "pkexec",
    "runuser",
    "xargs",
    "parallel",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "stdbuf",
    "setsid",
    "chroot",
    "unshare",
    "nsenter",
    "flock",
    "watch",
    "time",
    "strace",
    "ltrace",
    "gdb",
    "script",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "irb",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "Rscript",
    "julia",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "npx",
    "uvx",
    "pipx",
    "bunx",
    "pnpx",
    "eval",
    "exec",
    "source",
    ".",
    "command",
    "builtin",
    "trap",
    "alias",
    "ssh",
    "osascript",
    "open",
    "xdg-open",
];

/// Whether `c` is on the built-in read-only list by its shape (program, subcommand, flags).
/// Where its files are is [`reads_inside`]'s question.
pub fn read_only(c: &SimpleCommand) -> bool {
    let flags = writing_flags(c.program());
    let writing = c.words[1..].iter().any(|a| {
        flags
            .iter()
            .any(|f| a == f || a.starts_with(&format!("{f}=")) || short_in_cluster(f, a))
    });
    if writing {
        return false;
    }
    match c.program() {
        "git" => c.subcommand().is_some_and(|s| GIT_READ_ONLY.contains(&s)),
        "find" => true,
        p => READ_ONLY.contains(&p),
    }
}

/// Whether "always" may never remember `c`'s program: shells, interpreters, wrappers,
/// `python*` in any version, `git -c …` (a config that can run anything), and a program
/// with subcommands given none.
pub fn never_remembered(c: &SimpleCommand) -> bool {
    let p = c.program();
    let base = p.rsplit('/').next().unwrap_or(p);
    NEVER_REMEMBERED.contains(&base)
        || base.starts_with("python")
        || base.starts_with("pypy")
        || base != p
        || (base == "git" && c.words.get(1).is_some_and(|w| w.starts_with('-')))
}

/// Where a command's files may be: the workspace, with the command's folder, both with
/// their symlinks resolved once for all the simple commands of a line.
pub struct Reach {
    /// `None` when the workspace cannot be resolved or the folder lies outside it: then no
    /// argument counts as inside.
    inside: Option<(PathBuf, PathBuf)>,
}

impl Reach {
    pub fn new(cwd: &Path, workspace: &Path) -> Self {
        let inside = canonical(workspace)
            .zip(canonical(cwd))
            .filter(|(root, cwd)| cwd.starts_with(root));
        Self { inside }
    }

    /// Whether every argument of `c` that could name a file names one inside the
    /// workspace, resolved from the command's folder (symbolic links followed where the
    /// file exists). A flag carrying a path (`--file=/etc/x`, `-f/etc/x`) or a `~` is not
    /// followed and fails the check.
    pub fn reads_inside(&self, c: &SimpleCommand) -> bool {
        let Some((root, cwd)) = &self.inside else {
            return false;
        };
        c.words[1..].iter().all(|a| {
            if a.starts_with('-') {
                return !a.contains('/') && !a.contains('~');
            }
            !a.starts_with('~') && canonical(&cwd.join(a)).is_some_and(|p| p.starts_with(root))
        })
    }
}

/// `p` with `.` and `..` resolved, and symbolic links too for the longest part that exists.
fn canonical(p: &Path) -> Option<PathBuf> {
    let mut lexical = PathBuf::new();
    for part in p.components() {
        match part {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return Some(rest.iter().rev().fold(real, |acc: PathBuf, part| acc.join(part)));
        }
        rest.push(existing.file_name()?.to_owned());
        existing = existing.parent()?;
    }
}
