//! # events
//!
//! Owns the way out of the runtime: every [`Event`] is stamped into an [`EventEnvelope`]
//! (id, time, session, scope, source, run) and handed to an [`EventSink`]. The desktop shell
//! implements the sink by emitting to the window; the headless runner by printing JSON lines.
//!
//! Must never: block (sinks are called from inside turns) or decide what an event means.

use std::sync::Arc;

use vigil_protocol::{Event, EventEnvelope, Scope, Source};

use crate::clock::Clock;

/// Where events go. Implementations must be quick and must not block.
pub trait EventSink: Send + Sync + 'static {
    fn emit(&self, event: EventEnvelope);
}

/// A sink that collects events, for tests.
#[derive(Default, Clone)]
pub struct CollectingSink {
    pub events: Arc<std::sync::Mutex<Vec<EventEnvelope>>>,
}

impl EventSink for CollectingSink {
    fn emit(&self, event: EventEnvelope) {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).push(event);
    }
}

impl CollectingSink {
    pub fn take(&self) -> Vec<EventEnvelope> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// Stamps events for one context (a session's run) and sends them on.
#[derive(Clone)]
pub struct Emitter {
    sink: Arc<dyn EventSink>,
    clock: Arc<dyn Clock>,
    session_id: Option<String>,
    scope: Scope,
    run_id: Option<String>,
}

impl Emitter {
    pub fn new(sink: Arc<dyn EventSink>, clock: Arc<dyn Clock>) -> Self {
        Self {
            sink,
            clock,
            session_id: None,
            scope: Scope::App,
            run_id: None,
        }
    }

    /// The same emitter, for events of one run in one session.
    pub fn for_run(&self, session_id: &str, scope: Scope, run_id: &str) -> Self {
        Self {
            session_id: Some(session_id.to_string()),
            scope,
            run_id: Some(run_id.to_string()),
            ..self.clone()
        }
    }

    /// The same emitter, for events of one session outside any run.
    pub fn for_session(&self, session_id: &str, scope: Scope) -> Self {
        Self {
            session_id: Some(session_id.to_string()),
            scope,
            run_id: None,
            ..self.clone()
        }
    }

    /// The same emitter sending to `sink` instead (e.g. a tap that also watches the events).
    pub fn with_sink(&self, sink: Arc<dyn EventSink>) -> Self {
        Self { sink, ..self.clone() }
    }

    /// The session this emitter's events belong to, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Where this emitter sends.
    pub fn sink(&self) -> Arc<dyn EventSink> {
        self.sink.clone()
    }

    pub fn emit(&self, source: Source, event: Event) {
        self.sink.emit(EventEnvelope {
            id: uuid::Uuid::new_v4().to_string(),
            ts: self.clock.now_ms(),
            session_id: self.session_id.clone(),
            scope: self.scope,
            source,
            run_id: self.run_id.clone(),
            event,
        });
    }
}
