//! What a queue is ([`Queue`], [`Enqueue`]), what it holds ([`QueueItem`]) and how an item is
//! added ([`AddOpts`]), as client-go's `workqueue.TypedInterface` and its kin. A leaf of
//! `workqueue`, which re-exports it.

use std::hash::Hash;
use std::time::Duration;

use futures::future::BoxFuture;

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
    /// twice (see the [module docs](crate::workqueue)).
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

    /// Adds each item as its options say, in order: the same as an
    /// [`add_with_opts`](Enqueue::add_with_opts) of each, which a queue may do under one lock
    /// and with one wakeup of its getters (the informer's initial list arrives this way).
    fn add_all(&self, items: Vec<(AddOpts, T)>) {
        for (opts, item) in items {
            self.add_with_opts(opts, item);
        }
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
