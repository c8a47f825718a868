use chrono::TimeZone;
use chrono_tz::Tz;

use super::*;

fn at(tz: Tz, y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
    tz.with_ymd_and_hms(y, mo, d, h, mi, 0)
        .earliest()
        .unwrap()
        .timestamp_millis()
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> i64 {
    chrono::Utc
        .with_ymd_and_hms(y, mo, d, h, mi, 0)
        .unwrap()
        .timestamp_millis()
}

fn hours(start: &str, end: &str, tz: &str) -> HeartbeatConfig {
    HeartbeatConfig::resolve(&HeartbeatSettings {
        active_hours: Some(ActiveHours {
            start: start.into(),
            end: end.into(),
            timezone: Some(tz.into()),
        }),
        ..Default::default()
    })
}

#[test]
fn intervals_parse_like_openclaw() {
    let m = |n: u64| Some(Duration::from_secs(n * 60));
    assert_eq!(parse_every("30m"), Ok(m(30)));
    assert_eq!(parse_every("45"), Ok(m(45)), "a bare number is minutes");
    assert_eq!(parse_every(" 1.5 "), Ok(Some(Duration::from_secs(90))));
    assert_eq!(parse_every("1h30m"), Ok(m(90)));
    assert_eq!(parse_every("1h 30m"), Ok(m(90)));
    assert_eq!(parse_every("90s"), Ok(Some(Duration::from_secs(90))));
    assert_eq!(parse_every("2h"), Ok(m(120)));
    assert_eq!(parse_every("0"), Ok(None), "zero turns interval runs off");
    assert_eq!(parse_every("0m"), Ok(None));
    for bad in ["", "soon", "-5", "30 parsecs", "NaN", "1000y"] {
        assert!(parse_every(bad).is_err(), "{bad:?}");
    }
    assert!(parse_every("soon").unwrap_err().contains("\"soon\" is not a duration"));
}

#[test]
fn defaults_and_bad_values_resolve_with_warnings() {
    let c = HeartbeatConfig::default();
    assert_eq!(c.interval, Some(Duration::from_secs(1800)));
    assert_eq!(c.ack_max_chars, 300);
    assert!(c.enabled && c.notifications && c.warnings.is_empty());
    assert_eq!(c.prompt, DEFAULT_PROMPT);
    assert_eq!(c.run_timeout, Duration::from_secs(10 * 60));
    let c = HeartbeatConfig::resolve(&HeartbeatSettings {
        run_timeout_minutes: 3,
        ..Default::default()
    });
    assert_eq!(c.run_timeout, Duration::from_secs(3 * 60));
    let c = HeartbeatConfig::resolve(&HeartbeatSettings {
        every: "whenever".into(),
        run_timeout_minutes: 0,
        ack_max_chars: 1_000_000,
        prompt: Some("  ".into()),
        model: Some(" small-model ".into()),
        active_hours: Some(ActiveHours {
            start: "9am".into(),
            end: "17:00".into(),
            timezone: Some("Mars/Olympus".into()),
        }),
        ..Default::default()
    });
    assert_eq!(c.interval, None);
    assert_eq!(c.ack_max_chars, DEFAULT_ACK_MAX_CHARS);
    assert_eq!(c.prompt, DEFAULT_PROMPT);
    assert_eq!(c.model.as_deref(), Some("small-model"));
    assert_eq!(c.active, None, "unreadable hours fall back to always active");
    assert_eq!(c.run_timeout, Duration::from_secs(10 * 60), "no run without a deadline");
    assert_eq!(c.warnings.len(), 5, "{:?}", c.warnings);
    assert!(c.warnings.iter().any(|w| w.contains("runTimeoutMinutes 0")));
    assert!(c
        .warnings
        .iter()
        .any(|w| w.contains("Mars/Olympus") && w.contains("unknown")));
    assert!(c.warnings.iter().any(|w| w.contains("ackMaxChars")));
}

#[test]
fn hhmm_accepts_24_00_only_as_an_end() {
    assert_eq!(parse_hhmm("09:05", false), Some(545));
    assert_eq!(parse_hhmm("9:05", false), Some(545));
    assert_eq!(parse_hhmm("24:00", true), Some(1440));
    assert_eq!(parse_hhmm("24:00", false), None);
    for bad in ["24:01", "12:60", "1200", "12:5", "", "ab:cd"] {
        assert_eq!(parse_hhmm(bad, true), None, "{bad:?}");
    }
}

#[test]
fn a_day_window_and_a_window_across_midnight() {
    let tz = Tz::Asia__Shanghai;
    let day = hours("09:00", "22:00", "Asia/Shanghai");
    assert!(!day.is_active_at(at(tz, 2026, 2, 25, 8, 59)));
    assert!(day.is_active_at(at(tz, 2026, 2, 25, 9, 0)));
    assert!(day.is_active_at(at(tz, 2026, 2, 25, 21, 59)));
    assert!(!day.is_active_at(at(tz, 2026, 2, 25, 22, 0)), "the end is exclusive");
    let night = hours("22:00", "06:00", "Asia/Shanghai");
    assert!(night.is_active_at(at(tz, 2026, 2, 25, 23, 30)));
    assert!(night.is_active_at(at(tz, 2026, 2, 26, 0, 30)));
    assert!(night.is_active_at(at(tz, 2026, 2, 26, 5, 59)));
    assert!(!night.is_active_at(at(tz, 2026, 2, 26, 6, 0)));
    assert!(!night.is_active_at(at(tz, 2026, 2, 26, 12, 0)));
    let to_midnight = hours("18:00", "24:00", "Asia/Shanghai");
    assert!(to_midnight.is_active_at(at(tz, 2026, 2, 25, 23, 59)));
    assert!(!to_midnight.is_active_at(at(tz, 2026, 2, 26, 0, 0)));
    let never = hours("08:00", "08:00", "Asia/Shanghai");
    for h in 0..24 {
        assert!(
            !never.is_active_at(at(tz, 2026, 2, 25, h, 0)),
            "start == end is never active"
        );
    }
}

#[test]
fn active_hours_follow_the_zone_across_dst() {
    // New York: EST (UTC-5) until 2026-03-08 02:00, then EDT (UTC-4).
    let c = hours("09:00", "17:00", "America/New_York");
    assert!(!c.is_active_at(utc(2026, 3, 7, 13, 30)), "08:30 EST");
    assert!(
        c.is_active_at(utc(2026, 3, 9, 13, 30)),
        "09:30 EDT: same UTC time, now inside"
    );
    assert!(c.is_active_at(utc(2026, 3, 7, 21, 30)), "16:30 EST");
    assert!(!c.is_active_at(utc(2026, 3, 9, 21, 30)), "17:30 EDT");
    // Spring forward: 02:00–03:00 does not exist on 2026-03-08; a window inside the gap
    // is simply never reached that night, and the hour after it is normal.
    let gap = hours("02:00", "03:00", "America/New_York");
    let night = (0..24 * 4).map(|q| utc(2026, 3, 8, 4, 0) + q * 15 * 60_000);
    assert_eq!(night.filter(|&ms| gap.is_active_at(ms)).count(), 0);
    // Fall back: 01:00–02:00 happens twice on 2026-11-01; both are inside.
    let twice = hours("01:00", "02:00", "America/New_York");
    assert!(twice.is_active_at(utc(2026, 11, 1, 5, 30)), "01:30 EDT");
    assert!(twice.is_active_at(utc(2026, 11, 1, 6, 30)), "01:30 EST");
    assert!(!twice.is_active_at(utc(2026, 11, 1, 7, 30)), "02:30 EST");
    // A window across midnight on the night the clocks change (Europe/Berlin, 2026-03-29).
    let berlin = hours("23:00", "01:30", "Europe/Berlin");
    assert!(berlin.is_active_at(utc(2026, 3, 28, 22, 30)), "23:30 CET");
    assert!(berlin.is_active_at(utc(2026, 3, 28, 23, 59)), "00:59 CET");
    assert!(
        !berlin.is_active_at(utc(2026, 3, 29, 1, 0)),
        "03:00 CEST, after the jump"
    );
}

#[test]
fn the_current_time_line_names_the_zone() {
    let c = hours("00:00", "24:00", "Asia/Shanghai");
    let ms = at(Tz::Asia__Shanghai, 2026, 2, 25, 17, 30);
    assert_eq!(
        c.zone.current_time_line(ms),
        "Current time: 2026-02-25 17:30 (Asia/Shanghai)"
    );
    let local = Zone::Local.current_time_line(ms);
    assert!(local.starts_with("Current time: 20") && local.ends_with(')'), "{local}");
}
