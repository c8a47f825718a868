//! Tokens spent on background work (heartbeat runs, routine jobs, continuations) per local
//! day, and the daily budget that pauses background model calls once they are spent.
//!
//! The day's totals live in `sessions/background_usage.json`, replaced atomically after each
//! run, so a restart neither forgets what was spent nor raises the budget's notification again.
//! Only today is kept: a new local date starts from zero (the budget resumes by itself).
//!
//! [`Budget`] is the account every background run is charged to ([`super::start`] charges it
//! after the run; the heartbeat, continuations and jobs ask it before they call the model). The
//! limit and the day's zone are the heartbeat settings' (`dailyTokenBudget`, its time zone).
//!
//! Must never: block a run on a file error (the totals stay in memory and the run goes on);
//! notify twice for the same day and budget.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use serde::{Deserialize, Serialize};
use vigil_protocol::{Event, NotificationKind, Scope, Source, Usage};

use crate::clock::Clock;
use crate::events::Emitter;

/// The daily account of background work: today's tokens against the limit.
#[derive(Clone)]
pub struct Budget {
    shared: Arc<Account>,
}

struct Account {
    ledger: Ledger,
    /// Tokens a day; 0: no budget.
    limit: AtomicU64,
    /// The zone whose midnight starts a new day; `None`: the computer's. `std` lock: read for a copy.
    zone: RwLock<Option<chrono_tz::Tz>>,
    emitter: Emitter,
    clock: Arc<dyn Clock>,
}

impl Budget {
    /// Opens the account kept in `sessions_dir`, with no limit until [`Self::set`].
    pub fn open(sessions_dir: &Path, emitter: Emitter, clock: Arc<dyn Clock>) -> Self {
        Self {
            shared: Arc::new(Account {
                ledger: Ledger::open(sessions_dir),
                limit: AtomicU64::new(0),
                zone: RwLock::new(None),
                emitter,
                clock,
            }),
        }
    }

    /// The daily limit (0: none) and the zone of the day, from the heartbeat settings.
    pub fn set(&self, limit: u64, zone: Option<chrono_tz::Tz>) {
        self.shared.limit.store(limit, Ordering::Relaxed);
        *self.shared.zone.write().unwrap_or_else(|e| e.into_inner()) = zone;
    }

    pub fn limit(&self) -> u64 {
        self.shared.limit.load(Ordering::Relaxed)
    }

    /// The local date now, `YYYY-MM-DD`.
    fn date(&self) -> String {
        let now = self.shared.clock.now_ms();
        let Some(utc) = chrono::DateTime::from_timestamp_millis(now) else {
            return String::new();
        };
        match *self.shared.zone.read().unwrap_or_else(|e| e.into_inner()) {
            Some(tz) => utc.with_timezone(&tz).format("%Y-%m-%d").to_string(),
            None => utc.with_timezone(&chrono::Local).format("%Y-%m-%d").to_string(),
        }
    }

    /// Charges a background run's tokens to today.
    pub fn charge(&self, usage: Usage) {
        self.shared.ledger.add(&self.date(), usage);
    }

    /// Today's totals.
    pub fn today(&self) -> Day {
        self.shared.ledger.today(&self.date())
    }

    /// Whether today's budget is spent, without telling anyone (the status view).
    pub fn is_spent(&self) -> bool {
        self.shared.ledger.spent(&self.date(), self.limit())
    }

    /// Whether today's budget is spent; the first time it is (per day and budget), one
    /// notification says so. The caller skips its model call.
    pub fn spent(&self) -> bool {
        let (today, limit) = (self.date(), self.limit());
        if !self.shared.ledger.spent(&today, limit) {
            return false;
        }
        if self.shared.ledger.first_notice(&today, limit) {
            let body = format!(
                "Background work used today's {limit} tokens; the heartbeat, routines that need the model and \
                 continuations wait until tomorrow or a higher budget (Settings → Heartbeat)."
            );
            tracing::info!("{body}");
            self.shared
                .emitter
                .for_session(crate::session::PRIMARY_SESSION, Scope::Primary)
                .emit(
                    Source::Heartbeat,
                    Event::notice(NotificationKind::Budget, "Vigil: background budget spent", body),
                );
        }
        true
    }
}

/// The file, in the `sessions` folder.
pub const FILE: &str = "background_usage.json";

/// One day's background totals.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Day {
    /// The local date, `YYYY-MM-DD`.
    pub date: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub cost_micro_usd: u64,
    /// Background runs that reached the model.
    pub runs: u64,
    /// The budget the "budget spent" notification was raised for today, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notified_budget: Option<u64>,
}

impl Day {
    pub fn tokens(&self) -> u64 {
        self.usage().total()
    }

    /// The day's totals as one [`Usage`].
    pub fn usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_write_tokens: self.cache_write_tokens,
            cost_micro_usd: self.cost_micro_usd,
        }
    }
}

/// The durable daily ledger.
struct Ledger {
    path: PathBuf,
    /// `std` lock: never held across an await.
    day: Mutex<Day>,
}

impl Ledger {
    /// Opens the ledger in `sessions_dir`; a missing or unreadable file starts empty.
    pub fn open(sessions_dir: &Path) -> Self {
        let path = sessions_dir.join(FILE);
        let day = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        Self {
            path,
            day: Mutex::new(day),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Day> {
        self.day.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Today's totals (zero on a new date).
    pub fn today(&self, date: &str) -> Day {
        let day = self.lock();
        if day.date == date {
            day.clone()
        } else {
            Day {
                date: date.to_string(),
                ..Day::default()
            }
        }
    }

    /// Adds one run's tokens to `date`'s totals and writes them.
    pub fn add(&self, date: &str, usage: Usage) -> Day {
        let snapshot = {
            let mut day = self.lock();
            if day.date != date {
                *day = Day {
                    date: date.to_string(),
                    ..Day::default()
                };
            }
            let mut sum = day.usage();
            sum += usage;
            (day.input_tokens, day.output_tokens) = (sum.input_tokens, sum.output_tokens);
            (day.cache_read_tokens, day.cache_write_tokens) = (sum.cache_read_tokens, sum.cache_write_tokens);
            day.cost_micro_usd = sum.cost_micro_usd;
            day.runs += 1;
            day.clone()
        };
        self.write(&snapshot);
        snapshot
    }

    /// Whether `budget` tokens (0: no budget) are spent on `date`.
    pub fn spent(&self, date: &str, budget: u64) -> bool {
        budget > 0 && self.today(date).tokens() >= budget
    }

    /// True once per date and budget: the caller raises the notification.
    pub fn first_notice(&self, date: &str, budget: u64) -> bool {
        let snapshot = {
            let mut day = self.lock();
            if day.date != date {
                *day = Day {
                    date: date.to_string(),
                    ..Day::default()
                };
            }
            if day.notified_budget == Some(budget) {
                return false;
            }
            day.notified_budget = Some(budget);
            day.clone()
        };
        self.write(&snapshot);
        true
    }

    fn write(&self, day: &Day) {
        let bytes = match serde_json::to_vec_pretty(day) {
            Ok(b) => b,
            Err(e) => return tracing::warn!("could not encode the background usage: {e}"),
        };
        if let Err(e) = crate::durable::write_atomic(&self.path, &bytes) {
            tracing::warn!("could not save the background usage to {}: {e}", self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    #[test]
    fn totals_survive_a_restart_and_a_new_day_starts_from_zero() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path());
        ledger.add("2026-11-24", usage(100, 20));
        ledger.add("2026-11-24", usage(50, 5));
        assert!(ledger.first_notice("2026-11-24", 100));
        let again = Ledger::open(dir.path());
        let day = again.today("2026-11-24");
        assert_eq!((day.input_tokens, day.output_tokens, day.runs), (150, 25, 2));
        assert!(again.spent("2026-11-24", 175));
        assert!(!again.spent("2026-11-24", 176));
        assert!(!again.spent("2026-11-24", 0), "0 is no budget");
        assert!(
            !again.first_notice("2026-11-24", 100),
            "one notification per day and budget"
        );
        assert!(
            again.first_notice("2026-11-24", 500),
            "a raised budget may be spent and said again"
        );
        assert_eq!(again.today("2026-11-25").tokens(), 0);
        assert!(!again.spent("2026-11-25", 175));
    }
}
