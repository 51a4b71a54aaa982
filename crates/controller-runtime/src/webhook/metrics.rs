//! controller-runtime's webhook metrics (`pkg/webhook/internal/metrics`), counted by the
//! [`Server`](super::Server) for every request to a registered path:
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `controller_runtime_webhook_requests_total` | counter | `webhook` (the path), `code` (the HTTP status) |
//! | `controller_runtime_webhook_latency_seconds` | histogram | `webhook` |
//! | `controller_runtime_webhook_requests_in_flight` | gauge | `webhook` |
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use controller_runtime::webhook::WebhookMetrics;
//!
//! let mut registry = Registry::default();
//! let metrics = WebhookMetrics::register(&mut registry);
//! // Hand them to `Server::new`; a Manager's server counts in the manager's registry.
//! assert_eq!(metrics.requests("/validate-apps-v1-deployment", 200), 0);
//! assert_eq!(metrics.in_flight("/validate-apps-v1-deployment"), 0);
//! ```

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    webhook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabels {
    webhook: String,
    code: String,
}

/// Prometheus' default buckets (`prometheus.DefBuckets`), which controller-runtime's webhook
/// latency histogram uses: 5 ms to 10 s.
pub const WEBHOOK_LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(WEBHOOK_LATENCY_BUCKETS)
}

/// The `controller_runtime_webhook_*` families of one registry. Cheap to clone; clones share
/// the families.
#[derive(Clone, Debug)]
pub struct WebhookMetrics {
    total: Family<CodeLabels, Counter>,
    latency: Family<WebhookLabels, Histogram, fn() -> Histogram>,
    in_flight: Family<WebhookLabels, Gauge>,
}

impl Default for WebhookMetrics {
    fn default() -> Self {
        Self::unregistered()
    }
}

impl WebhookMetrics {
    /// Families that count but are not exposed anywhere.
    pub fn unregistered() -> Self {
        WebhookMetrics {
            total: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            in_flight: Family::default(),
        }
    }

    /// Creates the families and registers them with `registry`. Call it once per registry.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::unregistered();
        // prometheus-client appends `_total` to counter names.
        registry.register(
            "controller_runtime_webhook_requests",
            "Total number of admission requests by HTTP status code",
            m.total.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Histogram of the latency of processing admission requests",
            m.latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Current number of admission requests being served",
            m.in_flight.clone(),
        );
        m
    }

    /// Counts a request to `webhook` as in flight until the returned guard is finished.
    pub(crate) fn start(&self, webhook: &str) -> InFlight {
        let labels = WebhookLabels {
            webhook: webhook.to_string(),
        };
        let gauge = self.in_flight.get_or_create(&labels).clone();
        gauge.inc();
        InFlight {
            metrics: self.clone(),
            labels,
            gauge,
            started: Instant::now(),
        }
    }

    /// The number of requests to `webhook` answered with `code` so far.
    pub fn requests(&self, webhook: &str, code: u16) -> u64 {
        self.total
            .get_or_create(&CodeLabels {
                webhook: webhook.to_string(),
                code: code.to_string(),
            })
            .get()
    }

    /// The number of requests to `webhook` being served now.
    pub fn in_flight(&self, webhook: &str) -> i64 {
        self.in_flight
            .get_or_create(&WebhookLabels {
                webhook: webhook.to_string(),
            })
            .get()
    }
}

/// One request in flight; [`finish`](Self::finish) records its code and latency. Dropped
/// unfinished (the connection went away), it only leaves the in-flight gauge.
pub(crate) struct InFlight {
    metrics: WebhookMetrics,
    labels: WebhookLabels,
    gauge: Gauge,
    started: Instant,
}

impl InFlight {
    pub(crate) fn finish(self, code: u16) {
        self.metrics
            .latency
            .get_or_create(&self.labels)
            .observe(self.started.elapsed().as_secs_f64());
        self.metrics
            .total
            .get_or_create(&CodeLabels {
                webhook: self.labels.webhook.clone(),
                code: code.to_string(),
            })
            .inc();
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}
