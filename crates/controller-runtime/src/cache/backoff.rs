//! The informer's reconnect backoff: client-go's reflector defaults (800 ms doubling to 30 s,
//! reset after 2 minutes without a failure).

use std::time::Duration;

use tokio::time::Instant;

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
