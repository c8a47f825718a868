//! The turn policy: limits that end a runaway turn with a reason the user can read.

use std::collections::HashMap;

/// Limits and sizes for turns. Defaults follow the seeds (`max_tool_rounds` 30).
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// Model requests in one turn. The tool calls of the last one's response are not run
    /// (no request would carry their results): each gets [`super::calls::NOT_RUN`] as its
    /// result.
    pub max_tool_rounds: u32,
    /// Tool calls in one turn, all rounds together.
    pub max_tool_calls: u32,
    /// The same call (tool + arguments) failing this many times ends the turn.
    pub max_repeated_failures: u32,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Compact when the estimated request passes this share of the window.
    pub compact_threshold: f64,
    /// Share of the window kept verbatim after compaction.
    pub keep_ratio: f64,
}

impl Default for AgentConfig {
    fn default() -> Self {
        Self {
            max_tool_rounds: 30,
            max_tool_calls: 120,
            max_repeated_failures: 3,
            context_window: 128_000,
            compact_threshold: 0.8,
            keep_ratio: 0.3,
        }
    }
}

impl AgentConfig {
    /// Longest tool result given to the model: about 30 % of the window (≈ 4 chars a token),
    /// so one huge output cannot crowd out the conversation.
    pub fn max_result_chars(&self) -> usize {
        ((self.context_window as f64 * 0.3 * 4.0) as usize).clamp(4_000, 400_000)
    }
}

/// Counts for one turn.
pub(super) struct Policy {
    config: AgentConfig,
    rounds: u32,
    calls: u32,
    failures: HashMap<String, u32>,
}

impl Policy {
    pub fn new(config: &AgentConfig) -> Self {
        Self {
            config: config.clone(),
            rounds: 0,
            calls: 0,
            failures: HashMap::new(),
        }
    }

    /// Called before each model request; `Some(reason)` ends the turn instead.
    pub fn before_round(&mut self) -> Option<String> {
        if self.last_round() {
            return Some(self.limit_reason());
        }
        self.rounds += 1;
        None
    }

    /// Whether the request just made was the last one the turn may make: then its
    /// response's tool calls are not run ([`super::calls::NOT_RUN`]) and the turn ends with
    /// [`Self::limit_reason`].
    pub fn last_round(&self) -> bool {
        self.rounds >= self.config.max_tool_rounds
    }

    /// Why a turn stopped at the round limit, for the user.
    pub fn limit_reason(&self) -> String {
        format!(
            "Stopped after {} rounds (the limit); the tool calls of the last one were not run. Send a message to let Vigil continue.",
            self.config.max_tool_rounds
        )
    }

    /// Called after a round's tools ran; `Some(reason)` ends the turn.
    pub fn after_tools(&mut self, calls: &[super::calls::Call], failed: &[bool]) -> Option<String> {
        self.calls += calls.len() as u32;
        if self.calls >= self.config.max_tool_calls {
            return Some(format!(
                "Stopped after {} tool calls in one turn (the limit).",
                self.calls
            ));
        }
        for ((_, name, input), &failed) in calls.iter().zip(failed) {
            if !failed {
                continue;
            }
            let n = self.failures.entry(format!("{name} {input}")).or_insert(0);
            *n += 1;
            if *n >= self.config.max_repeated_failures {
                return Some(format!("Stopped: `{name}` failed {n} times with the same arguments."));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rounds_calls_and_repeated_failures_end_the_turn() {
        let config = AgentConfig {
            max_tool_rounds: 2,
            max_tool_calls: 5,
            max_repeated_failures: 2,
            ..AgentConfig::default()
        };
        let mut p = Policy::new(&config);
        assert_eq!(p.before_round(), None); // answers the user
        assert!(!p.last_round());
        assert_eq!(p.before_round(), None); // carries round 1's results
        assert!(p.last_round(), "two requests: the second response's calls are not run");
        assert!(p.before_round().unwrap().contains("2 rounds"));

        let mut p = Policy::new(&config);
        let call = vec![("1".to_string(), "edit".to_string(), json!({"a": 1}))];
        assert_eq!(p.after_tools(&call, &[true]), None);
        assert!(p.after_tools(&call, &[true]).unwrap().contains("`edit` failed 2 times"));

        let mut p = Policy::new(&config);
        let many: Vec<_> = (0..5)
            .map(|i| (i.to_string(), "read".to_string(), json!({"i": i})))
            .collect();
        assert!(p.after_tools(&many, &[false; 5]).unwrap().contains("5 tool calls"));
    }
}
