//! Machine checks in the `HEARTBEAT.md` checklist (issue 33, item 5): a list item that reads
//!
//! ```text
//! - check `df --output=pcent / | tail -1` when > 80: the disk is almost full
//! ```
//!
//! is a command and a condition, not a line for the model: the heartbeat leaves it out of the
//! checklist it reads (a checklist of only such lines is empty for the interval poll, so it
//! costs no tokens), and the routine watcher runs it on the heartbeat's interval in the
//! read-only sandbox, once approved as written, and tells the user when the condition turns
//! true (`when` as a routine check's: `nonzero` by default, `changed`, `> 80`…).
//!
//! Must never: take a line for a check that does not start with `check` and a command in
//! backticks (prose about checks stays prose for the model).

/// One check line of the checklist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecklistCheck {
    pub command: String,
    /// As written after `when` (empty: `nonzero`).
    pub when: String,
    /// What it means, after the colon (empty: none given).
    pub text: String,
}

/// The check a line holds, if it is one: `- check `command` [when condition][: text]`.
pub fn parse_line(line: &str) -> Option<ChecklistCheck> {
    let rest = line.trim().strip_prefix(['-', '*', '+'])?.trim_start();
    let rest = rest
        .strip_prefix("[ ]")
        .or_else(|| rest.strip_prefix("[x]"))
        .unwrap_or(rest)
        .trim_start();
    let rest = rest.strip_prefix("check")?;
    let rest = rest.strip_prefix(char::is_whitespace)?.trim_start();
    let rest = rest.strip_prefix('`')?;
    let end = rest.find('`')?;
    let command = rest[..end].trim().to_string();
    if command.is_empty() {
        return None;
    }
    let rest = rest[end + 1..].trim();
    let (condition, text) = match rest.split_once(':') {
        Some((c, t)) => (c.trim(), t.trim()),
        None => (rest, ""),
    };
    let when = match condition {
        "" => "",
        c => c.strip_prefix("when")?.trim(),
    };
    Some(ChecklistCheck {
        command,
        when: when.to_string(),
        text: text.to_string(),
    })
}

/// Every check line of `text`, in order.
pub fn checks(text: &str) -> Vec<ChecklistCheck> {
    text.lines().filter_map(parse_line).collect()
}

/// `text` without its check lines: what the model reads.
pub fn without_checks(text: &str) -> String {
    let kept: Vec<&str> = text.lines().filter(|l| parse_line(l).is_none()).collect();
    let mut out = kept.join("\n");
    if text.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_line_reads_as_a_user_writes_it_and_prose_stays_prose() {
        let c = parse_line("- check `df --output=pcent / | tail -1` when > 80: the disk is almost full").unwrap();
        assert_eq!(c.command, "df --output=pcent / | tail -1");
        assert_eq!(c.when, "> 80");
        assert_eq!(c.text, "the disk is almost full");
        let c = parse_line("* [ ] check `systemctl is-active nginx`").unwrap();
        assert_eq!(
            (c.command.as_str(), c.when.as_str(), c.text.as_str()),
            ("systemctl is-active nginx", "", "")
        );
        assert_eq!(
            parse_line("- check `curl -s localhost` when changed").unwrap().when,
            "changed"
        );
        for prose in [
            "- check the disk and tell me if it is full",
            "- checkout `main` and pull",
            "check `df`",
            "- check ``",
            "- check `df` if > 80",
        ] {
            assert_eq!(parse_line(prose), None, "{prose}");
        }
    }

    #[test]
    fn the_model_reads_the_checklist_without_its_check_lines() {
        let text = "# Checks\n- check `df --output=pcent / | tail -1` when > 80: disk\n- Look at my calendar\n";
        assert_eq!(without_checks(text), "# Checks\n- Look at my calendar\n");
        assert_eq!(checks(text).len(), 1);
    }
}
