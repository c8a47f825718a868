//! The names a word with an unquoted `*`, `?` or `[` becomes before its program sees it,
//! as dash expands it (every command runs under `sh -c`, and `sh` is dash on Debian):
//! [`stays_inside`] expands the word against the folders as they are now and checks every
//! name it could become.
//!
//! dash's rules (`expmeta`), which bash's defaults share: a name that starts with `.` is
//! matched only by a component that starts with a literal `.`, and such a component also
//! matches `.` and `..` (`.*` is `. ..`); `*`, `?` and brackets never match `/`; a word that
//! matches nothing is passed as it is (and then checked as the path it is).
//!
//! Must never: miss a name the shell would produce. Where the match is uncertain it matches
//! more: every bracket expression matches any one character, and a component that could
//! match `.` or `..` (one starting with `.`, or with a bracket holding one, which POSIX
//! leaves open) is refused outright, since no folder listing shows those two.

use std::path::{Path, PathBuf};

use super::resolve::resolve;

/// More names than this in the folders a word's globs read: refused rather than read on.
const MAX_NAMES: usize = 4096;

/// Whether every name `pattern` (a word's pattern: quoted characters escaped with `\`) can
/// expand to from `cwd` lies inside `root`, and none but an absolute one starts with `-`
/// (`*` where a file is named `--files0-from=x` is that option).
pub(super) fn stays_inside(pattern: &str, root: &Path, cwd: &Path) -> bool {
    let parts: Vec<&str> = pattern.split('/').collect();
    if parts.iter().any(|p| is_glob(p) && may_match_dots(p)) {
        return false;
    }
    let absolute = pattern.starts_with('/');
    let first = parts.iter().position(|p| !p.is_empty() && *p != ".");
    let mut folders = vec![if absolute {
        PathBuf::from("/")
    } else {
        cwd.to_path_buf()
    }];
    let mut read = 0;
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() || *part == "." {
            continue;
        }
        let mut next = Vec::new();
        if !is_glob(part) {
            let name = unescape(part);
            for folder in &folders {
                match resolve(folder, Path::new(&name), root) {
                    Some(real) => next.push(real),
                    None => return false,
                }
            }
        } else {
            for folder in &folders {
                if !folder.starts_with(root) {
                    return false;
                }
                let Ok(entries) = std::fs::read_dir(folder) else {
                    continue;
                };
                for entry in entries.flatten() {
                    read += 1;
                    if read > MAX_NAMES {
                        return false;
                    }
                    let name = entry.file_name();
                    let bytes = name.as_encoded_bytes();
                    if bytes.starts_with(b".") || !name.to_str().is_none_or(|n| matches(part, n)) {
                        continue;
                    }
                    if !absolute && Some(i) == first && bytes.starts_with(b"-") {
                        return false;
                    }
                    match resolve(folder, Path::new(&name), root) {
                        Some(real) => next.push(real),
                        None => return false,
                    }
                }
            }
            if next.is_empty() {
                // Nothing matches: the word is passed as it is.
                return true;
            }
        }
        folders = next;
    }
    folders.iter().all(|f| f.starts_with(root))
}

/// Whether a glob component may match `.` and `..`, which no folder listing shows: it
/// starts with a literal `.`, or with a bracket expression that holds one (POSIX leaves that
/// open; dash says no).
fn may_match_dots(part: &str) -> bool {
    if part.starts_with('.') || part.starts_with("\\.") {
        return true;
    }
    let Some(rest) = part.strip_prefix('[') else {
        return false;
    };
    let chars: Vec<char> = rest.chars().collect();
    let mut j = 0;
    if matches!(chars.first(), Some('!' | '^')) {
        j += 1;
    }
    if chars.get(j) == Some(&']') {
        j += 1;
    }
    // No closing `]`: the `[` is a plain character.
    chars[j.min(chars.len())..]
        .iter()
        .position(|c| *c == ']')
        .is_some_and(|end| chars[..j + end].contains(&'.'))
}

/// An unescaped `*`, `?` or `[`.
fn is_glob(part: &str) -> bool {
    let mut escaped = false;
    for c in part.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '*' | '?' | '[' => return true,
            _ => {}
        }
    }
    false
}

fn unescape(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    let mut escaped = false;
    for c in part.chars() {
        if c == '\\' && !escaped {
            escaped = true;
        } else {
            out.push(c);
            escaped = false;
        }
    }
    out
}

/// One pattern token: a literal character, `?` or a bracket expression (any one
/// character), or `*`.
#[derive(Clone, Copy, PartialEq)]
enum Token {
    Char(char),
    One,
    Any,
}

fn tokens(part: &str) -> Vec<Token> {
    let chars: Vec<char> = part.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' if i + 1 < chars.len() => {
                out.push(Token::Char(chars[i + 1]));
                i += 1;
            }
            '*' => out.push(Token::Any),
            '?' => out.push(Token::One),
            '[' => {
                // `[!]…]`: a `]` right after the opening (and `!`/`^`) is a member.
                let mut j = i + 1;
                if matches!(chars.get(j), Some('!' | '^')) {
                    j += 1;
                }
                if chars.get(j) == Some(&']') {
                    j += 1;
                }
                match chars[j.min(chars.len())..].iter().position(|c| *c == ']') {
                    Some(end) => {
                        out.push(Token::One);
                        i = j + end;
                    }
                    None => out.push(Token::Char('[')),
                }
            }
            c => out.push(Token::Char(c)),
        }
        i += 1;
    }
    out
}

/// Whether `name` matches the component `part`, brackets taken as any one character.
fn matches(part: &str, name: &str) -> bool {
    let pattern = tokens(part);
    let name: Vec<char> = name.chars().collect();
    // The classic two-pointer match, backtracking to the last `*`.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(Token::Any) => {
                star = Some((p, n));
                p += 1;
            }
            Some(Token::One) => {
                p += 1;
                n += 1;
            }
            Some(Token::Char(c)) if *c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|t| *t == Token::Any)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_match_as_dash_matches_them() {
        for (part, name, want) in [
            ("*.rs", "main.rs", true),
            ("*.rs", "main.rsx", false),
            ("a?c", "abc", true),
            ("[ab]*", "zed", true),
            ("[]x]", "q", true),
            ("a[", "a[", true),
            ("a\\*", "a*", true),
            ("a\\*", "ab", false),
            ("*a*b", "xxaxxb", true),
            ("*a*b", "xxaxxbc", false),
        ] {
            assert_eq!(matches(part, name), want, "{part} {name}");
        }
    }

    #[test]
    fn a_word_is_inside_when_every_name_it_can_become_is() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().canonicalize().unwrap();
        let ws = top.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("sub/a.txt"), "").unwrap();
        std::fs::write(top.join("secret"), "").unwrap();
        let ok = |p: &str| stays_inside(p, &ws, &ws);
        assert!(ok("sub/*"));
        assert!(ok("*.nothing"), "matches nothing: passed as it is");
        assert!(ok("s*/../sub/*.txt"));
        assert!(!ok(".*"), "`.*` is `. ..`");
        assert!(!ok("sub/.?"));
        assert!(!ok("[.]*"));
        assert!(
            !ok("sub/[a.]*"),
            "POSIX leaves open whether a listed `.` matches a leading one"
        );
        assert!(ok("sub/[ab].txt"));
        assert!(!ok("../*"));
        assert!(!ok("/*"));
        assert!(!ok(&format!("{}/*", top.display())));
        std::os::unix::fs::symlink(top.join("secret"), ws.join("link")).unwrap();
        assert!(!ok("l*"));
        assert!(ok("sub/*"), "the link is not among sub/*");
        std::fs::write(ws.join("--files0-from=x"), "").unwrap();
        assert!(!ok("*=x"), "a name that is an option");
        assert!(ok("sub/*=x"));
    }
}
