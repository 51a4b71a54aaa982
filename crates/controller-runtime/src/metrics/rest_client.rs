//! REST client metrics: every request a kube-client sends to the API server, counted by
//! status code, method and host, and timed by verb and host, under client-go's names.
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `rest_client_requests_total` | counter | `code` (the HTTP status, `<error>` when no response came), `method` (`GET`, `POST`, ...), `host` |
//! | `rest_client_request_duration_seconds` | histogram | `verb` (the HTTP method), `host` |
//!
//! controller-runtime registers `rest_client_requests_total` in its registry by default
//! (`pkg/metrics/client_go_adapter.go`), and client-go's latency histogram only when asked
//! (`RegisterClientMetrics`); a [`Manager`](crate::manager::Manager) registers both and
//! instruments the client it is given, so its `/metrics` shows them. The histogram has two
//! low-cardinality labels (client-go's, not the older per-path one), so it costs little.
//!
//! A watch is counted once, when its response starts (its duration is the time to the
//! response's head, not the life of the stream), as client-go does.
//!
//! ```
//! # async fn f(client: kube_client::Client) {
//! use prometheus_client::registry::Registry;
//! use controller_runtime::metrics::rest_client::RestClientMetrics;
//!
//! let mut registry = Registry::default();
//! let metrics = RestClientMetrics::register(&mut registry);
//! // Every request through `client` is counted from now on.
//! let client = metrics.instrument(client, "");
//! # let _ = client;
//! # }
//! ```

use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use http::{Request, Response};
use kube_client::client::Body;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// The labels of `rest_client_requests_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    code: String,
    method: String,
    host: String,
}

/// The labels of `rest_client_request_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DurationLabels {
    verb: String,
    host: String,
}

/// client-go's buckets for `rest_client_request_duration_seconds` (k8s.io/component-base):
/// 5 ms to 60 s.
const DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The `rest_client_*` families of one registry. Cheap to clone; clones share the families.
#[derive(Clone, Debug)]
pub struct RestClientMetrics {
    requests: Family<RequestLabels, Counter>,
    duration: Family<DurationLabels, Histogram, fn() -> Histogram>,
}

impl RestClientMetrics {
    /// Creates the families and registers them with `registry`. Call it once per registry.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = RestClientMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
        };
        // prometheus-client appends `_total` to counter names.
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            metrics.requests.clone(),
        );
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            metrics.duration.clone(),
        );
        metrics
    }

    /// A client sending every request through `client` and counting it in these families.
    /// `host` is the `host` label for requests whose URI has no authority: kube-client keeps
    /// the API server's address inside its service stack and hands the outer layers relative
    /// URIs, so a ready [`Client`](kube_client::Client) cannot tell it; pass the server's
    /// `host:port` when you know it (from the `kube_client::Config`'s `cluster_url`), else
    /// `""`. The new client keeps `client`'s default namespace and expiry.
    ///
    /// Instrument a client once: a client instrumented twice counts each request twice.
    pub fn instrument(&self, client: kube_client::Client, host: &str) -> kube_client::Client {
        let default_namespace = client.default_namespace().to_string();
        let valid_until = *client.valid_until();
        let service = Instrumented {
            client,
            metrics: self.clone(),
            host: host.to_string(),
        };
        kube_client::Client::new(service, default_namespace).with_valid_until(valid_until)
    }

    /// Counts one request.
    fn observe(&self, method: &str, host: &str, code: String, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                code,
                method: method.to_string(),
                host: host.to_string(),
            })
            .inc();
        self.duration
            .get_or_create(&DurationLabels {
                verb: method.to_string(),
                host: host.to_string(),
            })
            .observe(seconds);
    }
}

/// The service of an instrumented client: the inner client's `send`, counted.
#[derive(Clone)]
struct Instrumented {
    client: kube_client::Client,
    metrics: RestClientMetrics,
    host: String,
}

impl tower_service::Service<Request<Body>> for Instrumented {
    type Response = Response<Body>;
    type Error = kube_client::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, kube_client::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The inner client buffers its own requests.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let client = self.client.clone();
        let metrics = self.metrics.clone();
        let method = request.method().as_str().to_string();
        let host = request
            .uri()
            .authority()
            .map_or_else(|| self.host.clone(), |a| a.as_str().to_string());
        Box::pin(async move {
            let start = Instant::now();
            let response = client.send(request).await;
            let code = match &response {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            metrics.observe(&method, &host, code, start.elapsed().as_secs_f64());
            response
        })
    }
}
