//! A cron expression in words, in the pane's style ("every weekday at 09:00", "every 2 hours
//! at :00 on weekends"): the time of day and the days are read apart and put together.
//! Shapes it does not know are shown as the expression itself. Also the words after "every"
//! for an interval; [`super::schedule`] puts a schedule in words through these two.
//!
//! Written here rather than taken from a crate: the crates that describe cron (cron-descriptor,
//! cronspeak) speak another register ("At 09:00 AM, Monday through Friday", 12-hour clock)
//! and would sit beside these phrases in one list.

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// When in the day: at set times, or repeating through it.
enum Time {
    /// "at 09:00", "at 09:00 and 17:00".
    At(String),
    /// "every 15 minutes", "every 2 hours at :00".
    Repeating(String),
}

/// Which days.
enum Days {
    All,
    /// (after "every", after "on"): ("weekday", "weekdays").
    Week(String, String),
    /// Day of every month.
    Month(u32),
    /// Day and month of every year.
    Year(u32, usize),
}

use std::time::Duration;

/// Words for `text`, or `cron "<text>"` when it has a shape without words.
pub(super) fn describe_cron(text: &str) -> String {
    let named = match text {
        "@hourly" => Some("every hour"),
        "@daily" | "@midnight" => Some("every day at 00:00"),
        "@weekly" => Some("every Sunday at 00:00"),
        "@monthly" => Some("on day 1 of every month at 00:00"),
        "@yearly" | "@annually" => Some("every year on 1 January at 00:00"),
        _ => None,
    };
    named
        .map(str::to_string)
        .or_else(|| five_fields(text))
        .unwrap_or_else(|| format!("cron \"{text}\""))
}

fn five_fields(text: &str) -> Option<String> {
    let f: Vec<&str> = text.split_whitespace().collect();
    let [min, hour, dom, month, dow] = f.as_slice() else {
        return None;
    };
    let time = time(min, hour)?;
    let days = days(dom, month, dow)?;
    Some(match (time, days) {
        (Time::At(at), Days::All) => format!("every day {at}"),
        (Time::At(at), Days::Week(every, _)) => format!("every {every} {at}"),
        (Time::At(at), Days::Month(d)) => format!("on day {d} of every month {at}"),
        (Time::At(at), Days::Year(d, m)) => format!("every year on {d} {} {at}", MONTHS[m]),
        (Time::Repeating(r), Days::All) => r,
        (Time::Repeating(r), Days::Week(_, on)) => format!("{r} on {on}"),
        (Time::Repeating(r), Days::Month(d)) => format!("{r} on day {d} of every month"),
        (Time::Repeating(r), Days::Year(d, m)) => format!("{r} on {d} {}", MONTHS[m]),
    })
}

fn num(s: &str) -> Option<u32> {
    s.parse().ok()
}

/// A comma list of plain numbers.
fn numbers(field: &str, max: u32) -> Option<Vec<u32>> {
    field.split(',').map(|p| num(p).filter(|n| *n <= max)).collect()
}

/// "a, b and c".
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn time(min: &str, hour: &str) -> Option<Time> {
    let clock = |h: u32, m: u32| format!("{h:02}:{m:02}");
    let every = |minutes: u32| format!("every {}", duration_words(Duration::from_secs(u64::from(minutes) * 60)));
    if hour == "*" {
        if min == "*" {
            return Some(Time::Repeating("every minute".into()));
        }
        if let Some(step) = min.strip_prefix("*/").and_then(num).filter(|s| (1..60).contains(s)) {
            return Some(Time::Repeating(every(step)));
        }
        let mins: Vec<String> = numbers(min, 59)?.into_iter().map(|m| format!(":{m:02}")).collect();
        return Some(Time::Repeating(format!("every hour at {}", and_list(&mins))));
    }
    let m = num(min).filter(|m| *m < 60);
    if let Some(step) = hour.strip_prefix("*/").and_then(num).filter(|s| (1..24).contains(s)) {
        return Some(Time::Repeating(format!("{} at :{:02}", every(step * 60), m?)));
    }
    if let Some((a, b)) = hour.split_once('-') {
        let (a, b, m) = (num(a).filter(|h| *h < 24)?, num(b).filter(|h| *h < 24)?, m?);
        if a >= b {
            return None;
        }
        return Some(Time::Repeating(format!(
            "every hour from {} to {}",
            clock(a, m),
            clock(b, m)
        )));
    }
    let hours = numbers(hour, 23)?;
    let times: Vec<String> = match (m, hours.as_slice()) {
        (Some(m), _) => hours.iter().map(|h| clock(*h, m)).collect(),
        // "0,30 9 * * *": several minutes of one hour.
        (None, [h]) => numbers(min, 59)?.into_iter().map(|m| clock(*h, m)).collect(),
        (None, _) => return None,
    };
    Some(Time::At(format!("at {}", and_list(&times))))
}

/// A weekday by number (0 and 7 are Sunday) or English abbreviation.
fn weekday(s: &str) -> Option<usize> {
    if let Some(n) = num(s) {
        return (n <= 7).then_some(n as usize % 7);
    }
    let s = s.to_ascii_lowercase();
    DAYS.iter().position(|d| d[..3].eq_ignore_ascii_case(&s))
}

fn days(dom: &str, month: &str, dow: &str) -> Option<Days> {
    match (dom, month, dow) {
        ("*", "*", "*") => Some(Days::All),
        ("*", "*", dow) => week(dow),
        (d, "*", "*") => num(d).filter(|d| (1..=31).contains(d)).map(Days::Month),
        (d, m, "*") => {
            let d = num(d).filter(|d| (1..=31).contains(d))?;
            let m = num(m).filter(|m| (1..=12).contains(m))?;
            Some(Days::Year(d, m as usize - 1))
        }
        _ => None,
    }
}

fn week(dow: &str) -> Option<Days> {
    let pair = |every: &str, on: &str| Some(Days::Week(every.into(), on.into()));
    let mut set = [false; 7];
    for part in dow.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (weekday(a)?, weekday(b)?);
                // "1-7" runs Monday to Sunday: 7 is Sunday at the end of the range.
                let b = if b == 0 && a > 0 { 7 } else { b };
                if a > b {
                    return None;
                }
                for d in a..=b {
                    set[d % 7] = true;
                }
            }
            None => set[weekday(part)?] = true,
        }
    }
    match set {
        [false, true, true, true, true, true, false] => pair("weekday", "weekdays"),
        [true, false, false, false, false, false, true] => pair("weekend day", "weekends"),
        [true, true, true, true, true, true, true] => Some(Days::All),
        _ => {
            // Monday first, as a week is read.
            let names: Vec<String> = (1..=7)
                .map(|d| d % 7)
                .filter(|d| set[*d])
                .map(|d| DAYS[d].to_string())
                .collect();
            let list = and_list(&names);
            pair(&list, &list)
        }
    }
}

/// "15 minutes", "hour", "2 days": the words after "every".
pub(super) fn duration_words(d: Duration) -> String {
    let s = d.as_secs();
    let unit = |n: u64, one: &str| {
        if n == 1 {
            one.to_string()
        } else {
            format!("{n} {one}s")
        }
    };
    if s.is_multiple_of(86_400) {
        unit(s / 86_400, "day")
    } else if s.is_multiple_of(3600) {
        unit(s / 3600, "hour")
    } else if s.is_multiple_of(60) {
        unit(s / 60, "minute")
    } else {
        humantime::format_duration(d).to_string()
    }
}
