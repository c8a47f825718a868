//! Cron across DST in three zones (both hemispheres), interval anchoring, the weekday
//! dialect, descriptions and validation.

use super::*;

fn ms(s: &str) -> i64 {
    DateTime::parse_from_rfc3339(s).unwrap().timestamp_millis()
}

fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap()
        .format("%Y-%m-%dT%H:%MZ")
        .to_string()
}

fn runs(expr: &str, zone: &str, from: &str, n: usize) -> Vec<String> {
    let spec = Spec::parse(Some(expr), zone).unwrap();
    spec.preview(ms(from), 0, None, n).into_iter().map(iso).collect()
}

#[test]
fn a_daily_time_stays_on_the_local_clock_across_dst() {
    // Berlin: 09:00 is 08:00Z in winter, 07:00Z from 29 March 2026.
    assert_eq!(
        runs("0 9 * * *", "Europe/Berlin", "2026-03-27T12:00:00Z", 3),
        ["2026-03-28T08:00Z", "2026-03-29T07:00Z", "2026-03-30T07:00Z"]
    );
}

#[test]
fn spring_forward_gap_runs_once_at_the_end_of_the_gap() {
    // Berlin, 29 March 2026: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist.
    assert_eq!(
        runs("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2),
        ["2026-03-29T01:00Z", "2026-03-30T00:30Z"]
    );
    // New York, 8 March 2026: 02:00 EST jumps to 03:00 EDT.
    assert_eq!(
        runs("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2),
        ["2026-03-08T07:00Z", "2026-03-09T06:30Z"]
    );
    // Sydney, 4 October 2026: 02:00 AEST jumps to 03:00 AEDT.
    assert_eq!(
        runs("30 2 * * *", "Australia/Sydney", "2026-10-03T12:00:00Z", 2),
        ["2026-10-03T16:00Z", "2026-10-04T15:30Z"]
    );
    // Every 15 minutes through the Berlin gap: the four missing slots become one run at
    // 03:00 CEST, then the quarter hours go on.
    assert_eq!(
        runs("*/15 * * * *", "Europe/Berlin", "2026-03-29T00:40:00Z", 4),
        [
            "2026-03-29T00:45Z",
            "2026-03-29T01:00Z",
            "2026-03-29T01:15Z",
            "2026-03-29T01:30Z"
        ]
    );
}

#[test]
fn a_repeated_hour_runs_once_at_its_first_occurrence() {
    // Berlin, 25 October 2026: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    assert_eq!(
        runs("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2),
        ["2026-10-25T00:30Z", "2026-10-26T01:30Z"]
    );
    // New York, 1 November 2026: 01:00–02:00 happens twice.
    assert_eq!(
        runs("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2),
        ["2026-11-01T05:30Z", "2026-11-02T06:30Z"]
    );
    // Hourly through the repeated hour: 01:00 EDT runs, 01:00 EST does not.
    assert_eq!(
        runs("0 * * * *", "America/New_York", "2026-11-01T03:30:00Z", 3),
        ["2026-11-01T04:00Z", "2026-11-01T05:00Z", "2026-11-01T07:00Z"]
    );
    // Sydney, 5 April 2026: 03:00 AEDT falls back to 02:00 AEST.
    assert_eq!(
        runs("30 2 * * *", "Australia/Sydney", "2026-04-04T12:00:00Z", 2),
        ["2026-04-04T15:30Z", "2026-04-05T16:30Z"]
    );
    // Starting inside the second occurrence does not run the first one's slot again.
    assert_eq!(
        runs("30 2 * * *", "Europe/Berlin", "2026-10-25T01:10:00Z", 1),
        ["2026-10-26T01:30Z"]
    );
}

#[test]
fn weekdays_use_the_standard_numbering() {
    // 7 March 2026 is a Saturday.
    assert_eq!(
        runs("0 9 * * 1-5", "Europe/Berlin", "2026-03-07T12:00:00Z", 2),
        ["2026-03-09T08:00Z", "2026-03-10T08:00Z"]
    );
    assert_eq!(
        runs("0 9 * * 0", "UTC", "2026-03-07T12:00:00Z", 1),
        ["2026-03-08T09:00Z"]
    );
    assert_eq!(
        runs("0 9 * * 7", "UTC", "2026-03-07T12:00:00Z", 1),
        ["2026-03-08T09:00Z"]
    );
    assert_eq!(
        runs("0 9 * * 5-7", "UTC", "2026-03-05T12:00:00Z", 3),
        ["2026-03-06T09:00Z", "2026-03-07T09:00Z", "2026-03-08T09:00Z"]
    );
    assert_eq!(
        runs("0 9 * * MON", "UTC", "2026-03-07T12:00:00Z", 1),
        ["2026-03-09T09:00Z"]
    );
}

#[test]
fn intervals_are_anchored_at_creation() {
    let spec = Spec::parse(Some("30m"), "UTC").unwrap();
    let a = ms("2026-01-01T10:07:00Z");
    let m = 60_000;
    assert_eq!(spec.next_after(a, a), Some(a + 30 * m));
    // A run that started a minute late keeps the grid.
    assert_eq!(spec.next_after(a + 31 * m, a), Some(a + 60 * m));
    assert_eq!(spec.next_after(a + 60 * m, a), Some(a + 90 * m));
    // Ten hours later: the next slot on the grid, not a burst.
    assert_eq!(spec.next_after(a + 600 * m + 1, a), Some(a + 630 * m));
    // Durations ignore DST: 1d is 24 hours even across Berlin's spring forward.
    let day = Spec::parse(Some("1d"), "Europe/Berlin").unwrap();
    let b = ms("2026-03-28T08:00:00Z");
    assert_eq!(day.next_after(b, b), Some(ms("2026-03-29T08:00:00Z")));
}

#[test]
fn one_shots_have_no_next_and_preview_their_time() {
    let spec = Spec::parse(None, "UTC").unwrap();
    assert_eq!(spec.next_after(0, 0), None);
    assert_eq!(spec.preview(10, 0, Some(20), 3), vec![20]);
    assert_eq!(spec.preview(30, 0, Some(20), 3), Vec::<i64>::new());
}

#[test]
fn descriptions_say_it_in_words() {
    let d = |s: &str, z: &str| Spec::parse(Some(s), z).unwrap().describe(None);
    assert_eq!(
        d("0 9 * * 1-5", "Europe/Berlin"),
        "every weekday at 09:00, Europe/Berlin"
    );
    assert_eq!(d("30 8 * * *", "UTC"), "every day at 08:30, UTC");
    assert_eq!(d("*/15 * * * *", "UTC"), "every 15 minutes, UTC");
    assert_eq!(d("5 * * * *", "UTC"), "every hour at :05, UTC");
    assert_eq!(d("0 18 * * 1,3", "UTC"), "every Monday and Wednesday at 18:00, UTC");
    assert_eq!(d("0 7 1 * *", "UTC"), "on day 1 of every month at 07:00, UTC");
    assert_eq!(d("0 7 1 1 *", "UTC"), "every year on 1 January at 07:00, UTC");
    assert_eq!(d("0 */2 * * *", "UTC"), "every 2 hours at :00, UTC");
    assert_eq!(d("0 9,17 * * *", "UTC"), "every day at 09:00 and 17:00, UTC");
    assert_eq!(d("0,30 9 * * *", "UTC"), "every day at 09:00 and 09:30, UTC");
    assert_eq!(d("0,30 * * * *", "UTC"), "every hour at :00 and :30, UTC");
    assert_eq!(
        d("30 9-17 * * 1-5", "UTC"),
        "every hour from 09:30 to 17:30 on weekdays, UTC"
    );
    assert_eq!(d("*/10 * * * 0,6", "UTC"), "every 10 minutes on weekends, UTC");
    assert_eq!(d("0 9 * * MON-FRI", "UTC"), "every weekday at 09:00, UTC");
    assert_eq!(
        d("0 9 * * 5,1-3", "UTC"),
        "every Monday, Tuesday, Wednesday and Friday at 09:00, UTC"
    );
    assert_eq!(d("0 9 * * 0-6", "UTC"), "every day at 09:00, UTC");
    assert_eq!(d("@weekly", "UTC"), "every Sunday at 00:00, UTC");
    // Shapes without words keep the expression, which the next runs then explain.
    assert_eq!(d("0 9 1-7 * 1", "UTC"), "cron \"0 9 1-7 * 1\", UTC");
    assert_eq!(d("*/5 9-17 * * *", "UTC"), "cron \"*/5 9-17 * * *\", UTC");
    assert_eq!(d("30m", "UTC"), "every 30 minutes");
    assert_eq!(d("2h", "UTC"), "every 2 hours");
    assert_eq!(d("1d", "UTC"), "every day");
    let once = Spec::parse(None, "Europe/Berlin").unwrap();
    assert_eq!(
        once.describe(Some(ms("2026-02-12T08:00:00Z"))),
        "once, at 2026-02-12 09:00, Europe/Berlin"
    );
}

#[test]
fn bad_schedules_and_zones_say_what_to_write() {
    for (s, want) in [
        (
            "61 * * * *",
            "not a valid cron expression: the minute field \"61\" is out of range",
        ),
        ("0 25 * * *", "the hour field \"25\""),
        ("0 9 32 * *", "the day-of-month field \"32\""),
        ("0 9 * 13 *", "the month field \"13\""),
        ("every day", "has 2 fields"),
        ("10s", "shorter than one minute"),
        ("soon", "neither an interval"),
        ("0 9 * * 8", "out of range"),
    ] {
        let e = parse_schedule(Some(s)).unwrap_err();
        assert!(e.contains(want), "{s}: {e}");
        assert!(!e.contains(&format!("0 {s}")), "quotes the crate's 6-field form: {e}");
    }
    let e = parse_zone("Mars/Olympus").unwrap_err();
    assert!(e.contains("not an IANA time zone"), "{e}");
    assert!(matches!(parse_schedule(Some("  ")), Ok(Schedule::Once)));
    assert!(matches!(parse_schedule(Some("@daily")), Ok(Schedule::Cron { .. })));
}

/// The crate's 6- and 7-field dialect has a seconds field; it must not let a routine run
/// more often than the 1-minute minimum that intervals have.
#[test]
fn no_cron_form_runs_more_than_once_a_minute() {
    for s in [
        "* * * * * *",
        "*/10 * * * * *",
        "0/30 * * * * *",
        "0,30 * * * * *",
        "0-59 * * * * *",
        "* * * * * * *",
        "*/5 0 9 * * Mon *",
    ] {
        let e = parse_schedule(Some(s)).unwrap_err();
        assert!(e.contains("more than once a minute"), "{s}: {e}");
        assert!(e.contains("5-field form"), "{s}: {e}");
    }
    // One named second is at most once a minute, and runs on that second.
    let spec = Spec::parse(Some("30 * * * * *"), "UTC").unwrap();
    let from = ms("2026-01-05T10:00:00Z");
    assert_eq!(
        spec.preview(from, 0, None, 3),
        [from + 30_000, from + 90_000, from + 150_000]
    );
    for s in ["* * * * *", "0 9 * * * *", "0 0 9 * * Mon 2030", "@hourly"] {
        assert!(parse_schedule(Some(s)).is_ok(), "{s}");
    }
}

/// Regression (schedule fuzz target): an interval anchored at an extreme, hand-edited time
/// overflowed and panicked the scheduler; now there is simply no next run past the range.
#[test]
fn intervals_at_the_ends_of_time_neither_overflow_nor_panic() {
    let spec = Spec::parse(Some("30m"), "UTC").unwrap();
    assert_eq!(spec.next_after(i64::MAX - 10, i64::MIN), None);
    assert_eq!(spec.next_after(i64::MIN, i64::MAX), None);
    let next = spec.next_after(i64::MIN + 1, i64::MIN).unwrap();
    assert!(next > i64::MIN + 1);
    assert!(spec.preview(i64::MAX - 1, 0, None, 3).is_empty());
}

#[test]
fn the_local_zone_is_named_when_the_system_name_agrees_with_the_offset() {
    let at = Utc.with_ymd_and_hms(2026, 2, 25, 9, 30, 0).unwrap();
    let east8 = FixedOffset::east_opt(8 * 3600).unwrap();
    assert_eq!(zone_label(Some("Asia/Shanghai"), east8, at), "Asia/Shanghai");
    // TZ=UTC-8 set over a Shanghai /etc/localtime: the offset in use wins.
    let west8 = FixedOffset::west_opt(8 * 3600).unwrap();
    assert_eq!(zone_label(Some("Asia/Shanghai"), west8, at), "UTC-08:00");
    assert_eq!(zone_label(None, east8, at), "UTC+08:00");
    assert_eq!(zone_label(Some("Mars/Olympus"), east8, at), "UTC+08:00");
    // Summer time: Berlin is +02:00 in July.
    let july = Utc.with_ymd_and_hms(2026, 7, 1, 12, 0, 0).unwrap();
    let east2 = FixedOffset::east_opt(2 * 3600).unwrap();
    assert_eq!(zone_label(Some("Europe/Berlin"), east2, july), "Europe/Berlin");
}
