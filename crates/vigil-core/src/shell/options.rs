//! How a read-only program reads its words: which are options, which options take a value,
//! and which words name files it opens. [`files`] walks a simple command's words as the
//! program's own parser does (GNU `getopt_long`: short options in clusters, a value attached
//! or in the next word, long options by any unambiguous prefix, options anywhere before
//! `--`), against the program's [`Spec`] in [`specs`](super::specs).
//!
//! Must never: let through an option a closed [`Spec`] does not list, nor a long option that
//! is, or abbreviates, a refused one; nor leave unchecked a word the program may open. Where
//! the walk could be wrong about a value it errs towards checking: a value in the next word
//! is checked as a file whatever it is, and still read as an option if it looks like one.

use super::specs::{self, Spec};
use super::SimpleCommand;

/// Why a refused option is.
const REFUSED: &str = "writes, runs a program, reads a list of files or follows links out";

/// What one option takes after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Value {
    No,
    /// A pattern, a number, a format: attached, it is not a file.
    Text,
    /// A file the program reads: attached or not, it must be inside.
    Path,
    /// An optional value, only ever attached (`--color=auto`, `date -Iseconds`).
    Optional,
}

/// A long option as the tables write it: `name` takes nothing, `name=` text, `name=FILE` a
/// file it reads, `name[=]` an optional attached text.
fn long_entry(entry: &str) -> (&str, Value) {
    if let Some(n) = entry.strip_suffix("[=]") {
        (n, Value::Optional)
    } else if let Some(n) = entry.strip_suffix("=FILE") {
        (n, Value::Path)
    } else if let Some(n) = entry.strip_suffix('=') {
        (n, Value::Text)
    } else {
        (entry, Value::No)
    }
}

/// What a command reads, as far as its words say.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Files<'a> {
    /// The words that name files its program may open: operands, values of options that
    /// take a file, and every value given in a word of its own.
    pub paths: Vec<&'a str>,
    /// Its program reads the files of a folder among `paths` through their links (`diff`
    /// without `--no-dereference`), so none of them may be a folder.
    pub no_folders: bool,
}

/// What `c` reads, or why it is not read-only: its program is not on the list, or an
/// option writes, runs a program, reads a list of names, follows links out of what it
/// walks, or is not known.
pub(super) fn files(c: &SimpleCommand) -> Result<Files<'_>, String> {
    let (spec, args) = match c.program() {
        "git" => match c.subcommand() {
            Some(s) if specs::GIT_READ_ONLY.contains(&s) => (&specs::GIT, &c.words[2..]),
            _ => return Err("only `git status|log|diff|show|blame|rev-parse|ls-files` only read".into()),
        },
        "find" => {
            return Ok(Files {
                paths: find(&c.words[1..])?,
                no_folders: false,
            })
        }
        p => match specs::spec(p) {
            Some(spec) => (spec, &c.words[1..]),
            None => return Err(format!("`{p}` is not on the read-only list")),
        },
    };
    let mut paths = Vec::new();
    let mut values = 0;
    let mut options_end = false;
    // A `--` read as a value: in case it was not, every word after it is a file too.
    let mut maybe_ended = false;
    for w in args {
        let w = w.as_str();
        let value = values > 0;
        values -= usize::from(value);
        // A value in its own word: a file to check, whatever its option takes; and read
        // below as an option if it looks like one, in case it is not a value.
        let checked = value || maybe_ended;
        if checked {
            paths.push(w);
        }
        if options_end || w == "-" || !w.starts_with('-') {
            if !checked {
                paths.push(w);
            }
        } else if w == "--" {
            maybe_ended |= value;
            options_end |= !value;
        } else if !spec.closed && w.contains(['/', '~']) {
            return Err(format!(
                "`{w}` may carry a path the program is not known to keep inside"
            ));
        } else if let Some(long) = w.strip_prefix("--") {
            values += long_option(spec, long, &mut paths)?;
        } else {
            values += short_options(spec, w, &mut paths)?;
        }
    }
    let no_folders = spec
        .folders_through_links
        .is_some_and(|opt| !args.iter().any(|a| a == opt));
    Ok(Files { paths, no_folders })
}

/// `--name[=value]`: how many of the following words are its value (0 or 1).
fn long_option<'a>(spec: &Spec, body: &'a str, out: &mut Vec<&'a str>) -> Result<usize, String> {
    let (name, value) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (body, None),
    };
    if name.is_empty() {
        return Err(format!("`--{body}` is not an option"));
    }
    let known = lookup(spec.long, name);
    // getopt and git's parse-options take an exact name over any longer one, so only an
    // inexact `--text` can stand for `--textconv`.
    let exact = known.is_some_and(|(full, _)| full == name);
    let mut refused = spec.refused.split_whitespace().filter_map(|r| r.strip_prefix("--"));
    match refused.find(|r| r.starts_with(name)) {
        Some(r) if r == name => return Err(format!("`--{r}` {REFUSED}")),
        Some(r) if !exact => return Err(format!("`--{name}` may stand for `--{r}`, which {REFUSED}")),
        _ => {}
    }
    match (known.map(|(_, v)| v), value) {
        (None, _) if spec.closed => Err(format!("`--{name}` is not an option known to only read")),
        // Open (git): a value attached to an option not listed is checked as a file; one in
        // the next word is an operand anyway.
        (None, v) => {
            out.extend(v);
            Ok(0)
        }
        (Some(Value::No), Some(_)) => Err(format!("`--{name}` takes no value")),
        (Some(Value::No | Value::Optional), _) => Ok(0),
        (Some(Value::Text), Some(_)) => Ok(0),
        (Some(Value::Path), Some(v)) => {
            out.push(v);
            Ok(0)
        }
        (Some(Value::Text | Value::Path), None) => Ok(1),
    }
}

/// The long option `name` names: itself, or the one it is the only prefix of.
fn lookup(long: &'static str, name: &str) -> Option<(&'static str, Value)> {
    let entries = || long.split_whitespace().map(long_entry);
    if let Some(exact) = entries().find(|(n, _)| *n == name) {
        return Some(exact);
    }
    let mut matches = entries().filter(|(n, _)| n.starts_with(name));
    match (matches.next(), matches.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

/// `-abc` or `-ofile`: how many of the following words are values.
fn short_options<'a>(spec: &Spec, word: &'a str, out: &mut Vec<&'a str>) -> Result<usize, String> {
    let cluster = &word[1..];
    let refused = |letter: char| {
        spec.refused
            .split_whitespace()
            .any(|r| r.len() == 2 && r.starts_with('-') && r.ends_with(letter))
    };
    // Open: a refused letter anywhere, as the walk stops at the first letter it does not
    // know. Closed: letter by letter, as the rest after one that takes a value is the value
    // (`date -Iseconds` is not `-s`).
    if let Some(letter) = cluster.chars().find(|l| !spec.closed && refused(*l)) {
        return Err(format!("`-{letter}` {REFUSED}"));
    }
    let mut values = 0;
    for (i, letter) in cluster.char_indices() {
        if refused(letter) {
            return Err(format!("`-{letter}` {REFUSED}"));
        }
        let rest = &cluster[i + letter.len_utf8()..];
        let value = if spec.flags.contains(letter) {
            Value::No
        } else if spec.text.contains(letter) {
            Value::Text
        } else if spec.path.contains(letter) {
            Value::Path
        } else if spec.optional.contains(letter) {
            Value::Optional
        } else if spec.closed {
            return Err(format!("`-{letter}` is not an option known to only read"));
        } else {
            // Open: any letter may take the rest as its value, so every rest is a file.
            let from = i + letter.len_utf8();
            out.extend(
                (from..cluster.len())
                    .filter(|j| cluster.is_char_boundary(*j))
                    .map(|j| &cluster[j..]),
            );
            return Ok(0);
        };
        match value {
            Value::No => {}
            Value::Optional => return Ok(values),
            // tree: each such letter takes the next word, and the cluster goes on.
            Value::Text | Value::Path if spec.values_follow => values += 1,
            Value::Text | Value::Path if rest.is_empty() => return Ok(1),
            Value::Text => return Ok(0),
            Value::Path => {
                out.push(rest);
                return Ok(0);
            }
        }
    }
    Ok(values)
}

/// `find`'s words: `-H`/`-P` and starting points, then an expression of predicates, each
/// taking a fixed number of words.
fn find(args: &[String]) -> Result<Vec<&str>, String> {
    let mut out = Vec::new();
    let mut values = 0;
    for w in args {
        let w = w.as_str();
        let value = values > 0;
        if value {
            out.push(w);
            values -= 1;
        }
        if specs::FIND_REFUSED.split_whitespace().any(|r| r == w) {
            return Err(format!("`{w}` {REFUSED}"));
        }
        if specs::FIND_FLAGS.split_whitespace().any(|p| p == w) {
        } else if specs::FIND_VALUED.split_whitespace().any(|p| p == w) {
            values += 1;
        } else if let Some(t) = w.strip_prefix("-newer").filter(|t| t.len() == 2) {
            // `-newerXY`: a file's time, or with Y = `t` a date (checked as a file anyway).
            if !t.chars().all(|c| "aBcmt".contains(c)) {
                return Err(format!("`{w}` is not a `find` test"));
            }
            values += 1;
        } else if w.len() > 2 && w.starts_with("-O") && w[2..].chars().all(|c| c.is_ascii_digit()) {
            // An optimisation level.
        } else if w.starts_with('-') && w.len() > 1 && !value {
            return Err(format!("`{w}` is not a `find` predicate known to only read"));
        } else if !value {
            out.push(w);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::{analyze, Analysis};

    fn paths_of(line: &str) -> Result<Vec<String>, String> {
        let Analysis::Commands(cs) = analyze(line) else {
            panic!("{line}")
        };
        files(&cs[0]).map(|f| f.paths.into_iter().map(String::from).collect())
    }

    #[test]
    fn values_and_operands_are_the_files() {
        let ok = |line: &str, want: &[&str]| {
            assert_eq!(
                paths_of(line),
                Ok(want.iter().map(|w| w.to_string()).collect()),
                "{line}"
            )
        };
        ok("grep -n -e todo -fpats notes.txt", &["todo", "pats", "notes.txt"]);
        ok("grep --file pats --regexp=a/b x", &["pats", "x"]);
        ok("grep --exclude-f=pats -r x .", &["pats", "x", "."]);
        ok("sort -t/ -k2 -u notes.txt", &["notes.txt"]);
        ok("head -n -5 notes.txt", &["-5", "notes.txt"]);
        ok("grep -e -lin x", &["-lin", "x"]);
        ok("tree -LP 2 '*.rs' sub", &["2", "*.rs", "sub"]);
        ok("cat -- -n", &["-n"]);
        ok("grep -e -- -n x", &["--", "-n", "x"]);
        ok("date -u -Iseconds", &[]);
        ok("sort -to notes.txt", &["notes.txt"]);
        ok(
            "git log --oneline -n 5 -Oorder",
            &["5", "order", "rder", "der", "er", "r"],
        );
        ok("find . -name '*.rs' -newer a -type f", &[".", "*.rs", "a", "f"]);
    }

    #[test]
    fn refused_unknown_and_abbreviated_options_are_not_read_only() {
        for line in [
            "sort --o=x",
            "sort --c=sh",
            "sort -mox",
            "grep -Rn x",
            "grep -e -- -R x",
            "grep --no-such-option x",
            "grep --count=3 x",
            "ls -Z9",
            "git diff --ext",
            "git log --text",
            "git log --format=%h/%s",
            "git -c a=b log",
            "git -c core.pager=sh log",
            "git --exec-path=. log",
            "git --config-env=core.pager=E log",
            "git -p log",
            "git --paginate log",
            "find . -fprintf x y",
            "find . -newerXY x",
            "find . -frobnicate",
            "tree -Lo 2 out.html",
            "make",
        ] {
            assert!(paths_of(line).is_err(), "{line}");
        }
    }
}
