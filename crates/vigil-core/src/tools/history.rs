//! `search_history` and `read_history`: the agent's way into every past conversation, job
//! and heartbeat run, through the index [`crate::history`] keeps. Both only read (no
//! approval, run side by side with other reads); searches leave out heartbeat runs when the
//! user's setting says so.

use serde::Deserialize;
use serde_json::json;

use super::{blocking, parse_args, Tool, ToolContext, ToolOutput};
use crate::history::query::{MARK_END, MARK_START};
use crate::history::{History, Kind, Query};
use crate::provider::ToolSpec;

const DEFAULT_RESULTS: usize = 10;
const MAX_RESULTS: usize = 50;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    #[serde(default)]
    conversation: Option<String>,
    #[serde(default)]
    kind: Option<Kind>,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// The built-in `search_history` tool.
pub struct SearchHistoryTool {
    history: History,
}

impl SearchHistoryTool {
    pub fn new(history: History) -> Self {
        Self { history }
    }
}

#[async_trait::async_trait]
impl Tool for SearchHistoryTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "search_history".into(),
            description: "Search every past conversation, scheduled job run and heartbeat run \
                for messages containing all the given words (each matched as a word start, \
                case-insensitive). Results are ranked by relevance, recent ones first at equal \
                relevance, each with its conversation, time and message id; read the messages \
                around one with `read_history`. Use it to find what was said or done before: \
                a command that worked, a figure a check reported, a decision."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to find, e.g. `disk usage`."},
                    "conversation": {"type": "string", "description": "Only this conversation (its id)."},
                    "kind": {"type": "string", "enum": ["conversation", "job", "heartbeat"], "description": "Only this kind of run."},
                    "since": {"type": "string", "description": "Only messages on or after this date (YYYY-MM-DD, UTC) or time (RFC 3339)."},
                    "until": {"type": "string", "description": "Only messages before this date (YYYY-MM-DD, UTC: that day excluded) or time (RFC 3339)."},
                    "limit": {"type": "integer", "description": "At most this many results (default 10, at most 50)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        }
    }

    fn changes_things(&self, _input: &serde_json::Value) -> bool {
        false
    }

    async fn run(&self, input: serde_json::Value, _ctx: &ToolContext) -> ToolOutput {
        let args: SearchArgs = match parse_args(&self.spec(), input) {
            Ok(a) => a,
            Err(out) => return out,
        };
        let since_ms = match args.since.as_deref().map(parse_time).transpose() {
            Ok(t) => t,
            Err(e) => return ToolOutput::error(format!("`since`: {e}")),
        };
        let until_ms = match args.until.as_deref().map(parse_time).transpose() {
            Ok(t) => t,
            Err(e) => return ToolOutput::error(format!("`until`: {e}")),
        };
        let query = Query {
            text: args.query.clone(),
            session: args.conversation,
            kinds: args.kind.into_iter().collect(),
            since_ms,
            until_ms,
            limit: args.limit.unwrap_or(DEFAULT_RESULTS).clamp(1, MAX_RESULTS),
        };
        let history = self.history.clone();
        blocking("search_history", move || match history.search_for_agent(&query) {
            Ok(hits) if hits.is_empty() => ToolOutput::ok(format!(
                "No message matches \"{}\" (every word must appear, as a word or a word's start).",
                args.query
            )),
            Ok(hits) => {
                let mut out = format!("{} result(s) for \"{}\", best first:\n", hits.len(), args.query);
                for (n, h) in hits.iter().enumerate() {
                    let title = if h.title.is_empty() {
                        String::new()
                    } else {
                        format!(" \"{}\"", h.title)
                    };
                    out.push_str(&format!(
                        "{}. {}{title} (conversation {}), {}, {}, message {}:\n   {}\n",
                        n + 1,
                        h.kind.as_str(),
                        h.session,
                        when(h.ts),
                        h.role,
                        h.message_id,
                        marked(&h.snippet)
                    ));
                }
                out.push_str("Read around a result: read_history with its conversation and message id.");
                ToolOutput::ok(out)
            }
            Err(e) => ToolOutput::error(e.to_string()),
        })
        .await
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    conversation: String,
    message_id: String,
    #[serde(default)]
    before: Option<u64>,
    #[serde(default)]
    after: Option<u64>,
}

/// The built-in `read_history` tool.
pub struct ReadHistoryTool {
    history: History,
}

impl ReadHistoryTool {
    pub fn new(history: History) -> Self {
        Self { history }
    }
}

#[async_trait::async_trait]
impl Tool for ReadHistoryTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_history".into(),
            description: "Read the messages around one that `search_history` found: give its \
                conversation and message id; the message itself is marked with `>>`. Tool \
                results are shown up to 4 000 characters each."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "conversation": {"type": "string", "description": "The conversation id from the search result."},
                    "message_id": {"type": "string", "description": "The message id from the search result."},
                    "before": {"type": "integer", "description": "Messages before it (default 3, at most 50)."},
                    "after": {"type": "integer", "description": "Messages after it (default 3, at most 50)."}
                },
                "required": ["conversation", "message_id"],
                "additionalProperties": false
            }),
        }
    }

    fn changes_things(&self, _input: &serde_json::Value) -> bool {
        false
    }

    async fn run(&self, input: serde_json::Value, _ctx: &ToolContext) -> ToolOutput {
        let args: ReadArgs = match parse_args(&self.spec(), input) {
            Ok(a) => a,
            Err(out) => return out,
        };
        let history = self.history.clone();
        blocking("read_history", move || {
            let (before, after) = (args.before.unwrap_or(3), args.after.unwrap_or(3));
            match history.around(&args.conversation, &args.message_id, before, after, true) {
                Ok(Some(messages)) => {
                    let mut out = format!("Conversation {}:\n", args.conversation);
                    for m in messages {
                        let mark = if m.hit { ">> " } else { "   " };
                        out.push_str(&format!(
                            "{mark}[{}] {} {} (message {}):\n{}\n",
                            m.seq,
                            when(m.ts),
                            m.role,
                            m.message_id,
                            indent(&m.text)
                        ));
                    }
                    ToolOutput::ok(out)
                }
                Ok(None) => ToolOutput::error(format!(
                    "No message {} in conversation {}: use an id and conversation exactly as `search_history` gave them.",
                    args.message_id, args.conversation
                )),
                Err(e) => ToolOutput::error(e.to_string()),
            }
        })
        .await
    }
}

/// A date (`2026-11-20`, midnight UTC) or an RFC 3339 time, in ms since the epoch.
fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(t.timestamp_millis());
    }
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc().timestamp_millis())
        .map_err(|_| format!("\"{s}\" is neither a date like 2026-11-20 nor a time like 2026-11-20T09:30:00Z"))
}

fn when(ts: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ts)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| ts.to_string())
}

/// A snippet with its matched words in `**bold**`, on one line.
fn marked(snippet: &str) -> String {
    snippet
        .replace([MARK_START, MARK_END], "**")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
