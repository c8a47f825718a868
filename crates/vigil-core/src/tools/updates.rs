//! The `updates` tool: opens one background update by the id the `## Background Updates`
//! context gives it (`agent/updates.rs`), in full: after a long absence most updates reach
//! the agent as one digest line each, and this is how it reads the one the user asks about.
//! Looks in the conversation's mailbox, then in its archive of updates already read
//! ([`crate::session::archive`]).
//!
//! Must never: change anything (the mailbox is acknowledged by the turn, not by a look).

use serde::Deserialize;
use serde_json::json;

use super::{parse_args, Tool, ToolContext, ToolOutput};
use crate::provider::ToolSpec;
use crate::session::archive::Found;
use crate::session::{MailboxEvent, MetaStore, PRIMARY_SESSION};

/// The tool's name, which the `## Background Updates` block tells the agent to call.
pub const UPDATES_TOOL: &str = "updates";

pub struct UpdatesTool {
    meta: MetaStore,
}

impl UpdatesTool {
    pub fn new(meta: MetaStore) -> Self {
        Self { meta }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
}

#[async_trait::async_trait]
impl Tool for UpdatesTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: UPDATES_TOOL.into(),
            description: "Read one background update in full (a routine's result, something the heartbeat found, a \
                          finished command): its summary, its whole detail, when it came and from where. `id` is the \
                          id the Background Updates context gives for it (a unique prefix of 8 or more characters \
                          will do)."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {"id": {"type": "string", "description": "The update's id."}},
                "required": ["id"],
                "additionalProperties": false,
            }),
        }
    }

    fn changes_things(&self, _input: &serde_json::Value) -> bool {
        false
    }

    async fn run(&self, input: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let args: Args = match parse_args(&self.spec(), input) {
            Ok(a) => a,
            Err(e) => return e,
        };
        // The heartbeat's calls are owned by the conversation it reports to.
        let session = if ctx.owner.is_empty() {
            PRIMARY_SESSION
        } else {
            &ctx.owner
        };
        let meta = self.meta.clone();
        let (session, id) = (session.to_string(), args.id.clone());
        let found = tokio::task::spawn_blocking(move || meta.find_update(&session, &id)).await;
        match found {
            Ok(Ok(Some(Found::Waiting(e)))) => {
                ToolOutput::ok(describe(&e, "waiting: this turn is the first to see it"))
            }
            Ok(Ok(Some(Found::Read(e)))) => ToolOutput::ok(describe(&e, "read by an earlier turn")),
            Ok(Ok(None)) => ToolOutput::error(format!(
                "No background update \"{}\" in this conversation (neither waiting nor among the ones read). Copy \
                 the id from the Background Updates context.",
                args.id.trim()
            )),
            Ok(Err(e)) => ToolOutput::error(format!("The updates could not be read: {e}.")),
            Err(e) => ToolOutput::error(format!("The updates could not be read: {e}.")),
        }
    }
}

fn describe(e: &MailboxEvent, status: &str) -> String {
    let kind = if e.event_type.is_empty() {
        "update"
    } else {
        &e.event_type
    };
    let priority = match e.priority {
        0 => "info",
        1 => "important",
        _ => "urgent",
    };
    let came = chrono::DateTime::from_timestamp_millis(e.created_at)
        .map(|t| t.with_timezone(&chrono::Local).format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_else(|| e.created_at.to_string());
    let mut out = format!(
        "Update {}\nKind: {kind} ({priority}), from {}\nCame: {came}\nStatus: {status}\nSummary: {}",
        e.event_id, e.source, e.summary
    );
    if let Some(run) = &e.run_id {
        out.push_str(&format!("\nRun: {run}"));
    }
    match e.detail.as_deref().filter(|d| !d.trim().is_empty()) {
        Some(detail) => {
            out.push_str("\nDetail:\n");
            out.push_str(detail.trim_end());
        }
        None => out.push_str("\nDetail: none (the summary is all of it)"),
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;

    #[tokio::test]
    async fn opens_an_update_by_its_id_while_waiting_and_after_it_was_read() {
        let dir = tempfile::tempdir().unwrap();
        let meta = MetaStore::open(dir.path(), Arc::new(ManualClock::new(1_000))).unwrap();
        let update = MailboxEvent {
            event_id: "6f1c2d3e-0000".into(),
            source: "job_backup".into(),
            summary: "Backup failed.".into(),
            detail: Some("rsync: connection refused\nexit 12".into()),
            created_at: 1_700_000_000_000,
            event_type: "job_completed".into(),
            priority: 2,
            ..Default::default()
        };
        meta.deposit(PRIMARY_SESSION, update).await.unwrap();
        let tool = UpdatesTool::new(meta.clone());
        let ctx = ToolContext::new(dir.path()).with_owner(PRIMARY_SESSION);
        let out = tool.run(json!({"id": "6f1c2d3e-0000"}), &ctx).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.contains("Status: waiting"), "{}", out.content);
        assert!(
            out.content.ends_with("Detail:\nrsync: connection refused\nexit 12"),
            "{}",
            out.content
        );
        assert!(
            out.content.contains("Kind: job_completed (urgent), from job_backup"),
            "{}",
            out.content
        );

        meta.prepare_drain(PRIMARY_SESSION).await.unwrap();
        meta.ack_drain(PRIMARY_SESSION, &["6f1c2d3e-0000".into()])
            .await
            .unwrap();
        let out = tool.run(json!({"id": "6f1c2d3e"}), &ctx).await;
        assert!(
            out.content.contains("Status: read by an earlier turn"),
            "{}",
            out.content
        );
        assert!(out.content.contains("exit 12"), "{}", out.content);

        let out = tool.run(json!({"id": "nothing"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("No background update \"nothing\""),
            "{}",
            out.content
        );
        assert!(!tool.changes_things(&json!({"id": "x"})));
    }
}
