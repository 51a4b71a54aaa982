//! The plain rate-limiting queue: client-go's `workqueue` with its delaying and rate-limiting
//! layers in one type.
//!
//! One `parking_lot::Mutex` guards the state; a `tokio::sync::Notify` wakes waiting getters.
//! Every item known to the queue has one map entry holding its flags (`dirty`, `processing`, the
//! time it waits for), so `add`, `get` and `done` each hash the item once, and an add clones the
//! item once (the map keeps one copy, the FIFO the other).

use std::collections::VecDeque;
use std::collections::hash_map::Entry as MapEntry;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::delay::{Attempt, DelayHeap, boxed, ready_time, until_drained, wait_loop};
use super::hash::Map;
use super::metrics::{ProcessingStats, QueueMetrics, WorkqueueMetrics, processing_seconds};
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};
use super::slots::Slots;
use super::{Queue, QueueItem};

/// How to build a [`Workqueue`] or a [`PriorityQueue`](super::PriorityQueue).
pub struct QueueConfig<T> {
    /// The queue's name, usually the controller's; the `name` label of its metrics.
    pub name: String,
    /// Decides the delay of [`Queue::add_rate_limited`]. Defaults to
    /// [`default_controller_rate_limiter`].
    pub rate_limiter: Arc<dyn RateLimiter<T>>,
    /// Where to report metrics; `None` (the default) reports nothing and skips the clock reads
    /// metrics need.
    pub metrics: Option<WorkqueueMetrics>,
}

impl<T: QueueItem> Default for QueueConfig<T> {
    fn default() -> Self {
        QueueConfig {
            name: String::new(),
            rate_limiter: default_controller_rate_limiter(),
            metrics: None,
        }
    }
}

impl<T> fmt::Debug for QueueConfig<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

/// What the queue knows about one item. An entry with no flag set is removed.
#[derive(Default)]
struct ItemState {
    /// Waiting to be processed (in `ready`, or to be pushed there at `done`).
    dirty: bool,
    /// Handed out by `get`, no `done` yet.
    processing: bool,
    /// The time a delayed add of this item becomes an add.
    waiting_until: Option<Instant>,
    /// When the item became dirty (metrics only).
    added_at: Option<std::time::Instant>,
    /// When a worker took the item (metrics only).
    started_at: Option<std::time::Instant>,
}

impl ItemState {
    fn is_idle(&self) -> bool {
        !self.dirty && !self.processing && self.waiting_until.is_none()
    }
}

struct State<T> {
    /// Each known item's slot in `slots`.
    items: Map<T, usize>,
    slots: Slots<ItemState>,
    /// Dirty items that are not processing, oldest first, with their slots.
    ready: VecDeque<(T, usize)>,
    delayed: DelayHeap<T>,
    processing: usize,
    shutting_down: bool,
}

/// client-go's rate-limiting work queue: a FIFO with a dirty set and a processing set, delayed
/// adds and rate-limited adds.
///
/// The rules are in the [module docs](super). Build one with [`Workqueue::new`]; it is usually
/// held as `Arc<dyn Queue<T>>`.
///
/// ```
/// # tokio_test_block_on(async {
/// use controller_runtime::workqueue::{Queue, QueueConfig, Workqueue};
///
/// let queue = Workqueue::<&str>::new(QueueConfig::default());
/// queue.add("a");
/// queue.add("a"); // already waiting: ignored
/// assert_eq!(queue.len(), 1);
/// let item = queue.get().await.unwrap();
/// queue.add("a"); // processing: delivered once more, after done
/// assert_eq!(queue.len(), 0);
/// queue.done(&item);
/// assert_eq!(queue.len(), 1);
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
pub struct Workqueue<T: QueueItem> {
    state: Mutex<State<T>>,
    /// Wakes getters: one per item made ready, all of them at shutdown or on an earlier timer.
    items_ready: Notify,
    /// Wakes `shut_down_with_drain` when the last processing item is done.
    drained: Notify,
    rate_limiter: Arc<dyn RateLimiter<T>>,
    metrics: Option<QueueMetrics>,
    name: String,
}

impl<T: QueueItem> fmt::Debug for Workqueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("Workqueue")
            .field("name", &self.name)
            .field("ready", &s.ready.len())
            .field("processing", &s.processing)
            .field("shutting_down", &s.shutting_down)
            .finish()
    }
}

impl<T: QueueItem> Workqueue<T> {
    /// Builds a queue from `config`.
    pub fn new(config: QueueConfig<T>) -> Arc<Self> {
        let metrics = config.metrics.as_ref().map(|m| m.for_queue(&config.name));
        let queue = Arc::new(Workqueue {
            state: Mutex::new(State {
                items: Map::default(),
                slots: Slots::default(),
                ready: VecDeque::new(),
                delayed: DelayHeap::default(),
                processing: 0,
                shutting_down: false,
            }),
            items_ready: Notify::new(),
            drained: Notify::new(),
            rate_limiter: config.rate_limiter,
            metrics,
            name: config.name,
        });
        if let Some(m) = &config.metrics {
            let weak: Weak<Self> = Arc::downgrade(&queue);
            m.track(&queue.name, weak);
        }
        queue
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Takes the next ready item without waiting, marking it processing; `None` if nothing is
    /// ready (whether or not the queue is shut down).
    pub fn try_get(&self) -> Option<T> {
        let mut s = self.state.lock();
        self.pop_locked(&mut s)
    }

    /// The number of items being processed (handed out, no `done` yet).
    pub fn num_processing(&self) -> usize {
        self.state.lock().processing
    }

    fn now_for_metrics(&self) -> Option<std::time::Instant> {
        self.metrics.as_ref().map(|_| std::time::Instant::now())
    }

    /// The add rule. Returns whether the item was pushed to `ready` (a getter must be woken).
    fn add_locked(&self, s: &mut State<T>, item: T) -> bool {
        let pushed = match s.items.entry(item) {
            MapEntry::Occupied(o) => {
                let slot = *o.get();
                let st = &mut s.slots[slot];
                if st.dirty {
                    return false;
                }
                st.dirty = true;
                st.added_at = self.now_for_metrics();
                if st.processing {
                    false
                } else {
                    s.ready.push_back((o.key().clone(), slot));
                    true
                }
            }
            MapEntry::Vacant(v) => {
                let slot = s.slots.insert(ItemState {
                    dirty: true,
                    added_at: self.now_for_metrics(),
                    ..ItemState::default()
                });
                s.ready.push_back((v.key().clone(), slot));
                v.insert(slot);
                true
            }
        };
        if let Some(m) = &self.metrics {
            m.adds.inc();
            m.depth.inc();
        }
        pushed
    }

    /// Moves due delayed items into the queue, waking a getter for each one pushed to `ready`.
    ///
    /// Every operation calls it first, so the queue behaves as if each delayed add happened at
    /// its time (FIFO order included). It notifies under the lock: `Notify` never calls back.
    fn promote_due_locked(&self, s: &mut State<T>) {
        if s.delayed.is_empty() || s.shutting_down {
            return;
        }
        let now = Instant::now();
        let mut pushed = 0;
        while let Some(d) = s.delayed.pop_due(now) {
            let current = match s.items.get(&d.item) {
                Some(&slot) if s.slots[slot].waiting_until == Some(d.at) => slot,
                _ => continue, // stale: the item was re-delayed earlier, or shut down
            };
            s.slots[current].waiting_until = None;
            if self.add_locked(s, d.item) {
                pushed += 1;
            }
        }
        self.notify_pushed(pushed);
    }

    /// The get rule, without waiting.
    fn pop_locked(&self, s: &mut State<T>) -> Option<T> {
        self.promote_due_locked(s);
        let (item, slot) = s.ready.pop_front()?;
        let now = self.now_for_metrics();
        let st = &mut s.slots[slot];
        st.dirty = false;
        st.processing = true;
        if let (Some(m), Some(now)) = (&self.metrics, now) {
            m.depth.dec();
            m.observe_queued(st.added_at.take(), now);
            st.started_at = Some(now);
        }
        s.processing += 1;
        Some(item)
    }

    fn notify_pushed(&self, pushed: usize) {
        for _ in 0..pushed {
            self.items_ready.notify_one();
        }
    }
}

impl<T: QueueItem> Queue<T> for Workqueue<T> {
    fn add(&self, item: T) {
        let pushed = {
            let mut s = self.state.lock();
            if s.shutting_down {
                return;
            }
            // items that became due go first, so the order follows the time they were ready
            self.promote_due_locked(&mut s);
            self.add_locked(&mut s, item)
        };
        if pushed {
            self.items_ready.notify_one();
        }
    }

    fn add_after(&self, item: T, delay: Duration) {
        let wake_all = {
            let mut s = self.state.lock();
            if s.shutting_down {
                return;
            }
            if let Some(m) = &self.metrics {
                m.retries.inc();
            }
            self.promote_due_locked(&mut s);
            if delay.is_zero() {
                let pushed = self.add_locked(&mut s, item);
                drop(s);
                self.notify_pushed(usize::from(pushed));
                return;
            }
            let at = ready_time(delay);
            let s = &mut *s;
            let slot = match s.items.entry(item.clone()) {
                MapEntry::Occupied(o) => *o.get(),
                MapEntry::Vacant(v) => *v.insert(s.slots.insert(ItemState::default())),
            };
            let st = &mut s.slots[slot];
            if st.waiting_until.is_some_and(|w| w <= at) {
                return; // already waiting for an earlier time
            }
            st.waiting_until = Some(at);
            s.delayed.push(at, item)
        };
        if wake_all {
            // getters sleep until the earliest time they saw; this one is earlier
            self.items_ready.notify_waiters();
        }
    }

    fn add_rate_limited(&self, item: T) {
        if self.is_shutting_down() {
            return;
        }
        let delay = self.rate_limiter.when(&item);
        self.add_after(item, delay);
    }

    fn forget(&self, item: &T) {
        self.rate_limiter.forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.rate_limiter.num_requeues(item)
    }

    fn get(&self) -> BoxFuture<'_, Option<T>> {
        boxed(wait_loop(&self.items_ready, move |notified| {
            let mut s = self.state.lock();
            if let Some(item) = self.pop_locked(&mut s) {
                return Attempt::Done(Some(item));
            }
            if s.shutting_down {
                return Attempt::Done(None);
            }
            notified.enable();
            Attempt::Wait(s.delayed.next_at())
        }))
    }

    fn done(&self, item: &T) {
        let (pushed, drained) = {
            let mut guard = self.state.lock();
            let s = &mut *guard;
            self.promote_due_locked(s);
            // removed first so the common case (nothing else to do) hashes once
            let Some((key, slot)) = s.items.remove_entry(item) else {
                return;
            };
            let st = &mut s.slots[slot];
            if !st.processing {
                // done without get: nothing to do
                s.items.insert(key, slot);
                return;
            }
            st.processing = false;
            s.processing -= 1;
            if let Some(m) = &self.metrics {
                m.observe_work(st.started_at.take());
            }
            let st = &s.slots[slot];
            let pushed = st.dirty;
            if st.is_idle() {
                s.slots.remove(slot);
            } else {
                if pushed {
                    s.ready.push_back((key.clone(), slot));
                }
                s.items.insert(key, slot);
            }
            (pushed, s.processing == 0 && s.shutting_down)
        };
        if pushed {
            self.items_ready.notify_one();
        }
        if drained {
            self.drained.notify_waiters();
        }
    }

    fn len(&self) -> usize {
        let mut s = self.state.lock();
        self.promote_due_locked(&mut s);
        s.ready.len()
    }

    fn shut_down(&self) {
        {
            let mut s = self.state.lock();
            if !s.shutting_down {
                // what is due was added before the shutdown
                self.promote_due_locked(&mut s);
                s.shutting_down = true;
                // delayed adds never happen now
                s.delayed.clear();
                let State { items, slots, .. } = &mut *s;
                items.retain(|_, &mut slot| {
                    slots[slot].waiting_until = None;
                    let keep = !slots[slot].is_idle();
                    if !keep {
                        slots.remove(slot);
                    }
                    keep
                });
            }
        }
        self.items_ready.notify_waiters();
    }

    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        self.shut_down();
        boxed(wait_loop(&self.drained, move |notified| {
            // The lock is held until the attempt returns, so `until_drained` enables the
            // notification under it.
            let s = self.state.lock();
            until_drained(s.processing, notified)
        }))
    }

    fn is_shutting_down(&self) -> bool {
        self.state.lock().shutting_down
    }
}

impl<T: QueueItem> ProcessingStats for Workqueue<T> {
    fn processing_seconds(&self, now: std::time::Instant) -> (f64, f64) {
        let s = self.state.lock();
        processing_seconds(s.slots.iter().filter_map(|st| st.started_at), now)
    }
}
