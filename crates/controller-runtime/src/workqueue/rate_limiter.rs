//! Rate limiters: how long an item waits before it is retried.
//!
//! A [`RateLimiter`] answers [`RateLimiter::when`] for each retry of an item. The queues call it
//! from [`Enqueue::add_rate_limited`](super::Enqueue::add_rate_limited); a controller calls
//! [`Queue::forget`](super::Queue::forget) once an item succeeds, which resets its backoff.
//!
//! The limiters follow client-go's `default_rate_limiters.go`:
//! - [`ItemExponentialFailureRateLimiter`]: per item, `base * 2^failures`, capped at `max`;
//! - [`BucketRateLimiter`]: one token bucket shared by all items (overall retry rate);
//! - [`MaxOfRateLimiter`]: the longest delay of several limiters;
//! - [`default_controller_rate_limiter`]: the max of exponential 5 ms .. 1000 s and a
//!   10 qps / burst 100 bucket, what controllers use by default.
//!
//! ```
//! use std::time::Duration;
//! use controller_runtime::workqueue::{ItemExponentialFailureRateLimiter, RateLimiter};
//!
//! let limiter = ItemExponentialFailureRateLimiter::default();
//! assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
//! assert_eq!(limiter.when(&"a"), Duration::from_millis(10));
//! assert_eq!(limiter.num_requeues(&"a"), 2);
//! limiter.forget(&"a");
//! assert_eq!(limiter.when(&"a"), Duration::from_millis(5));
//! ```

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// Decides how long an item waits before its next retry.
pub trait RateLimiter<T>: Send + Sync {
    /// The delay before `item` is retried; records one more failure of `item`.
    fn when(&self, item: &T) -> Duration;

    /// Stops tracking `item`: its next [`RateLimiter::when`] starts from scratch.
    fn forget(&self, item: &T);

    /// How many times `item` was given a delay since the last [`RateLimiter::forget`].
    fn num_requeues(&self, item: &T) -> u32;
}

/// The default base delay of [`ItemExponentialFailureRateLimiter`]: 5 ms.
pub(crate) const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(5);
/// The default maximum delay of [`ItemExponentialFailureRateLimiter`]: 1000 s.
pub(crate) const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(1000);

/// Per-item exponential backoff: the n-th failure of an item (counting from 0) waits
/// `base * 2^n`, never more than `max` (client-go's `ItemExponentialFailureRateLimiter`).
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base` and doubling up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponentialFailureRateLimiter {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T> Default for ItemExponentialFailureRateLimiter<T> {
    /// 5 ms doubling up to 1000 s, client-go's and controller-runtime's default.
    fn default() -> Self {
        Self::new(DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY)
    }
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .field("tracked", &self.failures.lock().len())
            .finish()
    }
}

/// `base * 2^exp`, or `max` when that is larger or does not fit.
fn exponential(base: Duration, exp: u32, max: Duration) -> Duration {
    let nanos = 1u128
        .checked_shl(exp)
        .filter(|_| exp < 127)
        .and_then(|factor| base.as_nanos().checked_mul(factor));
    match nanos {
        Some(n) if n <= max.as_nanos() => {
            // n <= max, so it fits a Duration.
            Duration::new((n / 1_000_000_000) as u64, (n % 1_000_000_000) as u32)
        }
        _ => max,
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut failures = self.failures.lock();
            match failures.get_mut(item) {
                Some(n) => {
                    let exp = *n;
                    *n = n.saturating_add(1);
                    exp
                }
                None => {
                    failures.insert(item.clone(), 1);
                    0
                }
            }
        };
        exponential(self.base, exp, self.max)
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// An overall token bucket shared by all items (client-go's `BucketRateLimiter`, built on
/// `golang.org/x/time/rate`): the bucket holds up to `burst` tokens and refills at `qps` tokens
/// a second; each [`RateLimiter::when`] takes a token, and waits for it if the bucket is empty.
///
/// Time is tokio's clock, so tests with a paused clock see exact delays.
#[derive(Debug)]
pub struct BucketRateLimiter {
    qps: f64,
    burst: f64,
    state: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Option<Instant>,
}

impl BucketRateLimiter {
    /// A bucket of `burst` tokens refilled at `qps` tokens per second. It starts full.
    ///
    /// A `qps` that is not a positive finite number never refills: once the burst is spent,
    /// every item waits the default maximum delay (1000 s).
    pub fn new(qps: f64, burst: u32) -> Self {
        BucketRateLimiter {
            qps,
            burst: f64::from(burst),
            state: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: None,
            }),
        }
    }

    /// Takes one token and returns how long to wait for it.
    fn reserve(&self) -> Duration {
        let now = Instant::now();
        let mut b = self.state.lock();
        let refill = self.qps.is_finite() && self.qps > 0.0;
        if let Some(last) = b.last
            && refill
        {
            let elapsed = now.saturating_duration_since(last).as_secs_f64();
            b.tokens = (b.tokens + elapsed * self.qps).min(self.burst);
        }
        b.last = Some(now.max(b.last.unwrap_or(now)));
        b.tokens -= 1.0;
        if b.tokens >= 0.0 {
            Duration::ZERO
        } else if refill {
            Duration::try_from_secs_f64(-b.tokens / self.qps).unwrap_or(DEFAULT_MAX_DELAY)
        } else {
            DEFAULT_MAX_DELAY
        }
    }
}

impl Default for BucketRateLimiter {
    /// 10 qps with a burst of 100, client-go's default overall limit.
    fn default() -> Self {
        Self::new(10.0, 100)
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// The longest delay of several limiters (client-go's `MaxOfRateLimiter`). Every limiter sees
/// every call, so each keeps its own count.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Arc<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Arc<dyn RateLimiter<T>>>) -> Self {
        MaxOfRateLimiter { limiters }
    }
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// The rate limiter controllers use by default: the max of a per-item exponential backoff
/// (5 ms doubling up to 1000 s) and an overall token bucket (10 qps, burst 100).
pub fn default_controller_rate_limiter<T>() -> Arc<dyn RateLimiter<T>>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    Arc::new(MaxOfRateLimiter::new(vec![
        Arc::new(ItemExponentialFailureRateLimiter::<T>::default()),
        Arc::new(BucketRateLimiter::default()),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_and_caps() {
        let l = ItemExponentialFailureRateLimiter::<&str>::default();
        let want = [5u64, 10, 20, 40, 80, 160, 320, 640];
        for ms in want {
            assert_eq!(l.when(&"x"), Duration::from_millis(ms));
        }
        for _ in 0..30 {
            l.when(&"x");
        }
        assert_eq!(l.when(&"x"), DEFAULT_MAX_DELAY);
        assert_eq!(l.num_requeues(&"x"), 39);
        // other items are independent
        assert_eq!(l.when(&"y"), Duration::from_millis(5));
        l.forget(&"x");
        assert_eq!(l.num_requeues(&"x"), 0);
        assert_eq!(l.when(&"x"), Duration::from_millis(5));
    }

    #[test]
    fn exponential_never_overflows() {
        let l = ItemExponentialFailureRateLimiter::<u8>::new(Duration::MAX, Duration::MAX);
        assert_eq!(l.when(&1), Duration::MAX);
        assert_eq!(l.when(&1), Duration::MAX);
        assert_eq!(
            exponential(Duration::from_millis(5), 200, DEFAULT_MAX_DELAY),
            DEFAULT_MAX_DELAY
        );
        assert_eq!(
            exponential(Duration::from_millis(5), 18, DEFAULT_MAX_DELAY),
            DEFAULT_MAX_DELAY
        );
        assert_eq!(
            exponential(Duration::from_millis(5), 17, Duration::MAX),
            Duration::from_millis(5 << 17)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_burst_then_rate() {
        let l = BucketRateLimiter::new(10.0, 100);
        for _ in 0..100 {
            assert_eq!(RateLimiter::<u8>::when(&l, &0), Duration::ZERO);
        }
        // the bucket is empty: each further token is 100 ms after the previous one
        assert_eq!(RateLimiter::<u8>::when(&l, &0), Duration::from_millis(100));
        assert_eq!(RateLimiter::<u8>::when(&l, &0), Duration::from_millis(200));
        tokio::time::advance(Duration::from_millis(200)).await;
        assert_eq!(RateLimiter::<u8>::when(&l, &0), Duration::from_millis(100));
        // a long pause refills the bucket up to the burst, not beyond
        tokio::time::advance(Duration::from_secs(60)).await;
        for _ in 0..100 {
            assert_eq!(RateLimiter::<u8>::when(&l, &0), Duration::ZERO);
        }
        assert_eq!(RateLimiter::<u8>::when(&l, &0), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_is_max_of_both() {
        let l = default_controller_rate_limiter::<u32>();
        // the first 100 retries of distinct items are cheap; the bucket then dominates
        for i in 0..100 {
            assert_eq!(l.when(&i), Duration::from_millis(5));
        }
        assert_eq!(l.when(&1000), Duration::from_millis(100));
        // the exponential part dominates for one hot item
        tokio::time::advance(Duration::from_secs(100)).await;
        for ms in [10u64, 20, 40, 80] {
            assert_eq!(l.when(&7), Duration::from_millis(ms));
        }
        assert_eq!(l.num_requeues(&7), 5);
        l.forget(&7);
        assert_eq!(l.num_requeues(&7), 0);
    }
}
