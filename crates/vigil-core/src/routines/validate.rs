//! Whether a schedule can be used: the schedule, the zone and a one-shot's time checked
//! together, and the first run time they give. The editor's view shows the same refusal
//! the editing would give, so both read it here.
//!
//! Must never: accept a schedule or zone the scheduler could not use.

use super::model;
use super::schedule::{parse_zone, Schedule, Spec};
use super::store::Refusal;

/// A one-shot may be this far in the past when created (a clock that is a bit ahead).
const PAST_SLACK_MS: i64 = 60_000;

/// Checks a schedule, zone and one-shot time together; the first run time on success.
pub fn validate(
    schedule: Option<&str>,
    next_run_at: Option<i64>,
    timezone: &str,
    now: i64,
    anchor: i64,
) -> Result<(Spec, i64), Refusal> {
    parse_zone(timezone).map_err(|m| Refusal::at("timezone", m))?;
    let spec = Spec::parse(schedule, timezone).map_err(|m| Refusal::at("schedule", m))?;
    let first = match (&spec.schedule, next_run_at) {
        (Schedule::Once, None) => {
            return Err(Refusal::at("schedule", "give a schedule (a cron expression like \"0 9 * * 1-5\" or an interval like \"30m\"), or next_run_at for a one-time routine"))
        }
        (_, Some(t)) if t < now - PAST_SLACK_MS => {
            return Err(Refusal::at(
                "next_run_at",
                format!(
                    "next_run_at {} is in the past (now is {})",
                    model::iso_string(t),
                    model::iso_string(now)
                ),
            ))
        }
        (_, Some(t)) => t,
        (_, None) => spec
            .next_after(now, anchor)
            .ok_or_else(|| Refusal::at("schedule", "this cron expression has no future run time"))?,
    };
    Ok((spec, first))
}
