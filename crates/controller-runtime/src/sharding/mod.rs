//! Sharded controllers: one controller run by any number of replicas, each reconciling its
//! own share of the objects, with its cache holding only that share.
//!
//! Leader election makes one replica do all the work; when a controller outgrows one process
//! (its cache's memory, its reconcile throughput), sharding divides both. It is an option of
//! the Builder, off by default:
//! [`ControllerBuilder::with_sharding`](crate::builder::ControllerBuilder::with_sharding)
//! with a [`ShardingOptions`] naming the replica. Kubernetes is the engine: Leases for
//! membership, labels for assignment, the API server as the one source of truth.
//!
//! ## How it works
//!
//! - **Membership** (`ring`): each replica holds a `coordination.k8s.io/v1` Lease named
//!   `<controller>-<replica>` in the options' namespace, labelled `shard.crt.dev/ring:
//!   <controller>` (the ring), and renews it every
//!   [`renew_period`](ShardingOptions::with_renew_period). Every replica lists the ring's
//!   Leases and counts a member live while its Lease's `renewTime` has changed within the
//!   [`lease_duration`](ShardingOptions::with_lease_duration), measured on its own clock from
//!   when it saw the change (as leader election does: no clock is compared across machines).
//! - **Assignment** ([`assign`]): rendezvous hashing over the live members: balanced, and a
//!   membership change moves only the objects that must move. The assignment is written on each
//!   object as the label [`shard_label`] (`shard.crt.dev/<controller>: <replica>`).
//! - **Each replica's cache** selects its own objects: the `for` kind's informer lists and
//!   watches with the label selector [`selector`] (`shard.crt.dev/<controller>=<replica>`), so
//!   memory and work both divide. Owned objects follow their owner: their events enqueue the
//!   owner, which only its shard's cache holds (a request for an object not in the cache is done
//!   at once); [`copy_shard_label`] also divides the children's caches.
//! - **Handover** (`drain`): an object never goes straight from a live replica to another. The
//!   assigner first labels it [`drain_label`]; the old shard's reconcile for that object (run
//!   by its workqueue, which never runs two reconciles of a key at once, so after any reconcile
//!   in flight) does not call the reconciler but removes the shard and drain labels; only then,
//!   seeing the object unassigned, does the assigner write the new shard. Its reconciles
//!   start after the old shard's last one ended: no object is reconciled by two replicas at once.
//! - **A dead replica** cannot acknowledge. Its objects are reassigned directly once its Lease
//!   has not been renewed for the lease duration. A replica fences itself first: it starts no
//!   reconcile once its own last renewal is older than half the lease duration, so a reconcile
//!   it started has at least half a lease duration to end before another replica may start
//!   one (keep reconciles shorter: `ControllerOptions::with_reconciliation_timeout`). Its
//!   objects move within the lease duration plus one [`assign_period`](ShardingOptions::with_assign_period).
//!
//! ## Who assigns: deterministic, on one replica at a time
//!
//! Every replica runs the assigner, but only the *coordinator* acts: the live member with the
//! smallest name, as each replica sees the ring, and only while its own Lease is fresh. There is
//! no separate election: the ring already is the membership, and every write the assigner makes
//! carries the `resourceVersion` it decided on, so two replicas that both believe they
//! coordinate (while their views of the ring converge, within one renew period) cannot undo
//! each other's writes unseen; each step of the handover is conditional on the one before, so
//! safety never depends on there being one assigner. The coordinator lists the objects'
//! metadata (pages of 500) every [`assign_period`](ShardingOptions::with_assign_period) and at
//! once when the ring changes; new objects are assigned within one period.
//!
//! A sharded controller runs on every replica: it does not need leader election (the builder
//! sets `need_leader_election` to false), so a Manager with leader election runs its
//! unsharded controllers on the leader only and its sharded ones everywhere.
//!
//! The sharding metrics are in [`ShardMetrics`], registered in each Manager's registry.

mod assigner;
mod assignment;
mod drain;
mod labels;
mod metrics;
mod ring;

use std::time::Duration;

pub use assignment::assign;
pub use labels::{RING_LABEL, copy_shard_label, drain_label, selector, shard_label};
pub use metrics::ShardMetrics;

pub(crate) use assigner::Sharder;
pub(crate) use drain::guard;
pub(crate) use ring::Membership;

/// Why a controller could not be sharded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The controller's or the replica's name makes no valid label.
    #[error("sharding controller {controller:?} as replica {replica:?}: {reason}")]
    InvalidName {
        /// The controller's name.
        controller: String,
        /// The replica's name.
        replica: String,
        /// Why it is not a valid label key or value.
        reason: String,
    },
    /// The manager's cache already has an informer of the `for` kind, which holds every object
    /// rather than the shard's: build sharded controllers before anything reads that kind.
    #[error(
        "the cache already holds every {kind} object: build the sharded controller {controller:?} before reading {kind} through the cache"
    )]
    CacheInUse {
        /// The controller's name.
        controller: String,
        /// The `for` kind.
        kind: String,
    },
    /// The timings do not make a working ring.
    #[error("sharding controller {controller:?}: {reason}")]
    InvalidTimings {
        /// The controller's name.
        controller: String,
        /// What is wrong.
        reason: String,
    },
}

/// Options of a sharded controller (see the [module docs](self)). Every field has a default;
/// set the others with the `with_*` setters.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::sharding::ShardingOptions;
///
/// let options = ShardingOptions::default()
///     .with_replica("replica-0")
///     .with_lease_namespace("my-operator")
///     .with_lease_duration(Duration::from_secs(15));
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ShardingOptions {
    pub(crate) replica: String,
    pub(crate) lease_namespace: String,
    pub(crate) lease_duration: Duration,
    pub(crate) renew_period: Duration,
    pub(crate) assign_period: Duration,
}

impl Default for ShardingOptions {
    fn default() -> Self {
        ShardingOptions {
            replica: default_replica(),
            lease_namespace: "default".to_string(),
            lease_duration: Duration::from_secs(15),
            renew_period: Duration::from_secs(2),
            assign_period: Duration::from_secs(5),
        }
    }
}

/// `$POD_NAME`, else the host name (lowercased, cut to 40 characters) plus `-` and 8 random
/// hex digits: a valid label value and Lease name suffix.
fn default_replica() -> String {
    if let Ok(pod) = std::env::var("POD_NAME")
        && !pod.is_empty()
    {
        return pod;
    }
    let host: String = crate::leaderelection::default_identity()
        .split('_')
        .next()
        .unwrap_or("replica")
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let host = host.trim_matches('-');
    let host = if host.is_empty() { "replica" } else { host };
    format!("{host}-{:08x}", rand::random::<u32>())
}

impl ShardingOptions {
    /// This replica's name: the value of the shard label on its objects, and its Lease's
    /// suffix (default `$POD_NAME`, else the host name and a random suffix). A valid label
    /// value; unique among the replicas.
    pub fn with_replica(mut self, replica: impl Into<String>) -> Self {
        self.replica = replica.into();
        self
    }

    /// The namespace of the ring's Leases (default `default`).
    pub fn with_lease_namespace(mut self, namespace: impl Into<String>) -> Self {
        self.lease_namespace = namespace.into();
        self
    }

    /// How long a member counts as live after its last observed renewal (default 15 s): a dead
    /// replica's objects move after it. At least three renew periods.
    pub fn with_lease_duration(mut self, duration: Duration) -> Self {
        self.lease_duration = duration;
        self
    }

    /// How often a replica renews its Lease and reads the ring (default 2 s).
    pub fn with_renew_period(mut self, period: Duration) -> Self {
        self.renew_period = period;
        self
    }

    /// How often the coordinator lists the objects to assign new ones and move those whose
    /// shard changed (default 5 s); it also assigns at once when the ring changes.
    pub fn with_assign_period(mut self, period: Duration) -> Self {
        self.assign_period = period;
        self
    }

    /// This replica's name.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Checks names and timings for `controller`.
    pub(crate) fn check(&self, controller: &str) -> Result<(), Error> {
        labels::check(controller, &self.replica).map_err(|reason| Error::InvalidName {
            controller: controller.to_string(),
            replica: self.replica.clone(),
            reason,
        })?;
        let invalid = |reason: &str| {
            Err(Error::InvalidTimings {
                controller: controller.to_string(),
                reason: reason.to_string(),
            })
        };
        if self.renew_period.is_zero() || self.assign_period.is_zero() {
            return invalid("the renew and assign periods must be positive");
        }
        if self.lease_duration < self.renew_period * 3 {
            return invalid("the lease duration must be at least three renew periods");
        }
        Ok(())
    }
}
