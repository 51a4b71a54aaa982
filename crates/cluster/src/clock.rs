//! The simulation's clock: the wall time when the cluster started plus the time tokio's clock
//! has advanced since. Every timestamp the controllers write and every delay they wait for
//! comes from it, so a test on tokio's paused clock (`tokio::time::pause`, `advance`) moves
//! the whole simulation, timestamps included, without sleeping.

use chrono::{DateTime, SecondsFormat, Utc};
use tokio::time::Instant;

/// See the module documentation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    wall: DateTime<Utc>,
    start: Instant,
}

impl Clock {
    /// A clock reading the wall time now.
    pub(crate) fn new() -> Clock {
        Clock {
            wall: Utc::now(),
            start: Instant::now(),
        }
    }

    /// The time at tokio's instant `at`.
    pub(crate) fn at(&self, at: Instant) -> DateTime<Utc> {
        let since = at.saturating_duration_since(self.start);
        self.wall + chrono::Duration::from_std(since).unwrap_or_default()
    }

    /// The time now.
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.at(Instant::now())
    }

    /// Now, as a `metav1.Time` (RFC 3339, seconds).
    pub(crate) fn stamp(&self) -> String {
        time(self.now())
    }
}

/// A `metav1.Time`: RFC 3339 in UTC, whole seconds.
pub(crate) fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A `metav1.MicroTime`: RFC 3339 in UTC, microseconds.
pub(crate) fn micro_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Parses a `metav1.Time` or `MicroTime`.
pub(crate) fn parse(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_clock_follows_tokio_time() {
        let clock = Clock::new();
        let before = clock.now();
        tokio::time::advance(std::time::Duration::from_secs(90)).await;
        assert_eq!((clock.now() - before).num_seconds(), 90);
        let stamp = clock.stamp();
        assert!(stamp.ends_with('Z') && !stamp.contains('.'), "{stamp}");
        assert_eq!(parse(&stamp).map(time), Some(stamp));
        assert!(micro_time(before).contains('.'));
    }
}
