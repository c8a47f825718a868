//! The one shape (issue 33, item 7) checked: a routine's `trigger`, `check` and `action` as
//! the routine tools, the `add_routine`/`update_routine` ops and the task block give them,
//! with an error that says what to write instead. And the check's condition, parsed.
//!
//! Must never: accept a trigger the watcher could not follow (a path leaving its folder, a
//! pattern that does not compile, a URL polled more often than once a minute).

use std::time::Duration;

use vigil_protocol::{Action, Check, Trigger};

/// Changes closer together than this are one fire, unless the trigger says.
pub const DEFAULT_DEBOUNCE_MS: u32 = 300;
/// The shortest interval a URL is looked at.
pub const MIN_URL_EVERY: Duration = Duration::from_secs(60);
/// The URL interval when the trigger gives none.
pub const DEFAULT_URL_EVERY: Duration = Duration::from_secs(5 * 60);
/// Longest check command (it is shown whole on the approval card).
pub const MAX_CHECK_CHARS: usize = 2000;
/// At most this many paths or globs per file trigger.
pub const MAX_PATHS: usize = 32;

/// What a check's output must show for the routine to act.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Condition {
    /// The command's exit code is not 0.
    Nonzero,
    /// The output differs from the last check's (the first check only remembers it).
    Changed,
    /// The first number in the output, compared with a bound.
    Compare(Cmp, f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Gt,
    Ge,
    Lt,
    Le,
    Eq,
    Ne,
}

impl Cmp {
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
        }
    }
}

/// `nonzero`, `changed`, or `> 80` (also `>=`, `<`, `<=`, `==`, `!=`).
pub fn parse_condition(when: &str) -> Result<Condition, String> {
    let w = when.trim();
    match w {
        "" | "nonzero" => return Ok(Condition::Nonzero),
        "changed" => return Ok(Condition::Changed),
        _ => {}
    }
    let ops = [
        (">=", Cmp::Ge),
        ("<=", Cmp::Le),
        ("==", Cmp::Eq),
        ("!=", Cmp::Ne),
        (">", Cmp::Gt),
        ("<", Cmp::Lt),
    ];
    for (text, cmp) in ops {
        if let Some(rest) = w.strip_prefix(text) {
            let bound: f64 = rest
                .trim()
                .trim_end_matches('%')
                .parse()
                .map_err(|_| format!("\"{w}\": the bound after {text} must be a number, like \"> 80\""))?;
            if !bound.is_finite() {
                return Err(format!("\"{w}\": the bound must be a finite number"));
            }
            return Ok(Condition::Compare(cmp, bound));
        }
    }
    Err(format!(
        "check.when \"{w}\" is not a condition; use \"nonzero\" (exit code not 0), \"changed\" (output differs from the last check) or a comparison of the first number in the output like \"> 80\""
    ))
}

/// `5m`, `1h` as a duration.
pub fn parse_every(every: &str) -> Result<Duration, String> {
    humantime::parse_duration(every.trim())
        .map_err(|e| format!("\"{every}\" is not an interval like \"5m\" or \"1h\": {e}"))
}

/// The trigger's JSON schema for the routine tools.
pub fn trigger_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "description": "What wakes the routine instead of a schedule (omit for a schedule). {\"kind\": \"file\", \"paths\": [\"notes/*.md\", \"logs/\"]}: files in the workspace created, changed or removed (one run per burst, with the paths and a diff). {\"kind\": \"url\", \"url\": \"https://…\", \"every\": \"5m\", \"when\": \"status\"|\"content\"} or with \"slower_than_ms\": 2000. {\"kind\": \"output\", \"process\": \"<process id>\", \"pattern\": \"ERROR|panicked\"}. {\"kind\": \"webhook\"}. A routine with a trigger has no schedule.",
        "properties": {
            "kind": {"type": "string", "enum": ["schedule", "file", "output", "url", "webhook"]},
            "paths": {"type": "array", "items": {"type": "string"}},
            "debounce_ms": {"type": "integer"},
            "process": {"type": "string"},
            "pattern": {"type": "string"},
            "url": {"type": "string"},
            "every": {"type": "string"},
            "when": {"type": "string", "enum": ["status", "content"]},
            "slower_than_ms": {"type": "integer"}
        },
        "required": ["kind"]
    })
}

/// Checks a trigger; `Err` names the field and what to write.
pub fn check_trigger(t: &Trigger) -> Result<(), (&'static str, String)> {
    let bad = |m: String| Err(("trigger", m));
    match t {
        Trigger::Schedule | Trigger::Webhook => Ok(()),
        Trigger::File { paths, debounce_ms } => {
            if paths.is_empty() || paths.iter().all(|p| p.trim().is_empty()) {
                return bad(
                    "a file trigger needs \"paths\": files or globs in the workspace, like [\"notes/*.md\"]".into(),
                );
            }
            if paths.len() > MAX_PATHS {
                return bad(format!("a file trigger watches at most {MAX_PATHS} paths"));
            }
            for p in paths {
                if p.split(['/', '\\']).any(|c| c == "..") {
                    return bad(format!(
                        "\"{p}\" leaves its folder (..); give a path inside the workspace or a folder you added"
                    ));
                }
                glob::Pattern::new(p).map_err(|e| ("trigger", format!("\"{p}\" is not a valid glob: {e}")))?;
            }
            if debounce_ms.is_some_and(|d| !(50..=60_000).contains(&d)) {
                return bad("debounce_ms must be between 50 and 60000".into());
            }
            Ok(())
        }
        Trigger::Output { process, pattern } => {
            if process.trim().is_empty() {
                return bad(
                    "an output trigger needs \"process\": a running process's id, or the command to start".into(),
                );
            }
            regex::RegexBuilder::new(pattern)
                .size_limit(1 << 20)
                .build()
                .map_err(|e| ("trigger", format!("the pattern is not a valid regular expression: {e}")))?;
            Ok(())
        }
        Trigger::Url {
            url,
            every,
            slower_than_ms,
            ..
        } => {
            let parsed =
                reqwest::Url::parse(url.trim()).map_err(|e| ("trigger", format!("\"{url}\" is not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https") {
                return bad(format!("\"{url}\": only http and https URLs can be watched"));
            }
            if let Some(every) = every {
                let d = parse_every(every).map_err(|m| ("trigger", m))?;
                if d < MIN_URL_EVERY {
                    return bad(format!(
                        "\"every\": {every} is too often; a URL is looked at every minute at most"
                    ));
                }
            }
            if *slower_than_ms == Some(0) {
                return bad("slower_than_ms must be more than 0".into());
            }
            Ok(())
        }
    }
}

/// Checks a check; `Err` names the field and what to write.
pub fn check_check(c: &Check) -> Result<(), (&'static str, String)> {
    if c.command.trim().is_empty() {
        return Err(("check", "the check needs a command".into()));
    }
    if c.command.chars().count() > MAX_CHECK_CHARS {
        return Err((
            "check",
            format!("the check's command is longer than {MAX_CHECK_CHARS} characters"),
        ));
    }
    parse_condition(&c.when).map_err(|m| ("check", m))?;
    Ok(())
}

/// A trigger, check and action together, with the rest of the routine: a routine that is
/// woken by a trigger has no schedule, and a deterministic kind runs on the clock alone.
pub fn check_all(
    trigger: Option<&Trigger>,
    check: Option<&Check>,
    action: Option<Action>,
    schedule: Option<&str>,
    kind: Option<&str>,
) -> Result<(), (&'static str, String)> {
    if let Some(t) = trigger {
        check_trigger(t)?;
    }
    if let Some(c) = check {
        check_check(c)?;
    }
    let triggered = trigger.is_some_and(|t| !matches!(t, Trigger::Schedule));
    if triggered && schedule.is_some_and(|s| !s.trim().is_empty()) {
        return Err((
            "schedule",
            "a routine with a trigger other than the clock takes no schedule; leave schedule out (a URL trigger has its own \"every\")".into(),
        ));
    }
    if kind.is_some() && (triggered || check.is_some() || action.is_some()) {
        return Err((
            "kind",
            "a deterministic kind runs on its schedule alone; use action \"notify\" with a trigger or check instead"
                .into(),
        ));
    }
    Ok(())
}

/// A routine's trigger, check and action, each `None` when it has none.
pub type Merged = (Option<Trigger>, Option<Check>, Option<Action>);

/// The trigger, check and action a routine has after `draft` (a new routine: `current`
/// is `None`), normalised (`schedule` and `agent` are not written) and checked with the
/// schedule and kind it will have.
pub fn merged(
    current: Option<&crate::routines::Routine>,
    draft: &vigil_protocol::RoutineDraft,
) -> Result<Merged, (&'static str, String)> {
    let trigger = match &draft.trigger {
        Some(Trigger::Schedule) => None,
        Some(t) => Some(t.clone()),
        None => current.and_then(|r| r.trigger.clone()),
    };
    let check = match &draft.check {
        Some(c) if c.command.trim().is_empty() => None,
        Some(c) => Some(Check {
            command: c.command.trim().to_string(),
            when: c.when.trim().to_string(),
        }),
        None => current.and_then(|r| r.check.clone()),
    };
    let action = match draft.action {
        Some(Action::Agent) => None,
        Some(a) => Some(a),
        None => current.and_then(|r| r.action),
    };
    let schedule = match &draft.schedule {
        Some(s) => Some(s.as_str()),
        None => current.and_then(|r| r.schedule_text()),
    };
    let kind = match &draft.kind {
        Some(k) => Some(k.as_str()).filter(|k| !k.is_empty()),
        None => current.and_then(|r| r.kind.as_deref()),
    };
    check_all(trigger.as_ref(), check.as_ref(), action, schedule, kind)?;
    Ok((trigger, check, action))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_read_as_a_user_writes_them() {
        assert_eq!(parse_condition("nonzero"), Ok(Condition::Nonzero));
        assert_eq!(parse_condition("changed"), Ok(Condition::Changed));
        assert_eq!(parse_condition("> 80"), Ok(Condition::Compare(Cmp::Gt, 80.0)));
        assert_eq!(parse_condition(">=80%"), Ok(Condition::Compare(Cmp::Ge, 80.0)));
        assert!(parse_condition("more than 80").unwrap_err().contains("nonzero"));
        assert!(parse_condition("> lots").unwrap_err().contains("must be a number"));
    }

    #[test]
    fn a_trigger_that_could_not_be_followed_is_refused_with_what_to_write() {
        let file = |p: &str| Trigger::File {
            paths: vec![p.into()],
            debounce_ms: None,
        };
        assert!(check_trigger(&file("notes/*.md")).is_ok());
        assert!(check_trigger(&file("../secrets/*"))
            .unwrap_err()
            .1
            .contains("leaves its folder"));
        let url = |u: &str, every: &str| Trigger::Url {
            url: u.into(),
            every: Some(every.into()),
            when: None,
            slower_than_ms: None,
        };
        assert!(check_trigger(&url("https://example.com", "5m")).is_ok());
        assert!(check_trigger(&url("https://example.com", "10s"))
            .unwrap_err()
            .1
            .contains("every minute at most"));
        assert!(check_trigger(&url("file:///etc/passwd", "5m"))
            .unwrap_err()
            .1
            .contains("only http"));
        let out = Trigger::Output {
            process: "p1".into(),
            pattern: "ERROR(".into(),
        };
        assert!(check_trigger(&out).unwrap_err().1.contains("regular expression"));
        let err = check_all(Some(&file("a.txt")), None, None, Some("5m"), None).unwrap_err();
        assert_eq!(err.0, "schedule");
    }
}
