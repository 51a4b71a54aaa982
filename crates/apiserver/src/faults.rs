//! Fault injection for client tests: close every watch, compact the watch history (forcing 410
//! Gone on resume), withhold streaming lists' initial-events-end bookmarks until a write, hold
//! every watch event back until released, and fail the next N requests with a chosen status
//! (429 with a `Retry-After`, 500, 503, ...).
//! Stopping and restarting the listener lives on [`crate::Server`] (`stop_listener`,
//! `restart_listener`, `bounce_listener`).
//!
//! [`Fault`] names one fault and [`crate::Server::inject`] throws it; [`Chaos`] picks them at
//! random from a seed, for a test that throws one every interval:
//!
//! ```no_run
//! # async fn f(server: crt_apiserver::Server) -> Result<(), crt_apiserver::Error> {
//! use crt_apiserver::faults::Chaos;
//! let mut chaos = Chaos::new(42);
//! for _ in 0..50 {
//!     server.inject(&chaos.next_fault()).await?;
//!     tokio::time::sleep(std::time::Duration::from_millis(100)).await;
//! }
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::ApiError;
use crate::storage::Storage;

/// A handle to inject faults into a running server. Cheap to clone.
#[derive(Clone)]
pub struct Faults {
    storage: Storage,
    failing: Arc<Mutex<Failing>>,
}

#[derive(Default)]
struct Failing {
    remaining: u32,
    code: u16,
    retry_after_seconds: u32,
}

/// The `Retry-After` a 429 from [`Faults::fail_next`] asks for: one second, as the real
/// server's max-in-flight and priority-and-fairness filters answer.
pub const DEFAULT_RETRY_AFTER_SECONDS: u32 = 1;

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let failing = self.failing.lock();
        f.debug_struct("Faults")
            .field("fail_remaining", &failing.remaining)
            .field("fail_code", &failing.code)
            .finish()
    }
}

impl Faults {
    /// A handle injecting faults into `storage` and into the requests of the HTTP layer given
    /// it (see [`crate::http::AppState`]).
    pub fn new(storage: Storage) -> Self {
        Faults {
            storage,
            failing: Arc::default(),
        }
    }

    /// Ends every running watch; clients see their stream end and must re-watch.
    pub fn close_watches(&self) {
        self.storage.close_watches();
    }

    /// Forgets the watch history: resuming a watch (or continuing a list) from any older
    /// resourceVersion gets 410 Gone.
    pub fn compact(&self) {
        self.storage.compact();
    }

    /// While `on`, streaming lists (watches with `sendInitialEvents=true`) started meanwhile
    /// get their `k8s.io/initial-events-end` bookmark only after the next write to their
    /// resource, as a real kube-apiserver (1.28 with etcd 3.4) withholds it for a quiet resource
    /// until a write moves its watch cache. Turning it off sends every withheld bookmark.
    pub fn withhold_initial_events_end(&self, on: bool) {
        self.storage.withhold_initial_events_end(on);
    }

    /// While `on`, writes commit and are answered but their watch events are held back from
    /// every running watch, as when an informer lags behind the API server; turning it off
    /// delivers the held events in order. What a client test needs to show a read racing its
    /// own informer, deterministically.
    pub fn hold_watch_events(&self, on: bool) {
        self.storage.hold_watch_events(on);
    }

    /// The next `n` requests (health and `/version` requests excepted) fail with `status_code`,
    /// answered as a `Status` with the reason the real server uses for that code; a 429 asks
    /// the client to retry after [`DEFAULT_RETRY_AFTER_SECONDS`] (see
    /// [`Faults::throttle_next`]). Replaces any failures still pending.
    pub fn fail_next(&self, n: u32, status_code: u16) {
        *self.failing.lock() = Failing {
            remaining: n,
            code: status_code,
            retry_after_seconds: DEFAULT_RETRY_AFTER_SECONDS,
        };
    }

    /// The next `n` requests (health and `/version` requests excepted) are throttled: 429
    /// TooManyRequests with `details.retryAfterSeconds` and a `Retry-After` header of
    /// `retry_after_seconds`, as the real server's `NewTooManyRequests`.
    pub fn throttle_next(&self, n: u32, retry_after_seconds: u32) {
        *self.failing.lock() = Failing {
            remaining: n,
            code: 429,
            retry_after_seconds,
        };
    }

    /// How many injected failures are still to be answered.
    pub fn pending_failures(&self) -> u32 {
        self.failing.lock().remaining
    }

    /// Takes one injected failure, if any is pending.
    pub(crate) fn take_failure(&self) -> Option<ApiError> {
        let mut failing = self.failing.lock();
        if failing.remaining == 0 {
            return None;
        }
        failing.remaining -= 1;
        Some(injected_error(failing.code, failing.retry_after_seconds))
    }
}

/// One fault, thrown by [`crate::Server::inject`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// [`Faults::close_watches`].
    CloseWatches,
    /// [`Faults::compact`].
    Compact,
    /// [`Faults::fail_next`]: the next `n` requests fail with `code`.
    FailNext {
        /// How many requests fail.
        n: u32,
        /// Their status code (429 asks for a retry after [`DEFAULT_RETRY_AFTER_SECONDS`]).
        code: u16,
    },
    /// [`crate::Server::bounce_listener`]: every connection dropped, nothing accepted for
    /// `pause`, then the same address served again.
    RestartListener {
        /// How long the port refuses connections.
        pause: Duration,
    },
}

/// A seeded random schedule of faults: each [`Chaos::next_fault`] picks one of closing the
/// watches, compacting, failing the next 1-5 requests with 429, 500 or 503, or restarting the
/// listener (a pause of 10-100 ms), each as likely. The same seed gives the same faults.
#[derive(Debug)]
pub struct Chaos {
    rng: StdRng,
}

impl Chaos {
    /// A schedule from `seed`.
    pub fn new(seed: u64) -> Self {
        Chaos {
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// The next fault to throw.
    pub fn next_fault(&mut self) -> Fault {
        match self.rng.random_range(0..6u8) {
            0 => Fault::CloseWatches,
            1 => Fault::Compact,
            2..=4 => {
                let code = [429, 500, 503][self.rng.random_range(0..3usize)];
                Fault::FailNext {
                    n: self.rng.random_range(1..=5),
                    code,
                }
            }
            _ => Fault::RestartListener {
                pause: Duration::from_millis(self.rng.random_range(10..=100)),
            },
        }
    }
}

/// The `Status` the real server answers for `code`.
fn injected_error(code: u16, retry_after_seconds: u32) -> ApiError {
    if code == 429 {
        return ApiError::too_many_requests(
            "injected fault: too many requests, please try again later",
            retry_after_seconds,
        );
    }
    let reason = match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    };
    ApiError::new(code, reason, format!("injected fault: {reason} ({code})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_error_names_the_reason() {
        let e = injected_error(503, 1);
        assert_eq!((e.code, e.reason.as_str()), (503, "ServiceUnavailable"));
        assert_eq!(e.retry_after_seconds(), None);
        assert_eq!(injected_error(418, 1).reason, "Unknown");
        assert_eq!(injected_error(500, 1).reason, "InternalError");
    }

    fn faults() -> Faults {
        Faults::new(Storage::default())
    }

    #[test]
    fn a_429_asks_for_a_retry_after() {
        let f = faults();
        f.fail_next(1, 429);
        let e = f.take_failure().unwrap();
        assert_eq!((e.code, e.reason.as_str()), (429, "TooManyRequests"));
        assert_eq!(e.retry_after_seconds(), Some(DEFAULT_RETRY_AFTER_SECONDS));
        assert_eq!(f.take_failure(), None, "only the next one");
        f.throttle_next(2, 7);
        assert_eq!(f.pending_failures(), 2);
        assert_eq!(f.take_failure().unwrap().retry_after_seconds(), Some(7));
        assert_eq!(f.take_failure().unwrap().retry_after_seconds(), Some(7));
        assert_eq!(f.take_failure(), None);
    }

    #[test]
    fn chaos_is_seeded_and_throws_every_kind_of_fault() {
        let a: Vec<Fault> = {
            let mut c = Chaos::new(7);
            (0..200).map(|_| c.next_fault()).collect()
        };
        let mut c = Chaos::new(7);
        assert!(
            a.iter().all(|f| *f == c.next_fault()),
            "same seed, same faults"
        );
        let has = |p: &dyn Fn(&Fault) -> bool| a.iter().any(p);
        assert!(has(&|f| *f == Fault::CloseWatches));
        assert!(has(&|f| *f == Fault::Compact));
        for code in [429, 500, 503] {
            assert!(has(
                &|f| matches!(f, Fault::FailNext { code: c, n } if *c == code && (1..=5).contains(n))
            ));
        }
        assert!(has(
            &|f| matches!(f, Fault::RestartListener { pause } if *pause <= Duration::from_millis(100))
        ));
    }
}
