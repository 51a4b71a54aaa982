//! Workqueues: the client-go work queue, its delaying and rate-limiting layers, rate limiters,
//! and controller-runtime's priority queue.
//!
//! Every queue implements [`Queue`]; controllers, handlers and sources only ever see
//! `Arc<dyn Queue<T>>`, so a controller can switch between the plain rate-limiting queue and the
//! priority queue with an option.
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
//! ## The queues
//! - [`Workqueue`]: client-go's queue with its delaying and rate-limiting layers in one type:
//!   FIFO order; a delayed add of an item already waiting for an earlier time is ignored
//!   ([`Queue::add_after`]).
//! - [`PriorityQueue`]: controller-runtime's priority queue: [`AddOpts`] carry a priority;
//!   re-adds keep the highest priority and the earliest time; ready items go out by priority,
//!   then FIFO.
//!
//! Both are built from a [`QueueConfig`] (name, [`RateLimiter`], optional
//! [`WorkqueueMetrics`]) and return an `Arc` that coerces to `Arc<dyn Queue<T>>`.
//!
//! ## How they work
//! One `parking_lot::Mutex` guards each queue's state and a `tokio::sync::Notify` wakes waiting
//! getters, one per item made ready. Delayed items wait in a min-heap by ready time; there is no
//! timer task: `add`, `get` and `len` move the items that are due, and a `get` with nothing ready
//! sleeps until the earliest ready time or a notification. Time is tokio's clock, so tests can
//! pause it. A `get` that finds an item ready returns it without sleeping.
//!
//! Per-item states live in a slab; the item map (std SipHash with random keys, fed each key in
//! one piece) points into it, and the ready queue carries slab indexes, so an add/get/done cycle
//! hashes the item twice and clones it once. Figures are in `BENCHMARKS.md`.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use std::sync::Arc;
//! use controller_runtime::Request;
//! use controller_runtime::workqueue::{PriorityQueue, Queue, QueueConfig};
//!
//! let queue: Arc<dyn Queue<Request>> = PriorityQueue::new(QueueConfig {
//!     name: "configmaps".into(),
//!     ..Default::default()
//! });
//! queue.add(Request::new("default", "a"));
//! let item = queue.get().await.unwrap();
//! // ... reconcile ...
//! queue.forget(&item); // success: reset its backoff
//! queue.done(&item);
//! queue.shut_down();
//! assert_eq!(queue.get().await, None);
//! # });
//! ```

use std::hash::Hash;
use std::time::Duration;

use futures::future::BoxFuture;

mod delay;
mod hash;
pub mod metrics;
pub mod priority;
pub mod queue;
pub mod rate_limiter;
mod slots;

pub use metrics::WorkqueueMetrics;
pub use priority::PriorityQueue;
pub use queue::{QueueConfig, Workqueue};
pub use rate_limiter::{
    BucketRateLimiter, DEFAULT_BASE_DELAY, DEFAULT_MAX_DELAY, ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter, RateLimiter, default_controller_rate_limiter,
};

/// The bound every workqueue item meets. [`crate::Request`] is the usual item.
pub trait QueueItem: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueItem for T {}

/// Options for [`Queue::add_with_opts`], the priority queue's way in.
///
/// Queues without priorities honour `after` and `rate_limited` and ignore `priority`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddOpts {
    /// Make the item ready only after this delay (`AddAfter`).
    pub after: Option<Duration>,
    /// Delay the item by the queue's rate limiter (`AddRateLimited`). The plain queue then
    /// ignores `after`; the priority queue takes the shorter of the two, as controller-runtime does.
    pub rate_limited: bool,
    /// Priority; higher goes first. `None` is priority 0.
    pub priority: Option<i32>,
}

/// The priority handlers use for creates from an informer's initial list and for resync updates,
/// so that real changes overtake a start-up or resync storm (controller-runtime's `LowPriority`).
pub const LOW_PRIORITY: i32 = -100;

/// A rate-limited, delaying work queue, as controllers use it.
///
/// The trait is object-safe: controllers hold `Arc<dyn Queue<T>>`.
pub trait Queue<T: QueueItem>: Send + Sync {
    /// Adds `item` now. Ignored after shutdown; no-op if the item is already waiting.
    fn add(&self, item: T);

    /// Adds `item` once `delay` has passed; a zero delay is an immediate [`Queue::add`]. When the
    /// item is already waiting for a later time, the earlier time wins.
    fn add_after(&self, item: T, delay: Duration);

    /// Adds `item` after the delay the queue's rate limiter gives it.
    fn add_rate_limited(&self, item: T);

    /// Adds `item` with priority queue options. The default honours `after` and `rate_limited`
    /// and ignores `priority`.
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        if opts.rate_limited {
            self.add_rate_limited(item)
        } else if let Some(d) = opts.after {
            self.add_after(item, d)
        } else {
            self.add(item)
        }
    }

    /// Tells the rate limiter to stop tracking `item` (it succeeded): its backoff starts again.
    fn forget(&self, item: &T);

    /// How many times `item` was rate limited since the last [`Queue::forget`].
    fn num_requeues(&self, item: &T) -> u32;

    /// Waits for the next ready item and marks it processing. `None` once the queue is shut down
    /// and empty.
    fn get(&self) -> BoxFuture<'_, Option<T>>;

    /// Marks `item` as no longer processing; if it was added meanwhile, it is queued again.
    fn done(&self, item: &T);

    /// The number of items ready to be handed out (not counting delayed or processing ones).
    fn len(&self) -> usize;

    /// Whether [`Queue::len`] is zero.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting new items; `get` hands out what is left, then returns `None`.
    fn shut_down(&self);

    /// Like [`Queue::shut_down`], then waits until every item being processed is `done`.
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()>;

    /// Whether [`Queue::shut_down`] was called.
    fn is_shutting_down(&self) -> bool;
}
