//! The user's message on its way to disk while the turn's first request goes out.
//!
//! A message is saved once the disk says so (an fdatasync: a third of a millisecond here,
//! several on many laptop SSDs), and the model cannot answer sooner than a round trip, so
//! the two overlap: the message is written (so the request, read from the transcript, holds
//! it), the request is sent, and the disk is waited for on the blocking pool. What the user
//! sees keeps its order and its promise: the message's `message_appended` and
//! `turn_started` come first, once the message is on disk, and anything of the reply that
//! arrives sooner is held until then. If the disk fails, none of it is shown, and the
//! request is dropped at once ([`Saving::failed`]); if the turn is gone before the disk
//! answers (it panicked), nothing held is shown after it.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use vigil_protocol::{Event, Source};

use crate::events::Emitter;
use crate::session::{SessionError, Unsynced};

/// A message being synced, and the events held until it is.
pub(super) struct Saving {
    task: JoinHandle<Result<(), SessionError>>,
    gate: Gate,
    /// `Some(saved)` once the disk answered.
    synced: watch::Receiver<Option<bool>>,
}

/// Where events go while a message is being saved: held, then out in order.
#[derive(Clone)]
pub(super) struct Gate {
    held: Arc<Mutex<Held>>,
    emitter: Emitter,
}

struct Held {
    /// The message is on disk and everything held is out: emit at once.
    open: bool,
    events: Vec<(Source, Event)>,
}

impl Saving {
    /// Syncs `unsynced` on the blocking pool; `first` goes out as soon as it is on disk.
    pub fn start(unsynced: Unsynced, emitter: Emitter, first: Vec<(Source, Event)>) -> Self {
        let gate = Gate {
            held: Arc::new(Mutex::new(Held {
                open: false,
                events: first,
            })),
            emitter,
        };
        let opens = gate.clone();
        let (tell, synced) = watch::channel(None);
        let task = tokio::task::spawn_blocking(move || {
            let result = unsynced.sync();
            if result.is_ok() {
                opens.open();
            }
            tell.send_replace(Some(result.is_ok()));
            result
        });
        Self { task, gate, synced }
    }

    /// Resolves if, and once, the disk failed to save the message; never if it saved it.
    pub async fn failed(&self) {
        let mut synced = self.synced.clone();
        if synced.wait_for(|s| s.is_some()).await.is_ok_and(|s| *s == Some(false)) {
            return;
        }
        std::future::pending().await
    }

    pub fn gate(&self) -> Gate {
        self.gate.clone()
    }

    /// Waits until the message is on disk and everything held is out. An error means the
    /// message is not saved, and nothing held (the message itself included) was shown.
    pub async fn finish(mut self) -> Result<(), String> {
        match (&mut self.task).await {
            Ok(synced) => synced.map_err(|e| e.to_string()),
            Err(e) => Err(format!("the disk did not answer ({e})")),
        }
    }
}

impl Gate {
    /// Emits `event` now if the message is saved, else once it is.
    pub fn emit(&self, source: Source, event: Event) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if held.open {
            self.emitter.emit(source, event);
        } else {
            held.events.push((source, event));
        }
    }

    fn open(&self) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        for (source, event) in held.events.drain(..) {
            self.emitter.emit(source, event);
        }
        held.open = true;
    }
}

impl Drop for Saving {
    /// Unfinished, the turn is gone (it panicked and the runtime reported it ended): the
    /// message is still synced, but nothing of the turn shows after its end.
    fn drop(&mut self) {
        self.gate
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .events
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use vigil_fake_llm::{FakeLlm, Faults, Script, Step};
    use vigil_protocol::{ErrorKind, Event, EventEnvelope, Op, ProviderKind, Role, StopReason};

    use crate::clock::SystemClock;
    use crate::durable::recording::Recording;
    use crate::events::EventSink;
    use crate::provider::{ModelClient, ProviderConfig};
    use crate::session::PRIMARY_SESSION;

    /// One timeline of what reached the disk (the conversation's transcript only) and what
    /// was shown, in the order it happened.
    struct Timeline {
        disk: Recording,
        transcript: String,
        seen: Mutex<Vec<String>>,
    }

    impl Timeline {
        fn catch_up(&self, seen: &mut Vec<String>) {
            for op in self.disk.take() {
                if op.ends_with(&self.transcript) {
                    seen.push(op);
                }
            }
        }

        fn now(&self) -> Vec<String> {
            let mut seen = self.seen.lock().unwrap();
            self.catch_up(&mut seen);
            seen.clone()
        }
    }

    impl EventSink for Timeline {
        fn emit(&self, envelope: EventEnvelope) {
            let shown = match envelope.event {
                Event::MessageAppended { message } => format!(
                    "shown: {} message",
                    if message.role == Role::User {
                        "user"
                    } else {
                        "assistant"
                    }
                ),
                Event::TurnStarted { .. } => "shown: turn started".into(),
                Event::TextDelta { .. } => "shown: reply text".into(),
                Event::Error { kind, .. } => format!("shown: {kind:?} error"),
                Event::TurnFinished { stop_reason, .. } => format!("shown: turn finished ({stop_reason:?})"),
                _ => return,
            };
            let mut seen = self.seen.lock().unwrap();
            self.catch_up(&mut seen);
            if seen.last() != Some(&shown) {
                seen.push(shown);
            }
        }
    }

    /// A runtime whose conversation answers with `reply`, on a disk that `disk` shapes.
    async fn turn_on(
        reply: Step,
        disk: impl FnOnce(&Recording),
    ) -> (tempfile::TempDir, FakeLlm, Arc<Timeline>, crate::Runtime) {
        let dir = tempfile::tempdir().unwrap();
        let fake = FakeLlm::start(Script::steps(vec![]).with_fallback(reply))
            .await
            .unwrap();
        let recording = Recording::start(dir.path());
        disk(&recording);
        let timeline = Arc::new(Timeline {
            disk: recording,
            transcript: format!("sessions/{PRIMARY_SESSION}.jsonl"),
            seen: Mutex::default(),
        });
        let rt = crate::Runtime::new(dir.path(), Arc::new(SystemClock), timeline.clone()).unwrap();
        let mut cfg = ProviderConfig::new(ProviderKind::Anthropic, fake.anthropic_base_url(), "fake-model");
        cfg.max_retries = 0;
        rt.set_client(Some(ModelClient::new(cfg, Arc::new(SystemClock)).unwrap()));
        rt.submit(Op::UserMessage {
            text: "hi".into(),
            session_id: None,
            attachments: vec![],
        });
        (dir, fake, timeline, rt)
    }

    async fn until_finished(timeline: &Timeline) -> Vec<String> {
        for _ in 0..2_000 {
            let seen = timeline.now();
            if seen.iter().any(|s| s.starts_with("shown: turn finished")) {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the turn did not finish: {:?}", timeline.now());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_request_goes_out_while_the_message_syncs_and_nothing_shows_before_it_is_saved() {
        // Far longer than a request to a local server takes, even on a busy machine.
        let slow = Duration::from_secs(2);
        let (_dir, fake, timeline, rt) = turn_on(Step::text("hello there"), |disk| disk.slow_syncs(slow)).await;
        let asked = std::time::Instant::now();
        while fake.request_count() == 0 {
            assert!(asked.elapsed() < Duration::from_secs(20), "the model was never asked");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let transcript = format!("sessions/{PRIMARY_SESSION}.jsonl");
        assert!(
            asked.elapsed() < slow,
            "the model is asked while the message syncs, not after: {:?}",
            asked.elapsed()
        );
        assert_eq!(timeline.now(), [format!("write {transcript}")], "nothing is shown yet");
        assert_eq!(
            until_finished(&timeline).await,
            [
                format!("write {transcript}"),
                format!("fdatasync {transcript}"),
                "shown: user message".into(),
                "shown: turn started".into(),
                "shown: reply text".into(),
                format!("write {transcript}"),
                format!("fdatasync {transcript}"),
                "shown: assistant message".into(),
                "shown: turn finished (EndTurn)".into(),
            ]
        );
        rt.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_message_the_disk_did_not_save_is_never_shown_and_the_turn_ends_at_once_in_an_error() {
        // A reply that would take a minute: the turn does not wait for it.
        let slow_reply = Step::text("hello there").with_faults(Faults {
            stall_after_events: Some(1),
            stall_ms: Some(60_000),
            ..Faults::default()
        });
        let started = std::time::Instant::now();
        let (_dir, fake, timeline, rt) = turn_on(slow_reply, Recording::fail_syncs).await;
        let transcript = format!("sessions/{PRIMARY_SESSION}.jsonl");
        assert_eq!(
            until_finished(&timeline).await,
            [
                format!("write {transcript}"),
                format!("shown: {:?} error", ErrorKind::Storage),
                format!("shown: turn finished ({:?})", StopReason::Error),
            ],
            "no user message, no reply, nothing saved after it"
        );
        assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
        assert!(fake.request_count() <= 1);
        rt.shutdown().await;
    }

    #[tokio::test]
    async fn a_turn_gone_before_its_message_synced_shows_nothing_after_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let disk = Recording::start(dir.path());
        disk.slow_syncs(Duration::from_millis(300));
        let store = crate::session::SessionStore::open(dir.path()).unwrap();
        let unsynced = store
            .append_unsynced(PRIMARY_SESSION, &vigil_protocol::Message::user_text("hi", 1))
            .await
            .unwrap();
        let shown = Arc::new(crate::events::CollectingSink::default());
        let emitter = crate::events::Emitter::new(shown.clone(), Arc::new(SystemClock));
        let saving = super::Saving::start(
            unsynced,
            emitter,
            vec![(
                vigil_protocol::Source::Agent,
                Event::TurnStarted { user_text: "hi".into() },
            )],
        );
        saving.gate().emit(
            vigil_protocol::Source::Provider,
            Event::TextDelta { text: "held".into() },
        );
        // The turn panicked: the runtime drops it and reports its end itself.
        drop(saving);
        tokio::time::sleep(Duration::from_millis(900)).await;
        assert_eq!(
            disk.take(),
            [
                format!("write sessions/{PRIMARY_SESSION}.jsonl"),
                format!("fdatasync sessions/{PRIMARY_SESSION}.jsonl"),
                "fsync dir sessions".to_string(),
            ],
            "the message is still saved"
        );
        let events: Vec<_> = shown.take().into_iter().map(|e| e.event).collect();
        assert!(events.is_empty(), "shown after the turn ended: {events:?}");
    }
}
