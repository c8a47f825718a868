//! Heartbeat settings as the user wrote them ([`HeartbeatSettings`]) → the values a run
//! uses ([`HeartbeatConfig`]), with a clear warning for everything that had to be replaced
//! by a default. Also the active-hours window, evaluated in its IANA zone so DST shifts are
//! the zone's, not ours.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Timelike};
use vigil_protocol::{ActiveHours, HeartbeatSettings};

use super::prompts::DEFAULT_PROMPT;

/// `ackMaxChars` when unset or out of range (seed 002 §2).
pub const DEFAULT_ACK_MAX_CHARS: usize = 300;
/// The largest `ackMaxChars` accepted.
pub const MAX_ACK_MAX_CHARS: u32 = 20_000;
/// The longest interval accepted (so a typo cannot overflow a timer).
pub const MAX_EVERY: Duration = Duration::from_secs(366 * 24 * 3600);
/// `runTimeoutMinutes` when unset or out of range: seed 003 expects a heartbeat turn to take
/// well under a minute; ten leave room for a slow provider and a few commands.
pub const DEFAULT_RUN_TIMEOUT_MINUTES: u32 = 10;
/// The longest run deadline accepted (a day).
pub const MAX_RUN_TIMEOUT_MINUTES: u32 = 24 * 60;

/// Where wall-clock decisions are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// The computer's zone.
    Local,
    Iana(chrono_tz::Tz),
}

impl Zone {
    /// The IANA zone; `None`: the computer's.
    pub fn tz(&self) -> Option<chrono_tz::Tz> {
        match self {
            Zone::Iana(tz) => Some(*tz),
            Zone::Local => None,
        }
    }

    /// Minutes since local midnight at `ms` (what the active-hours check needs, on every
    /// run: no formatting, no lookup of the zone's name).
    fn minute_of_day(&self, ms: i64) -> Option<u32> {
        let utc = DateTime::from_timestamp_millis(ms)?;
        let (hour, minute) = match self {
            Zone::Iana(tz) => {
                let t = utc.with_timezone(tz);
                (t.hour(), t.minute())
            }
            Zone::Local => {
                let t = utc.with_timezone(&chrono::Local);
                (t.hour(), t.minute())
            }
        };
        Some(hour * 60 + minute)
    }

    /// The local date at `ms`, `YYYY-MM-DD`: the day the background budget counts.
    pub fn date(&self, ms: i64) -> String {
        self.format(ms, "%Y-%m-%d")
    }

    /// The local time at `ms` in chrono's `format`; empty for a time chrono cannot hold.
    pub fn format(&self, ms: i64, format: &str) -> String {
        let Some(utc) = DateTime::from_timestamp_millis(ms) else {
            return String::new();
        };
        match self {
            Zone::Iana(tz) => utc.with_timezone(tz).format(format).to_string(),
            Zone::Local => utc.with_timezone(&chrono::Local).format(format).to_string(),
        }
    }

    /// `Current time: 2026-02-25 17:30 (Asia/Shanghai)`, the line the heartbeat prompt ends
    /// with (seed 002 §3.1).
    pub fn current_time_line(&self, ms: i64) -> String {
        const FORMAT: &str = "%Y-%m-%d %H:%M";
        let Some(utc) = DateTime::from_timestamp_millis(ms) else {
            return format!("Current time: {ms} ms since the Unix epoch");
        };
        let (when, name) = match self {
            Zone::Iana(tz) => (utc.with_timezone(tz).format(FORMAT), tz.name().to_string()),
            Zone::Local => (
                utc.with_timezone(&chrono::Local).format(FORMAT),
                crate::routines::schedule::local_zone_label(utc),
            ),
        };
        format!("Current time: {when} ({name})")
    }
}

/// The active-hours window in minutes since midnight; `end` may be 1440 (`24:00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActiveWindow {
    pub start: u32,
    pub end: u32,
    pub zone: Zone,
}

impl ActiveWindow {
    /// Whether `ms` falls in the window: `[start, end)` in the zone's wall time; across
    /// midnight when `end < start`; never when `start == end`.
    pub fn contains(&self, ms: i64) -> bool {
        let Some(minute) = self.zone.minute_of_day(ms) else {
            return true;
        };
        match self.start.cmp(&self.end) {
            std::cmp::Ordering::Equal => false,
            std::cmp::Ordering::Less => self.start <= minute && minute < self.end,
            std::cmp::Ordering::Greater => minute >= self.start || minute < self.end,
        }
    }
}

/// Settings resolved for use.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatConfig {
    /// What the user wrote, for the status view.
    pub settings: HeartbeatSettings,
    pub enabled: bool,
    /// `None`: no interval runs (event-driven runs still happen).
    pub interval: Option<Duration>,
    pub ack_max_chars: usize,
    pub active: Option<ActiveWindow>,
    /// The zone of `Current time:`: the active hours' zone, else the computer's.
    pub zone: Zone,
    pub prompt: String,
    pub model: Option<String>,
    pub notifications: bool,
    /// Tokens background work may use per local day; `0`: no budget.
    pub daily_token_budget: u64,
    /// The idle gate: after this long with no user message, quiet interval runs stretch the
    /// interval; `None`: off.
    pub idle_after: Option<Duration>,
    /// The longest a run may take before it is ended (`timed-out`).
    pub run_timeout: Duration,
    /// How often the reflection run may happen; `None`: never.
    pub reflection_every: Option<Duration>,
    /// Reflection's routines are made at once instead of suggested.
    pub reflection_adds_routines: bool,
    /// One sentence per problem, naming the field and what is used instead.
    pub warnings: Vec<String>,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        Self::resolve(&HeartbeatSettings::default())
    }
}

impl HeartbeatConfig {
    pub fn resolve(settings: &HeartbeatSettings) -> Self {
        let mut warnings = Vec::new();
        let interval = match parse_every(&settings.every) {
            Ok(d) => d,
            Err(e) => {
                warnings.push(e);
                None
            }
        };
        let ack_max_chars = if settings.ack_max_chars > MAX_ACK_MAX_CHARS {
            warnings.push(format!(
                "Heartbeat ackMaxChars {} is out of range (0–{MAX_ACK_MAX_CHARS}); using {DEFAULT_ACK_MAX_CHARS}.",
                settings.ack_max_chars
            ));
            DEFAULT_ACK_MAX_CHARS
        } else {
            settings.ack_max_chars as usize
        };
        let (active, zone) = match &settings.active_hours {
            None => (None, Zone::Local),
            Some(hours) => {
                let (window, problems) = active_window(hours);
                warnings.extend(problems);
                (window, window.map_or(Zone::Local, |w| w.zone))
            }
        };
        let run_timeout_minutes = match settings.run_timeout_minutes {
            m @ 1..=MAX_RUN_TIMEOUT_MINUTES => m,
            m => {
                warnings.push(format!(
                    "Heartbeat runTimeoutMinutes {m} is out of range (1–{MAX_RUN_TIMEOUT_MINUTES}); using {DEFAULT_RUN_TIMEOUT_MINUTES}."
                ));
                DEFAULT_RUN_TIMEOUT_MINUTES
            }
        };
        let prompt = settings
            .prompt
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .unwrap_or(DEFAULT_PROMPT)
            .to_string();
        let model = settings
            .model
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(String::from);
        Self {
            settings: settings.clone(),
            enabled: settings.enabled,
            interval,
            ack_max_chars,
            active,
            zone,
            prompt,
            model,
            notifications: settings.notifications,
            daily_token_budget: settings.daily_token_budget,
            run_timeout: Duration::from_secs(u64::from(run_timeout_minutes) * 60),
            idle_after: (settings.idle_after_hours > 0)
                .then(|| Duration::from_secs(u64::from(settings.idle_after_hours.min(24 * 366)) * 3600)),
            reflection_every: (settings.reflection_every_hours > 0)
                .then(|| Duration::from_secs(u64::from(settings.reflection_every_hours.min(24 * 366)) * 3600)),
            reflection_adds_routines: settings.reflection_adds_routines,
            warnings,
        }
    }

    /// Whether `ms` is inside the active hours (always, when none are set).
    pub fn is_active_at(&self, ms: i64) -> bool {
        self.active.is_none_or(|w| w.contains(ms))
    }
}

/// `every` → the interval: `30m`, `1h30m`, `90s`; a bare number is minutes. `Ok(None)` for
/// zero (interval runs off); `Err` with a message for anything unreadable.
pub fn parse_every(every: &str) -> Result<Option<Duration>, String> {
    let text = every.trim();
    let invalid = || {
        format!(
            "Heartbeat interval \"{every}\" is not a duration (examples: 30m, 1h, 1h30m, or 45 for minutes); interval heartbeats are off until it is fixed."
        )
    };
    if text.is_empty() {
        return Err(invalid());
    }
    let duration = if let Ok(minutes) = text.parse::<f64>() {
        if !minutes.is_finite() || minutes < 0.0 {
            return Err(invalid());
        }
        Duration::try_from_secs_f64(minutes * 60.0).map_err(|_| invalid())?
    } else {
        humantime::parse_duration(text).map_err(|_| invalid())?
    };
    if duration.is_zero() {
        return Ok(None);
    }
    if duration > MAX_EVERY {
        return Err(format!(
            "Heartbeat interval \"{every}\" is longer than a year; interval heartbeats are off until it is fixed."
        ));
    }
    Ok(Some(duration))
}

/// `HH:MM` → minutes since midnight; `24:00` only where `allow_24` (an end).
pub fn parse_hhmm(text: &str, allow_24: bool) -> Option<u32> {
    let (h, m) = text.trim().split_once(':')?;
    if h.is_empty() || h.len() > 2 || m.len() != 2 {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    match (h, m) {
        (24, 0) if allow_24 => Some(1440),
        (0..=23, 0..=59) => Some(h * 60 + m),
        _ => None,
    }
}

fn active_window(hours: &ActiveHours) -> (Option<ActiveWindow>, Vec<String>) {
    let mut warnings = Vec::new();
    let zone = match hours.timezone.as_deref().map(str::trim) {
        None | Some("") => Zone::Local,
        Some(z) if z.eq_ignore_ascii_case("local") => Zone::Local,
        Some(z) => match chrono_tz::Tz::from_str(z) {
            Ok(tz) => Zone::Iana(tz),
            Err(_) => {
                warnings.push(format!(
                    "Active hours time zone \"{z}\" is unknown (use an IANA name such as Europe/Berlin); using this computer's time zone."
                ));
                Zone::Local
            }
        },
    };
    let start = parse_hhmm(&hours.start, false);
    let end = parse_hhmm(&hours.end, true);
    match (start, end) {
        (Some(start), Some(end)) => (Some(ActiveWindow { start, end, zone }), warnings),
        _ => {
            warnings.push(format!(
                "Active hours \"{}\"–\"{}\" are not HH:MM times (00:00–23:59, end may be 24:00); the heartbeat runs at all hours until they are fixed.",
                hours.start, hours.end
            ));
            (None, warnings)
        }
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
