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

use std::hash::Hash;
use std::time::Duration;

use futures::future::BoxFuture;

mod delay;
mod hash;
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

/// The bound every workqueue item meets. [`crate::Request`] is the usual item.
pub trait QueueItem: Clone + Eq + Hash + Send + Sync + 'static {}
impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueItem for T {}

/// How to add an item: now or after a delay, rate-limited or not, at a priority
/// (controller-runtime's `AddOpts`). `Default`, then builder-style setters.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::workqueue::{AddOpts, LOW_PRIORITY};
///
/// let opts = AddOpts::default().after(Duration::from_secs(1)).priority(LOW_PRIORITY);
/// assert_eq!(opts.after, Some(Duration::from_secs(1)));
/// assert!(!opts.rate_limited);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AddOpts {
    /// Make the item ready only after this delay (`AddAfter`).
    pub after: Option<Duration>,
    /// Delay the item by the queue's rate limiter (`AddRateLimited`); with `after` also set, the
    /// shorter of the two delays wins, as in controller-runtime.
    pub rate_limited: bool,
    /// Priority; higher goes first. `None` is priority 0. A FIFO queue ignores it.
    pub priority: Option<i32>,
}

impl AddOpts {
    /// Sets [`AddOpts::after`].
    pub fn after(mut self, delay: Duration) -> Self {
        self.after = Some(delay);
        self
    }

    /// Sets [`AddOpts::rate_limited`].
    pub fn rate_limited(mut self) -> Self {
        self.rate_limited = true;
        self
    }

    /// Sets [`AddOpts::priority`].
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }
}

/// The priority handlers use for creates from an informer's initial list and for resync updates,
/// so that real changes overtake a start-up or resync storm (controller-runtime's `LowPriority`).
pub const LOW_PRIORITY: i32 = -100;

/// The enqueue-only side of a queue: what event handlers and sources get, so they can add work
/// but not take, finish or shut down.
///
/// One method to implement ([`Enqueue::add_with_opts`]); the others are shorthands for it.
/// Object-safe: handlers get `&dyn Enqueue<T>`, sources `Arc<dyn Enqueue<T>>` (every
/// `Arc<dyn Queue<T>>` coerces to it).
pub trait Enqueue<T: QueueItem>: Send + Sync {
    /// Adds `item` as `opts` say. Ignored after shutdown; an item already queued is not queued
    /// twice (see the [module docs](self)).
    fn add_with_opts(&self, opts: AddOpts, item: T);

    /// Adds `item` now (`Add`).
    fn add(&self, item: T) {
        self.add_with_opts(AddOpts::default(), item)
    }

    /// Adds `item` once `delay` has passed (`AddAfter`); a zero delay is an immediate
    /// [`Enqueue::add`]. When the item is already waiting for a later time, the earlier time
    /// wins.
    fn add_after(&self, item: T, delay: Duration) {
        self.add_with_opts(AddOpts::default().after(delay), item)
    }

    /// Adds `item` after the delay the queue's rate limiter gives it (`AddRateLimited`).
    fn add_rate_limited(&self, item: T) {
        self.add_with_opts(AddOpts::default().rate_limited(), item)
    }
}

/// A rate-limited, delaying work queue, as a controller's workers use it: the [`Enqueue`] side
/// plus taking, finishing and shutting down.
///
/// Object-safe: controllers hold `Arc<dyn Queue<T>>`. A queue without priorities reports every
/// item at priority 0 from [`Queue::get_with_priority`].
pub trait Queue<T: QueueItem>: Enqueue<T> {
    /// Waits for the next ready item and marks it processing; returns it with its priority
    /// (controller-runtime's `GetWithPriority`). `None` once the queue is shut down and empty.
    fn get_with_priority(&self) -> BoxFuture<'_, Option<(T, i32)>>;

    /// Like [`Queue::get_with_priority`], without the priority.
    fn get(&self) -> BoxFuture<'_, Option<T>> {
        Box::pin(async move { self.get_with_priority().await.map(|(item, _)| item) })
    }

    /// Marks `item` as no longer processing; if it was added meanwhile, it is queued again.
    fn done(&self, item: &T);

    /// Tells the rate limiter to stop tracking `item` (it succeeded): its backoff starts again.
    fn forget(&self, item: &T);

    /// How many times `item` was rate limited since the last [`Queue::forget`].
    fn num_requeues(&self, item: &T) -> u32;

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
