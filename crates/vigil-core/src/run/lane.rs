//! Lanes: one per session, and at most one run in each. The user's messages and the session's
//! notices queue in a busy lane and reach the running turn at its next step (steering).
//!
//! Owns: which sessions run now, with what kind of run, and their Stop tokens.
//! Must never: hold a lane's lock across an await.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio_util::sync::CancellationToken;
use vigil_protocol::Scope;

use crate::agent::{SteerQueue, UserInput};
use crate::system_events::SystemEvents;

/// One session's lane.
pub struct Lane {
    /// `std` lock: held only to flip `busy` or move the queue, never across an await.
    state: Mutex<LaneState>,
    session_id: String,
    notices: SystemEvents,
}

#[derive(Default)]
pub struct LaneState {
    pub busy: bool,
    /// What kind of session runs the turn, for the health check; set with `busy`.
    pub scope: Option<Scope>,
    /// The user's messages sent while it runs.
    pub queue: Vec<UserInput>,
    /// The running turn's token, for Stop.
    pub cancel: CancellationToken,
}

impl Lane {
    pub fn lock(&self) -> MutexGuard<'_, LaneState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the lane busy with a run of `scope` stopped by `shutdown` or by `deadline`,
    /// whichever comes first; `None` when a run holds it already.
    pub fn try_take(
        &self,
        scope: Scope,
        shutdown: &CancellationToken,
        deadline: Option<CancellationToken>,
    ) -> Option<CancellationToken> {
        let mut state = self.lock();
        if state.busy {
            return None;
        }
        state.busy = true;
        state.scope = Some(scope);
        let token = shutdown.child_token();
        if let Some(outer) = deadline {
            let inner = token.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = outer.cancelled() => inner.cancel(),
                    _ = inner.cancelled() => {}
                }
            });
        }
        state.cancel = token.clone();
        Some(token)
    }

    /// Frees the lane after a run that took it; what queued meanwhile is dropped (nobody
    /// steers a background run).
    pub fn release(&self) {
        let mut state = self.lock();
        state.busy = false;
        state.queue.clear();
    }
}

impl Lane {
    /// Frees the lane after a run that took it, keeping what queued meanwhile for the turn
    /// the conversation starts next (a routine's turn in a conversation).
    pub fn free(&self) {
        self.lock().busy = false;
    }
}

impl SteerQueue for Lane {
    fn drain(&self) -> Vec<UserInput> {
        std::mem::take(&mut self.lock().queue)
    }

    fn drain_notices(&self) -> Vec<String> {
        self.notices
            .drain(&self.session_id)
            .into_iter()
            .map(|e| e.text)
            .collect()
    }
}

/// Every session's lane, by id.
pub struct Lanes {
    /// `std` lock: only held to look a lane up.
    map: Mutex<HashMap<String, Arc<Lane>>>,
    notices: SystemEvents,
}

impl Lanes {
    pub fn new(notices: SystemEvents) -> Self {
        Self {
            map: Mutex::default(),
            notices,
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Lane>>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, session_id: &str) -> Option<Arc<Lane>> {
        self.map().get(session_id).cloned()
    }

    /// The session's lane, made on first use.
    pub fn lane(&self, session_id: &str) -> Arc<Lane> {
        self.map()
            .entry(session_id.to_string())
            .or_insert_with(|| {
                Arc::new(Lane {
                    state: Mutex::default(),
                    session_id: session_id.to_string(),
                    notices: self.notices.clone(),
                })
            })
            .clone()
    }

    pub fn remove(&self, session_id: &str) {
        self.map().remove(session_id);
    }

    /// Whether a run holds `session_id`'s lane.
    pub fn is_busy(&self, session_id: &str) -> bool {
        self.get(session_id).is_some_and(|l| l.lock().busy)
    }

    /// The busy lanes: session id, scope, queued messages.
    pub fn busy(&self) -> Vec<(String, Scope, usize)> {
        self.map()
            .iter()
            .filter_map(|(id, lane)| {
                let state = lane.lock();
                state
                    .busy
                    .then(|| (id.clone(), state.scope.unwrap_or(Scope::Primary), state.queue.len()))
            })
            .collect()
    }
}
