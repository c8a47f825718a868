//! Schedules as the agent or a hand-edited file may give them: any schedule text, zone and
//! times parse or fail with a message, never panic (no overflow, no division by zero), and
//! every next run is strictly later than the time it follows.
//!
//! Input: 8 bytes "now", 8 bytes anchor (both little-endian i64), then `schedule\0zone`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vigil_core::routines::Spec;

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let now = i64::from_le_bytes(data[..8].try_into().unwrap());
    let anchor = i64::from_le_bytes(data[8..16].try_into().unwrap());
    let Ok(rest) = std::str::from_utf8(&data[16..]) else { return };
    let (schedule, zone) = rest.split_once('\0').unwrap_or((rest, "UTC"));
    let Ok(spec) = Spec::parse(Some(schedule), zone) else { return };
    let _ = spec.describe(Some(now));
    let runs = spec.preview(now, anchor, Some(anchor), 3);
    let mut last = now;
    for t in runs {
        assert!(t > last, "{schedule:?} in {zone}: run {t} is not after {last}");
        last = t;
    }
});
