//! The sharding metrics, counted by the replica that assigns (the ring's coordinator):
//!
//! | metric | type | labels |
//! | --- | --- | --- |
//! | `controller_runtime_shard_objects` | gauge | `controller`, `shard` (a replica): the objects assigned to it at the last pass |
//! | `controller_runtime_shard_moves_total` | counter | `controller`: objects taken from one live or dead replica for another |
//! | `controller_runtime_shard_drain_seconds` | histogram | `controller`: from the drain label written to its acknowledgement |
//!
//! ```
//! use prometheus_client::registry::Registry;
//! use controller_runtime::sharding::ShardMetrics;
//!
//! let mut registry = Registry::default();
//! let metrics = ShardMetrics::register(&mut registry);
//! // A Manager's sharded controllers count in the manager's registry.
//! assert_eq!(metrics.moves("memo"), 0);
//! assert_eq!(metrics.objects("memo", "replica-0"), 0);
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ControllerLabels {
    controller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ShardLabels {
    controller: String,
    shard: String,
}

/// Drain times from 1 ms to about 33 s.
fn drain_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The `controller_runtime_shard_*` families of one registry. Cheap to clone; clones share
/// the families.
#[derive(Clone, Debug)]
pub struct ShardMetrics {
    objects: Family<ShardLabels, Gauge>,
    moves: Family<ControllerLabels, Counter>,
    drain: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    /// The shards last set per controller, so that a shard gone from the count is removed.
    known: Arc<Mutex<HashMap<String, Vec<String>>>>,
}

impl Default for ShardMetrics {
    fn default() -> Self {
        Self::unregistered()
    }
}

impl ShardMetrics {
    /// Families that count but are not exposed anywhere.
    pub fn unregistered() -> Self {
        ShardMetrics {
            objects: Family::default(),
            moves: Family::default(),
            drain: Family::new_with_constructor(drain_histogram),
            known: Arc::default(),
        }
    }

    /// Creates the families and registers them with `registry`. Call it once per registry.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::unregistered();
        registry.register(
            "controller_runtime_shard_objects",
            "Objects assigned to each shard of a sharded controller",
            m.objects.clone(),
        );
        // prometheus-client appends `_total` to counter names.
        registry.register(
            "controller_runtime_shard_moves",
            "Objects moved from one shard of a sharded controller to another",
            m.moves.clone(),
        );
        registry.register(
            "controller_runtime_shard_drain_seconds",
            "Time from asking a shard to let go of an object to its acknowledgement",
            m.drain.clone(),
        );
        m
    }

    /// Sets the count of objects assigned to each shard, forgetting shards no longer listed.
    pub(crate) fn set_objects(&self, controller: &str, counts: &[(String, i64)]) {
        let mut known = self.known.lock();
        let shards: Vec<String> = counts.iter().map(|(shard, _)| shard.clone()).collect();
        for gone in known.get(controller).into_iter().flatten() {
            if !shards.contains(gone) {
                self.objects.remove(&ShardLabels {
                    controller: controller.to_string(),
                    shard: gone.clone(),
                });
            }
        }
        known.insert(controller.to_string(), shards);
        for (shard, n) in counts {
            self.objects
                .get_or_create(&ShardLabels {
                    controller: controller.to_string(),
                    shard: shard.clone(),
                })
                .set(*n);
        }
    }

    /// Counts one object moved.
    pub(crate) fn moved(&self, controller: &str) {
        self.moves
            .get_or_create(&ControllerLabels {
                controller: controller.to_string(),
            })
            .inc();
    }

    /// Records one drain's duration.
    pub(crate) fn drained(&self, controller: &str, took: Duration) {
        self.drain
            .get_or_create(&ControllerLabels {
                controller: controller.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// The objects assigned to `shard` of `controller` at the last assignment pass.
    pub fn objects(&self, controller: &str, shard: &str) -> i64 {
        self.objects
            .get_or_create(&ShardLabels {
                controller: controller.to_string(),
                shard: shard.to_string(),
            })
            .get()
    }

    /// The objects of `controller` moved between shards so far.
    pub fn moves(&self, controller: &str) -> u64 {
        self.moves
            .get_or_create(&ControllerLabels {
                controller: controller.to_string(),
            })
            .get()
    }
}
