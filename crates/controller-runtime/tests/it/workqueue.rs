//! Behaviour of the workqueues: client-go's dirty/processing rules under concurrency, delays on a
//! paused clock, rate limiting, shutdown, the priority queue's order, metrics, and a model-based
//! property test.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use controller_runtime::workqueue::{
    AddOpts, Enqueue, ItemExponentialFailureRateLimiter, LOW_PRIORITY, Queue, QueueConfig,
    QueueOrder, RateLimiter, Workqueue, WorkqueueMetrics,
};
use parking_lot::Mutex;
use proptest::prelude::*;
use tokio::time::Instant;

fn plain<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>() -> Arc<Workqueue<T>> {
    Workqueue::new(QueueConfig::default())
}

fn exponential<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>() -> QueueConfig<T> {
    QueueConfig::default().rate_limiter(Arc::new(ItemExponentialFailureRateLimiter::default()))
}

/// The engine in priority order.
fn priority_queue<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(
    cfg: QueueConfig<T>,
) -> Arc<Workqueue<T>> {
    Workqueue::new(cfg.order(QueueOrder::Priority))
}

/// Every queue kind, as the controller sees it.
fn all_queues<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(
    cfg: impl Fn() -> QueueConfig<T>,
) -> Vec<(&'static str, Arc<dyn Queue<T>>)> {
    vec![
        ("plain", Workqueue::new(cfg()) as Arc<dyn Queue<T>>),
        ("priority", priority_queue(cfg()) as Arc<dyn Queue<T>>),
    ]
}

/// 8 workers, 10,000 adds over 100 keys: a key is never processed by two workers at once, and
/// the last add of every key is seen by a processing that started after it.
async fn no_concurrent_processing(queue: Arc<dyn Queue<u32>>) {
    const KEYS: u32 = 100;
    const ADDS: u32 = 10_000;
    // generation of each key: bumped before every add; `seen` is what a worker read when it
    // started processing the key.
    let generation: Arc<Mutex<HashMap<u32, u64>>> = Arc::default();
    let seen: Arc<Mutex<HashMap<u32, u64>>> = Arc::default();
    let in_flight: Arc<Mutex<HashSet<u32>>> = Arc::default();
    let processed = Arc::new(std::sync::atomic::AtomicU64::new(0));

    let mut workers = Vec::new();
    for w in 0..8u32 {
        let (queue, generation, seen, in_flight, processed) = (
            queue.clone(),
            generation.clone(),
            seen.clone(),
            in_flight.clone(),
            processed.clone(),
        );
        workers.push(tokio::spawn(async move {
            while let Some(key) = queue.get().await {
                assert!(
                    in_flight.lock().insert(key),
                    "key {key} processed by two workers at once"
                );
                let g = generation.lock().get(&key).copied().unwrap_or(0);
                seen.lock().insert(key, g);
                if (key + w) % 3 == 0 {
                    tokio::task::yield_now().await;
                }
                assert!(in_flight.lock().remove(&key));
                processed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                queue.done(&key);
            }
        }));
    }

    for i in 0..ADDS {
        let key = (i * 7919) % KEYS;
        *generation.lock().entry(key).or_default() += 1;
        queue.add(key);
        if i % 64 == 0 {
            tokio::task::yield_now().await;
        }
    }

    // wait (bounded) until every key's last add was picked up, then stop the workers
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let caught_up = {
            let generation = generation.lock();
            let seen = seen.lock();
            generation.iter().all(|(k, g)| seen.get(k) == Some(g))
        };
        if caught_up && queue.is_empty() && in_flight.lock().is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "workers never caught up"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    queue.shut_down_with_drain().await;
    for w in workers {
        w.await.unwrap();
    }
    let n = processed.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        n >= u64::from(KEYS) && n <= u64::from(ADDS),
        "processed {n}"
    );
    assert_eq!(generation.lock().len(), KEYS as usize);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_workers_never_share_a_key() {
    for (_, q) in all_queues(QueueConfig::default) {
        no_concurrent_processing(q).await;
    }
}

#[tokio::test]
async fn add_while_processing_is_delivered_once_more_after_done() {
    for (kind, q) in all_queues(QueueConfig::default) {
        q.add("a");
        q.add("a");
        assert_eq!(q.len(), 1, "{kind}");
        let a = q.get().await.unwrap();
        assert_eq!(a, "a");
        q.add("a");
        q.add("a");
        q.add("b");
        // "a" is processing: only "b" is ready
        assert_eq!(q.len(), 1, "{kind}");
        assert_eq!(q.get().await, Some("b"), "{kind}");
        assert!(q.is_empty(), "{kind}");
        q.done(&"a");
        assert_eq!(q.len(), 1, "{kind}");
        assert_eq!(q.get().await, Some("a"), "{kind}");
        q.done(&"a");
        q.done(&"b");
        // exactly once more: nothing is left
        assert!(q.is_empty(), "{kind}");
        // a done without a get changes nothing
        q.done(&"zzz");
        assert!(q.is_empty(), "{kind}");
    }
}

#[tokio::test]
async fn fifo_order() {
    for (kind, q) in all_queues(QueueConfig::default) {
        for i in 0..10 {
            q.add(i);
        }
        for i in 0..10 {
            assert_eq!(q.get().await, Some(i), "{kind}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn add_after_keeps_the_earliest_time() {
    for (kind, q) in all_queues(QueueConfig::default) {
        let start = Instant::now();
        q.add_after("x", Duration::from_secs(10));
        q.add_after("x", Duration::from_secs(5));
        q.add_after("x", Duration::from_secs(20));
        assert!(q.is_empty(), "{kind}");
        tokio::time::advance(Duration::from_millis(4_999)).await;
        assert!(q.is_empty(), "{kind}");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(q.len(), 1, "{kind}");
        assert_eq!(q.get().await, Some("x"));
        assert_eq!(start.elapsed(), Duration::from_secs(5), "{kind}");
        q.done(&"x");
        // the later times were dropped, not kept as further adds
        tokio::time::advance(Duration::from_secs(30)).await;
        assert!(q.is_empty(), "{kind}");
        // a zero delay is an immediate add
        q.add_after("y", Duration::ZERO);
        assert_eq!(q.len(), 1, "{kind}");
        assert_eq!(q.get().await, Some("y"));
        q.done(&"y");
    }
}

#[tokio::test(start_paused = true)]
async fn huge_delays_do_not_overflow() {
    for (kind, q) in all_queues(QueueConfig::default) {
        q.add_after("never", Duration::MAX);
        q.add_with_opts(
            AddOpts::default().after(Duration::MAX).priority(i32::MAX),
            "never2",
        );
        tokio::time::advance(Duration::from_secs(10 * 365 * 24 * 3600)).await;
        assert!(q.is_empty(), "{kind}");
        q.add("now");
        assert_eq!(q.get().await, Some("now"), "{kind}");
    }
}

#[tokio::test(start_paused = true)]
async fn get_sleeps_until_the_earliest_delayed_item() {
    for (kind, q) in all_queues(QueueConfig::default) {
        let start = Instant::now();
        let getter = {
            let q = q.clone();
            tokio::spawn(async move { (q.get().await, Instant::now()) })
        };
        tokio::task::yield_now().await;
        q.add_after("late", Duration::from_secs(60));
        tokio::task::yield_now().await;
        // an earlier item added while the getter sleeps shortens its sleep
        q.add_after("soon", Duration::from_secs(2));
        let (item, at) = getter.await.unwrap();
        assert_eq!(item, Some("soon"), "{kind}");
        assert_eq!(at - start, Duration::from_secs(2), "{kind}");
        assert_eq!(q.get().await, Some("late"), "{kind}");
        assert_eq!(start.elapsed(), Duration::from_secs(60), "{kind}");
    }
}

#[tokio::test(start_paused = true)]
async fn rate_limited_adds_back_off_exponentially() {
    for (kind, q) in all_queues(exponential::<&str>) {
        let mut expected = Duration::from_millis(5);
        for n in 0..6u32 {
            assert_eq!(q.num_requeues(&"k"), n, "{kind}");
            let start = Instant::now();
            q.add_rate_limited("k");
            assert_eq!(q.get().await, Some("k"), "{kind}");
            assert_eq!(start.elapsed(), expected, "{kind}");
            q.done(&"k");
            expected *= 2;
        }
        q.forget(&"k");
        assert_eq!(q.num_requeues(&"k"), 0, "{kind}");
        let start = Instant::now();
        q.add_rate_limited("k");
        assert_eq!(q.get().await, Some("k"), "{kind}");
        assert_eq!(start.elapsed(), Duration::from_millis(5), "{kind}");
    }
    let limiter = ItemExponentialFailureRateLimiter::<u8>::default();
    let delays: Vec<Duration> = (0..30).map(|_| limiter.when(&1)).collect();
    assert_eq!(&delays[..3], &[5, 10, 20].map(Duration::from_millis));
    assert_eq!(delays[17], Duration::from_millis(5 << 17));
    assert_eq!(delays[18], Duration::from_secs(1000));
    assert_eq!(delays[29], Duration::from_secs(1000));
}

#[tokio::test]
async fn shutdown_hands_out_what_is_left_then_none() {
    for (kind, q) in all_queues(QueueConfig::default) {
        q.add(1);
        q.add(2);
        q.add_after(3, Duration::from_secs(3600));
        q.shut_down();
        assert!(q.is_shutting_down(), "{kind}");
        q.add(4);
        q.add_after(5, Duration::ZERO);
        q.add_rate_limited(6);
        assert_eq!(q.get().await, Some(1), "{kind}");
        assert_eq!(q.get().await, Some(2), "{kind}");
        assert_eq!(q.get().await, None, "{kind}");
        assert_eq!(q.get().await, None, "{kind}");
    }
}

#[tokio::test]
async fn shutdown_wakes_blocked_getters() {
    for (kind, q) in all_queues(QueueConfig::<u8>::default) {
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        q.shut_down();
        for g in getters {
            assert_eq!(g.await.unwrap(), None, "{kind}");
        }
    }
}

#[tokio::test]
async fn shut_down_with_drain_waits_for_processing_items() {
    for (kind, q) in all_queues(QueueConfig::default) {
        q.add("a");
        q.add("b");
        let a = q.get().await.unwrap();
        let drain = {
            let q = q.clone();
            tokio::spawn(async move { q.shut_down_with_drain().await })
        };
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(
            !drain.is_finished(),
            "{kind}: drain returned while {a} is processing"
        );
        assert!(q.is_shutting_down(), "{kind}");
        // what is left is still handed out during the drain
        let b = q.get().await.unwrap();
        q.done(&a);
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(
            !drain.is_finished(),
            "{kind}: drain returned while {b} is processing"
        );
        q.done(&b);
        tokio::time::timeout(Duration::from_secs(5), drain)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(q.get().await, None, "{kind}");
        // with nothing processing, the drain returns at once
        q.shut_down_with_drain().await;
    }
}

#[tokio::test]
async fn metrics_are_reported_under_the_queue_name() {
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = WorkqueueMetrics::register(&mut registry);
    let q = Workqueue::<&str>::new(QueueConfig::default().name("pods").metrics(metrics.clone()));
    let other = Workqueue::<&str>::new(QueueConfig::default().name("nodes").metrics(metrics));
    q.add("a");
    q.add("a");
    q.add("b");
    q.add("c");
    other.add("z");
    let a = q.get().await.unwrap();
    q.add_after("d", Duration::from_secs(3600));
    let text = render(&registry);
    let has = |line: &str| text.lines().any(|l| l == line);
    assert!(
        has(r#"workqueue_adds_total{name="pods",controller="pods"} 3"#),
        "{text}"
    );
    assert!(
        has(r#"workqueue_depth{name="pods",controller="pods",priority=""} 2"#),
        "{text}"
    );
    assert!(
        has(r#"workqueue_adds_total{name="nodes",controller="nodes"} 1"#),
        "{text}"
    );
    assert!(
        has(r#"workqueue_depth{name="nodes",controller="nodes",priority=""} 1"#),
        "{text}"
    );
    assert!(
        has(r#"workqueue_retries_total{name="pods",controller="pods"} 1"#),
        "{text}"
    );
    assert!(
        has(r#"workqueue_queue_duration_seconds_count{name="pods",controller="pods"} 1"#),
        "{text}"
    );
    // controller-runtime's buckets: 1e-8 s to 1e3 s, times 10 each, then +Inf
    let buckets: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("workqueue_queue_duration_seconds_bucket{"))
        .filter(|l| l.contains(r#"name="pods""#))
        .collect();
    assert_eq!(buckets.len(), 13, "{text}");
    assert!(buckets[0].contains(r#"le="1e-8""#), "{text}");
    assert!(buckets[11].contains(r#"le="1000.0""#), "{text}");
    assert!(buckets[12].contains(r#"le="+Inf""#), "{text}");
    assert!(
        text.contains("workqueue_unfinished_work_seconds{name=\"pods\",controller=\"pods\"}"),
        "{text}"
    );
    assert!(
        text.contains(
            "workqueue_longest_running_processor_seconds{name=\"pods\",controller=\"pods\"}"
        ),
        "{text}"
    );
    std::thread::sleep(Duration::from_millis(20));
    let longest = gauge_value(
        &render(&registry),
        "workqueue_longest_running_processor_seconds",
        "pods",
    );
    assert!(longest >= 0.02, "longest running processor {longest}");
    q.done(&a);
    let text = render(&registry);
    assert!(
        text.contains(r#"workqueue_work_duration_seconds_count{name="pods",controller="pods"} 1"#),
        "{text}"
    );
    assert_eq!(
        gauge_value(&text, "workqueue_unfinished_work_seconds", "pods"),
        0.0
    );
    assert_eq!(
        gauge_value(&text, "workqueue_longest_running_processor_seconds", "pods"),
        0.0
    );
}

fn render(registry: &prometheus_client::registry::Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

fn gauge_value(text: &str, metric: &str, name: &str) -> f64 {
    let prefix = format!("{metric}{{name=\"{name}\",controller=\"{name}\"}} ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("{metric} in {text}"));
    line[prefix.len()..].parse().unwrap()
}

fn prio(p: i32) -> AddOpts {
    AddOpts::default().priority(p)
}

fn prio_after(p: i32, after: Duration) -> AddOpts {
    AddOpts::default().priority(p).after(after)
}

#[tokio::test]
async fn priority_queue_orders_by_priority_then_fifo() {
    let q = priority_queue::<&str>(QueueConfig::default());
    q.add_with_opts(prio(0), "a");
    q.add_with_opts(prio(LOW_PRIORITY), "b");
    q.add_with_opts(prio(10), "c");
    q.add("d");
    q.add_with_opts(prio(10), "e");
    assert_eq!(q.len(), 5);
    let mut got = Vec::new();
    while let Some((item, p)) = q.try_get_with_priority() {
        got.push((item, p));
    }
    assert_eq!(
        got,
        vec![
            ("c", 10),
            ("e", 10),
            ("a", 0),
            ("d", 0),
            ("b", LOW_PRIORITY)
        ]
    );
    // the plain queue ignores priorities: FIFO
    let plain = plain::<&str>();
    plain.add_with_opts(prio(LOW_PRIORITY), "b");
    plain.add_with_opts(prio(10), "c");
    assert_eq!(plain.get().await, Some("b"));
    assert_eq!(plain.get().await, Some("c"));
}

#[tokio::test]
async fn priority_queue_dedup_keeps_the_highest_priority() {
    let q = priority_queue::<&str>(QueueConfig::default());
    q.add_with_opts(prio(LOW_PRIORITY), "x");
    q.add("y");
    q.add_with_opts(prio(5), "x");
    q.add_with_opts(prio(LOW_PRIORITY), "x"); // lower: ignored
    assert_eq!(q.len(), 2);
    assert_eq!(q.get_with_priority().await, Some(("x", 5)));
    assert_eq!(q.get_with_priority().await, Some(("y", 0)));
    // an item re-added while processing is held until done, with the priority it was added with
    q.add_with_opts(prio(LOW_PRIORITY), "x");
    q.add_with_opts(prio(7), "x");
    q.add("z");
    assert_eq!(q.len(), 1);
    assert_eq!(q.try_get_with_priority(), Some(("z", 0)));
    assert_eq!(q.try_get(), None);
    q.done(&"x");
    assert_eq!(q.try_get_with_priority(), Some(("x", 7)));
    assert_eq!(q.num_processing(), 3);
}

#[tokio::test(start_paused = true)]
async fn priority_queue_dedup_keeps_the_earliest_time() {
    let q = priority_queue::<&str>(QueueConfig::default());
    let start = Instant::now();
    q.add_with_opts(prio_after(0, Duration::from_secs(10)), "x");
    q.add_with_opts(prio_after(3, Duration::from_secs(5)), "x");
    q.add_with_opts(prio_after(0, Duration::from_secs(20)), "x");
    q.add_with_opts(prio_after(0, Duration::from_secs(7)), "w");
    assert_eq!(q.len(), 0);
    assert_eq!(q.get_with_priority().await, Some(("x", 3)));
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert_eq!(q.get().await, Some("w"));
    assert_eq!(start.elapsed(), Duration::from_secs(7));
    q.done(&"x");
    tokio::time::advance(Duration::from_secs(60)).await;
    assert_eq!(q.len(), 0, "later times of x were merged, not kept");

    // an undelayed add makes a delayed item ready at once
    q.add_after("d", Duration::from_secs(3600));
    assert_eq!(q.len(), 0);
    q.add("d");
    assert_eq!(q.len(), 1);
    assert_eq!(q.get().await, Some("d"));
    q.done(&"d");
    tokio::time::advance(Duration::from_secs(7200)).await;
    assert_eq!(q.len(), 0);

    // a delayed item that becomes ready queues behind the ready items of its priority
    q.add_after("late", Duration::from_secs(1));
    tokio::time::advance(Duration::from_millis(500)).await;
    q.add("early");
    tokio::time::advance(Duration::from_secs(1)).await;
    q.add("later");
    assert_eq!(q.try_get(), Some("early"));
    assert_eq!(q.try_get(), Some("late"));
    assert_eq!(q.try_get(), Some("later"));
}

#[tokio::test(start_paused = true)]
async fn priority_queue_rate_limited_add_takes_the_shorter_delay() {
    let q = priority_queue::<&str>(exponential());
    let start = Instant::now();
    // limiter says 5 ms, after says 1 s: 5 ms wins
    q.add_with_opts(
        AddOpts::default()
            .rate_limited()
            .after(Duration::from_secs(1)),
        "k",
    );
    assert_eq!(q.get().await, Some("k"));
    assert_eq!(start.elapsed(), Duration::from_millis(5));
    assert_eq!(q.num_requeues(&"k"), 1);
}

#[tokio::test]
async fn priority_queue_depth_is_reported_per_priority() {
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = WorkqueueMetrics::register(&mut registry);
    let q = priority_queue::<&str>(QueueConfig::default().name("deploy").metrics(metrics));
    q.add_with_opts(prio(LOW_PRIORITY), "a");
    q.add_with_opts(prio(LOW_PRIORITY), "b");
    q.add("c");
    q.add_with_opts(prio(0), "b"); // moves b from -100 to 0
    let text = render(&registry);
    let has = |line: &str| text.lines().any(|l| l == line);
    assert!(
        has(r#"workqueue_depth{name="deploy",controller="deploy",priority="-100"} 1"#),
        "{text}"
    );
    assert!(
        has(r#"workqueue_depth{name="deploy",controller="deploy",priority="0"} 2"#),
        "{text}"
    );
    assert!(
        has(r#"workqueue_adds_total{name="deploy",controller="deploy"} 3"#),
        "{text}"
    );
    // b keeps its place (it was queued before c) at its new priority
    assert_eq!(q.get().await, Some("b"));
    assert_eq!(q.get().await, Some("c"));
    let text = render(&registry);
    let has = |line: &str| text.lines().any(|l| l == line);
    assert!(
        has(r#"workqueue_depth{name="deploy",controller="deploy",priority="0"} 0"#),
        "{text}"
    );
    assert!(
        has(r#"workqueue_depth{name="deploy",controller="deploy",priority="-100"} 1"#),
        "{text}"
    );
}

/// A model of client-go's rules: a FIFO, a dirty set, a processing set.
#[derive(Default, Debug)]
struct Model {
    queue: VecDeque<u8>,
    dirty: HashSet<u8>,
    processing: HashSet<u8>,
    shut_down: bool,
}

impl Model {
    fn add(&mut self, k: u8) {
        if self.shut_down || !self.dirty.insert(k) {
            return;
        }
        if !self.processing.contains(&k) {
            self.queue.push_back(k);
        }
    }
    fn get(&mut self) -> Option<u8> {
        let k = self.queue.pop_front()?;
        self.dirty.remove(&k);
        self.processing.insert(k);
        Some(k)
    }
    fn done(&mut self, k: u8) {
        if self.processing.remove(&k) && self.dirty.contains(&k) {
            self.queue.push_back(k);
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    Add(u8),
    Get,
    Done(u8),
    ShutDown,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..8).prop_map(Op::Add),
        4 => Just(Op::Get),
        3 => (0u8..8).prop_map(Op::Done),
        1 => Just(Op::ShutDown),
    ]
}

#[derive(Clone, Debug)]
enum DelayOp {
    Add(u8),
    AddAfter(u8, u64),
    Advance(u64),
    Get,
    Done(u8),
    ShutDown,
}

fn delay_op() -> impl Strategy<Value = DelayOp> {
    prop_oneof![
        4 => (0u8..6).prop_map(DelayOp::Add),
        4 => (0u8..6, 0u64..20).prop_map(|(k, ms)| DelayOp::AddAfter(k, ms)),
        3 => (0u64..15).prop_map(DelayOp::Advance),
        4 => Just(DelayOp::Get),
        3 => (0u8..6).prop_map(DelayOp::Done),
        1 => Just(DelayOp::ShutDown),
    ]
}

/// The plain model plus client-go's delaying layer: waiting items keep their earliest time and
/// become adds, in time order, when the clock reaches it.
#[derive(Default, Debug)]
struct DelayModel {
    queue: Model,
    waiting: HashMap<u8, (u64, u64)>,
    now: u64,
    seq: u64,
}

impl DelayModel {
    fn add_after(&mut self, k: u8, ms: u64) {
        if self.queue.shut_down {
            return;
        }
        if ms == 0 {
            return self.queue.add(k);
        }
        let at = self.now + ms;
        if self.waiting.get(&k).is_some_and(|(w, _)| *w <= at) {
            return;
        }
        self.seq += 1;
        self.waiting.insert(k, (at, self.seq));
    }
    fn advance(&mut self, ms: u64) {
        self.now += ms;
        let mut due: Vec<(u64, u64, u8)> = self
            .waiting
            .iter()
            .filter(|(_, (at, _))| *at <= self.now)
            .map(|(k, (at, seq))| (*at, *seq, *k))
            .collect();
        due.sort();
        for (_, _, k) in due {
            self.waiting.remove(&k);
            self.queue.add(k);
        }
    }
}

/// A model of the priority queue without delays: queued items with (priority, order), and the
/// processing set.
#[derive(Default, Debug)]
struct PriorityModel {
    queued: HashMap<u8, (i32, u64)>,
    processing: HashSet<u8>,
    seq: u64,
    shut_down: bool,
}

impl PriorityModel {
    fn add(&mut self, k: u8, p: i32) {
        if self.shut_down {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        let e = self.queued.entry(k).or_insert((p, seq));
        e.0 = e.0.max(p);
    }
    fn ready(&self) -> impl Iterator<Item = (&u8, &(i32, u64))> {
        self.queued
            .iter()
            .filter(|(k, _)| !self.processing.contains(*k))
    }
    fn get(&mut self) -> Option<(u8, i32)> {
        let (&k, &(p, _)) = self
            .ready()
            .max_by_key(|(_, (p, seq))| (*p, std::cmp::Reverse(*seq)))?;
        self.queued.remove(&k);
        self.processing.insert(k);
        Some((k, p))
    }
}

#[derive(Clone, Debug)]
enum PrioOp {
    Add(u8, i32),
    Get,
    Done(u8),
    ShutDown,
}

fn prio_op() -> impl Strategy<Value = PrioOp> {
    prop_oneof![
        6 => (0u8..8, prop_oneof![Just(LOW_PRIORITY), Just(0), Just(10)]).prop_map(|(k, p)| PrioOp::Add(k, p)),
        4 => Just(PrioOp::Get),
        3 => (0u8..8).prop_map(PrioOp::Done),
        1 => Just(PrioOp::ShutDown),
    ]
}

/// The priority queue with delays: each queued item has a priority, an order number, and a
/// ready time (`None`: ready). `heap` numbers the delayed entries in push order (ties of equal
/// times become ready in that order).
/// A queued item of the model: priority, order number, and (ready time, heap number) if delayed.
type ModelEntry = (i32, u64, Option<(u64, u64)>);

#[derive(Default, Debug)]
struct DelayedPriorityModel {
    queued: HashMap<u8, ModelEntry>,
    processing: HashSet<u8>,
    seq: u64,
    heap: u64,
    now: u64,
    shut_down: bool,
}

impl DelayedPriorityModel {
    fn next(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
    fn delayed(&mut self, ms: u64) -> Option<(u64, u64)> {
        (ms > 0).then(|| {
            self.heap += 1;
            (self.now + ms, self.heap)
        })
    }
    fn add(&mut self, k: u8, p: i32, ms: u64) {
        if self.shut_down {
            return;
        }
        let Some(&(old_p, old_seq, old_at)) = self.queued.get(&k) else {
            let at = self.delayed(ms);
            let seq = self.next();
            self.queued.insert(k, (p, seq, at));
            return;
        };
        let p = p.max(old_p);
        let entry = match (old_at, ms) {
            (None, _) => (p, old_seq, None),
            (Some(_), 0) => (p, self.next(), None),
            (Some((at, _)), ms) if self.now + ms < at => (p, old_seq, self.delayed(ms)),
            (Some(old), _) => (p, old_seq, Some(old)),
        };
        self.queued.insert(k, entry);
    }
    fn advance(&mut self, ms: u64) {
        self.now += ms;
        let mut due: Vec<((u64, u64), u8)> = self
            .queued
            .iter()
            .filter_map(|(k, (_, _, at))| at.filter(|(t, _)| *t <= self.now).map(|at| (at, *k)))
            .collect();
        due.sort();
        for (_, k) in due {
            let seq = self.next();
            let e = self.queued.get_mut(&k).unwrap();
            e.1 = seq;
            e.2 = None;
        }
    }
    fn get(&mut self) -> Option<(u8, i32)> {
        let (&k, &(p, _, _)) = self
            .queued
            .iter()
            .filter(|(k, (_, _, at))| at.is_none() && !self.processing.contains(*k))
            .max_by_key(|(_, (p, seq, _))| (*p, std::cmp::Reverse(*seq)))?;
        self.queued.remove(&k);
        self.processing.insert(k);
        Some((k, p))
    }
    fn len(&self) -> usize {
        self.queued
            .iter()
            .filter(|(k, (_, _, at))| at.is_none() && !self.processing.contains(*k))
            .count()
    }
    fn shut_down(&mut self) {
        self.shut_down = true;
        self.queued.retain(|_, (_, _, at)| at.is_none());
    }
}

#[derive(Clone, Debug)]
enum DelayedPrioOp {
    Add(u8, i32, u64),
    Advance(u64),
    Get,
    Done(u8),
    ShutDown,
}

fn delayed_prio_op() -> impl Strategy<Value = DelayedPrioOp> {
    let prio = prop_oneof![Just(LOW_PRIORITY), Just(0), Just(10)];
    let ms = prop_oneof![Just(0u64), 1u64..20];
    prop_oneof![
        8 => (0u8..6, prio, ms).prop_map(|(k, p, ms)| DelayedPrioOp::Add(k, p, ms)),
        3 => (0u64..15).prop_map(DelayedPrioOp::Advance),
        4 => Just(DelayedPrioOp::Get),
        3 => (0u8..6).prop_map(DelayedPrioOp::Done),
        1 => Just(DelayedPrioOp::ShutDown),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn priority_queue_with_delays_follows_the_model(
        ops in proptest::collection::vec(delayed_prio_op(), 1..80),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let q = priority_queue::<u8>(QueueConfig::default());
            let mut model = DelayedPriorityModel::default();
            for op in ops {
                match op {
                    DelayedPrioOp::Add(k, p, ms) => {
                        q.add_with_opts(prio_after(p, Duration::from_millis(ms)), k);
                        model.add(k, p, ms);
                    }
                    DelayedPrioOp::Advance(ms) => {
                        tokio::time::advance(Duration::from_millis(ms)).await;
                        model.advance(ms);
                    }
                    DelayedPrioOp::Get => prop_assert_eq!(q.try_get_with_priority(), model.get()),
                    DelayedPrioOp::Done(k) => {
                        q.done(&k);
                        model.processing.remove(&k);
                    }
                    DelayedPrioOp::ShutDown => {
                        q.shut_down();
                        model.shut_down();
                    }
                }
                prop_assert_eq!(q.len(), model.len());
                prop_assert_eq!(q.num_processing(), model.processing.len());
            }
            Ok(())
        })?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn plain_queue_with_delays_follows_the_model(ops in proptest::collection::vec(delay_op(), 1..80)) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let q = plain::<u8>();
            let mut model = DelayModel::default();
            for op in ops {
                match op {
                    DelayOp::Add(k) => { q.add(k); model.queue.add(k); }
                    DelayOp::AddAfter(k, ms) => {
                        q.add_after(k, Duration::from_millis(ms));
                        model.add_after(k, ms);
                    }
                    DelayOp::Advance(ms) => {
                        tokio::time::advance(Duration::from_millis(ms)).await;
                        model.advance(ms);
                    }
                    DelayOp::Get => prop_assert_eq!(q.try_get(), model.queue.get()),
                    DelayOp::Done(k) => { q.done(&k); model.queue.done(k); }
                    DelayOp::ShutDown => {
                        q.shut_down();
                        model.queue.shut_down = true;
                        model.waiting.clear();
                    }
                }
                prop_assert_eq!(q.len(), model.queue.queue.len());
                prop_assert_eq!(q.num_processing(), model.queue.processing.len());
            }
            Ok(())
        })?;
    }

    #[test]
    fn priority_queue_follows_the_model(ops in proptest::collection::vec(prio_op(), 1..80)) {
        let q = priority_queue::<u8>(QueueConfig::default());
        let mut model = PriorityModel::default();
        for op in ops {
            match op {
                PrioOp::Add(k, p) => { q.add_with_opts(prio(p), k); model.add(k, p); }
                PrioOp::Get => prop_assert_eq!(q.try_get_with_priority(), model.get()),
                PrioOp::Done(k) => { q.done(&k); model.processing.remove(&k); }
                PrioOp::ShutDown => { q.shut_down(); model.shut_down = true; }
            }
            prop_assert_eq!(q.len(), model.ready().count());
            prop_assert_eq!(q.num_processing(), model.processing.len());
        }
    }

    #[test]
    fn plain_queue_follows_the_model(ops in proptest::collection::vec(op(), 1..80)) {
        let q = plain::<u8>();
        let mut model = Model::default();
        for op in ops {
            match op {
                Op::Add(k) => { q.add(k); model.add(k); }
                Op::Get => prop_assert_eq!(q.try_get(), model.get()),
                Op::Done(k) => { q.done(&k); model.done(k); }
                Op::ShutDown => { q.shut_down(); model.shut_down = true; }
            }
            prop_assert_eq!(q.len(), model.queue.len());
            prop_assert_eq!(q.num_processing(), model.processing.len());
            prop_assert_eq!(q.is_shutting_down(), model.shut_down);
        }
    }
}

/// `add_all` is the adds one by one under one lock: the same order, deduplication, priorities
/// and delays; and its one wakeup reaches every waiting getter.
#[tokio::test(start_paused = true)]
async fn add_all_is_the_same_as_each_add_and_wakes_every_getter() {
    let batch = || {
        vec![
            (AddOpts::default(), "a"),
            (AddOpts::default().priority(LOW_PRIORITY), "b"),
            (AddOpts::default(), "a"),
            (AddOpts::default().priority(5), "c"),
            (AddOpts::default().after(Duration::from_secs(1)), "d"),
            (AddOpts::default(), "e"),
        ]
    };
    for ((name, one), (_, all)) in all_queues::<&str>(QueueConfig::default)
        .into_iter()
        .zip(all_queues::<&str>(QueueConfig::default))
    {
        for (opts, item) in batch() {
            one.add_with_opts(opts, item);
        }
        all.add_all(batch());
        assert_eq!(one.len(), all.len(), "{name}");
        let mut got = (Vec::new(), Vec::new());
        for _ in 0..5 {
            got.0.push(one.get_with_priority().await.unwrap());
            got.1.push(all.get_with_priority().await.unwrap());
        }
        assert_eq!(got.0, got.1, "{name}");
        assert_eq!(
            got.1.len(),
            5,
            "{name}: four ready, the delayed one after its second"
        );
    }

    // Four getters wait on an empty queue; one batch of four wakes them all.
    let q = plain::<u32>();
    let getters: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        })
        .collect();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    q.add_all((0..4).map(|i| (AddOpts::default(), i)).collect());
    let mut got = Vec::new();
    for g in getters {
        got.push(
            tokio::time::timeout(Duration::from_secs(5), g)
                .await
                .expect("every waiting getter woken")
                .unwrap()
                .unwrap(),
        );
    }
    got.sort();
    assert_eq!(got, [0, 1, 2, 3]);
}
