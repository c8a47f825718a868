//! # shell
//!
//! Reads a command line the way bash will, before any approval rule is consulted: with
//! tree-sitter's bash grammar, into the simple commands it runs (program and literal
//! arguments), joined only by `&&`, `||`, `;`, newlines and pipes. Everything else a line can
//! do — substitutions, expansions, redirection to a file, here-docs, subshells and groups,
//! `VAR=value cmd`, backgrounding with `&`, escapes whose meaning depends on bash's quoting
//! rules, anything the parser cannot read — makes the line [`Analysis::Unprovable`], with a
//! reason the approval card and the agent are shown. A word with an unquoted `*`, `?` or `[`
//! is kept with its pattern: the names it expands to are [`Reach`]'s to check. [`classify`]
//! says which of those simple commands are harmless by themselves ([`read_only`]) and which
//! may never be remembered with "always" ([`never_remembered`]).
//!
//! Must never: call a line harmless because it failed to see part of it. The walk accepts a
//! closed list of node kinds and treats every other kind as unprovable, so a construct the
//! grammar learns later asks instead of passing.

mod glob;
mod lists;
mod options;
mod reach;
mod resolve;
mod specs;

pub use lists::{never_remembered, read_only};
pub use reach::Reach;

/// One command bash would run, its words unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    /// Program first; never empty.
    pub words: Vec<String>,
    /// For each word, the pattern the shell matches file names against when the word has an
    /// unquoted `*`, `?` or `[` (quoted characters escaped with `\`), else `None`: such a
    /// word becomes the names it matches, which [`Reach`] must see, not the word.
    patterns: Vec<Option<String>>,
}

impl SimpleCommand {
    pub fn program(&self) -> &str {
        &self.words[0]
    }

    /// The first argument when it is a plain word (a subcommand such as `status`), not a flag.
    pub fn subcommand(&self) -> Option<&str> {
        self.words.get(1).map(String::as_str).filter(|w| is_plain_word(w))
    }

    /// As the card shows it: the words joined by spaces.
    pub fn display(&self) -> String {
        self.words.join(" ")
    }
}

/// What a command line runs, as far as can be proven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Analysis {
    /// Only these simple commands, joined by `&&`, `||`, `;`, newlines or pipes.
    Commands(Vec<SimpleCommand>),
    /// Something in the line could do more than its simple commands say.
    Unprovable(String),
}

/// Parses `line`; see the module docs for what is accepted.
pub fn analyze(line: &str) -> Analysis {
    if let Some(c) = line.chars().find(|c| is_invisible(*c)) {
        return Analysis::Unprovable(format!("it contains an invisible character (U+{:04X})", c as u32));
    }
    let mut parser = tree_sitter::Parser::new();
    if parser.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
        return Analysis::Unprovable("the shell grammar could not be loaded".into());
    }
    let Some(tree) = parser.parse(line, None) else {
        return Analysis::Unprovable("the shell parser could not read it".into());
    };
    let root = tree.root_node();
    if root.has_error() {
        return Analysis::Unprovable("the shell parser could not read all of it".into());
    }
    let mut walk = Walk {
        src: line.as_bytes(),
        commands: Vec::new(),
    };
    match walk.list(root) {
        Ok(()) if walk.commands.is_empty() => Analysis::Unprovable("it runs no command".into()),
        Ok(()) => Analysis::Commands(walk.commands),
        Err(why) => Analysis::Unprovable(why),
    }
}

/// Zero-width, bidi-control and other invisible characters: what is shown would not be
/// what runs. Escaped for display by [`visible`].
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}'
        | '\u{FEFF}' | '\u{00AD}' | '\u{034F}' | '\u{180E}')
        || (c.is_control() && !matches!(c, '\n' | '\t'))
}

/// `text` with every invisible or control character (but newline and tab) shown as
/// `\u{XXXX}`, for an approval card that must show exactly what would run.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if is_invisible(c) {
            out.push_str(&format!("\\u{{{:04X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// A word with nothing for bash to interpret: letters, digits and `-_./:=@+,%`.
fn is_plain_word(w: &str) -> bool {
    !w.is_empty() && !w.starts_with('-') && w.chars().all(|c| c.is_alphanumeric() || "_./:=@+,%-".contains(c))
}

struct Walk<'a> {
    src: &'a [u8],
    commands: Vec<SimpleCommand>,
}

impl Walk<'_> {
    fn text(&self, node: tree_sitter::Node) -> &str {
        node.utf8_text(self.src).unwrap_or("")
    }

    /// `program`, `list` and `pipeline`: commands and the operators between them.
    fn list(&mut self, node: tree_sitter::Node) -> Result<(), String> {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "command" => self.command(child)?,
                "list" | "pipeline" => self.list(child)?,
                "redirected_statement" => self.redirected(child)?,
                "comment" | "&&" | "||" | ";" | "|" | "|&" | "\n" => {}
                "&" => return Err("it runs something in the background (`&`)".into()),
                other => return Err(unprovable(other)),
            }
        }
        Ok(())
    }

    /// A command with redirections: allowed only when each goes to `/dev/null` or another
    /// descriptor (`2>&1`), which write nothing anywhere. The grammar hangs `a && b 2>&1`'s
    /// redirect on the whole list; harmless on any body, so the body is walked as a list.
    fn redirected(&mut self, node: tree_sitter::Node) -> Result<(), String> {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "command" => self.command(child)?,
                "list" | "pipeline" => self.list(child)?,
                "file_redirect" => self.redirect(child)?,
                other => return Err(unprovable(other)),
            }
        }
        Ok(())
    }

    fn redirect(&self, node: tree_sitter::Node) -> Result<(), String> {
        let mut cursor = node.walk();
        let (mut op, mut target) = (String::new(), None);
        for child in node.children(&mut cursor) {
            match child.kind() {
                "file_descriptor" => {}
                "word" | "number" => target = Some(self.text(child).to_string()),
                k if !child.is_named() => op = k.to_string(),
                other => return Err(unprovable(other)),
            }
        }
        let target = target.unwrap_or_default();
        let harmless = match op.as_str() {
            ">" | ">>" | "&>" | "&>>" | ">|" => target == "/dev/null",
            ">&" | "<&" => target == "-" || target.chars().all(|c| c.is_ascii_digit()) && !target.is_empty(),
            _ => false,
        };
        if harmless {
            Ok(())
        } else {
            Err(format!(
                "it redirects `{}` (only `/dev/null` and `2>&1` are harmless)",
                self.text(node)
            ))
        }
    }

    fn command(&mut self, node: tree_sitter::Node) -> Result<(), String> {
        let mut cursor = node.walk();
        let mut parts = Vec::new();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "command_name" => {
                    let mut inner = child.walk();
                    for part in child.children(&mut inner) {
                        parts.push(self.word(part)?);
                    }
                }
                "variable_assignment" => {
                    return Err(format!("it sets `{}` for the command", self.text(child)));
                }
                "file_redirect" => self.redirect(child)?,
                _ => parts.push(self.word(child)?),
            }
        }
        if parts.is_empty() {
            return Err("it runs no command".into());
        }
        let (words, patterns) = parts.into_iter().map(|w| (w.text, w.glob.then_some(w.pattern))).unzip();
        self.commands.push(SimpleCommand { words, patterns });
        Ok(())
    }

    /// One argument's value as bash passes it, or why it cannot be known from the text.
    fn word(&self, node: tree_sitter::Node) -> Result<Word, String> {
        let text = self.text(node);
        match node.kind() {
            "word" | "number" => {
                // Backslashes and braces mean something to bash; a bare word with one
                // cannot be taken at face value (`g\it` is `git`). Globs and `~` are
                // judged where the names they reach are ([`Reach`]).
                if text.contains('\\') {
                    Err(format!("`{text}` relies on shell escapes"))
                } else if text.contains(['{', '}']) {
                    Err(format!("`{text}` may be a brace expansion"))
                } else {
                    Ok(Word::unquoted(text))
                }
            }
            "raw_string" => Ok(Word::quoted(text.trim_start_matches('\'').trim_end_matches('\''))),
            "string" => {
                let mut cursor = node.walk();
                let mut out = String::new();
                for part in node.children(&mut cursor) {
                    match part.kind() {
                        "string_content" => {
                            let t = self.text(part);
                            if t.contains('\\') {
                                return Err(format!("`{text}` relies on shell escapes"));
                            }
                            out.push_str(t);
                        }
                        "\"" => {}
                        other => return Err(unprovable(other)),
                    }
                }
                Ok(Word::quoted(&out))
            }
            "concatenation" => {
                let mut cursor = node.walk();
                let mut out = Word::quoted("");
                for part in node.children(&mut cursor) {
                    let part = self.word(part)?;
                    out.text.push_str(&part.text);
                    out.pattern.push_str(&part.pattern);
                    out.glob |= part.glob;
                }
                Ok(out)
            }
            other => Err(unprovable(other)),
        }
    }
}

/// A word as the program gets it (`text`), and as the shell matches it against file names.
struct Word {
    text: String,
    /// `text` with the characters that were quoted escaped, so only unquoted ones match.
    pattern: String,
    /// An unquoted `*`, `?` or `[`: the shell expands the word.
    glob: bool,
}

impl Word {
    fn unquoted(text: &str) -> Self {
        Self {
            text: text.into(),
            pattern: text.into(),
            glob: text.contains(['*', '?', '[']),
        }
    }

    fn quoted(text: &str) -> Self {
        let mut pattern = String::with_capacity(text.len());
        for c in text.chars() {
            if matches!(c, '*' | '?' | '[' | '\\') {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        Self {
            text: text.into(),
            pattern,
            glob: false,
        }
    }
}

/// Why a node kind the walk does not accept is not provable, in words for the card.
fn unprovable(kind: &str) -> String {
    let what = match kind {
        "command_substitution" => "a command substitution (`$(…)` or backticks)",
        "process_substitution" => "a process substitution (`<(…)`)",
        "simple_expansion" | "expansion" => "a variable expansion (`$…`)",
        "arithmetic_expansion" => "an arithmetic expansion",
        "subshell" => "a subshell (`( … )`)",
        "compound_statement" => "a group (`{ … }`)",
        "heredoc_redirect" | "heredoc_body" => "a here-document",
        "herestring_redirect" => "a here-string",
        "variable_assignment" => "a variable assignment",
        "function_definition" => "a function definition",
        "negated_command" => "a negated command (`!`)",
        "if_statement" | "while_statement" | "for_statement" | "c_style_for_statement" | "case_statement" => {
            "shell control flow"
        }
        "test_command" => "a test (`[[ … ]]`)",
        "ansi_c_string" => "an ANSI-C string (`$'…'`)",
        "translated_string" => "a translated string (`$\"…\"`)",
        "brace_expression" => "a brace expansion",
        "declaration_command" | "unset_command" => "a shell declaration",
        other => return format!("it uses shell syntax that cannot be checked (`{other}`)"),
    };
    format!("it uses {what}")
}

/// How each simple command of an analysed line stands against the remembered rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub command: SimpleCommand,
    /// Harmless by itself, or covered by a rule.
    pub covered: bool,
}

/// Marks each command covered when `covered_by_rule` says so or it is on the read-only list.
pub fn classify(commands: &[SimpleCommand], covered_by_rule: impl Fn(&SimpleCommand) -> bool) -> Vec<Part> {
    commands
        .iter()
        .map(|c| Part {
            covered: read_only(c) || covered_by_rule(c),
            command: c.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests;
