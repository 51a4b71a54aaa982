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
mod options;
mod ring;

pub(crate) use assigner::Sharder;
pub use assignment::assign;
pub(crate) use drain::guard;
pub use labels::{RING_LABEL, copy_shard_label, drain_label, selector, shard_label};
pub use metrics::ShardMetrics;
pub(crate) use ring::Membership;

pub use options::{Error, ShardingOptions};
