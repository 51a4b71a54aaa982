//! Workqueue metrics, with controller-runtime's names, labels and buckets
//! (`pkg/metrics/workqueue.go`).
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `workqueue_depth` | gauge | `name`, `controller`, `priority` |
//! | `workqueue_adds_total` | counter | `name`, `controller` |
//! | `workqueue_queue_duration_seconds` | histogram, buckets 1e-8 .. 1e3 (x10) | `name`, `controller` |
//! | `workqueue_work_duration_seconds` | histogram, buckets 1e-8 .. 1e3 (x10) | `name`, `controller` |
//! | `workqueue_unfinished_work_seconds` | gauge | `name`, `controller` |
//! | `workqueue_longest_running_processor_seconds` | gauge | `name`, `controller` |
//! | `workqueue_retries_total` | counter | `name`, `controller` |
//!
//! `name` and `controller` are both the queue's name (the controller's name). A FIFO queue
//! reports its depth with `priority=""`; a priority queue reports one series per priority.
//!
//! Register the families once per registry with [`WorkqueueMetrics::register`] and hand a clone
//! to every queue's config. A queue resolves its labelled series when it is built, so the hot path
//! only touches atomics (and, for the two histograms, the clock and a short lock).
//!
//! `workqueue_unfinished_work_seconds` and `workqueue_longest_running_processor_seconds` are
//! computed **at scrape time** from the start times of the items being processed: a collector
//! registered with the families asks every live queue when the registry is encoded. There is no
//! background ticker, and the values are exact at the moment of the scrape.
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use controller_runtime::workqueue::{Enqueue, QueueConfig, WorkqueueMetrics, Workqueue};
//!
//! let mut registry = Registry::default();
//! let metrics = WorkqueueMetrics::register(&mut registry);
//! let queue = Workqueue::<String>::new(QueueConfig::default().name("pods").metrics(metrics));
//! queue.add("default/a".to_string());
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains(r#"workqueue_adds_total{name="pods",controller="pods"} 1"#));
//! ```

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};
use std::time::Instant;

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: String,
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DepthLabels {
    name: String,
    controller: String,
    priority: String,
}

type HistogramFamily = Family<QueueLabels, Histogram, fn() -> Histogram>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// controller-runtime's buckets: `ExponentialBuckets(10e-9, 10, 12)`, 10 ns to 1000 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

/// The workqueue metric families of one registry. Cheap to clone; clones share the families.
#[derive(Clone, Debug)]
pub struct WorkqueueMetrics {
    depth: Family<DepthLabels, Gauge>,
    adds: Family<QueueLabels, Counter>,
    queue_duration: HistogramFamily,
    work_duration: HistogramFamily,
    retries: Family<QueueLabels, Counter>,
    processing: Arc<ProcessingCollector>,
}

impl WorkqueueMetrics {
    /// Creates the families and registers them with `registry`. Call it once per registry.
    pub fn register(registry: &mut Registry) -> Self {
        let m = WorkqueueMetrics {
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
            retries: Family::default(),
            processing: Arc::new(ProcessingCollector::default()),
        };
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            m.depth.clone(),
        );
        // prometheus-client appends `_total` to counters.
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            m.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            m.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            m.work_duration.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            m.retries.clone(),
        );
        registry.register_collector(Box::new(m.processing.clone()));
        m
    }

    /// Resolves the series of the queue called `name`.
    pub(crate) fn for_queue(&self, name: &str) -> QueueMetrics {
        let labels = QueueLabels {
            name: name.to_owned(),
            controller: name.to_owned(),
        };
        QueueMetrics {
            depth: self.depth_series(name, ""),
            adds: self.adds.get_or_create_owned(&labels),
            queue_duration: self.queue_duration.get_or_create_owned(&labels),
            work_duration: self.work_duration.get_or_create_owned(&labels),
            retries: self.retries.get_or_create_owned(&labels),
            family: self.clone(),
            name: name.to_owned(),
        }
    }

    fn depth_series(&self, name: &str, priority: &str) -> Gauge {
        self.depth.get_or_create_owned(&DepthLabels {
            name: name.to_owned(),
            controller: name.to_owned(),
            priority: priority.to_owned(),
        })
    }

    /// Reports the processing times of `source` (under the queue's `name`) at every scrape, for
    /// as long as `source` lives.
    pub(crate) fn track(&self, name: &str, source: Weak<dyn ProcessingStats>) {
        let labels = QueueLabels {
            name: name.to_owned(),
            controller: name.to_owned(),
        };
        self.processing.sources.lock().push((labels, source));
    }
}

/// One queue's resolved series.
#[derive(Clone, Debug)]
pub(crate) struct QueueMetrics {
    pub(crate) depth: Gauge,
    pub(crate) adds: Counter,
    pub(crate) queue_duration: Histogram,
    pub(crate) work_duration: Histogram,
    pub(crate) retries: Counter,
    family: WorkqueueMetrics,
    name: String,
}

impl QueueMetrics {
    /// The depth series of one priority (the priority queue caches these per priority).
    pub(crate) fn depth_for_priority(&self, priority: i32) -> Gauge {
        self.family.depth_series(&self.name, &priority.to_string())
    }

    /// Records that an item waited from `since` until now before a worker took it.
    pub(crate) fn observe_queued(&self, since: Option<Instant>, now: Instant) {
        if let Some(t) = since {
            self.queue_duration
                .observe(now.saturating_duration_since(t).as_secs_f64());
        }
    }

    /// Records that a worker processed an item from `since` until now.
    pub(crate) fn observe_work(&self, since: Option<Instant>) {
        if let Some(t) = since {
            self.work_duration.observe(t.elapsed().as_secs_f64());
        }
    }
}

/// What a queue tells the scrape-time collector.
/// The sum and the maximum, in seconds, of how long items that started processing at
/// `started` have been processing at `now` (both queues' [`ProcessingStats`]).
pub(crate) fn processing_seconds(
    started: impl Iterator<Item = Instant>,
    now: Instant,
) -> (f64, f64) {
    started.fold((0.0f64, 0.0f64), |(sum, max), t| {
        let secs = now.saturating_duration_since(t).as_secs_f64();
        (sum + secs, max.max(secs))
    })
}

pub(crate) trait ProcessingStats: Send + Sync {
    /// The sum and the maximum, in seconds, of how long the items being processed have been
    /// processing at `now`.
    fn processing_seconds(&self, now: Instant) -> (f64, f64);
}

/// Computes the two processing gauges of every live queue when the registry is encoded.
#[derive(Debug, Default)]
struct ProcessingCollector {
    unfinished: Family<QueueLabels, FloatGauge>,
    longest: Family<QueueLabels, FloatGauge>,
    sources: Mutex<Vec<(QueueLabels, Weak<dyn ProcessingStats>)>>,
}

impl ProcessingCollector {
    fn refresh(&self) {
        let now = Instant::now();
        let mut totals: HashMap<QueueLabels, (f64, f64)> = HashMap::new();
        let mut sources = self.sources.lock();
        sources.retain(|(labels, source)| {
            let entry = totals.entry(labels.clone()).or_default();
            match source.upgrade() {
                Some(s) => {
                    let (sum, max) = s.processing_seconds(now);
                    entry.0 += sum;
                    entry.1 = entry.1.max(max);
                    true
                }
                None => false,
            }
        });
        for (labels, (sum, max)) in &totals {
            self.unfinished.get_or_create(labels).set(*sum);
            self.longest.get_or_create(labels).set(*max);
        }
    }
}

impl Collector for ProcessingCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.refresh();
        let e = encoder.encode_descriptor(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed \
             by work_duration. Large values indicate stuck threads. One can deduce the number of \
             stuck threads by observing the rate at which this increases.",
            None,
            self.unfinished.metric_type(),
        )?;
        self.unfinished.encode(e)?;
        let e = encoder.encode_descriptor(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            None,
            self.longest.metric_type(),
        )?;
        self.longest.encode(e)
    }
}
