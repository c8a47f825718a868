//! Transcript files: any bytes load without a panic, and every message read back saves and
//! reads again as itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_core::session::transcript::parse_lines;

fuzz_target!(|bytes: &[u8]| {
    let loaded = parse_lines(bytes, std::path::Path::new("fuzz.jsonl"));
    for m in &loaded.messages {
        let line = serde_json::to_string(m).unwrap();
        let again = parse_lines(line.as_bytes(), std::path::Path::new("again.jsonl"));
        assert_eq!(again.messages.as_slice(), std::slice::from_ref(m), "{line}");
    }
});
