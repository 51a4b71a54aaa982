//! [`FairQueue`]: a workqueue of cluster requests, fair between clusters.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::request::{ClusterName, ClusterRequest};
use crate::ObjectKey;
use crate::workqueue::{
    AddOpts, Enqueue, Queue, QueueConfig, QueueOrder, RateLimiter, Workqueue,
    default_controller_rate_limiter,
};

/// A workqueue of [`ClusterRequest`]s that serves clusters in turn, so that one
/// cluster flooding its queue cannot starve the others (the fair queue controller-runtime
/// discusses for multicluster-runtime, keyed by cluster).
///
/// Each engaged cluster has a lane, a [`Workqueue`] of [`ObjectKey`]s, which keeps every rule
/// of the [workqueue](crate::workqueue) for its keys: a key is never handed out twice at once,
/// an add during processing comes back once after `done`, delayed adds wait their time, and
/// with [`QueueOrder::Priority`] keys go out by priority. `get` visits the lanes round-robin,
/// starting after the lane it served last, and takes the first ready key it finds: with `n`
/// clusters holding ready keys, a cluster waits for at most `n - 1` other keys, however many
/// the others hold.
///
/// Lanes are explicit: [`FairQueue::add_cluster`] opens one (a cluster-aware controller does on
/// engage), [`FairQueue::remove_cluster`] drops it with every key it holds, queued or delayed;
/// adds for a cluster without a lane are dropped. A key being processed when its lane goes is
/// finished by its worker; its `done` finds no lane and does nothing.
///
/// Rate-limited adds take their delay from the queue's one [`RateLimiter`] over
/// [`ClusterRequest`]s (per-item backoff, and the overall bucket shared by all clusters).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// use controller_runtime::multicluster::{ClusterRequest, FairQueue};
/// use controller_runtime::workqueue::{Enqueue, Queue};
/// use controller_runtime::Request;
///
/// let queue = FairQueue::new("widgets");
/// queue.add_cluster("noisy");
/// queue.add_cluster("quiet");
/// for i in 0..100 {
///     queue.add(ClusterRequest::new("noisy", Request::new("ns", format!("n{i}"))));
/// }
/// queue.add(ClusterRequest::new("quiet", Request::new("ns", "q")));
/// let first = queue.get().await.unwrap();
/// let second = queue.get().await.unwrap();
/// assert_eq!(&*first.cluster, "noisy");
/// assert_eq!(&*second.cluster, "quiet", "served after one noisy key, not after 100");
/// # });
/// ```
pub struct FairQueue {
    name: String,
    order: QueueOrder,
    rate_limiter: Arc<dyn RateLimiter<ClusterRequest>>,
    state: Mutex<State>,
    /// Wakes getters: a key was added or came back at `done`, a lane opened, or shutdown.
    wake: Notify,
}

struct State {
    lanes: HashMap<ClusterName, Arc<Workqueue<ObjectKey>>>,
    /// The lanes in serving order.
    ring: VecDeque<ClusterName>,
    /// Where the next `get` starts looking in `ring`.
    next: usize,
    /// When delayed adds fall due (some may be stale): getters sleep until the earliest.
    timers: BinaryHeap<Reverse<Instant>>,
    shutting_down: bool,
}

impl fmt::Debug for FairQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.state.lock();
        f.debug_struct("FairQueue")
            .field("name", &self.name)
            .field("clusters", &s.ring)
            .field("shutting_down", &s.shutting_down)
            .finish_non_exhaustive()
    }
}

impl FairQueue {
    /// A FIFO fair queue (each lane first in, first out) with the default controller rate
    /// limiter.
    pub fn new(name: impl Into<String>) -> Arc<Self> {
        Self::with_config(name, QueueOrder::Fifo, default_controller_rate_limiter())
    }

    /// A fair queue whose lanes keep `order` and whose rate-limited adds `rate_limiter` delays.
    pub fn with_config(
        name: impl Into<String>,
        order: QueueOrder,
        rate_limiter: Arc<dyn RateLimiter<ClusterRequest>>,
    ) -> Arc<Self> {
        Arc::new(FairQueue {
            name: name.into(),
            order,
            rate_limiter,
            state: Mutex::new(State {
                lanes: HashMap::new(),
                ring: VecDeque::new(),
                next: 0,
                timers: BinaryHeap::new(),
                shutting_down: false,
            }),
            wake: Notify::new(),
        })
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Opens the lane of `cluster` (nothing if it is open). Returns whether it was opened.
    pub fn add_cluster(&self, cluster: impl Into<ClusterName>) -> bool {
        let cluster = cluster.into();
        let mut s = self.state.lock();
        if s.shutting_down || s.lanes.contains_key(&cluster) {
            return false;
        }
        let lane = Workqueue::new(
            QueueConfig::default()
                .name(format!("{}/{}", self.name, cluster))
                .order(self.order),
        );
        s.lanes.insert(cluster.clone(), lane);
        s.ring.push_back(cluster);
        true
    }

    /// Drops the lane of `cluster` with every key it holds, ready or delayed; returns how many
    /// ready keys were dropped, `None` when the cluster had no lane.
    pub fn remove_cluster(&self, cluster: &str) -> Option<usize> {
        let lane = {
            let mut s = self.state.lock();
            let lane = s.lanes.remove(cluster)?;
            if let Some(i) = s.ring.iter().position(|c| &**c == cluster) {
                s.ring.remove(i);
                if i < s.next {
                    s.next -= 1;
                }
            }
            lane
        };
        let dropped = lane.len();
        lane.shut_down();
        Some(dropped)
    }

    /// The clusters with a lane, in serving order.
    pub fn clusters(&self) -> Vec<ClusterName> {
        self.state.lock().ring.iter().cloned().collect()
    }

    /// The ready keys of `cluster` (`None` without a lane).
    pub fn len_of(&self, cluster: &str) -> Option<usize> {
        let lane = self.state.lock().lanes.get(cluster).cloned()?;
        Some(lane.len())
    }

    fn lane(&self, cluster: &str) -> Option<Arc<Workqueue<ObjectKey>>> {
        self.state.lock().lanes.get(cluster).cloned()
    }

    /// The next ready key, round-robin over the lanes, without waiting.
    fn try_pop(&self, s: &mut State) -> Option<(ClusterRequest, i32)> {
        let n = s.ring.len();
        for i in 0..n {
            let at = (s.next + i) % n;
            let cluster = &s.ring[at];
            if let Some((key, priority)) = s.lanes[cluster].try_get_with_priority() {
                let cluster = cluster.clone();
                s.next = (at + 1) % n;
                return Some((ClusterRequest { cluster, key }, priority));
            }
        }
        None
    }
}

impl Enqueue<ClusterRequest> for FairQueue {
    fn add_with_opts(&self, opts: AddOpts, item: ClusterRequest) {
        let Some(lane) = self.lane(&item.cluster) else {
            tracing::debug!(queue = %self.name, request = %item, "no lane for the cluster: dropped");
            return;
        };
        let mut delay = opts.after;
        if opts.rate_limited {
            let limited = self.rate_limiter.when(&item);
            delay = Some(delay.map_or(limited, |d| d.min(limited)));
        }
        let delay = delay.filter(|d| !d.is_zero());
        let lane_opts = AddOpts {
            priority: opts.priority,
            after: delay,
            rate_limited: false,
        };
        lane.add_with_opts(lane_opts, item.key);
        match delay {
            None => self.wake.notify_one(),
            Some(d) => self.add_timer(d),
        }
    }
}

impl FairQueue {
    /// Remembers that a lane has a delayed add due after `delay` (measured after the lane's own
    /// clock read, so never before it), waking sleeping getters when it is the earliest.
    fn add_timer(&self, delay: Duration) {
        let at = Instant::now() + delay;
        let earliest = {
            let mut s = self.state.lock();
            let earliest = s.timers.peek().is_none_or(|Reverse(t)| at < *t);
            s.timers.push(Reverse(at));
            earliest
        };
        if earliest {
            self.wake.notify_waiters();
        }
    }
}

impl Queue<ClusterRequest> for FairQueue {
    fn get_with_priority(&self) -> BoxFuture<'_, Option<(ClusterRequest, i32)>> {
        Box::pin(async move {
            loop {
                let notified = self.wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                let sleep_until = {
                    let now = Instant::now();
                    let mut s = self.state.lock();
                    if let Some(got) = self.try_pop(&mut s) {
                        return Some(got);
                    }
                    if s.shutting_down {
                        return None;
                    }
                    // Every lane promoted what was due at `now`: older timers are spent.
                    while s.timers.peek().is_some_and(|Reverse(t)| *t <= now) {
                        s.timers.pop();
                    }
                    s.timers.peek().map(|Reverse(t)| *t)
                };
                match sleep_until {
                    Some(at) => {
                        tokio::select! {
                            _ = notified => {}
                            _ = tokio::time::sleep_until(at) => {}
                        }
                    }
                    None => notified.await,
                }
            }
        })
    }

    fn done(&self, item: &ClusterRequest) {
        if let Some(lane) = self.lane(&item.cluster) {
            lane.done(&item.key);
            // The key may be queued again (added while it was processing).
            self.wake.notify_one();
        }
    }

    fn forget(&self, item: &ClusterRequest) {
        self.rate_limiter.forget(item);
    }

    fn num_requeues(&self, item: &ClusterRequest) -> u32 {
        self.rate_limiter.num_requeues(item)
    }

    fn len(&self) -> usize {
        let lanes: Vec<_> = self.state.lock().lanes.values().cloned().collect();
        lanes.iter().map(|lane| lane.len()).sum()
    }

    fn shut_down(&self) {
        let lanes: Vec<_> = {
            let mut s = self.state.lock();
            s.shutting_down = true;
            s.timers.clear();
            s.lanes.values().cloned().collect()
        };
        for lane in lanes {
            lane.shut_down();
        }
        self.wake.notify_waiters();
    }

    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        self.shut_down();
        Box::pin(async move {
            let lanes: Vec<_> = self.state.lock().lanes.values().cloned().collect();
            for lane in lanes {
                lane.shut_down_with_drain().await;
            }
        })
    }

    fn is_shutting_down(&self) -> bool {
        self.state.lock().shutting_down
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn req(cluster: &str, name: &str) -> ClusterRequest {
        ClusterRequest::new(cluster, ObjectKey::new("ns", name))
    }

    /// How many keys `queue` hands out before one of `cluster`, each finished at once.
    async fn gets_until(queue: &FairQueue, cluster: &str) -> usize {
        let mut n = 0;
        loop {
            let got = queue.get().await.unwrap();
            queue.done(&got);
            n += 1;
            if &*got.cluster == cluster {
                return n;
            }
        }
    }

    #[tokio::test]
    async fn a_flooding_cluster_delays_another_by_one_key_per_busy_cluster() {
        let queue = FairQueue::new("test");
        for c in ["flood", "quiet", "other"] {
            queue.add_cluster(c);
        }
        for i in 0..10_000 {
            queue.add(req("flood", &format!("f{i}")));
        }
        for i in 0..100 {
            queue.add(req("other", &format!("o{i}")));
        }
        // A change in the quiet cluster, at any point of the flood, is served within one
        // round: after at most one key of each other busy cluster.
        let mut worst = 0;
        for i in 0..50 {
            queue.add(req("quiet", &format!("q{i}")));
            worst = worst.max(gets_until(&queue, "quiet").await);
            // the flood goes on meanwhile
            queue.add(req("flood", &format!("g{i}")));
        }
        assert!(worst <= 3, "a quiet key waited behind {} keys", worst - 1);

        // The same flood in one FIFO workqueue: the quiet key waits behind all of it.
        let fifo = Workqueue::<ClusterRequest>::new(QueueConfig::default());
        for i in 0..10_000 {
            fifo.add(req("flood", &format!("f{i}")));
        }
        fifo.add(req("quiet", "q"));
        let mut n = 0;
        loop {
            let got = fifo.get().await.unwrap();
            fifo.done(&got);
            n += 1;
            if &*got.cluster == "quiet" {
                break;
            }
        }
        assert_eq!(n, 10_001);
    }

    #[tokio::test]
    async fn lanes_serve_in_turn_and_keep_their_own_order() {
        let queue = FairQueue::new("test");
        queue.add_cluster("a");
        queue.add_cluster("b");
        for name in ["a1", "a2", "a3"] {
            queue.add(req("a", name));
        }
        queue.add(req("b", "b1"));
        let mut order = Vec::new();
        loop {
            let got = queue.try_pop(&mut queue.state.lock());
            let Some((got, _)) = got else { break };
            order.push(got.key.name.clone());
            queue.done(&got);
        }
        assert_eq!(order, ["a1", "b1", "a2", "a3"]);
    }

    #[tokio::test]
    async fn a_removed_cluster_loses_its_keys_and_takes_no_more() {
        let queue = FairQueue::new("test");
        queue.add_cluster("gone");
        queue.add_cluster("stays");
        let processing = req("gone", "p");
        queue.add(processing.clone());
        assert_eq!(queue.get().await.unwrap(), processing);
        for i in 0..5 {
            queue.add(req("gone", &format!("k{i}")));
        }
        queue.add_after(req("gone", "later"), Duration::from_secs(1));
        queue.add(req("stays", "s"));
        assert_eq!(queue.len_of("gone"), Some(5));

        assert_eq!(queue.remove_cluster("gone"), Some(5));
        assert_eq!(queue.remove_cluster("gone"), None);
        assert_eq!(queue.len_of("gone"), None);
        assert_eq!(queue.clusters(), [ClusterName::from("stays")]);
        // adds for it are dropped; its in-flight key finishes harmlessly
        queue.add(req("gone", "k9"));
        queue.add(processing.clone());
        queue.done(&processing);
        assert_eq!(queue.len(), 1);
        assert_eq!(queue.get().await.unwrap(), req("stays", "s"));
        queue.shut_down();
        assert_eq!(queue.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn delayed_and_rate_limited_adds_wait_their_time() {
        let queue = FairQueue::new("test");
        queue.add_cluster("a");
        let start = Instant::now();
        queue.add_after(req("a", "x"), Duration::from_secs(3));
        assert_eq!(queue.len(), 0);
        assert_eq!(queue.get().await.unwrap(), req("a", "x"));
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        queue.done(&req("a", "x"));

        // The default rate limiter: 5 ms, then 10 ms for the same key.
        let start = Instant::now();
        queue.add_rate_limited(req("a", "y"));
        let y = queue.get().await.unwrap();
        queue.done(&y);
        queue.add_rate_limited(req("a", "y"));
        assert_eq!(queue.num_requeues(&y), 2);
        queue.get().await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_millis(15));
    }

    #[tokio::test]
    async fn an_add_during_processing_comes_back_once_after_done() {
        let queue = FairQueue::new("test");
        queue.add_cluster("a");
        queue.add(req("a", "x"));
        let x = queue.get().await.unwrap();
        queue.add(x.clone());
        queue.add(x.clone());
        assert_eq!(queue.len(), 0, "held while processing");
        // a getter waiting meanwhile is woken by the done
        let waiter = async { queue.get().await };
        let done = async {
            tokio::task::yield_now().await;
            queue.done(&x);
        };
        let (again, ()) = tokio::join!(waiter, done);
        assert_eq!(again, Some(x.clone()));
        queue.done(&x);
        assert_eq!(queue.len(), 0);
        queue.shut_down_with_drain().await;
        assert!(queue.is_shutting_down());
    }
}
