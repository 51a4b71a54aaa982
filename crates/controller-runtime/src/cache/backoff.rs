//! The informer's reconnect backoff: client-go's reflector defaults (800 ms doubling to 30 s,
//! reset after 2 minutes without a failure); and the jitter and cancellable sleeps the
//! informer's loops (reflectors, resync) wait with.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Backoff settings.
#[derive(Clone, Debug, PartialEq)]
pub struct BackoffConfig {
    /// The first delay.
    pub initial: Duration,
    /// The largest delay.
    pub max: Duration,
    /// The factor a delay grows by after each failure.
    pub factor: f64,
    /// A failure this long after the previous one starts again from `initial`.
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            factor: 2.0,
            reset_after: Duration::from_secs(120),
        }
    }
}

/// A running backoff: call [`Backoff::next_delay`] after each failure.
#[derive(Debug)]
pub struct Backoff {
    config: BackoffConfig,
    current: Duration,
    last_failure: Option<Instant>,
}

impl Backoff {
    /// A backoff that has seen no failure.
    pub fn new(config: BackoffConfig) -> Self {
        Backoff {
            current: config.initial,
            config,
            last_failure: None,
        }
    }

    /// The delay to wait after a failure now.
    pub fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last_failure
            .is_some_and(|at| now.duration_since(at) >= self.config.reset_after)
        {
            self.current = self.config.initial;
        }
        self.last_failure = Some(now);
        let delay = self.current;
        self.current = self
            .current
            .mul_f64(self.config.factor)
            .min(self.config.max);
        delay
    }
}

/// `period` times a random factor in [0.9, 1.1).
pub(super) fn jitter(period: Duration) -> Duration {
    period.mul_f64(0.9 + 0.2 * rand_unit())
}

/// A number in [0, 1) without a dependency on a random number crate: the low bits of a hash
/// of the current time and a counter are random enough for jitter.
pub(super) fn rand_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Sleeps for `d`; false when `ctx` was cancelled first.
pub(super) async fn sleep_or_cancel(ctx: &CancellationToken, d: Duration) -> bool {
    tokio::select! {
        _ = ctx.cancelled() => false,
        _ = tokio::time::sleep(d) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn doubles_caps_and_resets() {
        let mut b = Backoff::new(BackoffConfig::default());
        let delays: Vec<u64> = (0..8).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]);
        tokio::time::advance(Duration::from_secs(119)).await;
        assert_eq!(b.next_delay(), Duration::from_secs(30));
        tokio::time::advance(Duration::from_secs(120)).await;
        assert_eq!(b.next_delay(), Duration::from_millis(800));
    }
}
