//! HEARTBEAT.md as a user may leave it: any text parses to ok, empty or corrupted without a
//! panic; a good block written back reads back as the same routines (written normalised:
//! defaults filled in, times in UTC), tasks that could not be read are kept as they were,
//! and the user's own text around the block is kept byte for byte.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_core::routines::store::{parse, render, strip_block, Parsed};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = parse(text);
    let _ = strip_block(text);
    if let Parsed::Ok { entries, extra } = &parsed {
        let written = render(text, entries, extra);
        match parse(&written) {
            Parsed::Ok { entries: again, extra: extra_again } => {
                assert_eq!(again.len(), entries.len());
                for (a, b) in again.iter().zip(entries) {
                    assert_eq!(a.routine, b.routine, "a routine changed on a round trip");
                    if b.routine.is_err() {
                        assert_eq!(a.raw, b.raw, "an unreadable task was not kept as written");
                    }
                }
                assert_eq!(&extra_again, extra);
            }
            other => panic!("a block Vigil wrote does not read back: {other:?}\n{written}"),
        }
        assert_eq!(strip_block(&written), strip_block(text), "the user's text around the block changed");
    }
});
