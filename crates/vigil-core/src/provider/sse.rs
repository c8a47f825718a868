//! The response body on its way to `eventsource-stream`, held to a bound: an event may not
//! grow past [`MAX_EVENT_BYTES`] without ending, whatever the server sends.
//!
//! `eventsource-stream` keeps an unfinished line in a `String` and parses it again from its
//! start each time a chunk arrives. A server that never ends a line (hostile, or not
//! speaking SSE) would make that buffer grow without limit, and each chunk cost as much as
//! everything before it. So [`Bounded`] re-cuts the body at line ends: the parser only ever
//! sees whole lines (each parsed once), the unfinished one waits here, and past the bound the
//! stream ends with [`Wire::TooLong`]. Re-cutting cannot change what the parser reads: the
//! network already splits the body anywhere.
//!
//! Must never: interpret SSE fields (the parser does), or let a line or an event held here
//! exceed the bound.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::Stream;

/// The longest event accepted: the bytes since the last blank line. Real events are a few
/// KiB (a tool call's arguments arrive in many small deltas); 16 MiB leaves room for a server
/// that sends a whole large tool call at once.
pub const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// What the body stream can fail with.
#[derive(Debug)]
pub enum Wire<E> {
    /// The connection failed.
    Transport(E),
    /// An event went past [`MAX_EVENT_BYTES`] without ending.
    TooLong,
}

impl<E: std::fmt::Display> std::fmt::Display for Wire<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Wire::Transport(e) => e.fmt(f),
            Wire::TooLong => write!(f, "{}", too_long_message()),
        }
    }
}

/// The error a user sees for [`Wire::TooLong`].
pub fn too_long_message() -> String {
    format!(
        "the server sent more than {} MiB without ending an event; it is not sending a reply Vigil can read",
        MAX_EVENT_BYTES / (1024 * 1024)
    )
}

/// A body stream re-cut at line ends, with the unfinished line and event held to a bound.
pub struct Bounded<S> {
    /// Boxed: reqwest's body stream is not `Unpin`.
    inner: Pin<Box<S>>,
    /// The unfinished last line, not yet handed on.
    pending: BytesMut,
    /// Bytes of the current line so far (line ends excluded).
    line: usize,
    /// Bytes of the current event so far: every line since the last blank one.
    event: usize,
    /// The last byte seen was `\r`, so a `\n` next completes that line end.
    after_cr: bool,
    /// The bound was hit or the body ended: nothing more comes.
    done: bool,
    limit: usize,
}

impl<S> Bounded<S> {
    pub fn new(inner: S) -> Self {
        Self::with_limit(inner, MAX_EVENT_BYTES)
    }

    pub fn with_limit(inner: S, limit: usize) -> Self {
        Self {
            inner: Box::pin(inner),
            pending: BytesMut::new(),
            line: 0,
            event: 0,
            after_cr: false,
            done: false,
            limit,
        }
    }

    /// Counts `chunk`'s bytes into the current line and event. Returns the offset just past
    /// its last line end (0 if it has none), or `None` once the event is over the bound.
    fn scan(&mut self, chunk: &[u8]) -> Option<usize> {
        let mut cut = 0;
        let mut i = 0;
        while i < chunk.len() {
            // A run of ordinary bytes at once.
            let run = chunk[i..].iter().position(|&b| b == b'\n' || b == b'\r');
            let end = run.map_or(chunk.len(), |r| i + r);
            if end > i {
                self.after_cr = false;
                self.line += end - i;
                self.event += end - i;
                if self.event > self.limit {
                    return None;
                }
            }
            let Some(&b) = chunk.get(end) else { break };
            // `\r\n` is one line end: its `\n` closes nothing more.
            if !(b == b'\n' && self.after_cr) {
                if self.line == 0 {
                    self.event = 0; // a blank line ends the event
                }
                self.line = 0;
            }
            self.after_cr = b == b'\r';
            i = end + 1;
            cut = i;
        }
        Some(cut)
    }
}

impl<S, E> Stream for Bounded<S>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    type Item = Result<Bytes, Wire<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(Wire::Transport(e)))),
                Poll::Ready(None) => {
                    // Whatever is left goes on as it came; the parser decides about it.
                    this.done = true;
                    if this.pending.is_empty() {
                        return Poll::Ready(None);
                    }
                    return Poll::Ready(Some(Ok(this.pending.split().freeze())));
                }
                Poll::Ready(Some(Ok(chunk))) => {
                    let Some(cut) = this.scan(&chunk) else {
                        this.done = true;
                        this.pending = BytesMut::new(); // give the memory back now
                        return Poll::Ready(Some(Err(Wire::TooLong)));
                    };
                    if cut == 0 {
                        this.pending.extend_from_slice(&chunk);
                        continue;
                    }
                    let whole = if this.pending.is_empty() {
                        chunk.slice(..cut)
                    } else {
                        this.pending.extend_from_slice(&chunk[..cut]);
                        this.pending.split().freeze()
                    };
                    this.pending.extend_from_slice(&chunk[cut..]);
                    return Poll::Ready(Some(Ok(whole)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    /// Runs `chunks` through a bound of `limit` and returns what came out, chunk by chunk.
    fn recut(limit: usize, chunks: &[&str]) -> Vec<Result<String, ()>> {
        let input = futures_util::stream::iter(
            chunks
                .iter()
                .map(|c| Ok::<_, std::convert::Infallible>(Bytes::copy_from_slice(c.as_bytes())))
                .collect::<Vec<_>>(),
        );
        let out = Bounded::with_limit(input, limit).collect::<Vec<_>>();
        futures_util::FutureExt::now_or_never(out)
            .unwrap()
            .into_iter()
            .map(|r| r.map(|b| String::from_utf8(b.to_vec()).unwrap()).map_err(|_| ()))
            .collect()
    }

    #[test]
    fn lines_are_handed_on_whole_and_the_rest_waits() {
        assert_eq!(
            recut(100, &["data: a", "bc\ndata: d", "ef\r", "\n\r\n", "tail"]),
            [
                Ok("data: abc\n".into()),
                Ok("data: def\r".into()),
                Ok("\n\r\n".into()),
                Ok("tail".into())
            ]
        );
    }

    #[test]
    fn an_event_past_the_bound_ends_the_stream_with_an_error() {
        // One line that never ends.
        assert_eq!(recut(10, &["data: 0123", "456789"]), [Err(())]);
        // Short lines, but no blank line between them: one event that never ends.
        assert_eq!(
            recut(10, &["data: 1\n", "data: 2\n", "data: 3\n"]),
            [Ok("data: 1\n".into()), Err(())]
        );
        // Blank lines (LF, CRLF, CR) end events, so many small events pass.
        let many = ["data: 1\n\n", "data: 2\r\n\r\n", "data: 3\r\r"].repeat(10);
        let out = recut(10, &many);
        assert!(out.iter().all(Result::is_ok), "{out:?}");
        assert_eq!(out.len(), 30);
    }
}
