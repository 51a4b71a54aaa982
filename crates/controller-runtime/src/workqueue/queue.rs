//! The queue engine: client-go's `workqueue` with its delaying and rate-limiting layers, and
//! controller-runtime's priority queue, as one type whose [`QueueOrder`] picks the variant.
//!
//! One `parking_lot::Mutex` guards the state; a `tokio::sync::Notify` wakes waiting getters.
//! Every item known to the queue has one map entry pointing at its state in a slab (queued,
//! processing, waiting for a delayed add), so `add` and `done` each hash the item once and `get`
//! finds the state through the ready entry's slab index; an add clones the item once (the map
//! keeps one copy, the ready queue the other).
//!
//! The two orders share every rule but two:
//! - **ready order**: FIFO, or by priority then FIFO ([`ready`](super::ready));
//! - **delayed adds**: with [`QueueOrder::Fifo`] a delayed add is a separate future add, as in
//!   client-go's delaying queue (an item may be queued now *and* wait for a later add); with
//!   [`QueueOrder::Priority`] an item is queued at most once, ready or delayed, as in
//!   controller-runtime's priority queue (an undelayed add makes a delayed item ready at once; a
//!   delayed add of a queued item only raises its priority).

use std::collections::hash_map::Entry as MapEntry;
use std::fmt;
use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::delay::{Attempt, DelayHeap, boxed, ready_time, until_drained, wait_loop};
use super::hash::Map;
use super::interface::{AddOpts, Enqueue, Queue, QueueItem};
use super::metrics::{ProcessingStats, QueueMetrics, WorkqueueMetrics, processing_seconds};
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};
use super::ready::{QueueOrder, Ready};
use super::slots::Slots;

/// How to build a [`Workqueue`]: `Default`, then builder-style setters.
///
/// ```
/// use controller_runtime::workqueue::{Queue, QueueConfig, QueueOrder, Workqueue};
/// use controller_runtime::Request;
///
/// let config = QueueConfig::<Request>::default().name("configmaps").order(QueueOrder::Priority);
/// let queue = Workqueue::new(config);
/// assert_eq!(queue.len(), 0);
/// ```
#[non_exhaustive]
pub struct QueueConfig<T> {
    /// The queue's name, usually the controller's; the `name` label of its metrics.
    pub(crate) name: String,
    /// Decides the delay of rate-limited adds. Defaults to [`default_controller_rate_limiter`].
    pub(crate) rate_limiter: Arc<dyn RateLimiter<T>>,
    /// Where to report metrics; `None` (the default) reports nothing and skips the clock reads
    /// metrics need.
    pub(crate) metrics: Option<WorkqueueMetrics>,
    /// FIFO (the default) or by priority.
    pub(crate) order: QueueOrder,
}

impl<T: QueueItem> Default for QueueConfig<T> {
    fn default() -> Self {
        QueueConfig {
            name: String::new(),
            rate_limiter: default_controller_rate_limiter(),
            metrics: None,
            order: QueueOrder::default(),
        }
    }
}

impl<T> QueueConfig<T> {
    /// The queue's name, usually the controller's; the `name` label of its metrics.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Decides the delay of rate-limited adds. Defaults to [`default_controller_rate_limiter`].
    pub fn rate_limiter(mut self, rate_limiter: Arc<dyn RateLimiter<T>>) -> Self {
        self.rate_limiter = rate_limiter;
        self
    }

    /// Where to report metrics; `None` (the default) reports nothing and skips the clock reads
    /// metrics need.
    pub fn metrics(mut self, metrics: WorkqueueMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// FIFO (the default) or by priority.
    pub fn order(mut self, order: QueueOrder) -> Self {
        self.order = order;
        self
    }
}

impl<T> fmt::Debug for QueueConfig<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics", &self.metrics.is_some())
            .field("order", &self.order)
            .finish_non_exhaustive()
    }
}

/// A queued item: waiting to be handed out (ready, or held until its `done`).
struct Queued {
    priority: i32,
    /// Order among equal priorities: the queue's add counter when the item was queued.
    seq: u64,
    /// When the item was queued (metrics only).
    added_at: Option<std::time::Instant>,
}

/// A delayed add waiting for its time.
struct Waiting {
    at: Instant,
    priority: i32,
}

/// What the queue knows about one item. An item with nothing set is removed.
#[derive(Default)]
struct ItemState {
    queued: Option<Queued>,
    /// Handed out by `get`, no `done` yet.
    processing: bool,
    /// A delayed add of this item (its entry in the delay heap has the same time).
    waiting: Option<Waiting>,
    /// When a worker took the item (metrics only).
    started_at: Option<std::time::Instant>,
}

impl ItemState {
    fn is_idle(&self) -> bool {
        self.queued.is_none() && !self.processing && self.waiting.is_none()
    }
}

/// The depth series of each priority seen so far (metrics only). A FIFO queue has one, its
/// `priority=""` series, under priority 0.
#[derive(Default)]
struct Depth(Vec<(i32, Gauge)>);

impl Depth {
    /// Moves the depth of `priority` by `delta` when the queue has metrics.
    ///
    /// Inlined, so that a queue without metrics pays one branch for it, not a call into this
    /// crate: the engine's methods are generic and compiled in the user's crate, this is not.
    #[inline]
    fn add(&mut self, metrics: Option<&QueueMetrics>, priority: i32, delta: i64) {
        if let Some(m) = metrics {
            self.add_to(m, priority, delta);
        }
    }

    /// [`Depth::add`] with metrics.
    fn add_to(&mut self, m: &QueueMetrics, priority: i32, delta: i64) {
        match self.0.iter().find(|(p, _)| *p == priority) {
            Some((_, g)) => {
                g.inc_by(delta);
            }
            None => {
                let g = m.depth_for_priority(priority);
                g.inc_by(delta);
                self.0.push((priority, g));
            }
        }
    }
}

struct State<T> {
    /// Each known item's slot in `slots`.
    items: Map<T, usize>,
    slots: Slots<ItemState>,
    /// Queued items that are not processing, in hand-out order, with their slots.
    ready: Ready<T>,
    delayed: DelayHeap<T>,
    /// The add counter (order numbers).
    seq: u64,
    processing: usize,
    shutting_down: bool,
    depth: Depth,
}

/// What an add changed, for the notifications sent after the lock is released.
#[derive(Default)]
struct Wake {
    /// Items made ready for getters.
    pushed: usize,
    /// The earliest delayed time moved earlier: sleeping getters must look again.
    earlier_timer: bool,
}

/// The work queue: a FIFO ([`QueueOrder::Fifo`], client-go's rate-limiting queue) or a priority
/// queue ([`QueueOrder::Priority`], controller-runtime's), with a processing set, delayed adds
/// and rate-limited adds.
///
/// The rules are in the [module docs](super). Build one with [`Workqueue::new`]; it is usually
/// held as `Arc<dyn Queue<T>>`.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use controller_runtime::workqueue::{
///     AddOpts, Enqueue, LOW_PRIORITY, Queue, QueueConfig, QueueOrder, Workqueue,
/// };
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
///
/// let queue = Workqueue::<&str>::new(QueueConfig::default().order(QueueOrder::Priority));
/// queue.add_with_opts(AddOpts::default().priority(LOW_PRIORITY), "resync");
/// queue.add("change");
/// assert_eq!(queue.get_with_priority().await, Some(("change", 0)));
/// assert_eq!(queue.get().await, Some("resync"));
/// # });
/// ```
pub struct Workqueue<T: QueueItem> {
    state: Mutex<State<T>>,
    /// Wakes getters: one per item made ready, all of them at shutdown or on an earlier timer.
    items_ready: Notify,
    /// Wakes `shut_down_with_drain` when the last processing item is done.
    drained: Notify,
    rate_limiter: Arc<dyn RateLimiter<T>>,
    metrics: Option<QueueMetrics>,
    order: QueueOrder,
    name: String,
}

impl<T: QueueItem> fmt::Debug for Workqueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("Workqueue")
            .field("name", &self.name)
            .field("order", &self.order)
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
        let mut depth = Depth::default();
        if let (QueueOrder::Fifo, Some(m)) = (config.order, &metrics) {
            depth.0.push((0, m.depth.clone()));
        }
        let queue = Arc::new(Workqueue {
            state: Mutex::new(State {
                items: Map::default(),
                slots: Slots::default(),
                ready: Ready::new(config.order),
                delayed: DelayHeap::default(),
                seq: 0,
                processing: 0,
                shutting_down: false,
                depth,
            }),
            items_ready: Notify::new(),
            drained: Notify::new(),
            rate_limiter: config.rate_limiter,
            metrics,
            order: config.order,
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

    /// The queue's order.
    pub fn order(&self) -> QueueOrder {
        self.order
    }

    /// Takes the next ready item and its priority without waiting, marking it processing;
    /// `None` if nothing is ready (whether or not the queue is shut down).
    pub fn try_get_with_priority(&self) -> Option<(T, i32)> {
        let mut s = self.state.lock();
        self.pop_locked(&mut s)
    }

    /// Like [`Workqueue::try_get_with_priority`], without the priority.
    pub fn try_get(&self) -> Option<T> {
        self.try_get_with_priority().map(|(item, _)| item)
    }

    /// The number of items being processed (handed out, no `done` yet).
    pub fn num_processing(&self) -> usize {
        self.state.lock().processing
    }

    fn now_for_metrics(&self) -> Option<std::time::Instant> {
        self.metrics.as_ref().map(|_| std::time::Instant::now())
    }

    /// The add rule: queues `item` now at `priority`, or raises the priority of its queued
    /// entry. With [`QueueOrder::Priority`] a delayed add of the item is folded in.
    #[inline]
    fn add_now_locked(&self, s: &mut State<T>, item: T, mut priority: i32, wake: &mut Wake) {
        let metrics = self.metrics.as_ref();
        let seq = s.seq + 1;
        s.seq = seq;
        let State {
            items,
            slots,
            ready,
            depth,
            ..
        } = s;
        match items.entry(item) {
            MapEntry::Occupied(o) => {
                let slot = *o.get();
                let st = &mut slots[slot];
                if self.order == QueueOrder::Priority
                    && let Some(w) = st.waiting.take()
                {
                    // an undelayed add makes a delayed item ready now (its heap entry goes stale)
                    priority = priority.max(w.priority);
                }
                match &mut st.queued {
                    Some(q) => {
                        // queued already: keep the highest priority, and the place in the order
                        if priority > q.priority {
                            depth.add(metrics, q.priority, -1);
                            depth.add(metrics, priority, 1);
                            q.priority = priority;
                            if !st.processing {
                                ready.repush(priority, q.seq, slot, o.key().clone());
                            }
                        }
                    }
                    None => {
                        st.queued = Some(Queued {
                            priority,
                            seq,
                            added_at: self.now_for_metrics(),
                        });
                        if let Some(m) = metrics {
                            m.adds.inc();
                        }
                        depth.add(metrics, priority, 1);
                        // a processing item is held until its done
                        if !st.processing {
                            ready.push(priority, seq, slot, o.key().clone());
                            wake.pushed += 1;
                        }
                    }
                }
            }
            MapEntry::Vacant(v) => {
                let slot = slots.insert(ItemState {
                    queued: Some(Queued {
                        priority,
                        seq,
                        added_at: self.now_for_metrics(),
                    }),
                    ..ItemState::default()
                });
                ready.push(priority, seq, slot, v.key().clone());
                v.insert(slot);
                if let Some(m) = metrics {
                    m.adds.inc();
                }
                depth.add(metrics, priority, 1);
                wake.pushed += 1;
            }
        }
    }

    /// The delayed-add rule: `item` is added at `at`. The earlier time wins; with
    /// [`QueueOrder::Priority`] a queued item only has its priority raised.
    fn add_delayed_locked(
        &self,
        s: &mut State<T>,
        item: T,
        at: Instant,
        priority: i32,
        wake: &mut Wake,
    ) {
        let slot = match s.items.entry(item.clone()) {
            MapEntry::Occupied(o) => *o.get(),
            MapEntry::Vacant(v) => *v.insert(s.slots.insert(ItemState::default())),
        };
        let st = &mut s.slots[slot];
        if self.order == QueueOrder::Priority && st.queued.is_some() {
            // queued already (ready, or held until done): only the priority can change
            return self.add_now_locked(s, item, priority, wake);
        }
        match &mut st.waiting {
            Some(w) => {
                w.priority = w.priority.max(priority);
                if w.at <= at {
                    return; // already waiting for an earlier time
                }
                w.at = at;
            }
            None => st.waiting = Some(Waiting { at, priority }),
        }
        wake.earlier_timer |= s.delayed.push(at, item);
    }

    /// Moves due delayed adds into the queue, waking a getter for each item made ready.
    ///
    /// Every operation calls it first, so the queue behaves as if each delayed add happened at
    /// its time (its place in the order included). It notifies under the lock: `Notify` never
    /// calls back.
    #[inline]
    fn promote_due_locked(&self, s: &mut State<T>) {
        if s.delayed.is_empty() || s.shutting_down {
            return;
        }
        self.promote_due_slow(s);
    }

    #[cold]
    #[inline(never)]
    fn promote_due_slow(&self, s: &mut State<T>) {
        let now = Instant::now();
        let mut wake = Wake::default();
        while let Some(d) = s.delayed.pop_due(now) {
            let Some(&slot) = s.items.get(&d.item) else {
                continue;
            };
            // stale: the item was re-delayed earlier, made ready, or shut down
            let Some(w) = s.slots[slot].waiting.take_if(|w| w.at == d.at) else {
                continue;
            };
            self.add_now_locked(s, d.item, w.priority, &mut wake);
        }
        self.notify_pushed(wake.pushed);
    }

    /// The get rule, without waiting: the first ready item and its priority.
    #[inline]
    fn pop_locked(&self, s: &mut State<T>) -> Option<(T, i32)> {
        self.promote_due_locked(s);
        let slots = &s.slots;
        let (item, slot) = s.ready.pop(|slot, priority, seq| {
            // a stale entry's slot may be free or reused: the order number tells
            let st = &slots[slot];
            !st.processing
                && st
                    .queued
                    .as_ref()
                    .is_some_and(|q| q.priority == priority && q.seq == seq)
        })?;
        let now = self.now_for_metrics();
        let st = &mut s.slots[slot];
        let q = st.queued.take()?;
        st.processing = true;
        st.started_at = now;
        s.processing += 1;
        if let (Some(m), Some(now)) = (&self.metrics, now) {
            m.observe_queued(q.added_at, now);
            s.depth.add(Some(m), q.priority, -1);
        }
        Some((item, q.priority))
    }

    /// The rule of [`Enqueue::add_with_opts`], under the lock.
    fn add_opts_locked(&self, s: &mut State<T>, opts: AddOpts, item: T, wake: &mut Wake) {
        let priority = match self.order {
            QueueOrder::Fifo => 0,
            QueueOrder::Priority => opts.priority.unwrap_or(0),
        };
        let mut delay = opts.after;
        if opts.rate_limited {
            let limited = self.rate_limiter.when(&item);
            delay = Some(delay.map_or(limited, |d| d.min(limited)));
        }
        if delay.is_some()
            && let Some(m) = &self.metrics
        {
            m.retries.inc();
        }
        match delay.filter(|d| !d.is_zero()) {
            None => self.add_now_locked(s, item, priority, wake),
            Some(d) => self.add_delayed_locked(s, item, ready_time(d), priority, wake),
        }
    }

    fn notify(&self, wake: Wake) {
        self.notify_pushed(wake.pushed);
        if wake.earlier_timer {
            // getters sleep until the earliest time they saw; this one is earlier
            self.items_ready.notify_waiters();
        }
    }

    fn notify_pushed(&self, pushed: usize) {
        for _ in 0..pushed {
            self.items_ready.notify_one();
        }
    }
}

impl<T: QueueItem> Enqueue<T> for Workqueue<T> {
    fn add(&self, item: T) {
        let mut wake = Wake::default();
        {
            let mut s = self.state.lock();
            if s.shutting_down {
                return;
            }
            // items that became due go first, so the order follows the time they were ready
            self.promote_due_locked(&mut s);
            self.add_now_locked(&mut s, item, 0, &mut wake);
        }
        self.notify(wake);
    }

    /// Adds with a priority and/or a delay. With `rate_limited`, the delay is the shorter of
    /// `after` (when set) and the rate limiter's, as controller-runtime does.
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        let mut wake = Wake::default();
        {
            let mut s = self.state.lock();
            if s.shutting_down {
                return;
            }
            self.promote_due_locked(&mut s);
            self.add_opts_locked(&mut s, opts, item, &mut wake);
        }
        self.notify(wake);
    }

    /// Adds every item under one lock, then wakes the getters once: all the waiting ones when
    /// more than one item became ready (each takes an item or waits again).
    fn add_all(&self, items: Vec<(AddOpts, T)>) {
        let mut wake = Wake::default();
        {
            let mut s = self.state.lock();
            if s.shutting_down {
                return;
            }
            self.promote_due_locked(&mut s);
            for (opts, item) in items {
                self.add_opts_locked(&mut s, opts, item, &mut wake);
            }
        }
        if wake.pushed > 1 {
            // Getters enable their wakeup under the lock before they wait: every one waiting
            // now is woken, and any other will find the items when it looks.
            self.items_ready.notify_waiters();
            wake.pushed = 0;
        }
        self.notify(wake);
    }
}

impl<T: QueueItem> Queue<T> for Workqueue<T> {
    fn get_with_priority(&self) -> BoxFuture<'_, Option<(T, i32)>> {
        boxed(wait_loop(&self.items_ready, move |notified| {
            let mut s = self.state.lock();
            if let Some(got) = self.pop_locked(&mut s) {
                return Attempt::Done(Some(got));
            }
            if s.shutting_down {
                return Attempt::Done(None);
            }
            notified.enable();
            Attempt::Wait(s.delayed.next_at())
        }))
    }

    fn get(&self) -> BoxFuture<'_, Option<T>> {
        boxed(wait_loop(&self.items_ready, move |notified| {
            let mut s = self.state.lock();
            if let Some((item, _)) = self.pop_locked(&mut s) {
                return Attempt::Done(Some(item));
            }
            if s.shutting_down {
                return Attempt::Done(None);
            }
            notified.enable();
            Attempt::Wait(s.delayed.next_at())
        }))
    }

    fn forget(&self, item: &T) {
        self.rate_limiter.forget(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.rate_limiter.num_requeues(item)
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
            let mut pushed = false;
            if st.is_idle() {
                s.slots.remove(slot);
            } else {
                if let Some(q) = &st.queued {
                    // added while processing: queued again now
                    s.ready.push(q.priority, q.seq, slot, key.clone());
                    pushed = true;
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
                    slots[slot].waiting = None;
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
