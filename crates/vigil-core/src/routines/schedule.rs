//! When a routine runs: cron expressions (the `cron` crate) read in the routine's IANA zone
//! (chrono-tz), intervals (`30m`, `2h`, `1d`, humantime), and one-shots; the plain-language
//! description and the next-runs preview the editor shows, with the same validation the
//! agent's tools use.
//!
//! ## Cron dialect
//! Users and models write the standard 5-field form (`min hour day month weekday`, weekday
//! 0–7 with 0 and 7 = Sunday). The `cron` crate wants seconds first and counts weekdays 1–7
//! from Sunday, so a 5-field expression gets `0` seconds prepended and its numeric weekdays
//! rewritten as names (`1-5` → `MON-FRI`). 6- and 7-field expressions are passed to the crate
//! as they are (its own dialect), except that their seconds field must name one second:
//! nothing runs more often than once a minute (`* * * * * *` or `*/10 * * * * *` would start
//! a run every few seconds, each a model call the user pays for). `@daily`, `@hourly`, … work
//! too.
//!
//! ## Daylight saving time (wall-clock semantics, seed 003 §11.3)
//! A cron routine follows the zone's calendar: `0 9 * * *` is 09:00 local all year.
//! - **Spring-forward gap**: a wall-clock time that does not exist that day runs once, at
//!   the first instant after the gap (02:30 in Berlin on the last Sunday of March runs at
//!   03:00 CEST). Several times inside one gap collapse into that one run.
//! - **Repeated hour** (fall back): a wall-clock time that happens twice runs once, at its
//!   first occurrence (the earlier, summer-time instant).
//!
//! Intervals are durations, not wall-clock: `30m` is always 30 minutes, anchored at the
//! routine's `created_at` (runs at created + k·interval however late a run was).
//!
//! Must never: read the system clock (every function takes `now`), or run anything.

use std::collections::HashMap;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, FixedOffset, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

use super::describe::{describe_cron, duration_words};

/// The shortest interval accepted: the scheduler works in minutes.
pub const MIN_INTERVAL: Duration = Duration::from_secs(60);
/// The longest interval accepted.
pub const MAX_INTERVAL: Duration = Duration::from_secs(366 * 24 * 3600);

/// A parsed schedule.
#[derive(Debug, Clone)]
pub enum Schedule {
    Cron {
        /// What the user wrote.
        text: String,
        cron: Box<cron::Schedule>,
    },
    Every(Duration),
    /// No schedule: runs at `next_run_at` only.
    Once,
}

/// A schedule with the zone it is read in.
#[derive(Debug, Clone)]
pub struct Spec {
    pub schedule: Schedule,
    pub tz: Tz,
}

/// Parses a schedule as users write it. Errors are sentences a model can act on.
pub fn parse_schedule(text: Option<&str>) -> Result<Schedule, String> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) else {
        return Ok(Schedule::Once);
    };
    let fields: Vec<&str> = text.split_whitespace().collect();
    if fields.len() == 1 && !text.starts_with('@') {
        let d = humantime::parse_duration(text).map_err(|e| {
            format!("\"{text}\" is neither an interval (like 30m, 2h, 1d) nor a cron expression (like \"0 9 * * 1-5\"): {e}")
        })?;
        if d < MIN_INTERVAL {
            return Err(format!(
                "the interval \"{text}\" is shorter than one minute; use 1m or more"
            ));
        }
        if d > MAX_INTERVAL {
            return Err(format!("the interval \"{text}\" is longer than a year"));
        }
        return Ok(Schedule::Every(d));
    }
    let crate_form = match fields.len() {
        _ if text.starts_with('@') => text.to_string(),
        5 => {
            let dow = weekday_names(fields[4])?;
            format!("0 {} {} {} {} {dow}", fields[0], fields[1], fields[2], fields[3])
        }
        6 | 7 => text.to_string(),
        n => {
            return Err(format!(
                "\"{text}\" has {n} fields; a cron expression has 5: minute hour day-of-month month day-of-week (like \"0 9 * * 1-5\")"
            ))
        }
    };
    let cron = cron::Schedule::from_str(&crate_form).map_err(|e| {
        // The crate's message quotes its own 6-field form; name the user's field instead.
        let why = (fields.len() == 5)
            .then(|| bad_cron_field(&fields))
            .flatten()
            .unwrap_or_else(|| e.to_string());
        format!("\"{text}\" is not a valid cron expression: {why}; the form is minute hour day-of-month month day-of-week, like \"30 8 * * *\"")
    })?;
    // Checked on the parsed set, not the text, so `0,30`, `0-59` and `*/1` are caught alike.
    if cron::TimeUnitSpec::count(cron.seconds()) > 1 {
        return Err(format!(
            "\"{text}\" runs more than once a minute (its first field is seconds); routines run at most once a minute: use the 5-field form minute hour day-of-month month day-of-week, like \"* * * * *\" for every minute"
        ));
    }
    Ok(Schedule::Cron {
        text: text.to_string(),
        cron: Box::new(cron),
    })
}

/// The first of five cron fields that is invalid on its own, in the user's words.
fn bad_cron_field(fields: &[&str]) -> Option<String> {
    const FIELDS: [(&str, &str); 5] = [
        ("minute", "0-59"),
        ("hour", "0-23"),
        ("day-of-month", "1-31"),
        ("month", "1-12 or JAN-DEC"),
        ("day-of-week", "0-7 or SUN-SAT"),
    ];
    FIELDS.iter().enumerate().find_map(|(i, (name, range))| {
        let mut probe = ["*"; 5].map(str::to_string);
        probe[i] = if i == 4 {
            weekday_names(fields[4]).ok()?
        } else {
            fields[i].to_string()
        };
        let form = format!("0 {}", probe.join(" "));
        cron::Schedule::from_str(&form).is_err().then(|| {
            format!(
                "the {name} field \"{}\" is out of range or malformed (it takes {range}, lists like 1,15, ranges like 1-5 and steps like */10)",
                fields[i]
            )
        })
    })
}

/// Standard weekday numbers (0–7, Sunday = 0 or 7) → names, which mean the same in the
/// crate's dialect. Steps (`*/2`) and names pass through.
fn weekday_names(field: &str) -> Result<String, String> {
    const NAMES: [&str; 8] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"];
    let name = |n: &str| -> Result<String, String> {
        match n.parse::<usize>() {
            Ok(i) if i < NAMES.len() => Ok(NAMES[i].to_string()),
            Ok(i) => Err(format!("day-of-week {i} is out of range (0-7, 0 and 7 are Sunday)")),
            Err(_) => Ok(n.to_string()),
        }
    };
    let mut parts = Vec::new();
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (item, None),
        };
        let mapped = match range.split_once('-') {
            // `5-7` (Friday to Sunday) would wrap in names: split it.
            Some((a, "7")) if a != "0" => {
                let head = format!("{}-SAT", name(a)?);
                parts.push(step.map_or(head.clone(), |s| format!("{head}/{s}")));
                "SUN".to_string()
            }
            Some((a, b)) => format!("{}-{}", name(a)?, name(b)?),
            None => name(range)?,
        };
        parts.push(match step {
            Some(s) => format!("{mapped}/{s}"),
            None => mapped,
        });
    }
    Ok(parts.join(","))
}

/// Parses an IANA zone name.
pub fn parse_zone(name: &str) -> Result<Tz, String> {
    Tz::from_str(name.trim()).map_err(|_| {
        format!("\"{name}\" is not an IANA time zone; use a name like Europe/Berlin, America/New_York or UTC")
    })
}

/// The user's zone as an IANA name (`UTC` when the system does not say).
pub fn local_zone_name() -> String {
    iana_time_zone::get_timezone()
        .ok()
        .filter(|z| parse_zone(z).is_ok())
        .unwrap_or_else(|| "UTC".into())
}

/// What to call the machine's zone at `at`, for the model: its IANA name (`Asia/Shanghai`,
/// as seed 002 §3.1 writes the heartbeat's time line) when the system names one that agrees
/// with the offset in use (`TZ` can differ from `/etc/localtime`), else `UTC+08:00`.
pub fn local_zone_label(at: DateTime<Utc>) -> String {
    let offset = at.with_timezone(&chrono::Local).offset().fix();
    zone_label(iana_time_zone::get_timezone().ok().as_deref(), offset, at)
}

fn zone_label(name: Option<&str>, offset: FixedOffset, at: DateTime<Utc>) -> String {
    name.and_then(|n| parse_zone(n).ok())
        .filter(|tz| at.with_timezone(tz).offset().fix() == offset)
        .map(|tz| tz.name().to_string())
        .unwrap_or_else(|| format!("UTC{offset}"))
}

/// Parsed specs by (schedule, zone): a tick over a thousand routines must not parse a
/// thousand cron expressions. Bounded by clearing; entries are pure functions of the key.
type Memo = std::sync::Mutex<HashMap<(String, String), Result<Spec, String>>>;
static PARSED: std::sync::OnceLock<Memo> = std::sync::OnceLock::new();
/// Entries kept before the memo is cleared.
const MEMO_LIMIT: usize = 4096;

impl Spec {
    pub fn parse(schedule: Option<&str>, timezone: &str) -> Result<Self, String> {
        let key = (schedule.unwrap_or("").trim().to_string(), timezone.trim().to_string());
        let memo = PARSED.get_or_init(Default::default);
        if let Some(hit) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return hit.clone();
        }
        let parsed = parse_schedule(schedule).and_then(|schedule| {
            Ok(Self {
                schedule,
                tz: parse_zone(timezone)?,
            })
        });
        let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
        if memo.len() >= MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(key, parsed.clone());
        parsed
    }

    /// The first run strictly after `after_ms`; `anchor_ms` anchors intervals. `None` for a
    /// one-shot, or a cron expression with no future time.
    pub fn next_after(&self, after_ms: i64, anchor_ms: i64) -> Option<i64> {
        match &self.schedule {
            Schedule::Once => None,
            Schedule::Every(d) => {
                // In i128: a hand-edited `created_at` (the anchor) may be anywhere in i64, and
                // an overflow here once stopped the scheduler (found by the schedule fuzz target).
                let p = d.as_millis().max(1) as i128;
                let (after, anchor) = (i128::from(after_ms), i128::from(anchor_ms));
                let k = if after < anchor { 1 } else { (after - anchor) / p + 1 };
                i64::try_from(anchor + k * p).ok()
            }
            Schedule::Cron { cron, .. } => cron_next_after(cron, self.tz, after_ms),
        }
    }

    /// The next `n` runs after `now_ms` (for a one-shot: `next_run_at` if still ahead).
    pub fn preview(&self, now_ms: i64, anchor_ms: i64, once_at: Option<i64>, n: usize) -> Vec<i64> {
        if let Schedule::Once = self.schedule {
            return once_at.filter(|t| *t > now_ms).into_iter().collect();
        }
        let mut out = Vec::with_capacity(n);
        let mut t = now_ms;
        while out.len() < n {
            match self.next_after(t, anchor_ms) {
                Some(next) => {
                    out.push(next);
                    t = next;
                }
                None => break,
            }
        }
        out
    }

    /// "every weekday at 09:00, Europe/Berlin".
    pub fn describe(&self, once_at: Option<i64>) -> String {
        let zone = self.tz.name();
        match &self.schedule {
            Schedule::Every(d) => format!("every {}", duration_words(*d)),
            Schedule::Once => match once_at.and_then(DateTime::<Utc>::from_timestamp_millis) {
                Some(t) => format!(
                    "once, at {}, {zone}",
                    t.with_timezone(&self.tz).format("%Y-%m-%d %H:%M")
                ),
                None => "once (no time set)".into(),
            },
            Schedule::Cron { text, .. } => format!("{}, {zone}", describe_cron(text)),
        }
    }
}

/// Next cron time after `after_ms` with the DST rules above: candidates are found on the
/// zone's wall clock (the crate run over naive local times, in UTC, which has no DST), then
/// placed on the real time line.
fn cron_next_after(cron: &cron::Schedule, tz: Tz, after_ms: i64) -> Option<i64> {
    let after = DateTime::<Utc>::from_timestamp_millis(after_ms)?;
    let local = after.with_timezone(&tz).naive_local();
    for candidate in cron.after(&Utc.from_utc_datetime(&local)).take(10_000) {
        let naive = candidate.naive_utc();
        let instant = match tz.from_local_datetime(&naive) {
            chrono::LocalResult::Single(t) => t.timestamp_millis(),
            // The repeated hour: the first occurrence only.
            chrono::LocalResult::Ambiguous(first, _) => first.timestamp_millis(),
            chrono::LocalResult::None => gap_end(tz, naive)?,
        };
        if instant > after_ms {
            return Some(instant);
        }
    }
    None
}

/// The first instant after the spring-forward gap that swallowed `naive`.
fn gap_end(tz: Tz, naive: NaiveDateTime) -> Option<i64> {
    let mut t = naive;
    // Gaps are whole minutes; the longest on record is a day (Samoa, 2011).
    for _ in 0..(25 * 60) {
        t += chrono::Duration::minutes(1);
        let t0 = t
            .date()
            .and_hms_opt(chrono::Timelike::hour(&t), chrono::Timelike::minute(&t), 0)?;
        match tz.from_local_datetime(&t0) {
            chrono::LocalResult::Single(x) => return Some(x.timestamp_millis()),
            chrono::LocalResult::Ambiguous(x, _) => return Some(x.timestamp_millis()),
            chrono::LocalResult::None => continue,
        }
    }
    None
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
