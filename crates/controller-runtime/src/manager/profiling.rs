//! The profiling endpoint (controller-runtime's `pprof` server, `manager.Options.PprofBindAddress`),
//! in Rust terms: Go's pprof profiles do not exist here, so it serves what the tokio runtime
//! measures without `tokio_unstable`:
//!
//! - `GET /debug/runtime`: the runtime's stable metrics as JSON: `flavor`, `num_workers`,
//!   `num_alive_tasks`, `global_queue_depth`, and per worker `total_busy_seconds`,
//!   `park_count` and `park_unpark_count` (where the target has 64-bit atomics);
//! - `GET /debug/pprof/` (and `/debug/pprof`): an index of what is served.
//!
//! A CPU or heap profiler would need signal handlers or `unsafe`; profile with `perf`,
//! `tokio-console` or a profiler crate in the binary instead.

use std::sync::Arc;

use bytes::Bytes;
use http::{Response, StatusCode, Uri, header};
use http_body_util::Full;
use tokio::runtime::{Handle, RuntimeFlavor};

use super::http::{Handler, text};

/// The index `/debug/pprof/` serves.
const INDEX: &str = "\
profiling endpoints of this process:\n\
/debug/runtime  the tokio runtime's stable metrics (JSON): flavor, num_workers, \
num_alive_tasks, global_queue_depth, per-worker busy time and park counts\n\
/debug/pprof/   this index\n";

/// The profiling server's handler, reading the metrics of the runtime `handle` runs.
pub(crate) fn handler(handle: Handle) -> Handler {
    Arc::new(move |uri: &Uri| match uri.path() {
        "/debug/runtime" => json(runtime_metrics(&handle)),
        "/debug/pprof" | "/debug/pprof/" => text(StatusCode::OK, INDEX),
        _ => text(StatusCode::NOT_FOUND, "404 page not found\n"),
    })
}

/// The runtime's stable metrics.
fn runtime_metrics(handle: &Handle) -> serde_json::Value {
    let metrics = handle.metrics();
    let flavor = match handle.runtime_flavor() {
        RuntimeFlavor::CurrentThread => "current_thread",
        RuntimeFlavor::MultiThread => "multi_thread",
        _ => "other",
    };
    let workers: Vec<serde_json::Value> = (0..metrics.num_workers())
        .map(|worker| worker_metrics(&metrics, worker))
        .collect();
    serde_json::json!({
        "flavor": flavor,
        "num_workers": metrics.num_workers(),
        "num_alive_tasks": metrics.num_alive_tasks(),
        "global_queue_depth": metrics.global_queue_depth(),
        "workers": workers,
    })
}

#[cfg(target_has_atomic = "64")]
fn worker_metrics(metrics: &tokio::runtime::RuntimeMetrics, worker: usize) -> serde_json::Value {
    serde_json::json!({
        "worker": worker,
        "total_busy_seconds": metrics.worker_total_busy_duration(worker).as_secs_f64(),
        "park_count": metrics.worker_park_count(worker),
        "park_unpark_count": metrics.worker_park_unpark_count(worker),
    })
}

#[cfg(not(target_has_atomic = "64"))]
fn worker_metrics(_metrics: &tokio::runtime::RuntimeMetrics, worker: usize) -> serde_json::Value {
    serde_json::json!({ "worker": worker })
}

/// A JSON response.
fn json(value: serde_json::Value) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;

    async fn get(handler: &Handler, uri: &str) -> (u16, String) {
        let response = handler(&uri.parse().unwrap());
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_the_runtime_metrics_and_an_index() {
        let handler = handler(Handle::current());
        let (status, body) = get(&handler, "/debug/runtime").await;
        assert_eq!(status, 200);
        let value: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(value["flavor"], "multi_thread");
        assert_eq!(value["num_workers"], 2);
        assert_eq!(value["workers"].as_array().unwrap().len(), 2);
        assert!(value["num_alive_tasks"].is_u64());
        let (status, body) = get(&handler, "/debug/pprof/").await;
        assert_eq!(status, 200);
        assert!(body.contains("/debug/runtime"), "{body}");
        assert_eq!(get(&handler, "/debug/pprof").await.0, 200);
        assert_eq!(get(&handler, "/debug/nope").await.0, 404);
    }
}
