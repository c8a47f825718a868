//! The tool calls of one model response: in what order they run, and one call from its
//! start event to its `tool_result`.
//!
//! The order rule: calls that only read ([`crate::tools::Tool::changes_things`] says no:
//! `read`, `process` list/poll/log, `routine_list`, MCP tools their server marks read-only)
//! run concurrently with the reading calls next to them; a call that may change something
//! (every `exec`, `write`, `edit`, any other `process` action or routine change, an MCP
//! tool not marked read-only) runs alone, in the model's order, once every call before it
//! has finished, and the calls after it wait for it. The model writes a response's calls
//! as a sequence: `edit` twice in one file must both land, `mkdir build` must exist before
//! a write into `build/`; only calls that change nothing can run in any order and give the
//! same results. Results come back in call order whatever order the calls finished in.
//!
//! Must never: start a call that may change something while another call of the same
//! response is still running.

use futures_util::future::join_all;
use vigil_protocol::{ContentBlock, Event, Source};

use super::{effects, images, Turn};
use crate::provider::INVALID_ARGUMENTS;
use crate::tools::{truncate_head_tail, ToolContext, ToolOutput, ToolRegistry};

/// The result of a call in the last response a turn may make: the call is answered, so the
/// transcript's chain of tool uses and results stays whole, but never run.
pub const NOT_RUN: &str = "not run: the turn reached its round limit";

/// One tool call of a response: its id, the tool's name and the arguments.
pub(super) type Call = (String, String, serde_json::Value);

/// `calls` cut into steps that run one after another: each run of consecutive calls that
/// only read is one step (its calls run together), every other call a step of its own.
fn steps<'c>(calls: &'c [Call], tools: &ToolRegistry) -> Vec<&'c [Call]> {
    let mut steps = Vec::new();
    let mut start = 0;
    for (i, (_, name, input)) in calls.iter().enumerate() {
        if tools.changes_things(name, input) {
            if start < i {
                steps.push(&calls[start..i]);
            }
            steps.push(&calls[i..=i]);
            start = i + 1;
        }
    }
    if start < calls.len() {
        steps.push(&calls[start..]);
    }
    steps
}

impl Turn<'_> {
    /// Runs the calls of one response by the order rule (see the module head); results come
    /// back in call order, each its `tool_result` block followed by the images it returned.
    pub(super) async fn run_tools(&self, calls: &[Call]) -> Vec<Vec<ContentBlock>> {
        let mut results = Vec::with_capacity(calls.len());
        for step in steps(calls, &self.tools) {
            results.extend(join_all(step.iter().map(|call| self.run_call(call))).await);
        }
        results
    }

    /// Answers every call without running it ([`NOT_RUN`]): the calls of
    /// the last response a turn may make, whose results no request would carry. No start
    /// event, since nothing starts; the finish event closes each call's card.
    pub(super) fn not_run(&self, calls: &[Call]) -> Vec<Vec<ContentBlock>> {
        calls
            .iter()
            .map(|(id, name, _)| {
                let content = NOT_RUN.to_string();
                self.emitter.emit(
                    Source::Agent,
                    Event::ToolCallFinished {
                        call_id: id.clone(),
                        name: name.clone(),
                        content: content.clone(),
                        is_error: true,
                    },
                );
                vec![ContentBlock::ToolResult {
                    tool_use_id: id.clone(),
                    content,
                    is_error: true,
                }]
            })
            .collect()
    }

    /// One call, from its start event to its result blocks.
    async fn run_call(&self, (id, name, input): &Call) -> Vec<ContentBlock> {
        let limit = self.config.max_result_chars();
        self.emitter.emit(
            Source::Agent,
            Event::ToolCallStarted {
                call_id: id.clone(),
                name: name.clone(),
                input: input.clone(),
            },
        );
        let output = if let Some(raw) = input.get(INVALID_ARGUMENTS) {
            ToolOutput::error(format!(
                "The arguments of this `{name}` call were not a valid JSON object ({}). Received: {raw}. Call the tool again with a JSON object matching its schema.",
                input["_parse_error"].as_str().unwrap_or("unreadable")
            ))
        } else if self.cancel.is_cancelled() {
            ToolOutput::error("Cancelled.")
        } else {
            let gate = effects::gate_for_call(
                self.extras.effects.as_ref(),
                &self.tools,
                self.gate.clone(),
                self.workspace.root(),
                name,
                input,
            )
            .await;
            let (updates, mut live) = tokio::sync::mpsc::unbounded_channel();
            let ctx = ToolContext {
                workspace: self.workspace.root().to_path_buf(),
                cancel: self.cancel.clone(),
                updates: Some(updates),
                owner: self.process_owner.to_string(),
                session_type: crate::session::meta::type_from_id(self.session_id),
                gate,
                data_dir: self.data_dir.clone(),
                started: self.started.clone(),
                sandbox: self.sandbox.clone(),
                suggest_routines: self.extras.suggest_routines,
            };
            // Live output (throttled by the tool) goes out as it comes; any left when the
            // call ends is stale next to the result and is dropped.
            let mut call = std::pin::pin!(self.tools.execute(name, input.clone(), &ctx));
            loop {
                tokio::select! {
                    biased;
                    output = &mut call => break output,
                    Some(output) = live.recv() => self.emitter.emit(
                        Source::Agent,
                        Event::ToolCallUpdate { call_id: id.clone(), output },
                    ),
                }
            }
        };
        let mut content = truncate_head_tail(&output.content, limit);
        let returned_images = !output.images.is_empty();
        let (pictures, problems) = images::store_tool_images(self.store, self.session_id, output.images).await;
        for problem in &problems {
            content.push_str(&format!("\n\n(An image it returned could not be used: {problem})"));
        }
        // A call that was all about its images (a `read` of a PNG) failed if none arrived.
        let is_error = output.is_error || (returned_images && pictures.is_empty());
        self.emitter.emit(
            Source::Agent,
            Event::ToolCallFinished {
                call_id: id.clone(),
                name: name.clone(),
                content: content.clone(),
                is_error,
            },
        );
        let mut blocks = vec![ContentBlock::ToolResult {
            tool_use_id: id.clone(),
            content,
            is_error,
        }];
        blocks.extend(pictures);
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, name: &str, input: serde_json::Value) -> Call {
        (id.into(), name.into(), input)
    }

    #[test]
    fn reads_next_to_each_other_share_a_step_and_every_change_has_its_own() {
        let tools = ToolRegistry::with_builtins();
        let read = |id: &str| call(id, "read", json!({"path": "a"}));
        let edit = |id: &str| call(id, "edit", json!({"path": "a", "old_text": "x", "new_text": "y"}));
        let calls = vec![
            read("r1"),
            read("r2"),
            edit("e1"),
            edit("e2"),
            read("r3"),
            call("w", "write", json!({"path": "b", "content": ""})),
            read("r4"),
            read("r5"),
        ];
        let ids: Vec<Vec<&str>> = steps(&calls, &tools)
            .into_iter()
            .map(|step| step.iter().map(|(id, _, _)| id.as_str()).collect())
            .collect();
        assert_eq!(
            ids,
            [
                vec!["r1", "r2"],
                vec!["e1"],
                vec!["e2"],
                vec!["r3"],
                vec!["w"],
                vec!["r4", "r5"]
            ]
        );
        assert!(steps(&[], &tools).is_empty());
    }
}
