//! Workqueues: the client-go work queue with its delaying and rate-limiting layers,
//! controller-runtime's priority queue, and rate limiters.
//!
//! Two traits split what a queue's users need:
//! - [`Enqueue`]: add an item, now, after a delay, rate-limited, or with [`AddOpts`] (a
//!   priority). Event handlers get `&dyn Enqueue<T>` and sources `Arc<dyn Enqueue<T>>`: they
//!   can add work, not take, finish or shut down.
//! - [`Queue`]: `Enqueue` plus what a controller and its workers do: `get_with_priority` (so a
//!   requeue keeps the item's priority, whatever queue the controller was given), `done`,
//!   `forget`, shutdown. Controllers hold `Arc<dyn Queue<T>>`.
//!
//! ## The rules every queue keeps (client-go semantics)
//! - `add` is ignored after shutdown; an item already waiting (dirty) is not added twice.
//! - `get` moves an item to *processing*; until `done`, a second `add` of that item only marks it
//!   dirty, and `done` puts it back in the queue. So one item is never processed by two workers at
//!   once, and an add during processing is delivered exactly once more, after `done`.
//! - After `shut_down`, `get` still hands out what is left and returns `None` only once the
//!   queue is empty. Delayed adds that are still waiting are dropped at shutdown. As in
//!   client-go, an item added during processing before the shutdown is still queued again at its
//!   `done`; a worker that already saw `None` does not come back for it, so controllers stop
//!   with [`Queue::shut_down_with_drain`] and let their workers run until `get` says `None`.
//!
//! ## One engine, two orders
//! [`Workqueue`] is the one implementation; its [`QueueConfig::order`] picks the variant:
//! - [`QueueOrder::Fifo`] (the default): client-go's queue with its delaying and rate-limiting
//!   layers: FIFO order, priorities ignored; a delayed add is a separate add in the future, and
//!   one of an item already waiting for an earlier time is ignored ([`Enqueue::add_after`]).
//! - [`QueueOrder::Priority`]: controller-runtime's priority queue: [`AddOpts`] carry a
//!   priority; an item is queued at most once, and re-adds keep the highest priority and the
//!   earliest time; ready items go out by priority, then FIFO.
//!
//! Rate-limited adds with a delay take the shorter of the two (controller-runtime's rule).
//! [`Workqueue::new`] returns an `Arc` that coerces to `Arc<dyn Queue<T>>`.
//!
//! ## How it works
//! One `parking_lot::Mutex` guards the queue's state and a `tokio::sync::Notify` wakes waiting
//! getters, one per item made ready. Delayed items wait in a min-heap by ready time; there is no
//! timer task: `add`, `get` and `len` move the items that are due, and a `get` with nothing ready
//! sleeps until the earliest ready time or a notification. Time is tokio's clock, so tests can
//! pause it. A `get` that finds an item ready returns it without sleeping.
//!
//! Per-item states live in a slab; the item map (foldhash, seeded at random per map) points into
//! it, and the ready queue (a `VecDeque`, or a heap by priority) carries slab indexes, so an
//! add/get/done cycle hashes the item twice and clones it once. Figures are in `BENCHMARKS.md`.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use controller_runtime::Request;
//! use controller_runtime::workqueue::{Enqueue, Queue, QueueConfig, QueueOrder, Workqueue};
//!
//! let config = QueueConfig::default().name("configmaps").order(QueueOrder::Priority);
//! let queue: Arc<dyn Queue<Request>> = Workqueue::new(config);
//! queue.add(Request::new("default", "a"));
//! let (item, priority) = queue.get_with_priority().await.unwrap();
//! assert_eq!(priority, 0);
//! // ... reconcile ...
//! queue.forget(&item); // success: reset its backoff
//! queue.done(&item);
//! queue.shut_down();
//! assert_eq!(queue.get().await, None);
//! # });
//! ```

mod delay;
mod hash;
mod interface;
pub mod metrics;
mod queue;
pub mod rate_limiter;
mod ready;
mod slots;

pub use metrics::WorkqueueMetrics;
pub use queue::{QueueConfig, Workqueue};
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimiter,
    default_controller_rate_limiter,
};
pub use ready::QueueOrder;

pub use interface::{AddOpts, Enqueue, LOW_PRIORITY, Queue, QueueItem};
