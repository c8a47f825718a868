//! The task block's text: where the ```` ```json ```` block under `## Tasks` is in
//! `HEARTBEAT.md`, what it holds (`ok | corrupted | empty`, seed 003 §11.4), and the file with
//! the block replaced, stripped or split from the free-text checks. Pure: no file, no lock
//! ([`super::store`] does the reading and writing).
//!
//! Must never: drop a task it cannot read (it is kept verbatim), or change a byte of the text
//! around the block.

use serde_json::{Map, Value};

use super::model::Routine;

/// The schema version the block is written with.
pub const SCHEMA_VERSION: u64 = 2;

/// One task of the block: its text as found, and the routine if it could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub raw: Value,
    pub routine: Result<Routine, String>,
}

impl Entry {
    pub fn new(routine: Routine) -> Self {
        Self {
            raw: serde_json::to_value(&routine).unwrap_or(Value::Null),
            routine: Ok(routine),
        }
    }

    /// The id, also for an entry that could not be read.
    pub fn id(&self) -> Option<&str> {
        match &self.routine {
            Ok(r) => Some(&r.id),
            Err(_) => self.raw.get("id").and_then(Value::as_str),
        }
    }
}

/// What the block held when the file was read.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// No task block.
    Empty,
    Corrupted(String),
    Ok {
        entries: Vec<Entry>,
        /// Top-level fields besides `version` and `tasks`, kept.
        extra: Map<String, Value>,
    },
}

impl Parsed {
    pub fn entries(&self) -> &[Entry] {
        match self {
            Parsed::Ok { entries, .. } => entries,
            _ => &[],
        }
    }
}

/// Where the block's contents are in the text (byte offsets), or why it is broken.
pub(super) fn find_block(text: &str) -> Result<Option<(usize, usize)>, String> {
    let mut offset = 0;
    let mut in_tasks = false;
    let mut open: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        match open {
            Some(start) if t == "```" => return Ok(Some((start, offset))),
            Some(_) => {}
            None if t.starts_with('#') => {
                let title = t.trim_start_matches('#').trim();
                in_tasks = title.eq_ignore_ascii_case("tasks");
            }
            None if in_tasks && t.to_ascii_lowercase().starts_with("```json") => open = Some(offset + line.len()),
            None => {}
        }
        offset += line.len();
    }
    match open {
        Some(_) => Err("the ```json block under ## Tasks has no closing ```".into()),
        None => Ok(None),
    }
}

/// Whether `before` and `after` hold the same task block (as JSON values, so layout does not
/// matter): what the file tools check before they write `HEARTBEAT.md`, since routines are
/// changed only through the routine tools, which check schedules, the limit and duplicates,
/// and announce what the agent added.
pub fn same_tasks(before: &str, after: &str) -> bool {
    let block = |text: &str| -> Result<Option<Value>, String> {
        match find_block(text)? {
            Some((start, end)) => serde_json::from_str(&text[start..end])
                .map(Some)
                .map_err(|e| e.to_string()),
            None => Ok(None),
        }
    };
    match (block(before), block(after)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Parses `HEARTBEAT.md`'s text (seed 003 §11.4 `parse_heartbeat_md`).
pub fn parse(text: &str) -> Parsed {
    let (start, end) = match find_block(text) {
        Ok(Some(range)) => range,
        Ok(None) => return Parsed::Empty,
        Err(e) => return Parsed::Corrupted(e),
    };
    let doc: Value = match serde_json::from_str(&text[start..end]) {
        Ok(v) => v,
        Err(e) => {
            let line = text[..start].lines().count() + e.line();
            return Parsed::Corrupted(format!("invalid JSON at line {line}, column {}: {e}", e.column()));
        }
    };
    let Value::Object(mut doc) = doc else {
        return Parsed::Corrupted("the block must be an object like {\"version\": 2, \"tasks\": [...]}".into());
    };
    let tasks = match doc.remove("tasks") {
        Some(Value::Array(t)) => t,
        None | Some(Value::Null) => vec![],
        Some(_) => return Parsed::Corrupted("\"tasks\" must be a list".into()),
    };
    doc.remove("version");
    let mut seen = std::collections::HashSet::new();
    let entries = tasks
        .into_iter()
        .enumerate()
        .map(|(i, raw)| {
            let routine = serde_json::from_value::<Routine>(raw.clone())
                .map_err(|e| format!("task {} cannot be read: {e}", i + 1))
                .and_then(|r| {
                    if r.id.trim().is_empty() {
                        Err(format!("task {} has an empty id", i + 1))
                    } else if !seen.insert(r.id.clone()) {
                        Err(format!("task {} repeats the id \"{}\"", i + 1, r.id))
                    } else {
                        Ok(r)
                    }
                });
            Entry { raw, routine }
        })
        .collect();
    Parsed::Ok { entries, extra: doc }
}

/// The block's JSON for `entries`: readable ones as they are now, unreadable ones verbatim.
/// Serialised from structs, not a `Value`, so fields keep their schema order for people.
pub(super) fn block_json(entries: &[Entry], extra: &Map<String, Value>) -> String {
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum Task<'a> {
        Read(&'a Routine),
        Raw(&'a Value),
    }
    #[derive(serde::Serialize)]
    struct Doc<'a> {
        version: u64,
        tasks: Vec<Task<'a>>,
        #[serde(flatten)]
        extra: &'a Map<String, Value>,
    }
    let doc = Doc {
        version: SCHEMA_VERSION,
        tasks: entries
            .iter()
            .map(|e| match &e.routine {
                Ok(r) => Task::Read(r),
                Err(_) => Task::Raw(&e.raw),
            })
            .collect(),
        extra,
    };
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// `text` with the block's contents replaced (or a `## Tasks` block appended).
pub fn render(text: &str, entries: &[Entry], extra: &Map<String, Value>) -> String {
    let json = block_json(entries, extra);
    match find_block(text) {
        Ok(Some((start, end))) => format!("{}{json}{}", &text[..start], &text[end..]),
        _ => {
            let mut out = text.to_string();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str("## Tasks\n\n<!-- Routines: edit with care, or ask Vigil. Times are ISO-8601. -->\n```json\n");
            out.push_str(&json);
            out.push_str("```\n");
            out
        }
    }
}

/// `text` without the task block, for the heartbeat's copy of the file (the block's due
/// tasks reach the model as `## Due Tasks` instead) and its effectively-empty rule.
pub fn strip_block(text: &str) -> String {
    match find_block(text) {
        Ok(Some((start, end))) => {
            // Cut from the opening fence line to the closing fence line.
            let open = text[..start].trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
            let close_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
            format!("{}{}", &text[..open], &text[close_end..])
        }
        _ => text.to_string(),
    }
}

/// Splits the file into the free-text checks and the routines' section (from its `## Tasks`
/// heading to the block's closing fence), or says why the section cannot be found.
pub fn split_checks(text: &str) -> Result<(String, Option<&str>), String> {
    let Some((start, end)) = find_block(text)? else {
        return Ok((text.to_string(), None));
    };
    // The section starts at the last heading before the block (the one `find_block` took).
    let mut heading = 0;
    let mut offset = 0;
    for line in text[..start].split_inclusive('\n') {
        if line.trim_start().starts_with('#') {
            heading = offset;
        }
        offset += line.len();
    }
    let close_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
    let checks = format!("{}{}", &text[..heading], &text[close_end..]);
    Ok((checks, Some(&text[heading..close_end])))
}

/// The file with `checks` as its free text and `section` (the routines) after it.
pub(super) fn join_checks(checks: &str, section: Option<&str>) -> String {
    let mut out = checks.trim_end().to_string();
    if let Some(section) = section {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(section.trim_end());
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}
