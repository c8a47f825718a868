//! SSE framing and the fault injector.
//!
//! A protocol renders its reply as a list of [`SseEvent`]s ([`Rendered`]); this module owns
//! everything after that: line endings, comments, delays, the faults of [`Faults`], re-cutting
//! into byte chunks, and the streaming response body that delivers each chunk separately.
//! It never knows which protocol it frames — the protocol hands over its own error,
//! terminator and broken events.

use std::collections::VecDeque;
use std::io;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::script::Faults;

/// A stall with no `stall_ms` lasts this long: longer than any client timeout under test.
const DEFAULT_STALL: Duration = Duration::from_secs(3600);

/// One SSE event: an optional `event:` name and one `data:` line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    pub name: Option<&'static str>,
    pub data: String,
}

impl SseEvent {
    pub fn named(name: &'static str, data: impl Into<String>) -> Self {
        SseEvent {
            name: Some(name),
            data: data.into(),
        }
    }

    pub fn data(data: impl Into<String>) -> Self {
        SseEvent {
            name: None,
            data: data.into(),
        }
    }

    fn encode(&self, eol: &str) -> String {
        match self.name {
            Some(name) => format!("event: {name}{eol}data: {}{eol}{eol}", self.data),
            None => format!("data: {}{eol}{eol}", self.data),
        }
    }
}

/// A protocol's streamed reply plus the special events the faults may need.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    /// Everything up to, not including, the terminator.
    pub events: Vec<SseEvent>,
    /// `message_stop` / `data: [DONE]`.
    pub terminator: SseEvent,
    /// The protocol's in-stream error, for `error_after_events`.
    pub error_event: SseEvent,
    /// An event whose data is not JSON, for `invalid_json_after_events`.
    pub invalid_event: SseEvent,
}

/// One step of writing a response body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece {
    Bytes(Bytes),
    Sleep(Duration),
    /// Fail the body: hyper then closes the connection without the final empty chunk.
    Abort,
}

/// Lay out the body of a streamed reply: events, delays and faults, in order.
pub(crate) fn plan(rendered: Rendered, faults: &Faults, delay: Duration) -> Vec<Piece> {
    let eol = if faults.crlf { "\r\n" } else { "\n" };
    let Rendered {
        mut events,
        terminator,
        error_event,
        invalid_event,
    } = rendered;
    if !faults.no_terminator {
        events.push(terminator);
    }
    let total = events.len();
    let special = (&error_event, &invalid_event);
    let mut pieces = Vec::new();
    for (sent, event) in events.into_iter().enumerate() {
        if sent > 0 {
            if !delay.is_zero() {
                pieces.push(Piece::Sleep(delay));
            }
            if faults.comments {
                pieces.push(text_piece(format!(": keep-alive{eol}{eol}")));
            }
        }
        if faults_at(faults, sent, false, special, eol, &mut pieces) {
            return split(pieces, faults.split_bytes);
        }
        pieces.push(text_piece(event.encode(eol)));
    }
    // A fault count at or past the end still fires, after the last event.
    faults_at(faults, total, true, special, eol, &mut pieces);
    split(pieces, faults.split_bytes)
}

/// Push the faults due once `sent` events have gone out; true when the body ends here.
/// At the end (`at_end`), a drop or error whose count is past the last event still fires:
/// counts below it would already have ended the body.
fn faults_at(
    faults: &Faults,
    sent: usize,
    at_end: bool,
    special: (&SseEvent, &SseEvent),
    eol: &str,
    pieces: &mut Vec<Piece>,
) -> bool {
    let (error_event, invalid_event) = special;
    let due = |n: Option<usize>| n == Some(sent);
    let ends = |n: Option<usize>| if at_end { n.is_some() } else { due(n) };
    if ends(faults.drop_after_events) {
        pieces.push(Piece::Abort);
        return true;
    }
    if ends(faults.error_after_events) {
        pieces.push(text_piece(error_event.encode(eol)));
        return true;
    }
    if due(faults.stall_after_events) {
        let stall = faults.stall_ms.map_or(DEFAULT_STALL, Duration::from_millis);
        pieces.push(Piece::Sleep(stall));
    }
    if due(faults.invalid_json_after_events) {
        pieces.push(text_piece(invalid_event.encode(eol)));
    }
    false
}

fn text_piece(s: String) -> Piece {
    Piece::Bytes(Bytes::from(s))
}

/// Re-cut runs of bytes into `n`-byte chunks; sleeps and aborts stay where they were.
fn split(pieces: Vec<Piece>, n: Option<usize>) -> Vec<Piece> {
    let Some(n) = n.filter(|&n| n > 0) else {
        return pieces;
    };
    let mut out = Vec::new();
    let mut run: Vec<u8> = Vec::new();
    let flush = |run: &mut Vec<u8>, out: &mut Vec<Piece>| {
        let all = Bytes::from(std::mem::take(run));
        let mut at = 0;
        while at < all.len() {
            let end = (at + n).min(all.len());
            out.push(Piece::Bytes(all.slice(at..end)));
            at = end;
        }
    };
    for piece in pieces {
        match piece {
            Piece::Bytes(b) => run.extend_from_slice(&b),
            other => {
                flush(&mut run, &mut out);
                out.push(other);
            }
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A streaming body that plays `pieces`: bytes as separate frames, sleeps as silence, an
/// abort as a body error. Shutting the server down aborts it, so a stalled stream never
/// keeps a dropped server alive.
pub(crate) fn body(pieces: Vec<Piece>, shutdown: CancellationToken) -> Body {
    struct State {
        pieces: VecDeque<Piece>,
        shutdown: CancellationToken,
        started: bool,
    }
    let state = State {
        pieces: pieces.into(),
        shutdown,
        started: false,
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        loop {
            match st.pieces.pop_front()? {
                Piece::Sleep(d) => {
                    tokio::select! {
                        _ = tokio::time::sleep(d) => {}
                        _ = st.shutdown.cancelled() => {
                            st.pieces.clear();
                            return Some((Err(io::Error::other("fake LLM shutting down")), st));
                        }
                    }
                }
                Piece::Bytes(b) => {
                    // Returning Pending once between frames makes hyper flush what it has,
                    // so each chunk reaches the socket on its own instead of coalescing.
                    if st.started {
                        tokio::task::yield_now().await;
                    }
                    st.started = true;
                    return Some((Ok(b), st));
                }
                Piece::Abort => {
                    // hyper drops its unflushed buffer when the body fails: let it flush the
                    // events already "sent" first, or the drop would come too early.
                    tokio::task::yield_now().await;
                    st.pieces.clear();
                    let err = io::Error::new(io::ErrorKind::ConnectionAborted, "fake LLM: scripted drop");
                    return Some((Err(err), st));
                }
            }
        }
    });
    Body::from_stream(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered() -> Rendered {
        Rendered {
            events: vec![SseEvent::named("a", "1"), SseEvent::data("2")],
            terminator: SseEvent::data("[DONE]"),
            error_event: SseEvent::data("E"),
            invalid_event: SseEvent::data("{"),
        }
    }

    fn text(pieces: &[Piece]) -> String {
        pieces
            .iter()
            .map(|p| match p {
                Piece::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                Piece::Sleep(d) => format!("<sleep {}>", d.as_millis()),
                Piece::Abort => "<abort>".to_owned(),
            })
            .collect()
    }

    #[test]
    fn plain_framing() {
        let pieces = plan(rendered(), &Faults::default(), Duration::ZERO);
        assert_eq!(text(&pieces), "event: a\ndata: 1\n\ndata: 2\n\ndata: [DONE]\n\n");
    }

    #[test]
    fn faults_fire_at_their_counts() {
        let faults = Faults {
            stall_after_events: Some(1),
            stall_ms: Some(5),
            invalid_json_after_events: Some(1),
            error_after_events: Some(2),
            ..Faults::default()
        };
        let pieces = plan(rendered(), &faults, Duration::from_millis(1));
        assert_eq!(
            text(&pieces),
            "event: a\ndata: 1\n\n<sleep 1><sleep 5>data: {\n\ndata: 2\n\n<sleep 1>data: E\n\n"
        );
    }

    #[test]
    fn counts_past_the_end_fire_after_everything() {
        let faults = Faults {
            drop_after_events: Some(99),
            no_terminator: true,
            ..Faults::default()
        };
        let pieces = plan(rendered(), &faults, Duration::ZERO);
        assert_eq!(text(&pieces), "event: a\ndata: 1\n\ndata: 2\n\n<abort>");
    }

    #[test]
    fn split_recuts_bytes_but_keeps_sleeps_in_place() {
        let pieces = vec![
            Piece::Bytes(Bytes::from_static(b"abcde")),
            Piece::Bytes(Bytes::from_static(b"fg")),
            Piece::Sleep(Duration::from_millis(3)),
            Piece::Bytes(Bytes::from_static(b"hij")),
        ];
        let lens: Vec<String> = split(pieces, Some(3))
            .iter()
            .map(|p| text(std::slice::from_ref(p)))
            .collect();
        assert_eq!(lens, ["abc", "def", "g", "<sleep 3>", "hij"]);
    }
}
