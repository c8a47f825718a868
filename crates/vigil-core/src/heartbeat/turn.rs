//! One turn in the heartbeat session: where the session stood before it ([`Mark`]), the turn
//! itself with the heartbeat's system section, short history and cache lifetime, and taking an
//! uneventful run's lines back off the transcript.

use super::{session_id, Heartbeat, HeartbeatTurn, AGENT};
use crate::agent::TurnExtras;

/// Messages of the heartbeat session a run sees (seed 003 §4.3: "极短").
pub(super) const HISTORY_LIMIT: usize = 6;

/// Where the heartbeat session stood before a run: what [`Heartbeat::take_back`] returns to.
pub(super) struct Mark {
    size: u64,
    /// Messages before the run: its reply is after them.
    pub(super) count: usize,
    pub(super) updated_at: Option<i64>,
}

impl Heartbeat {
    /// Where the heartbeat session stands before a run.
    pub(super) fn mark(&self, session: &str) -> Result<Mark, crate::session::SessionError> {
        let deps = &self.shared.deps;
        Ok(Mark {
            size: deps.store.size(session)?,
            count: deps.store.load(session).map(|l| l.messages.len()).unwrap_or(0),
            updated_at: deps.meta.load(session).ok().map(|l| l.meta.updated_at),
        })
    }

    /// One turn in the heartbeat session, with its system section, short history and cache
    /// lifetime added to `extras`. A turn that ran is counted, and its tokens added to today's.
    pub(super) async fn heartbeat_turn(
        &self,
        config: &super::HeartbeatConfig,
        text: String,
        extras: TurnExtras,
        may_ask: bool,
    ) -> super::TurnResult {
        let extras = TurnExtras {
            system_section: Some(self.system_section(config)),
            history_limit: Some(HISTORY_LIMIT),
            cache_hour: self.back_within_the_hour(),
            ..extras
        };
        let started = tokio::time::Instant::now();
        let result = self
            .shared
            .host
            .run_turn(HeartbeatTurn {
                session_id: session_id(AGENT),
                run_id: uuid::Uuid::new_v4().to_string(),
                text,
                extras,
                model: config.model.clone(),
                may_ask,
            })
            .await;
        if !result.locked {
            if let Some(used) = result.usage {
                self.record_background_usage(used);
            }
            let mut state = self.state();
            state.stats.runs += 1;
            state.durations.add(started.elapsed().as_millis() as u64);
        }
        result
    }

    /// Cuts the run's lines off the heartbeat transcript and puts `updated_at` back, so an
    /// uneventful run leaves no trace (seed 002 §7.1).
    pub(super) async fn take_back(&self, session: &str, mark: &Mark) {
        let deps = &self.shared.deps;
        if let Err(e) = deps.store.truncate_async(session, mark.size).await {
            tracing::warn!("could not prune the heartbeat transcript: {e}");
        }
        let Some(updated_at) = mark.updated_at else { return };
        let now = deps.meta.load(session).map(|l| l.meta.updated_at);
        if now.is_ok_and(|t| t != updated_at) {
            if let Err(e) = deps.meta.update_keeping_time(session, updated_at, |_| ()).await {
                tracing::warn!("could not restore the heartbeat session's time: {e}");
            }
        }
    }
}
