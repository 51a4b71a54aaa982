//! [`ControllerOptions`]: how a controller runs, and the defaults a manager gives its
//! controllers ([`ControllerOptions::merge`]).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::metrics::Metrics;
use crate::workqueue::{Queue, QueueItem, RateLimiter, default_controller_rate_limiter};

/// Builds a controller's queue from its name and rate limiter; see
/// [`ControllerOptions::with_new_queue`].
pub type NewQueueFn<T> =
    Arc<dyn Fn(&str, Arc<dyn RateLimiter<T>>) -> Arc<dyn Queue<T>> + Send + Sync>;

/// Makes one controller's rate limiter; see [`ControllerOptions::with_new_rate_limiter`].
pub type NewRateLimiterFn<T = crate::Request> =
    Arc<dyn Fn() -> Arc<dyn RateLimiter<T>> + Send + Sync>;

/// How a [`Controller`](super::Controller) runs: one controller's options, and the defaults a
/// whole manager gives its controllers
/// ([`ManagerOptions::with_controller_defaults`](crate::manager::ManagerOptions::with_controller_defaults),
/// controller-runtime's `manager.Options.Controller`).
///
/// Every field starts unset; a `with_*` setter (one per field) sets it. A controller built by
/// the [`ControllerBuilder`](crate::builder::ControllerBuilder) takes its own options
/// ([`with_options`](crate::builder::ControllerBuilder::with_options)) [merged](Self::merge)
/// over the manager's: as in controller-runtime, a field the controller set wins over the
/// manager's default, which wins over the controller's built-in default (each setter says
/// it). A controller made with [`Controller::new`](super::Controller::new) takes the
/// manager's defaults when you merge them in yourself.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::controller::ControllerOptions;
/// use controller_runtime::manager::ManagerOptions;
/// use controller_runtime::Request;
///
/// let options = ControllerOptions::<Request>::default()
///     .with_max_concurrent_reconciles(4)
///     .with_reconciliation_timeout(Duration::from_secs(30));
///
/// // Manager-wide: 3 reconciles at once, 5 for ReplicaSet controllers.
/// let defaults = ControllerOptions::default()
///     .with_max_concurrent_reconciles(3)
///     .with_group_kind_concurrency("ReplicaSet.apps", 5);
/// let manager = ManagerOptions::default().with_controller_defaults(defaults.clone());
/// # let _ = manager;
///
/// // A controller made by hand takes them too: a ReplicaSet controller without options of
/// // its own runs 5 reconciles at once, and one that says 4 runs 4.
/// let rs = ControllerOptions::default().merge(&defaults, Some("ReplicaSet.apps"));
/// let four = options.merge(&defaults, Some("ReplicaSet.apps"));
/// # let _ = (rs, four);
/// ```
#[non_exhaustive]
pub struct ControllerOptions<T = crate::Request> {
    pub(crate) max_concurrent_reconciles: Option<usize>,
    pub(crate) group_kind_concurrency: HashMap<String, usize>,
    pub(crate) rate_limiter: Option<RateLimiterChoice<T>>,
    pub(crate) recover_panic: Option<bool>,
    pub(crate) reconciliation_timeout: Option<Duration>,
    pub(crate) cache_sync_timeout: Option<Duration>,
    pub(crate) use_priority_queue: Option<bool>,
    pub(crate) need_leader_election: Option<bool>,
    pub(crate) enable_warm_up: Option<bool>,
    pub(crate) new_queue: Option<NewQueueFn<T>>,
    pub(crate) metrics: Option<Metrics>,
    pub(crate) debounce: Option<Duration>,
    pub(crate) worker_slice: Option<Duration>,
    pub(crate) skip_name_validation: Option<bool>,
    pub(crate) operations_annotations: Option<bool>,
}

/// A rate limiter as set: one to use, or a maker called once per controller.
pub(crate) enum RateLimiterChoice<T> {
    Shared(Arc<dyn RateLimiter<T>>),
    New(NewRateLimiterFn<T>),
}

impl<T> Clone for RateLimiterChoice<T> {
    fn clone(&self) -> Self {
        match self {
            RateLimiterChoice::Shared(limiter) => RateLimiterChoice::Shared(limiter.clone()),
            RateLimiterChoice::New(new) => RateLimiterChoice::New(new.clone()),
        }
    }
}

impl<T> Default for ControllerOptions<T> {
    fn default() -> Self {
        ControllerOptions {
            max_concurrent_reconciles: None,
            group_kind_concurrency: HashMap::new(),
            rate_limiter: None,
            recover_panic: None,
            reconciliation_timeout: None,
            cache_sync_timeout: None,
            use_priority_queue: None,
            need_leader_election: None,
            enable_warm_up: None,
            new_queue: None,
            metrics: None,
            debounce: None,
            worker_slice: None,
            skip_name_validation: None,
            operations_annotations: None,
        }
    }
}

impl<T> Clone for ControllerOptions<T> {
    fn clone(&self) -> Self {
        ControllerOptions {
            max_concurrent_reconciles: self.max_concurrent_reconciles,
            group_kind_concurrency: self.group_kind_concurrency.clone(),
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
            worker_slice: self.worker_slice,
            skip_name_validation: self.skip_name_validation,
            operations_annotations: self.operations_annotations,
        }
    }
}

impl<T> fmt::Debug for ControllerOptions<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerOptions")
            .field("max_concurrent_reconciles", &self.max_concurrent_reconciles)
            .field("group_kind_concurrency", &self.group_kind_concurrency)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("recover_panic", &self.recover_panic)
            .field("reconciliation_timeout", &self.reconciliation_timeout)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field("use_priority_queue", &self.use_priority_queue)
            .field("need_leader_election", &self.need_leader_election)
            .field("enable_warm_up", &self.enable_warm_up)
            .field("new_queue", &self.new_queue.is_some())
            .field("metrics", &self.metrics.is_some())
            .field("debounce", &self.debounce)
            .field("worker_slice", &self.worker_slice)
            .field("skip_name_validation", &self.skip_name_validation)
            .field("operations_annotations", &self.operations_annotations)
            .finish_non_exhaustive()
    }
}

impl<T> ControllerOptions<T> {
    /// How many reconciles run at once (workers). Default 1; 0 is an error.
    /// controller-runtime: `MaxConcurrentReconciles`; kube-rs: `controller::Config::concurrency`.
    pub fn with_max_concurrent_reconciles(mut self, workers: usize) -> Self {
        self.max_concurrent_reconciles = Some(workers);
        self
    }

    /// As manager defaults: how many reconciles a controller whose `for` type is of the
    /// group-kind `group_kind` runs at once, unless its own options set it; over
    /// [`with_max_concurrent_reconciles`](Self::with_max_concurrent_reconciles). The key is
    /// written as Go's `GroupKind.String()`: `Kind.group` (`"ReplicaSet.apps"`), or `Kind`
    /// alone for the core group (`"ConfigMap"`); any version. Call once per kind; 0 is ignored.
    /// Default: empty. controller-runtime: `config.Controller.GroupKindConcurrency`; kube-rs:
    /// none.
    pub fn with_group_kind_concurrency(
        mut self,
        group_kind: impl Into<String>,
        workers: usize,
    ) -> Self {
        self.group_kind_concurrency
            .insert(group_kind.into(), workers);
        self
    }

    /// The rate limiter: the delay of a key's retries after an error. As manager defaults,
    /// every controller without one of its own shares this one (and its keys' backoff): give
    /// [`with_new_rate_limiter`](Self::with_new_rate_limiter) a maker instead. Default: the
    /// max of a per-key exponential backoff (5 ms doubling to 1000 s) and a 10 qps, burst 100
    /// token bucket, one per controller.
    pub fn with_rate_limiter(mut self, rate_limiter: Arc<dyn RateLimiter<T>>) -> Self {
        self.rate_limiter = Some(RateLimiterChoice::Shared(rate_limiter));
        self
    }

    /// Makes the controller's rate limiter: called once per controller, so manager defaults
    /// with it do not make controllers share their keys' backoff. Replaces
    /// [`with_rate_limiter`](Self::with_rate_limiter). controller-runtime:
    /// `controller.Options.RateLimiter` (per controller only); kube-rs: none.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use controller_runtime::controller::ControllerOptions;
    /// use controller_runtime::workqueue::ItemExponentialFailureRateLimiter;
    /// use controller_runtime::Request;
    ///
    /// let defaults = ControllerOptions::<Request>::default().with_new_rate_limiter(Arc::new(|| {
    ///     Arc::new(ItemExponentialFailureRateLimiter::new(
    ///         Duration::from_millis(10),
    ///         Duration::from_secs(60),
    ///     )) as _
    /// }));
    /// # let _ = defaults;
    /// ```
    pub fn with_new_rate_limiter(mut self, new_rate_limiter: NewRateLimiterFn<T>) -> Self {
        self.rate_limiter = Some(RateLimiterChoice::New(new_rate_limiter));
        self
    }

    /// Catch a panicking reconcile, count it and retry the key with backoff (default `true`).
    /// When `false`, the panic ends the controller: `start` re-raises it.
    /// controller-runtime: `RecoverPanic`; kube-rs: none.
    pub fn with_recover_panic(mut self, recover: bool) -> Self {
        self.recover_panic = Some(recover);
        self
    }

    /// Give up on a reconcile after this long; it counts as an error and is retried with
    /// backoff. Default: no limit. controller-runtime: `ReconciliationTimeout`; kube-rs: none.
    pub fn with_reconciliation_timeout(mut self, timeout: Duration) -> Self {
        self.reconciliation_timeout = Some(timeout);
        self
    }

    /// How long `start` waits for every syncing source (default 2 min).
    /// controller-runtime: `CacheSyncTimeout`; kube-rs: none.
    pub fn with_cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = Some(timeout);
        self
    }

    /// Use the priority queue (default `true`, as controller-runtime since v0.23); `false` uses
    /// the plain rate-limiting queue.
    pub fn with_use_priority_queue(mut self, enabled: bool) -> Self {
        self.use_priority_queue = Some(enabled);
        self
    }

    /// Whether the controller must run only on the elected leader (default `true`); read by the
    /// Manager.
    pub fn with_need_leader_election(mut self, needed: bool) -> Self {
        self.need_leader_election = Some(needed);
        self
    }

    /// Let [`Controller::warm_up`](super::Controller::warm_up) start the sources before the
    /// controller starts (before winning leadership), so a new leader reconciles at once.
    /// Default `false`: `warm_up` does nothing.
    pub fn with_enable_warm_up(mut self, enabled: bool) -> Self {
        self.enable_warm_up = Some(enabled);
        self
    }

    /// Builds the queue instead of the built-in choice (`use_priority_queue`); controller-runtime's
    /// `NewQueue`. Default `None`.
    pub fn with_new_queue(mut self, new_queue: NewQueueFn<T>) -> Self {
        self.new_queue = Some(new_queue);
        self
    }

    /// Where to report metrics. Default: counted but not registered anywhere (the Builder
    /// reports to the manager's registry).
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
        self.debounce = Some(window);
        self
    }

    /// How long a worker may hold its runtime thread, reconciling key after key without awaiting
    /// anything (reconciles that only read the cache, a backlog in the queue), before it yields
    /// to the other tasks of that thread. Default: 5 ms on a multi-threaded runtime (a yield
    /// there lets an idle thread steal the worker, which costs it its warm caches), 200 µs on a
    /// current-thread one (where nothing else runs meanwhile). A cluster-aware controller
    /// (`multicluster`) defaults to 200 µs everywhere: its worker shares the threads with the
    /// informers of every engaged cluster, and a quiet cluster's event should not wait for a
    /// flooding cluster's 5 ms of reconciles. Shorter slices trade a little CPU (a yield costs
    /// about a microsecond, plus the steal) for other tasks' latency.
    ///
    /// kube-rs and controller-runtime: none (Go's scheduler preempts goroutines).
    ///
    /// ```
    /// use std::time::Duration;
    /// use controller_runtime::controller::ControllerOptions;
    /// use controller_runtime::Request;
    ///
    /// // Yield every millisecond, for a controller sharing its threads with latency-bound tasks.
    /// let options =
    ///     ControllerOptions::<Request>::default().with_worker_slice(Duration::from_millis(1));
    /// # let _ = options;
    /// ```
    pub fn with_worker_slice(mut self, slice: Duration) -> Self {
        self.worker_slice = Some(slice);
        self
    }

    /// Build the controller even when another controller of the manager has its name (e.g.
    /// many alike in tests): its name is then not reserved either. Names label logs and
    /// metrics: alike names mix them. Default `false` (the Builder refuses a taken name with
    /// [`Error::DuplicateName`](crate::builder::Error::DuplicateName)). controller-runtime:
    /// `SkipNameValidation` (its check is process-wide; here, per manager); kube-rs: none.
    pub fn with_skip_name_validation(mut self, skip: bool) -> Self {
        self.skip_name_validation = Some(skip);
        self
    }

    /// Honour the [operations annotations](crate::operations) on the `for` type: a paused
    /// object is not reconciled (and counted in `controller_runtime_reconcile_paused_objects`),
    /// a requested reconcile passes every event filter and its token is recorded once handled.
    /// Default `false`. The [`ControllerBuilder`](crate::builder::ControllerBuilder) applies it
    /// to controllers with a `for` type; [`Controller::new`](super::Controller::new) ignores it.
    /// controller-runtime: none (Cluster API's `paused` predicate, Flux's `requestedAt`).
    pub fn with_operations_annotations(mut self, enabled: bool) -> Self {
        self.operations_annotations = Some(enabled);
        self
    }

    /// These options with every field they leave unset taken from `defaults` (a manager's
    /// [controller defaults](crate::manager::ManagerOptions::with_controller_defaults)): the
    /// concurrency, when unset, from the group-kind map when `group_kind` (`Kind.group`, or
    /// `Kind` for the core group) is in it, else from `defaults`. What the Builder does for
    /// each controller; call it for a controller you make with `Controller::new`.
    pub fn merge(mut self, defaults: &ControllerOptions<T>, group_kind: Option<&str>) -> Self {
        for (gk, workers) in &defaults.group_kind_concurrency {
            self.group_kind_concurrency
                .entry(gk.clone())
                .or_insert(*workers);
        }
        if self.max_concurrent_reconciles.is_none() {
            let by_kind = group_kind
                .and_then(|gk| self.group_kind_concurrency.get(gk))
                .copied()
                .filter(|n| *n > 0);
            self.max_concurrent_reconciles = by_kind.or(defaults.max_concurrent_reconciles);
        }
        fn fill<V: Clone>(field: &mut Option<V>, default: &Option<V>) {
            if field.is_none() {
                field.clone_from(default);
            }
        }
        fill(&mut self.rate_limiter, &defaults.rate_limiter);
        fill(&mut self.recover_panic, &defaults.recover_panic);
        fill(
            &mut self.reconciliation_timeout,
            &defaults.reconciliation_timeout,
        );
        fill(&mut self.cache_sync_timeout, &defaults.cache_sync_timeout);
        fill(&mut self.use_priority_queue, &defaults.use_priority_queue);
        fill(
            &mut self.need_leader_election,
            &defaults.need_leader_election,
        );
        fill(&mut self.enable_warm_up, &defaults.enable_warm_up);
        fill(&mut self.new_queue, &defaults.new_queue);
        fill(&mut self.metrics, &defaults.metrics);
        fill(&mut self.debounce, &defaults.debounce);
        fill(&mut self.worker_slice, &defaults.worker_slice);
        fill(
            &mut self.skip_name_validation,
            &defaults.skip_name_validation,
        );
        fill(
            &mut self.operations_annotations,
            &defaults.operations_annotations,
        );
        self
    }

    /// The number of workers (default 1).
    pub(crate) fn workers(&self) -> usize {
        self.max_concurrent_reconciles.unwrap_or(1)
    }

    /// Whether a panicking reconcile is caught (default `true`).
    pub(crate) fn recovers_panic(&self) -> bool {
        self.recover_panic.unwrap_or(true)
    }

    /// How long `start` waits for the sources (default 2 min).
    pub(crate) fn sync_timeout(&self) -> Duration {
        self.cache_sync_timeout.unwrap_or(Duration::from_secs(120))
    }

    /// Whether the priority queue is used (default `true`).
    pub(crate) fn priority_queue(&self) -> bool {
        self.use_priority_queue.unwrap_or(true)
    }

    /// Whether the controller runs only on the leader (default `true`).
    pub(crate) fn needs_leader_election(&self) -> bool {
        self.need_leader_election.unwrap_or(true)
    }

    /// Whether `warm_up` starts the sources (default `false`).
    pub(crate) fn warms_up(&self) -> bool {
        self.enable_warm_up.unwrap_or(false)
    }

    /// The debounce window (default zero: off).
    pub(crate) fn debounce_window(&self) -> Duration {
        self.debounce.unwrap_or(Duration::ZERO)
    }

    /// The worker's slice as set (`None`: `coop`'s default for the runtime's flavour).
    pub(crate) fn worker_slice(&self) -> Option<Duration> {
        self.worker_slice
    }

    /// Whether the Builder skips the name check (default `false`).
    pub(crate) fn skips_name_validation(&self) -> bool {
        self.skip_name_validation.unwrap_or(false)
    }

    /// Whether the operations annotations are honoured (default `false`).
    pub(crate) fn honours_operations_annotations(&self) -> bool {
        self.operations_annotations.unwrap_or(false)
    }

    /// The controller's rate limiter: the one set, one made, or the default.
    pub(crate) fn make_rate_limiter(&self) -> Arc<dyn RateLimiter<T>>
    where
        T: QueueItem,
    {
        match &self.rate_limiter {
            Some(RateLimiterChoice::Shared(limiter)) => limiter.clone(),
            Some(RateLimiterChoice::New(new)) => new(),
            None => default_controller_rate_limiter(),
        }
    }

    /// Checks the values a controller cannot run with.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.workers() == 0 {
            return Err("max_concurrent_reconciles must be at least 1".into());
        }
        if self.sync_timeout().is_zero() {
            return Err("cache_sync_timeout must be positive".into());
        }
        if self.reconciliation_timeout.is_some_and(|t| t.is_zero()) {
            return Err("reconciliation_timeout must be positive when set".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::ControllerOptions;
    use crate::Request;

    #[test]
    fn defaults_are_controller_runtimes_and_setters_set() {
        let options = ControllerOptions::<Request>::default();
        assert_eq!(options.workers(), 1);
        assert!(options.recovers_panic());
        assert_eq!(options.sync_timeout(), Duration::from_secs(120));
        assert_eq!(options.reconciliation_timeout, None);
        assert!(options.needs_leader_election());
        assert!(options.priority_queue());
        assert!(!options.warms_up());
        assert!(!options.skips_name_validation());
        let options = options
            .with_max_concurrent_reconciles(4)
            .with_reconciliation_timeout(Duration::from_secs(30));
        assert_eq!(options.workers(), 4);
        assert_eq!(
            options.reconciliation_timeout,
            Some(Duration::from_secs(30))
        );
    }

    #[test]
    fn explicit_options_win_then_group_kind_then_manager_default() {
        let defaults = ControllerOptions::<Request>::default()
            .with_max_concurrent_reconciles(3)
            .with_group_kind_concurrency("ReplicaSet.apps", 5)
            .with_group_kind_concurrency("ConfigMap", 0)
            .with_recover_panic(false)
            .with_cache_sync_timeout(Duration::from_secs(7))
            .with_reconciliation_timeout(Duration::from_secs(9))
            .with_need_leader_election(false);

        let plain = ControllerOptions::default().merge(&defaults, None);
        assert_eq!(plain.workers(), 3);
        assert!(!plain.recovers_panic());
        assert_eq!(plain.sync_timeout(), Duration::from_secs(7));
        assert_eq!(plain.reconciliation_timeout, Some(Duration::from_secs(9)));
        assert!(!plain.needs_leader_election());
        assert!(plain.priority_queue(), "no default: the controller's");

        let rs = ControllerOptions::default().merge(&defaults, Some("ReplicaSet.apps"));
        assert_eq!(rs.workers(), 5);
        // 0 in the map is ignored.
        let cm = ControllerOptions::default().merge(&defaults, Some("ConfigMap"));
        assert_eq!(cm.workers(), 3);

        // Set explicitly, even to the controller's own default: kept.
        let own = ControllerOptions::default()
            .with_max_concurrent_reconciles(1)
            .with_recover_panic(true)
            .with_cache_sync_timeout(Duration::from_secs(120))
            .with_reconciliation_timeout(Duration::from_secs(1))
            .with_need_leader_election(true);
        let own = own.merge(&defaults, Some("ReplicaSet.apps"));
        assert_eq!(own.workers(), 1);
        assert!(own.recovers_panic());
        assert_eq!(own.sync_timeout(), Duration::from_secs(120));
        assert_eq!(own.reconciliation_timeout, Some(Duration::from_secs(1)));
        assert!(own.needs_leader_election());

        // No defaults: nothing changes.
        let none =
            ControllerOptions::<Request>::default().merge(&ControllerOptions::default(), None);
        assert_eq!(none.workers(), 1);
        assert!(none.recovers_panic());
        assert!(!none.skips_name_validation());
    }
}
