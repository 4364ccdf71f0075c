//! Schedules: standard cron expressions in a time zone, and their next fire times.
//!
//! The dialect is Unix cron with five fields — `minute hour day-of-month month day-of-week` —
//! where Sunday is 0 or 7 and names (`mon-fri`, `jan`) are allowed; `L`, `W` and `#` work as
//! in croner. A sixth leading field, when given, is seconds. Examples:
//! `0 */6 * * *` every six hours on the hour; `30 8 * * mon-fri` 08:30 on weekdays;
//! `*/15 * * * *` every quarter hour. A time that daylight saving skips runs at the first valid
//! minute after it; a time that repeats runs once.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use croner::Cron;

/// Why a cron expression or its time zone is not one sheriff can schedule by.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("`{0}` is not an IANA time zone (e.g. UTC, Europe/Berlin)")]
    TimeZone(String),
    #[error("`{expression}` has {fields} fields; write 5 (minute hour day month weekday)")]
    Fields { expression: String, fields: usize },
    #[error("`{expression}` is not a cron expression: {why}")]
    NotCron { expression: String, why: String },
    /// It parses, but names no day that comes (February 30th).
    #[error("`{0}` never fires (no such day)")]
    NeverFires(String),
}

/// A parsed cron expression and the time zone it is read in.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    tz: Tz,
    expression: String,
}

impl Schedule {
    pub fn parse(expression: &str, timezone: &str) -> Result<Schedule, CronError> {
        let tz = Tz::from_str(timezone).map_err(|_| CronError::TimeZone(timezone.into()))?;
        let fields = expression.split_whitespace().count();
        if !(5..=6).contains(&fields) {
            return Err(CronError::Fields {
                expression: expression.into(),
                fields,
            });
        }
        let cron = Cron::from_str(expression).map_err(|e| CronError::NotCron {
            expression: expression.into(),
            why: e.to_string(),
        })?;
        let schedule = Schedule {
            cron,
            tz,
            expression: expression.to_string(),
        };
        // `0 0 30 2 *` (February 30th) parses, and would leave its job never run without a word
        if schedule.next_after(Utc::now()).is_none() {
            return Err(CronError::NeverFires(expression.into()));
        }
        Ok(schedule)
    }

    /// The first fire time strictly after `after`.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.cron
            .find_next_occurrence(&after.with_timezone(&self.tz), false)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    /// In words, e.g. "At minute 0 past every 6th hour".
    pub fn describe(&self) -> String {
        self.cron.describe()
    }

    pub fn expression(&self) -> &str {
        &self.expression
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
    }

    #[test]
    fn every_six_hours_from_a_fixed_instant() {
        let s = Schedule::parse("0 */6 * * *", "UTC").unwrap();
        let mut t = at(2026, 11, 29, 17, 5);
        let mut fires = Vec::new();
        for _ in 0..3 {
            t = s.next_after(t).unwrap();
            fires.push(t);
        }
        assert_eq!(
            fires,
            vec![
                at(2026, 11, 29, 18, 0),
                at(2026, 11, 30, 0, 0),
                at(2026, 11, 30, 6, 0)
            ]
        );
    }

    #[test]
    fn weekdays_use_unix_numbering_and_names() {
        // 2026-11-27 is a Friday: the next weekday 08:30 is Monday the 30th.
        let friday_evening = at(2026, 11, 27, 20, 0);
        for expr in ["30 8 * * 1-5", "30 8 * * mon-fri"] {
            let s = Schedule::parse(expr, "UTC").unwrap();
            assert_eq!(
                s.next_after(friday_evening),
                Some(at(2026, 11, 30, 8, 30)),
                "{expr}"
            );
        }
        let sunday = Schedule::parse("0 12 * * 0", "UTC").unwrap();
        assert_eq!(
            sunday.next_after(friday_evening),
            Some(at(2026, 11, 29, 12, 0))
        );
    }

    #[test]
    fn time_zones_and_daylight_saving() {
        // 09:00 in Berlin is 08:00 UTC in winter …
        let s = Schedule::parse("0 9 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            s.next_after(at(2026, 11, 29, 12, 0)),
            Some(at(2026, 11, 30, 8, 0))
        );
        // … and 07:00 UTC in summer.
        assert_eq!(
            s.next_after(at(2026, 7, 1, 12, 0)),
            Some(at(2026, 7, 2, 7, 0))
        );
        // 02:30 does not exist on 2026-03-29 in Berlin: it runs at 03:00 local (01:00 UTC).
        let gap = Schedule::parse("30 2 * * *", "Europe/Berlin").unwrap();
        assert_eq!(
            gap.next_after(at(2026, 3, 28, 12, 0)),
            Some(at(2026, 3, 29, 1, 0))
        );
    }

    #[test]
    fn bad_expressions_and_zones_are_refused() {
        assert!(
            Schedule::parse("0 */6 * *", "UTC")
                .unwrap_err()
                .to_string()
                .contains("4 fields")
        );
        assert!(Schedule::parse("0 25 * * *", "UTC").is_err());
        assert_eq!(
            Schedule::parse("0 * * * *", "Mars/Olympus").unwrap_err(),
            CronError::TimeZone("Mars/Olympus".into())
        );
        assert!(
            Schedule::parse("0 * * * *", "Mars/Olympus")
                .unwrap_err()
                .to_string()
                .contains("time zone")
        );
    }

    #[test]
    fn a_day_that_never_comes_is_refused_and_a_leap_day_is_not() {
        assert!(
            Schedule::parse("0 0 30 2 *", "UTC")
                .unwrap_err()
                .to_string()
                .contains("never fires")
        );
        assert!(
            Schedule::parse("0 0 31 4 *", "UTC")
                .unwrap_err()
                .to_string()
                .contains("never fires")
        );
        let leap = Schedule::parse("0 0 29 2 *", "UTC").unwrap();
        assert_eq!(
            leap.next_after(at(2026, 12, 4, 0, 0)),
            Some(at(2028, 2, 29, 0, 0))
        );
    }
}
