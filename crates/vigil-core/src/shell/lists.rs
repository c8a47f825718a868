//! The two built-in lists, decided once here and documented in the README: commands that
//! only read (run without asking when their files are in the workspace; program by program
//! in [`specs`](super::specs)), and programs that run arbitrary code, which "always" never
//! remembers.

use super::SimpleCommand;

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

/// Whether `c` is on the built-in read-only list ([`specs`](super::specs)) by its shape:
/// program, subcommand, and options that neither write, run a program, read a list of names
/// nor follow links out, each known where the program's options are. Where its files are is
/// [`Reach::reads_inside`](super::Reach::reads_inside)'s question.
pub fn read_only(c: &SimpleCommand) -> bool {
    super::options::files(c).is_ok()
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
