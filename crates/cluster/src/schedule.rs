//! CronJob schedules as upstream reads them (robfig/cron's standard parser): five fields
//! (minute, hour, day of month, month, day of week) with `*`, `?`, lists, ranges, steps and
//! month and weekday names, or a descriptor (`@yearly`, `@annually`, `@monthly`, `@weekly`,
//! `@daily`, `@midnight`, `@hourly`, `@every <duration>`). Day of month and day of week are
//! ORed when both are restricted, ANDed when either is `*`. Times are UTC.

use chrono::{DateTime, Datelike, Duration, TimeZone, Timelike, Utc};

/// A parsed schedule.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Schedule {
    /// Fields as bit sets, and whether day of month or day of week was a star.
    Fields {
        minute: u64,
        hour: u64,
        dom: u64,
        month: u64,
        dow: u64,
        day_star: bool,
    },
    /// `@every`: a fixed delay, in whole seconds (at least one).
    Every(i64),
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Parses a schedule (`None` if it does not parse; the API server validated it).
pub(crate) fn parse(spec: &str) -> Option<Schedule> {
    let spec = spec.trim();
    let fields = match spec {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ if spec.starts_with("@every ") => {
            let d = crate::script::parse_duration(spec["@every ".len()..].trim())?;
            return Some(Schedule::Every((d.as_secs() as i64).max(1)));
        }
        _ => spec,
    };
    let f: Vec<&str> = fields.split_whitespace().collect();
    if f.len() != 5 {
        return None;
    }
    let (minute, _) = field(f[0], 0, 59, &[])?;
    let (hour, _) = field(f[1], 0, 23, &[])?;
    let (dom, dom_star) = field(f[2], 1, 31, &[])?;
    let (month, _) = field(f[3], 1, 12, &MONTHS)?;
    let (mut dow, dow_star) = field(f[4], 0, 7, &DAYS)?;
    // 7 is Sunday too.
    if dow & (1 << 7) != 0 {
        dow |= 1;
    }
    Some(Schedule::Fields {
        minute,
        hour,
        dom,
        month,
        dow,
        day_star: dom_star || dow_star,
    })
}

/// A field's bits, and whether it was an unstepped star.
fn field(f: &str, min: u32, max: u32, names: &[&str]) -> Option<(u64, bool)> {
    let mut bits = 0u64;
    let mut star = false;
    for expr in f.split(',').filter(|e| !e.is_empty()) {
        let (range, step) = match expr.split_once('/') {
            Some((r, s)) => (r, Some(s.parse::<u32>().ok().filter(|s| *s > 0)?)),
            None => (expr, None),
        };
        let value = |s: &str| -> Option<u32> {
            let lower = s.to_ascii_lowercase();
            match names.iter().position(|n| *n == lower) {
                // Months count from 1, weekdays from 0.
                Some(i) => Some(i as u32 + min),
                None => s.parse().ok(),
            }
        };
        let (start, end) = if range == "*" || range == "?" {
            if step.is_none_or(|s| s == 1) {
                star = true;
            }
            (min, max)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a)?, value(b)?)
        } else {
            let v = value(range)?;
            (v, if step.is_some() { max } else { v })
        };
        if start < min || end > max || start > end {
            return None;
        }
        // Steps as large as the parser takes (any u32) must not overflow.
        let mut v = u64::from(start);
        while v <= u64::from(end) {
            bits |= 1 << v;
            v += u64::from(step.unwrap_or(1));
        }
    }
    Some((bits, star))
}

impl Schedule {
    /// The first time strictly after `t` (whole minutes for fields), within five years.
    pub(crate) fn next(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let (minute, hour, dom, month, dow, day_star) = match *self {
            Schedule::Every(secs) => {
                let base = t.with_nanosecond(0)?;
                return Some(base + Duration::seconds(secs));
            }
            Schedule::Fields {
                minute,
                hour,
                dom,
                month,
                dow,
                day_star,
            } => (minute, hour, dom, month, dow, day_star),
        };
        let limit = t + Duration::days(5 * 366);
        let mut t = t.with_nanosecond(0)?.with_second(0)? + Duration::minutes(1);
        let bit = |set: u64, v: u32| set & (1 << v) != 0;
        while t <= limit {
            if !bit(month, t.month()) {
                let (y, m) = if t.month() == 12 {
                    (t.year() + 1, 1)
                } else {
                    (t.year(), t.month() + 1)
                };
                t = Utc.with_ymd_and_hms(y, m, 1, 0, 0, 0).single()?;
                continue;
            }
            let dom_ok = bit(dom, t.day());
            let dow_ok = bit(dow, t.weekday().num_days_from_sunday());
            let day_ok = if day_star {
                dom_ok && dow_ok
            } else {
                dom_ok || dow_ok
            };
            if !day_ok {
                t = Utc
                    .with_ymd_and_hms(t.year(), t.month(), t.day(), 0, 0, 0)
                    .single()?
                    + Duration::days(1);
                continue;
            }
            if !bit(hour, t.hour()) {
                t = t.with_minute(0)? + Duration::hours(1);
                continue;
            }
            if !bit(minute, t.minute()) {
                t += Duration::minutes(1);
                continue;
            }
            return Some(t);
        }
        None
    }

    /// The latest time in `(earliest, now]`, and how many there were (past 100, as
    /// upstream's "too many missed start times", the count is no longer exact).
    pub(crate) fn most_recent(
        &self,
        earliest: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> (Option<DateTime<Utc>>, usize) {
        if let Schedule::Every(secs) = *self {
            let Some(base) = earliest.with_nanosecond(0) else {
                return (None, 0);
            };
            let count = (now - base).num_seconds().max(0) / secs;
            let last = (count > 0).then(|| base + Duration::seconds(count * secs));
            return (last, count as usize);
        }
        let mut last = None;
        let mut count = 0;
        let mut t = earliest;
        while let Some(next) = self.next(t) {
            if next > now {
                break;
            }
            count += 1;
            last = Some(next);
            t = next;
            // Far behind: the most recent of any schedule that missed this often lies in
            // the last month (monthly ones at most).
            if count > 100 && t < now - Duration::days(31) {
                t = now - Duration::days(31);
            }
        }
        (last, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn fields_and_descriptors_give_the_next_time() {
        let t = at("2026-03-14T10:17:30Z");
        let next = |spec: &str| parse(spec).unwrap().next(t).unwrap();
        assert_eq!(next("* * * * *"), at("2026-03-14T10:18:00Z"));
        assert_eq!(next("*/15 * * * *"), at("2026-03-14T10:30:00Z"));
        assert_eq!(next("5 9-17/4 * * *"), at("2026-03-14T13:05:00Z"));
        assert_eq!(next("@hourly"), at("2026-03-14T11:00:00Z"));
        assert_eq!(next("@daily"), at("2026-03-15T00:00:00Z"));
        // 2026-03-14 is a Saturday.
        assert_eq!(next("0 8 * * mon-fri"), at("2026-03-16T08:00:00Z"));
        assert_eq!(next("0 0 * * 7"), at("2026-03-15T00:00:00Z"));
        assert_eq!(next("0 0 1 jan *"), at("2027-01-01T00:00:00Z"));
        assert_eq!(next("@monthly"), at("2026-04-01T00:00:00Z"));
        // Both days restricted: either matches (the 20th, or the next Monday).
        assert_eq!(next("0 0 20 * 1"), at("2026-03-16T00:00:00Z"));
        assert_eq!(next("@every 90s"), at("2026-03-14T10:19:00Z"));
        assert!(parse("61 * * * *").is_none());
        assert!(parse("* * * *").is_none());
        assert!(parse("1-5/0 * * * *").is_none());
        assert_eq!(
            parse("1-5/4294967295 * * * *").unwrap().next(t).unwrap(),
            at("2026-03-14T11:01:00Z")
        );
        assert!(parse("0 0 31 2 *").unwrap().next(t).is_none());
    }

    #[test]
    fn the_most_recent_time_counts_the_missed() {
        let s = parse("*/10 * * * *").unwrap();
        let (last, n) = s.most_recent(at("2026-03-14T10:00:00Z"), at("2026-03-14T10:35:00Z"));
        assert_eq!(last, Some(at("2026-03-14T10:30:00Z")));
        assert_eq!(n, 3);
        let (last, n) = s.most_recent(at("2026-03-14T10:00:00Z"), at("2026-03-14T10:05:00Z"));
        assert_eq!((last, n), (None, 0));
        let (last, n) = s.most_recent(at("2026-03-01T00:00:00Z"), at("2026-03-14T10:35:00Z"));
        assert_eq!(last, Some(at("2026-03-14T10:30:00Z")));
        assert!(n > 100);
        let every = parse("@every 1m").unwrap();
        let (last, n) = every.most_recent(at("2026-03-01T00:00:00Z"), at("2026-03-01T02:00:30Z"));
        assert_eq!((last, n), (Some(at("2026-03-01T02:00:00Z")), 120));
    }
}
