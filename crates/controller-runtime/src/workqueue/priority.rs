//! controller-runtime's priority queue (`pkg/controller/priorityqueue`), the default queue of a
//! controller.
//!
//! Every add carries [`AddOpts`]: a delay, rate limiting, a priority. An item is queued at most
//! once; adding it again keeps the **highest** priority and the **earliest** ready time (an
//! undelayed add makes a delayed item ready at once). Ready items are handed out by priority,
//! highest first, then in the order they were queued (FIFO). A delayed item counts as queued when
//! it becomes ready, so it goes behind the items already waiting at its priority.
//!
//! The dirty/processing rules of every [`Queue`] hold: an item being processed that is added
//! again is handed out again only after [`Queue::done`], and then with the priority it was added
//! with.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::collections::hash_map::Entry as MapEntry;
use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::delay::{Attempt, DelayHeap, boxed, ready_time, until_drained, wait_loop};
use super::hash::Map;
use super::metrics::{ProcessingStats, QueueMetrics, processing_seconds};
use super::queue::QueueConfig;
use super::rate_limiter::RateLimiter;
use super::slots::Slots;
use super::{AddOpts, Queue, QueueItem};

/// A queued (not yet handed out) item.
struct Queued {
    priority: i32,
    /// Order among equal priorities: the queue's add counter when the item became ready.
    seq: u64,
    /// `None` once the item is ready.
    ready_at: Option<Instant>,
    /// When the item was queued (metrics only).
    added_at: Option<std::time::Instant>,
}

#[derive(Default)]
struct ItemState {
    queued: Option<Queued>,
    processing: bool,
    /// When a worker took the item (metrics only).
    started_at: Option<std::time::Instant>,
}

/// An entry of the ready heap. Entries are not removed in place: when a ready item's priority
/// rises, a second entry is pushed, and the stale one is skipped when it surfaces (it no longer
/// matches the item's priority and order).
struct Ready<T> {
    priority: i32,
    seq: u64,
    /// The item's slot: `get` finds its state without hashing.
    slot: usize,
    item: T,
}

impl<T> PartialEq for Ready<T> {
    fn eq(&self, other: &Self) -> bool {
        self.priority == other.priority && self.seq == other.seq
    }
}
impl<T> Eq for Ready<T> {}
impl<T> PartialOrd for Ready<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Ready<T> {
    /// The greatest entry goes first: the highest priority, then the lowest order number.
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Ready items that are not processing, in hand-out order (a max-heap: unlike a tree, it keeps
/// its allocation when it runs empty, so a steady add/get/done cycle allocates nothing here).
struct ReadyHeap<T> {
    heap: BinaryHeap<Ready<T>>,
    /// Live entries (the heap may also hold stale ones).
    len: usize,
}

impl<T> ReadyHeap<T> {
    fn push(&mut self, priority: i32, seq: u64, slot: usize, item: T) {
        self.heap.push(Ready {
            priority,
            seq,
            slot,
            item,
        });
        self.len += 1;
    }

    /// Pushes the entry of a ready item whose priority rose; its old entry goes stale.
    fn repush(&mut self, priority: i32, seq: u64, slot: usize, item: T) {
        self.heap.push(Ready {
            priority,
            seq,
            slot,
            item,
        });
    }
}

struct State<T> {
    /// Each known item's slot in `slots`.
    items: Map<T, usize>,
    slots: Slots<ItemState>,
    ready: ReadyHeap<T>,
    delayed: DelayHeap<T>,
    seq: u64,
    processing: usize,
    shutting_down: bool,
    /// The depth series of each priority seen so far (metrics only).
    depth: Vec<(i32, Gauge)>,
}

impl<T> State<T> {
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
}

/// controller-runtime's priority queue. See the [module docs](self) for its order and the
/// [workqueue docs](super) for the rules every queue keeps.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use controller_runtime::workqueue::{AddOpts, LOW_PRIORITY, PriorityQueue, Queue, QueueConfig};
///
/// let queue = PriorityQueue::<&str>::new(QueueConfig::default());
/// queue.add_with_opts(AddOpts { priority: Some(LOW_PRIORITY), ..Default::default() }, "resync");
/// queue.add("change");
/// assert_eq!(queue.get().await, Some("change"));
/// assert_eq!(queue.get().await, Some("resync"));
/// # });
/// ```
pub struct PriorityQueue<T: QueueItem> {
    state: Mutex<State<T>>,
    items_ready: Notify,
    drained: Notify,
    rate_limiter: Arc<dyn RateLimiter<T>>,
    metrics: Option<QueueMetrics>,
    name: String,
}

impl<T: QueueItem> fmt::Debug for PriorityQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("PriorityQueue")
            .field("name", &self.name)
            .field("ready", &s.ready.len)
            .field("processing", &s.processing)
            .field("shutting_down", &s.shutting_down)
            .finish()
    }
}

/// What an add changed, for the notifications sent after the lock is released.
#[derive(Default)]
struct Wake {
    /// Items made ready for getters.
    pushed: usize,
    /// The earliest delayed time moved earlier: sleeping getters must look again.
    earlier_timer: bool,
}

impl<T: QueueItem> PriorityQueue<T> {
    /// Builds a queue from `config`.
    pub fn new(config: QueueConfig<T>) -> Arc<Self> {
        let metrics = config.metrics.as_ref().map(|m| m.for_queue(&config.name));
        let queue = Arc::new(PriorityQueue {
            state: Mutex::new(State {
                items: Map::default(),
                slots: Slots::default(),
                ready: ReadyHeap {
                    heap: BinaryHeap::new(),
                    len: 0,
                },
                delayed: DelayHeap::default(),
                seq: 0,
                processing: 0,
                shutting_down: false,
                depth: Vec::new(),
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

    /// Takes the next ready item and its priority without waiting, marking it processing;
    /// `None` if nothing is ready.
    pub fn try_get_with_priority(&self) -> Option<(T, i32)> {
        let mut s = self.state.lock();
        self.pop_locked(&mut s)
    }

    /// Like [`PriorityQueue::try_get_with_priority`], without the priority.
    pub fn try_get(&self) -> Option<T> {
        self.try_get_with_priority().map(|(item, _)| item)
    }

    /// Waits for the next ready item and marks it processing; returns it with its priority.
    /// `None` once the queue is shut down and empty (controller-runtime's `GetWithPriority`).
    pub fn get_with_priority(&self) -> BoxFuture<'_, Option<(T, i32)>> {
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

    /// The number of items being processed (handed out, no `done` yet).
    pub fn num_processing(&self) -> usize {
        self.state.lock().processing
    }

    fn now_for_metrics(&self) -> Option<std::time::Instant> {
        self.metrics.as_ref().map(|_| std::time::Instant::now())
    }

    fn add_locked(&self, s: &mut State<T>, opts: AddOpts, item: T) -> Wake {
        let mut after = opts.after.filter(|d| !d.is_zero());
        if opts.rate_limited {
            let limited = self.rate_limiter.when(&item);
            after = Some(after.map_or(limited, |a| a.min(limited)));
        }
        let after = after.filter(|d| !d.is_zero());
        if after.is_some()
            && let Some(m) = &self.metrics
        {
            m.retries.inc();
        }
        let ready_at = after.map(ready_time);
        let priority = opts.priority.unwrap_or(0);
        // taken up front so the map is hashed once; an unused number leaves a harmless gap
        let seq = s.next_seq();
        let mut wake = Wake::default();
        let metrics = self.metrics.as_ref();

        let (key, slot) = match s.items.entry(item) {
            MapEntry::Occupied(o) => {
                // a copy of the key is needed unless the item is ready already at this
                // priority or higher (the common re-add, which changes nothing)
                let slot = *o.get();
                let needs_key = s.slots[slot]
                    .queued
                    .as_ref()
                    .is_none_or(|q| q.ready_at.is_some() || q.priority < priority);
                let key = needs_key.then(|| o.key().clone());
                (key, slot)
            }
            MapEntry::Vacant(v) => {
                let key = v.key().clone();
                let added_at = self.now_for_metrics();
                let slot = s.slots.insert(ItemState {
                    queued: Some(Queued {
                        priority,
                        seq,
                        ready_at,
                        added_at,
                    }),
                    ..ItemState::default()
                });
                v.insert(slot);
                if let Some(m) = metrics {
                    m.adds.inc();
                }
                match ready_at {
                    None => {
                        depth_add(&mut s.depth, metrics, priority, 1);
                        s.ready.push(priority, seq, slot, key);
                        wake.pushed += 1;
                    }
                    Some(at) => wake.earlier_timer |= s.delayed.push(at, key),
                }
                return wake;
            }
        };
        let st = &mut s.slots[slot];
        let processing = st.processing;
        let Some(q) = st.queued.as_mut() else {
            // processing and not queued: queue it, held until done
            st.queued = Some(Queued {
                priority,
                seq,
                ready_at,
                added_at: self.now_for_metrics(),
            });
            if let Some(m) = metrics {
                m.adds.inc();
            }
            match ready_at {
                None => depth_add(&mut s.depth, metrics, priority, 1),
                Some(at) => {
                    if let Some(key) = key {
                        wake.earlier_timer |= s.delayed.push(at, key);
                    }
                }
            }
            return wake;
        };

        // queued already: keep the highest priority and the earliest time
        let (old_priority, old_seq, old_ready_at) = (q.priority, q.seq, q.ready_at);
        let new_priority = old_priority.max(priority);
        q.priority = new_priority;
        match (old_ready_at, ready_at) {
            (None, _) => {
                // ready already: only the priority can change
                if new_priority != old_priority {
                    depth_add(&mut s.depth, metrics, old_priority, -1);
                    depth_add(&mut s.depth, metrics, new_priority, 1);
                    if !processing && let Some(key) = key {
                        s.ready.repush(new_priority, old_seq, slot, key);
                    }
                }
            }
            (Some(_), None) => {
                // an undelayed add makes a delayed item ready now
                q.ready_at = None;
                q.seq = seq;
                depth_add(&mut s.depth, metrics, new_priority, 1);
                if !processing && let Some(key) = key {
                    s.ready.push(new_priority, seq, slot, key);
                    wake.pushed += 1;
                }
            }
            (Some(old), Some(new)) => {
                if new < old
                    && let Some(key) = key
                {
                    q.ready_at = Some(new);
                    wake.earlier_timer |= s.delayed.push(new, key);
                }
            }
        }
        wake
    }

    /// Moves due delayed items into the ready set, waking a getter for each one.
    ///
    /// Every operation calls it first, so the queue behaves as if each item became ready at its
    /// time (its place in the order included). It notifies under the lock: `Notify` never calls
    /// back.
    fn promote_due_locked(&self, s: &mut State<T>) {
        if s.delayed.is_empty() || s.shutting_down {
            return;
        }
        let now = Instant::now();
        let mut pushed = 0;
        while let Some(d) = s.delayed.pop_due(now) {
            let seq = s.seq + 1;
            let Some(&slot) = s.items.get(&d.item) else {
                continue;
            };
            let st = &mut s.slots[slot];
            let processing = st.processing;
            let Some(q) = st.queued.as_mut().filter(|q| q.ready_at == Some(d.at)) else {
                continue; // stale entry
            };
            q.ready_at = None;
            q.seq = seq;
            let priority = q.priority;
            s.seq = seq;
            depth_add(&mut s.depth, self.metrics.as_ref(), priority, 1);
            if !processing {
                s.ready.push(priority, seq, slot, d.item);
                pushed += 1;
            }
        }
        self.notify_pushed(pushed);
    }

    /// Takes the first ready item and its priority.
    fn pop_locked(&self, s: &mut State<T>) -> Option<(T, i32)> {
        self.promote_due_locked(s);
        let now = self.now_for_metrics();
        let (item, priority, added_at) = loop {
            let r = s.ready.heap.pop()?;
            // a stale entry's slot may be free or reused: the order number tells
            let st = &mut s.slots[r.slot];
            let live = !st.processing
                && st.queued.as_ref().is_some_and(|q| {
                    q.ready_at.is_none() && q.priority == r.priority && q.seq == r.seq
                });
            if !live {
                continue; // stale entry of a raised priority
            }
            let added_at = st.queued.take().and_then(|q| q.added_at);
            st.processing = true;
            st.started_at = now;
            break (r.item, r.priority, added_at);
        };
        s.ready.len -= 1;
        s.processing += 1;
        if let (Some(m), Some(now)) = (&self.metrics, now) {
            m.observe_queued(added_at, now);
            depth_add(&mut s.depth, self.metrics.as_ref(), priority, -1);
        }
        Some((item, priority))
    }

    fn notify(&self, wake: Wake) {
        self.notify_pushed(wake.pushed);
        if wake.earlier_timer {
            self.items_ready.notify_waiters();
        }
    }

    fn notify_pushed(&self, pushed: usize) {
        for _ in 0..pushed {
            self.items_ready.notify_one();
        }
    }
}

/// Adds `delta` to the depth series of `priority` (resolved once per priority).
fn depth_add(
    depth: &mut Vec<(i32, Gauge)>,
    metrics: Option<&QueueMetrics>,
    priority: i32,
    delta: i64,
) {
    let Some(m) = metrics else { return };
    match depth.iter().find(|(p, _)| *p == priority) {
        Some((_, g)) => {
            g.inc_by(delta);
        }
        None => {
            let g = m.depth_for_priority(priority);
            g.inc_by(delta);
            depth.push((priority, g));
        }
    }
}

impl<T: QueueItem> Queue<T> for PriorityQueue<T> {
    fn add(&self, item: T) {
        self.add_with_opts(AddOpts::default(), item);
    }

    fn add_after(&self, item: T, delay: Duration) {
        self.add_with_opts(
            AddOpts {
                after: Some(delay),
                ..AddOpts::default()
            },
            item,
        );
    }

    fn add_rate_limited(&self, item: T) {
        self.add_with_opts(
            AddOpts {
                rate_limited: true,
                ..AddOpts::default()
            },
            item,
        );
    }

    /// Adds with a priority and/or a delay. With `rate_limited`, the delay is the shorter of
    /// `after` (when set) and the rate limiter's, as controller-runtime does.
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        let wake = {
            let mut s = self.state.lock();
            if s.shutting_down {
                return;
            }
            // items that became due go first, so the order follows the time they were ready
            self.promote_due_locked(&mut s);
            self.add_locked(&mut s, opts, item)
        };
        self.notify(wake);
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
                s.items.insert(key, slot);
                return;
            }
            st.processing = false;
            s.processing -= 1;
            if let Some(m) = &self.metrics {
                m.observe_work(st.started_at.take());
            }
            let mut pushed = false;
            match &st.queued {
                None => s.slots.remove(slot),
                Some(q) => {
                    if q.ready_at.is_none() {
                        s.ready.push(q.priority, q.seq, slot, key.clone());
                        pushed = true;
                    }
                    s.items.insert(key, slot);
                }
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
        s.ready.len
    }

    fn shut_down(&self) {
        {
            let mut s = self.state.lock();
            if !s.shutting_down {
                // what is due became ready before the shutdown
                self.promote_due_locked(&mut s);
                s.shutting_down = true;
                s.delayed.clear();
                let State { items, slots, .. } = &mut *s;
                items.retain(|_, &mut slot| {
                    let st = &mut slots[slot];
                    if st.queued.as_ref().is_some_and(|q| q.ready_at.is_some()) {
                        st.queued = None;
                    }
                    let keep = st.processing || st.queued.is_some();
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

impl<T: QueueItem> ProcessingStats for PriorityQueue<T> {
    fn processing_seconds(&self, now: std::time::Instant) -> (f64, f64) {
        let s = self.state.lock();
        processing_seconds(s.slots.iter().filter_map(|st| st.started_at), now)
    }
}
