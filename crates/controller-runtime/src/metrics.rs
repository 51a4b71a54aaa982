//! Metrics: controller-runtime's `controller_runtime_*` reconcile metrics, through the
//! prometheus-client crate.
//!
//! The names, labels and histogram buckets are controller-runtime's, so existing dashboards and
//! alerts keep working:
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `controller_runtime_reconcile_total` | counter | `controller`, `result` = `success`, `error`, `requeue`, `requeue_after` (`requeue` stays 0: see below) |
//! | `controller_runtime_reconcile_errors_total` | counter | `controller` |
//! | `controller_runtime_terminal_reconcile_errors_total` | counter | `controller` |
//! | `controller_runtime_reconcile_panics_total` | counter | `controller` |
//! | `controller_runtime_reconcile_timeouts_total` | counter | `controller` |
//! | `controller_runtime_reconcile_time_seconds` | histogram | `controller` |
//! | `controller_runtime_max_concurrent_reconciles` | gauge | `controller` |
//! | `controller_runtime_active_workers` | gauge | `controller` |
//! | `controller_runtime_reconcile_paused_objects` | gauge | `controller` |
//! | `controller_runtime_informer_streaming_list_fallbacks_total` | counter | none |
//!
//! `controller_runtime_reconcile_paused_objects` is ours: the objects a controller with
//! [operations annotations](crate::operations) on leaves alone because they are paused.
//! The last one is ours too: how many informer streaming lists got no initial-events-end bookmark
//! within their bound (see
//! [`InformerConfig::with_initial_events_timeout`](crate::cache::InformerConfig::with_initial_events_timeout))
//! and fell back to a paginated list. Informers are not tied to a registry, so it is one
//! process-wide counter, registered by [`Metrics::register`].
//!
//! `result="requeue"` counted Go's deprecated `Result{Requeue: true}`, which has no equivalent
//! here (a retry with backoff is an error); the series is still created at zero so dashboards
//! that sum the four results keep working.
//!
//! Register the families once per registry ([`Metrics::register`] registers these and the
//! workqueue's) and hand the result to every controller through its options; the `controller`
//! label tells controllers apart.
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use controller_runtime::metrics::Metrics;
//! use controller_runtime::controller::ControllerOptions;
//!
//! let mut registry = Registry::default();
//! let metrics = Metrics::register(&mut registry);
//! let options = ControllerOptions::<controller_runtime::Request>::default()
//!     .with_metrics(metrics.clone());
//! // ... build controllers, then serve:
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! ```
//!
//! Also: [`rest_client`] (client-go's `rest_client_*` families, counting the requests of an
//! instrumented kube-client), [`process`] (the `process_*` families of Prometheus' process
//! collector), and the cache's gauges `controller_runtime_cache_resources`,
//! `controller_runtime_cache_objects` and `controller_runtime_cache_bytes` (objects and heap
//! held per kind, and how to size a pod's memory limit from them:
//! [`Cache::register_metrics`](crate::cache::Cache::register_metrics)); a
//! [`Manager`](crate::manager::Manager) registers all three in its registry.
//!
//! # Dashboard
//!
//! [`GRAFANA_DASHBOARD`] is a Grafana dashboard of these families: reconcile rate, errors and
//! latency, workers and paused objects, queue depth, latency, retries and stuck work, cache
//! objects and bytes, webhook latency and requests, API requests and their latency, and
//! leader election. Its variables pick the Prometheus data source, the `job`, the `namespace`
//! and the `controller`. Ship it as a ConfigMap labelled `grafana_dashboard: "1"` (the
//! Grafana sidecar's default label), beside a ServiceMonitor for the metrics Service. Every
//! metric its queries name is exported by a running manager (a test scrapes one).
//!
//! Serving them: [`server`] (the metrics server a [`Manager`](crate::manager::Manager) runs:
//! plain HTTP or HTTPS, [`server::Options`]) and [`filters`] (authentication and
//! authorization of every scrape by the API server, controller-runtime's
//! `filters.WithAuthenticationAndAuthorization`).

pub mod filters;
pub mod process;
pub mod rest_client;
pub mod server;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::webhook::WebhookMetrics;
use crate::workqueue::WorkqueueMetrics;

/// The labels of every per-controller series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

/// The outcome of one reconcile, the `result` label of `controller_runtime_reconcile_total`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub(crate) enum ReconcileResultLabel {
    success,
    error,
    requeue,
    requeue_after,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    controller: String,
    result: ReconcileResultLabel,
}

/// controller-runtime's buckets for `controller_runtime_reconcile_time_seconds`: 5 ms to 60 s.
pub(crate) const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// The `controller_runtime_*` metric families of one registry. Cheap to clone; clones share the
/// families.
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    total: Family<ResultLabels, Counter>,
    errors: Family<ControllerLabels, Counter>,
    terminal_errors: Family<ControllerLabels, Counter>,
    panics: Family<ControllerLabels, Counter>,
    timeouts: Family<ControllerLabels, Counter>,
    time: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    max_concurrent: Family<ControllerLabels, Gauge>,
    active_workers: Family<ControllerLabels, Gauge>,
    paused: Family<ControllerLabels, Gauge>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        Self::unregistered()
    }
}

impl ControllerMetrics {
    /// Families that count but are not exposed anywhere (what a controller without configured
    /// metrics uses).
    pub fn unregistered() -> Self {
        ControllerMetrics {
            total: Family::default(),
            errors: Family::default(),
            terminal_errors: Family::default(),
            panics: Family::default(),
            timeouts: Family::default(),
            time: Family::new_with_constructor(reconcile_time_histogram),
            max_concurrent: Family::default(),
            active_workers: Family::default(),
            paused: Family::default(),
        }
    }

    /// Creates the families and registers them with `registry`. Call it once per registry.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::unregistered();
        // prometheus-client appends `_total` to counter names.
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            m.total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            m.errors.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            m.terminal_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            m.panics.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            m.timeouts.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            m.time.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            m.max_concurrent.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            m.active_workers.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_paused_objects",
            "Number of objects a controller does not reconcile because they are paused",
            m.paused.clone(),
        );
        m
    }

    /// The paused-objects series of one controller (created at zero when the controller
    /// honours the operations annotations).
    pub(crate) fn paused(&self, name: &str) -> Gauge {
        self.paused
            .get_or_create(&ControllerLabels {
                controller: name.to_string(),
            })
            .clone()
    }

    /// The series of one controller, created at zero (as controller-runtime's `initMetrics`),
    /// so dashboards show a controller before its first reconcile.
    pub(crate) fn for_controller(&self, name: &str) -> ControllerSeries {
        let labels = ControllerLabels {
            controller: name.to_string(),
        };
        let total = |result| {
            self.total
                .get_or_create(&ResultLabels {
                    controller: name.to_string(),
                    result,
                })
                .clone()
        };
        // Created at zero for dashboards; nothing counts it (see the module docs).
        total(ReconcileResultLabel::requeue);
        ControllerSeries {
            success: total(ReconcileResultLabel::success),
            error: total(ReconcileResultLabel::error),
            requeue_after: total(ReconcileResultLabel::requeue_after),
            errors: self.errors.get_or_create(&labels).clone(),
            terminal_errors: self.terminal_errors.get_or_create(&labels).clone(),
            panics: self.panics.get_or_create(&labels).clone(),
            timeouts: self.timeouts.get_or_create(&labels).clone(),
            time: self.time.get_or_create(&labels).clone(),
            max_concurrent: self.max_concurrent.get_or_create(&labels).clone(),
            active_workers: self.active_workers.get_or_create(&labels).clone(),
        }
    }
}

/// One controller's series, looked up once (prometheus-client metrics are shared handles).
#[derive(Clone, Debug)]
pub(crate) struct ControllerSeries {
    pub(crate) success: Counter,
    pub(crate) error: Counter,
    pub(crate) requeue_after: Counter,
    pub(crate) errors: Counter,
    pub(crate) terminal_errors: Counter,
    pub(crate) panics: Counter,
    pub(crate) timeouts: Counter,
    pub(crate) time: Histogram,
    pub(crate) max_concurrent: Gauge,
    pub(crate) active_workers: Gauge,
}

/// A Grafana dashboard (JSON, Grafana schema 39) of the metric families a
/// [`Manager`](crate::manager::Manager) exports; see the [module docs](self#dashboard).
pub const GRAFANA_DASHBOARD: &str = include_str!("metrics/grafana-dashboard.json");

/// Informer streaming lists abandoned for a paginated list because their initial-events-end
/// bookmark did not come in time. Process-wide: informers count it wherever they run.
pub(crate) static STREAMING_LIST_FALLBACKS: std::sync::LazyLock<Counter> =
    std::sync::LazyLock::new(Counter::default);

/// Every metric family of the runtime for one registry: the controllers', the workqueues' and
/// the webhook server's.
/// What a Manager creates once and passes to each controller.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// The `controller_runtime_*` families.
    pub controller: ControllerMetrics,
    /// The `workqueue_*` families.
    pub workqueue: WorkqueueMetrics,
    /// The `controller_runtime_webhook_*` families.
    pub webhook: WebhookMetrics,
}

impl Metrics {
    /// Registers every set of families with `registry`, and the process-wide
    /// `controller_runtime_informer_streaming_list_fallbacks_total`. Call it once per registry.
    pub fn register(registry: &mut Registry) -> Self {
        registry.register(
            "controller_runtime_informer_streaming_list_fallbacks",
            "Total number of informer streaming lists that got no initial-events-end bookmark in time and fell back to a paginated list",
            STREAMING_LIST_FALLBACKS.clone(),
        );
        Metrics {
            controller: ControllerMetrics::register(registry),
            workqueue: WorkqueueMetrics::register(registry),
            webhook: WebhookMetrics::register(registry),
        }
    }
}
