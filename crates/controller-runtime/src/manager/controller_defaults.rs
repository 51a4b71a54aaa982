//! [`ControllerDefaults`]: the options every controller the Builder builds on a manager takes
//! unless its own [`ControllerOptions`] set them (controller-runtime's
//! `manager.Options.Controller`, a `config.Controller`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::Request;
use crate::controller::ControllerOptions;
use crate::workqueue::RateLimiter;

/// Makes one controller's rate limiter; see [`ControllerDefaults::with_rate_limiter`].
pub type NewRateLimiterFn = Arc<dyn Fn() -> Arc<dyn RateLimiter<Request>> + Send + Sync>;

/// Controller options set once for a whole manager (controller-runtime's
/// `manager.Options.Controller`, a `config.Controller`), given with
/// [`ManagerOptions::with_controller_defaults`](super::ManagerOptions::with_controller_defaults).
///
/// A controller built by the [`ControllerBuilder`](crate::builder::ControllerBuilder) on the
/// manager takes each default its own options
/// ([`with_options`](crate::builder::ControllerBuilder::with_options)) did not set with a
/// `with_*` setter: as in controller-runtime, a controller's own options win over the manager's
/// defaults, which win over [`ControllerOptions::default`]. Every field is unset by default
/// (the controller's own default applies). A controller made with
/// [`Controller::new`](crate::controller::Controller::new) takes the defaults through
/// [`resolve`](Self::resolve).
///
/// ```
/// use controller_runtime::controller::ControllerOptions;
/// use controller_runtime::manager::{ControllerDefaults, ManagerOptions};
///
/// let defaults = ControllerDefaults::default()
///     .with_max_concurrent_reconciles(3)
///     .with_group_kind_concurrency("ReplicaSet.apps", 5);
/// let options = ManagerOptions::default().with_controller_defaults(defaults.clone());
/// # let _ = options;
///
/// // A controller made by hand takes them too: a ReplicaSet controller without options of
/// // its own runs 5 reconciles at once, a Deployment controller 3, and one that says 1 runs 1.
/// let rs = defaults.resolve(ControllerOptions::default(), Some("ReplicaSet.apps"));
/// let one = defaults.resolve(
///     ControllerOptions::default().with_max_concurrent_reconciles(1),
///     Some("ReplicaSet.apps"),
/// );
/// # let _ = (rs, one);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ControllerDefaults {
    pub(crate) max_concurrent_reconciles: Option<usize>,
    pub(crate) group_kind_concurrency: HashMap<String, usize>,
    pub(crate) rate_limiter: Option<NewRateLimiterFn>,
    pub(crate) recover_panic: Option<bool>,
    pub(crate) cache_sync_timeout: Option<Duration>,
    pub(crate) reconciliation_timeout: Option<Duration>,
    pub(crate) use_priority_queue: Option<bool>,
    pub(crate) need_leader_election: Option<bool>,
    pub(crate) enable_warm_up: Option<bool>,
    pub(crate) skip_name_validation: Option<bool>,
}

impl fmt::Debug for ControllerDefaults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerDefaults")
            .field("max_concurrent_reconciles", &self.max_concurrent_reconciles)
            .field("group_kind_concurrency", &self.group_kind_concurrency)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("recover_panic", &self.recover_panic)
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field("reconciliation_timeout", &self.reconciliation_timeout)
            .field("use_priority_queue", &self.use_priority_queue)
            .field("need_leader_election", &self.need_leader_election)
            .field("enable_warm_up", &self.enable_warm_up)
            .field("skip_name_validation", &self.skip_name_validation)
            .finish()
    }
}

impl ControllerDefaults {
    /// How many reconciles each controller runs at once, unless its options or
    /// [`with_group_kind_concurrency`](Self::with_group_kind_concurrency) say otherwise.
    /// Default: unset (the controller's default, 1); 0 makes the build fail.
    /// controller-runtime: `config.Controller.MaxConcurrentReconciles`; kube-rs:
    /// `controller::Config::concurrency`.
    pub fn with_max_concurrent_reconciles(mut self, workers: usize) -> Self {
        self.max_concurrent_reconciles = Some(workers);
        self
    }

    /// How many reconciles a controller whose `for` type is of the group-kind `group_kind`
    /// runs at once, unless its own options set it; over
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

    /// Makes the rate limiter of each controller whose options set none: called once per
    /// controller, so controllers do not share their keys' backoff. Default: unset (each
    /// controller its own `default_controller_rate_limiter()`). controller-runtime:
    /// `controller.Options.RateLimiter` (per controller only; `config.Controller` has none);
    /// kube-rs: none.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use controller_runtime::manager::ControllerDefaults;
    /// use controller_runtime::workqueue::ItemExponentialFailureRateLimiter;
    ///
    /// let defaults = ControllerDefaults::default().with_rate_limiter(Arc::new(|| {
    ///     Arc::new(ItemExponentialFailureRateLimiter::new(
    ///         Duration::from_millis(10),
    ///         Duration::from_secs(60),
    ///     )) as _
    /// }));
    /// # let _ = defaults;
    /// ```
    pub fn with_rate_limiter(mut self, new_rate_limiter: NewRateLimiterFn) -> Self {
        self.rate_limiter = Some(new_rate_limiter);
        self
    }

    /// Whether a panicking reconcile is caught and retried. Default: unset (the controller's
    /// default, `true`). controller-runtime: `config.Controller.RecoverPanic`; kube-rs: none.
    pub fn with_recover_panic(mut self, recover: bool) -> Self {
        self.recover_panic = Some(recover);
        self
    }

    /// How long a controller's `start` waits for its sources to sync. Default: unset (the
    /// controller's default, 2 min). controller-runtime: `config.Controller.CacheSyncTimeout`;
    /// kube-rs: none.
    pub fn with_cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = Some(timeout);
        self
    }

    /// How long a reconcile may run before it counts as an error. Default: unset (no limit).
    /// controller-runtime: `config.Controller.ReconciliationTimeout`; kube-rs: none.
    pub fn with_reconciliation_timeout(mut self, timeout: Duration) -> Self {
        self.reconciliation_timeout = Some(timeout);
        self
    }

    /// Whether controllers use the priority queue. Default: unset (the controller's default,
    /// `true`). controller-runtime: `config.Controller.UsePriorityQueue`; kube-rs: none.
    pub fn with_use_priority_queue(mut self, enabled: bool) -> Self {
        self.use_priority_queue = Some(enabled);
        self
    }

    /// Whether controllers run only on the elected leader. Default: unset (the controller's
    /// default, `true`). controller-runtime: `config.Controller.NeedLeaderElection`; kube-rs:
    /// none.
    pub fn with_need_leader_election(mut self, needed: bool) -> Self {
        self.need_leader_election = Some(needed);
        self
    }

    /// Whether controllers start their sources before winning leadership. Default: unset (the
    /// controller's default, `false`). controller-runtime: `config.Controller.EnableWarmup`;
    /// kube-rs: none.
    pub fn with_enable_warm_up(mut self, enabled: bool) -> Self {
        self.enable_warm_up = Some(enabled);
        self
    }

    /// Let the Builder build controllers whose name another controller of the manager has
    /// (e.g. many alike in tests), unless a builder says otherwise with
    /// [`with_skip_name_validation`](crate::builder::ControllerBuilder::with_skip_name_validation).
    /// Names label logs and metrics: alike names mix them. Default: unset (`false`: a second
    /// controller of one name is refused). controller-runtime:
    /// `config.Controller.SkipNameValidation`; kube-rs: none.
    pub fn with_skip_name_validation(mut self, skip: bool) -> Self {
        self.skip_name_validation = Some(skip);
        self
    }

    /// Whether name validation is skipped when the controller does not say (default `false`).
    pub(crate) fn skips_name_validation(&self) -> bool {
        self.skip_name_validation.unwrap_or(false)
    }

    /// `options` with every field its `with_*` setters left alone taken from these defaults:
    /// the concurrency from the group-kind map when `group_kind` (`Kind.group`, or `Kind` for
    /// the core group) is in it, else the manager-wide one. What the Builder does for each
    /// controller; call it for a controller you make with `Controller::new`.
    pub fn resolve(
        &self,
        mut options: ControllerOptions<Request>,
        group_kind: Option<&str>,
    ) -> ControllerOptions<Request> {
        let explicit = options.explicit;
        if !explicit.max_concurrent_reconciles {
            let by_kind = group_kind
                .and_then(|gk| self.group_kind_concurrency.get(gk))
                .copied()
                .filter(|n| *n > 0);
            if let Some(workers) = by_kind.or(self.max_concurrent_reconciles) {
                options.max_concurrent_reconciles = workers;
            }
        }
        if !explicit.rate_limiter
            && let Some(new_rate_limiter) = &self.rate_limiter
        {
            options.rate_limiter = new_rate_limiter();
        }
        fill(
            explicit.recover_panic,
            self.recover_panic,
            &mut options.recover_panic,
        );
        fill(
            explicit.cache_sync_timeout,
            self.cache_sync_timeout,
            &mut options.cache_sync_timeout,
        );
        if options.reconciliation_timeout.is_none() {
            options.reconciliation_timeout = self.reconciliation_timeout;
        }
        fill(
            explicit.use_priority_queue,
            self.use_priority_queue,
            &mut options.use_priority_queue,
        );
        fill(
            explicit.need_leader_election,
            self.need_leader_election,
            &mut options.need_leader_election,
        );
        fill(
            explicit.enable_warm_up,
            self.enable_warm_up,
            &mut options.enable_warm_up,
        );
        options
    }
}

/// Sets `field` to `default` unless it was set explicitly or there is no default.
fn fill<V>(explicit: bool, default: Option<V>, field: &mut V) {
    if let (false, Some(default)) = (explicit, default) {
        *field = default;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::ControllerDefaults;
    use crate::controller::ControllerOptions;

    #[test]
    fn explicit_options_win_then_group_kind_then_manager_default() {
        let defaults = ControllerDefaults::default()
            .with_max_concurrent_reconciles(3)
            .with_group_kind_concurrency("ReplicaSet.apps", 5)
            .with_group_kind_concurrency("ConfigMap", 0)
            .with_recover_panic(false)
            .with_cache_sync_timeout(Duration::from_secs(7))
            .with_reconciliation_timeout(Duration::from_secs(9))
            .with_need_leader_election(false);

        let plain = defaults.resolve(ControllerOptions::default(), None);
        assert_eq!(plain.max_concurrent_reconciles, 3);
        assert!(!plain.recover_panic);
        assert_eq!(plain.cache_sync_timeout, Duration::from_secs(7));
        assert_eq!(plain.reconciliation_timeout, Some(Duration::from_secs(9)));
        assert!(!plain.need_leader_election);
        assert!(plain.use_priority_queue, "no default: the controller's");

        let rs = defaults.resolve(ControllerOptions::default(), Some("ReplicaSet.apps"));
        assert_eq!(rs.max_concurrent_reconciles, 5);
        // 0 in the map is ignored.
        let cm = defaults.resolve(ControllerOptions::default(), Some("ConfigMap"));
        assert_eq!(cm.max_concurrent_reconciles, 3);

        // Set explicitly, even to the controller's own default: kept.
        let own = ControllerOptions::default()
            .with_max_concurrent_reconciles(1)
            .with_recover_panic(true)
            .with_cache_sync_timeout(Duration::from_secs(120))
            .with_reconciliation_timeout(Duration::from_secs(1))
            .with_need_leader_election(true);
        let own = defaults.resolve(own, Some("ReplicaSet.apps"));
        assert_eq!(own.max_concurrent_reconciles, 1);
        assert!(own.recover_panic);
        assert_eq!(own.cache_sync_timeout, Duration::from_secs(120));
        assert_eq!(own.reconciliation_timeout, Some(Duration::from_secs(1)));
        assert!(own.need_leader_election);

        // No defaults: nothing changes.
        let none = ControllerDefaults::default().resolve(ControllerOptions::default(), None);
        assert_eq!(none.max_concurrent_reconciles, 1);
        assert!(none.recover_panic);
        assert!(!ControllerDefaults::default().skips_name_validation());
    }
}
