//! Provider streams, both protocols: arbitrary bytes cut into arbitrary chunks never panic
//! the decoder, decode the same however they are cut, and a decoded reply holds exactly the
//! text that was streamed to the user: every piece of it, nothing more (a server that
//! interleaves two text blocks may see them saved block by block).
//!
//! Input: byte 0 picks the protocol (even: Anthropic, odd: OpenAI), byte 1 the longest
//! chunk (chunks cycle through 1..=it; 0 means one chunk), the rest is the response body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_core::protocol::ProviderKind;
use vigil_core::provider::{assemble_sse, StreamEvent};

fn decode(kind: ProviderKind, chunks: Vec<bytes::Bytes>) -> String {
    let mut pieces = Vec::new();
    let result = assemble_sse(kind, chunks, &mut |e| {
        if let StreamEvent::TextDelta(t) = e {
            pieces.push(t);
        }
    });
    let streamed = pieces.concat();
    if let Ok(done) = &result {
        let saved = done.text();
        assert_eq!(saved.len(), streamed.len(), "saved {saved:?}, streamed {streamed:?}");
        for p in &pieces {
            assert!(saved.contains(p.as_str()), "{p:?} was streamed but not saved in {saved:?}");
        }
    }
    format!("{result:?} streamed {streamed:?}")
}

fuzz_target!(|data: &[u8]| {
    let [mode, longest, body @ ..] = data else { return };
    let kind = if mode % 2 == 0 { ProviderKind::Anthropic } else { ProviderKind::Openai };
    let whole = decode(kind, vec![bytes::Bytes::copy_from_slice(body)]);
    if *longest == 0 {
        return;
    }
    let mut chunks = Vec::new();
    let mut rest = body;
    let mut n = 0;
    while !rest.is_empty() {
        n = n % usize::from(*longest) + 1;
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        chunks.push(bytes::Bytes::copy_from_slice(chunk));
        rest = tail;
    }
    assert_eq!(whole, decode(kind, chunks), "the same bytes decode differently when cut differently");
});
