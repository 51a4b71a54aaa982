//! [`ControllerOptions`]: how a controller runs.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::metrics::Metrics;
use crate::workqueue::{Queue, QueueItem, RateLimiter, default_controller_rate_limiter};

/// Builds a controller's queue from its name and rate limiter; see
/// [`ControllerOptions::with_new_queue`].
pub type NewQueueFn<T> =
    Arc<dyn Fn(&str, Arc<dyn RateLimiter<T>>) -> Arc<dyn Queue<T>> + Send + Sync>;

/// How a [`Controller`](super::Controller) runs. Every field has controller-runtime's default;
/// set the others with the `with_*` setters (one per field).
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::controller::ControllerOptions;
/// use controller_runtime::Request;
///
/// let options = ControllerOptions::<Request>::default()
///     .with_max_concurrent_reconciles(4)
///     .with_reconciliation_timeout(Duration::from_secs(30));
/// # let _ = options;
/// ```
#[non_exhaustive]
pub struct ControllerOptions<T = crate::Request> {
    /// How many reconciles run at once (workers). Default 1; 0 is an error.
    pub(crate) max_concurrent_reconciles: usize,
    /// The delay of a key's retries after an error. Default: the max of a per-key
    /// exponential backoff (5 ms doubling to 1000 s) and a 10 qps, burst 100 token bucket.
    pub(crate) rate_limiter: Arc<dyn RateLimiter<T>>,
    /// Catch a panicking reconcile, count it and retry the key with backoff (default `true`).
    /// When `false`, the panic ends the controller: `start` re-raises it.
    pub(crate) recover_panic: bool,
    /// Give up on a reconcile after this long; it counts as an error and is retried with
    /// backoff. Default: no limit.
    pub(crate) reconciliation_timeout: Option<Duration>,
    /// How long `start` waits for every syncing source (default 2 min).
    pub(crate) cache_sync_timeout: Duration,
    /// Use the priority queue (default `true`, as controller-runtime since v0.23); `false` uses
    /// the plain rate-limiting queue.
    pub(crate) use_priority_queue: bool,
    /// Whether the controller must run only on the elected leader (default `true`); read by the
    /// Manager.
    pub(crate) need_leader_election: bool,
    /// Let [`Controller::warm_up`](super::Controller::warm_up) start the sources before the
    /// controller starts (before winning leadership), so a new leader reconciles at once.
    /// Default `false`: `warm_up` does nothing.
    pub(crate) enable_warm_up: bool,
    /// Builds the queue instead of the built-in choice (`use_priority_queue`); controller-runtime's
    /// `NewQueue`. Default `None`.
    pub(crate) new_queue: Option<NewQueueFn<T>>,
    /// Where to report metrics. Default: counted but not registered anywhere.
    pub(crate) metrics: Option<Metrics>,
    /// The debounce window of the watches' triggers. Default zero: off.
    pub(crate) debounce: Duration,
    /// The fields a `with_*` setter set: the Manager's controller defaults fill the others.
    pub(crate) explicit: Explicit,
}

impl<T: QueueItem> Default for ControllerOptions<T> {
    fn default() -> Self {
        ControllerOptions {
            max_concurrent_reconciles: 1,
            rate_limiter: default_controller_rate_limiter(),
            recover_panic: true,
            reconciliation_timeout: None,
            cache_sync_timeout: Duration::from_secs(120),
            use_priority_queue: true,
            need_leader_election: true,
            enable_warm_up: false,
            new_queue: None,
            metrics: None,
            debounce: Duration::ZERO,
            explicit: Explicit::default(),
        }
    }
}

impl<T> Clone for ControllerOptions<T> {
    fn clone(&self) -> Self {
        ControllerOptions {
            max_concurrent_reconciles: self.max_concurrent_reconciles,
            rate_limiter: self.rate_limiter.clone(),
            recover_panic: self.recover_panic,
            reconciliation_timeout: self.reconciliation_timeout,
            cache_sync_timeout: self.cache_sync_timeout,
            use_priority_queue: self.use_priority_queue,
            need_leader_election: self.need_leader_election,
            enable_warm_up: self.enable_warm_up,
            new_queue: self.new_queue.clone(),
            metrics: self.metrics.clone(),
            debounce: self.debounce,
            explicit: self.explicit,
        }
    }
}

impl<T> fmt::Debug for ControllerOptions<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerOptions")
            .field("max_concurrent_reconciles", &self.max_concurrent_reconciles)
            .field("recover_panic", &self.recover_panic)
            .field("reconciliation_timeout", &self.reconciliation_timeout)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field("use_priority_queue", &self.use_priority_queue)
            .field("need_leader_election", &self.need_leader_election)
            .field("enable_warm_up", &self.enable_warm_up)
            .field("new_queue", &self.new_queue.is_some())
            .field("metrics", &self.metrics.is_some())
            .field("debounce", &self.debounce)
            .finish_non_exhaustive()
    }
}

impl<T> ControllerOptions<T> {
    /// How many reconciles run at once (workers). Default 1; 0 is an error.
    pub fn with_max_concurrent_reconciles(mut self, workers: usize) -> Self {
        self.max_concurrent_reconciles = workers;
        self.explicit.max_concurrent_reconciles = true;
        self
    }

    /// The delay of a key's retries after an error. Default: the max of a per-key
    /// exponential backoff (5 ms doubling to 1000 s) and a 10 qps, burst 100 token bucket.
    pub fn with_rate_limiter(mut self, rate_limiter: Arc<dyn RateLimiter<T>>) -> Self {
        self.rate_limiter = rate_limiter;
        self.explicit.rate_limiter = true;
        self
    }

    /// Catch a panicking reconcile, count it and retry the key with backoff (default `true`).
    /// When `false`, the panic ends the controller: `start` re-raises it.
    pub fn with_recover_panic(mut self, recover: bool) -> Self {
        self.recover_panic = recover;
        self.explicit.recover_panic = true;
        self
    }

    /// Give up on a reconcile after this long; it counts as an error and is retried with
    /// backoff. Default: no limit.
    pub fn with_reconciliation_timeout(mut self, timeout: Duration) -> Self {
        self.reconciliation_timeout = Some(timeout);
        self
    }

    /// How long `start` waits for every syncing source (default 2 min).
    pub fn with_cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = timeout;
        self.explicit.cache_sync_timeout = true;
        self
    }

    /// Use the priority queue (default `true`, as controller-runtime since v0.23); `false` uses
    /// the plain rate-limiting queue.
    pub fn with_use_priority_queue(mut self, enabled: bool) -> Self {
        self.use_priority_queue = enabled;
        self.explicit.use_priority_queue = true;
        self
    }

    /// Whether the controller must run only on the elected leader (default `true`); read by the
    /// Manager.
    pub fn with_need_leader_election(mut self, needed: bool) -> Self {
        self.need_leader_election = needed;
        self.explicit.need_leader_election = true;
        self
    }

    /// Let [`Controller::warm_up`](super::Controller::warm_up) start the sources before the
    /// controller starts (before winning leadership), so a new leader reconciles at once.
    /// Default `false`: `warm_up` does nothing.
    pub fn with_enable_warm_up(mut self, enabled: bool) -> Self {
        self.enable_warm_up = enabled;
        self.explicit.enable_warm_up = true;
        self
    }

    /// Builds the queue instead of the built-in choice (`use_priority_queue`); controller-runtime's
    /// `NewQueue`. Default `None`.
    pub fn with_new_queue(mut self, new_queue: NewQueueFn<T>) -> Self {
        self.new_queue = Some(new_queue);
        self
    }

    /// Where to report metrics. Default: counted but not registered anywhere.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Waits for a burst of triggers of one key to settle before reconciling it: each event a
    /// watch enqueues for a key schedules the key `window` later, and one that comes while the
    /// key waits pushes it back to `window` after itself, so a burst of updates within the
    /// window becomes one reconcile, `window` after the last of them. Default: zero, off (every
    /// trigger is queued at once).
    ///
    /// It applies to the watches' enqueues, on either queue (priority or FIFO, or `new_queue`'s):
    /// a key waits in the queue, never twice, at its trigger's priority; a trigger while the key
    /// is being reconciled still gets its follow-up reconcile. The reconciler's own requeues and
    /// error retries are not delayed by it, but one due while the key's window is open waits
    /// for the window's end. Keys added with [`Controller::queue`](super::Controller::queue)
    /// directly are not debounced.
    ///
    /// kube-rs: `controller::Config::debounce` (same rule); controller-runtime: none.
    ///
    /// ```
    /// use std::time::Duration;
    /// use controller_runtime::controller::ControllerOptions;
    /// use controller_runtime::Request;
    ///
    /// // A status writer updating an object five times in a second: reconcile once after.
    /// let options = ControllerOptions::<Request>::default().with_debounce(Duration::from_secs(1));
    /// # let _ = options;
    /// ```
    pub fn with_debounce(mut self, window: Duration) -> Self {
        self.debounce = window;
        self
    }

    /// Checks the values a controller cannot run with.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.max_concurrent_reconciles == 0 {
            return Err("max_concurrent_reconciles must be at least 1".into());
        }
        if self.cache_sync_timeout.is_zero() {
            return Err("cache_sync_timeout must be positive".into());
        }
        if self.reconciliation_timeout.is_some_and(|t| t.is_zero()) {
            return Err("reconciliation_timeout must be positive when set".into());
        }
        Ok(())
    }
}

/// Which fields of [`ControllerOptions`] a `with_*` setter set: the Manager's controller
/// defaults (`manager::ControllerDefaults`) fill only the others.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Explicit {
    pub(crate) max_concurrent_reconciles: bool,
    pub(crate) rate_limiter: bool,
    pub(crate) recover_panic: bool,
    pub(crate) cache_sync_timeout: bool,
    pub(crate) use_priority_queue: bool,
    pub(crate) need_leader_election: bool,
    pub(crate) enable_warm_up: bool,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::ControllerOptions;
    use crate::Request;

    #[test]
    fn defaults_are_controller_runtimes_and_setters_set() {
        let options = ControllerOptions::<Request>::default();
        assert_eq!(options.max_concurrent_reconciles, 1);
        assert!(options.recover_panic);
        assert_eq!(options.cache_sync_timeout, Duration::from_secs(120));
        assert_eq!(options.reconciliation_timeout, None);
        assert!(options.need_leader_election);
        let options = options
            .with_max_concurrent_reconciles(4)
            .with_reconciliation_timeout(Duration::from_secs(30));
        assert_eq!(options.max_concurrent_reconciles, 4);
        assert_eq!(
            options.reconciliation_timeout,
            Some(Duration::from_secs(30))
        );
    }
}
