//! The multicluster metric families, labelled by cluster:
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `controller_runtime_multicluster_engaged_clusters` | gauge | none |
//! | `controller_runtime_multicluster_reconcile_total` | counter | `controller`, `cluster`, `result` = `success`, `error`, `requeue_after`, `dropped` |
//! | `controller_runtime_multicluster_workqueue_depth` | gauge | `name`, `cluster` |
//!
//! `dropped` counts requests of a cluster no longer engaged, taken from the queue after the
//! cluster went and not reconciled. The depth is read from each [`FairQueue`]'s lanes at
//! scrape time. The per-controller families (`controller_runtime_reconcile_total`, ...) count
//! every cluster together, as before.

use std::fmt;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use super::queue::FairQueue;
use crate::reconcile::ReconcileResult;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    cluster: String,
    result: &'static str,
}

/// The families of the [module docs](self). Cheap to clone; clones count into the same series.
#[derive(Clone, Default)]
pub struct MulticlusterMetrics {
    engaged: Gauge,
    reconciles: Family<ReconcileLabels, Counter>,
    queues: Arc<Mutex<Vec<Weak<FairQueue>>>>,
}

impl fmt::Debug for MulticlusterMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MulticlusterMetrics")
            .field("engaged", &self.engaged.get())
            .finish_non_exhaustive()
    }
}

impl MulticlusterMetrics {
    /// Families counted but not registered anywhere.
    pub fn unregistered() -> Self {
        Self::default()
    }

    /// Registers the families in `registry`.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self::default();
        registry.register(
            "controller_runtime_multicluster_engaged_clusters",
            "Number of provider clusters engaged",
            metrics.engaged.clone(),
        );
        registry.register(
            "controller_runtime_multicluster_reconcile",
            "Total number of reconciliations per controller and cluster",
            metrics.reconciles.clone(),
        );
        registry.register_collector(Box::new(Depth(metrics.queues.clone())));
        metrics
    }

    /// The number of engaged provider clusters.
    pub fn engaged_clusters(&self) -> i64 {
        self.engaged.get()
    }

    pub(crate) fn engaged(&self) -> &Gauge {
        &self.engaged
    }

    /// Counts one reconcile of `controller` in `cluster`.
    pub(crate) fn observe(&self, controller: &str, cluster: &str, result: &ReconcileResult) {
        let result = match result {
            Ok(action) if action.requeue_after_duration().is_some() => "requeue_after",
            Ok(_) => "success",
            Err(_) => "error",
        };
        self.count(controller, cluster, result);
    }

    /// Counts a request of a cluster no longer engaged.
    pub(crate) fn dropped(&self, controller: &str, cluster: &str) {
        self.count(controller, cluster, "dropped");
    }

    fn count(&self, controller: &str, cluster: &str, result: &'static str) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                controller: controller.to_string(),
                cluster: cluster.to_string(),
                result,
            })
            .inc();
    }

    /// How many reconciles of `controller` in `cluster` ended with `result`.
    pub fn reconciles(&self, controller: &str, cluster: &str, result: &'static str) -> u64 {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                controller: controller.to_string(),
                cluster: cluster.to_string(),
                result,
            })
            .get()
    }

    /// Reports the depth of `queue`'s lanes while it lives.
    pub(crate) fn track(&self, queue: &Arc<FairQueue>) {
        let mut queues = self.queues.lock();
        queues.retain(|q| q.strong_count() > 0);
        queues.push(Arc::downgrade(queue));
    }
}

/// `controller_runtime_multicluster_workqueue_depth`, read at scrape time.
#[derive(Debug)]
struct Depth(Arc<Mutex<Vec<Weak<FairQueue>>>>);

impl Collector for Depth {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let queues: Vec<Arc<FairQueue>> = self.0.lock().iter().filter_map(Weak::upgrade).collect();
        let mut family = encoder.encode_descriptor(
            "controller_runtime_multicluster_workqueue_depth",
            "Current depth of a fair workqueue's lane, per cluster",
            None,
            MetricType::Gauge,
        )?;
        for queue in queues {
            for cluster in queue.clusters() {
                let depth = queue.len_of(&cluster).unwrap_or(0);
                let labels = [
                    ("name", queue.name().to_string()),
                    ("cluster", cluster.to_string()),
                ];
                ConstGauge::new(depth as i64).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}
