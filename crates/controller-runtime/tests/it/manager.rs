//! The Manager against the embedded API server: group order, /metrics, /readyz, graceful
//! shutdown, failing runnables and leader election with three managers.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;
use support::{client_for, server};

use controller_runtime::controller::{Controller, ControllerOptions};
use controller_runtime::event::GenericEvent;
use controller_runtime::handler::EnqueueRequestForObject;
use controller_runtime::leaderelection::LeaderElectionConfig;
use controller_runtime::manager::{
    BindAddress, Error, Manager, ManagerOptions, Runnable, RunnableGroup, from_fn,
};
use controller_runtime::reconcile::{self, Action};
use controller_runtime::source::{self, Kind};
use controller_runtime::{BoxError, Request};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, PostParams};
use kube_client::core::ObjectMeta;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Options without HTTP servers (tests that want them set port 0; never 8080).
fn quiet() -> ManagerOptions {
    ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled)
}

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

async fn create_cm(client: &kube_client::Client, name: &str) {
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm(name))
        .await
        .unwrap();
}

/// Waits (at most 20 s, polling) until `cond` holds; panics with `what` otherwise.
async fn eventually(what: &str, mut cond: impl AsyncFnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A plain HTTP/1.1 GET: (status, body).
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let (status, _, body) = get_with_head(addr, path).await;
    (status, body)
}

/// A plain HTTP/1.1 GET: (status, head, body).
async fn get_with_head(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a full response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_lowercase(), body.to_string())
}

/// Runs `mgr.start(ctx)` in a task.
fn spawn_start(
    mgr: &Manager,
    ctx: &CancellationToken,
) -> tokio::task::JoinHandle<Result<(), Error>> {
    let (mgr, ctx) = (mgr.clone(), ctx.clone());
    tokio::spawn(async move { mgr.start(ctx).await })
}

/// Waits at most 10 s for a started manager to return.
async fn join(handle: tokio::task::JoinHandle<Result<(), Error>>) -> Result<(), Error> {
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .expect("the manager returns")
        .expect("no panic")
}

type Log = Arc<Mutex<Vec<String>>>;

/// A runnable in `group` that logs `start NAME` when started (synchronously, so the log keeps
/// the manager's start order) and `stop NAME` once cancelled.
fn recording(log: &Log, name: &'static str, group: RunnableGroup) -> impl Runnable {
    let log = log.clone();
    from_fn(name, group, move |ctx: CancellationToken| {
        log.lock().push(format!("start {name}"));
        let log = log.clone();
        async move {
            ctx.cancelled().await;
            log.lock().push(format!("stop {name}"));
            Ok(())
        }
    })
}

/// A leader-election runnable that also logs its warm-up.
struct WarmingUp(Log);

impl Runnable for WarmingUp {
    fn name(&self) -> String {
        "leader".into()
    }
    fn start(&self, ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        self.0.lock().push("start leader".into());
        let log = self.0.clone();
        Box::pin(async move {
            ctx.cancelled().await;
            log.lock().push("stop leader".into());
            Ok(())
        })
    }
    fn warm_up(&self, _ctx: CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> {
        self.0.lock().push("warm-up leader".into());
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn groups_start_in_order_and_stop_in_reverse() {
    let (_server, client) = server().await;
    create_cm(&client, "existing").await;
    let mgr = Manager::new(client, quiet()).unwrap();
    // An informer the Caches group must sync before Others start.
    let informer = mgr.cache().get_informer::<ConfigMap>().await.unwrap();
    let log: Log = Arc::default();

    mgr.add(WarmingUp(log.clone())).unwrap();
    mgr.add(recording(&log, "other", RunnableGroup::Others))
        .unwrap();
    mgr.add(recording(&log, "cache", RunnableGroup::Caches))
        .unwrap();
    mgr.add(recording(&log, "webhook", RunnableGroup::Webhooks))
        .unwrap();
    mgr.add(recording(&log, "http", RunnableGroup::HttpServers))
        .unwrap();
    let synced_before_others = Arc::new(AtomicBool::new(false));
    mgr.add(from_fn("sync-probe", RunnableGroup::Others, {
        let (informer, seen) = (informer.clone(), synced_before_others.clone());
        move |_ctx| {
            seen.store(informer.has_synced(), Ordering::SeqCst);
            async { Ok(()) }
        }
    }))
    .unwrap();
    assert!(!mgr.is_leader(), "not leader before start");

    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    tokio::time::timeout(Duration::from_secs(10), mgr.elected())
        .await
        .expect("elected without leader election");
    assert!(mgr.is_leader());
    assert!(synced_before_others.load(Ordering::SeqCst));

    // A runnable added to a running group starts at once.
    mgr.add(recording(&log, "late", RunnableGroup::Others))
        .unwrap();
    eventually("the late runnable starts", async || {
        log.lock().contains(&"start late".to_string())
    })
    .await;
    assert!(matches!(
        mgr.start(CancellationToken::new()).await,
        Err(Error::AlreadyStarted)
    ));

    ctx.cancel();
    join(running).await.unwrap();
    let log = log.lock().clone();
    assert_eq!(
        log,
        [
            "start http",
            "start webhook",
            "start cache",
            "start other",
            "warm-up leader",
            "start leader",
            "start late",
            "stop leader",
            // One group's runnables stop in any order.
            if log[8] == "stop other" {
                "stop other"
            } else {
                "stop late"
            },
            if log[8] == "stop other" {
                "stop late"
            } else {
                "stop other"
            },
            "stop cache",
            "stop webhook",
            "stop http",
        ]
    );
    assert!(matches!(
        mgr.add(recording(&Log::default(), "x", RunnableGroup::Others)),
        Err(Error::Stopping)
    ));
}

#[tokio::test]
async fn controller_names_are_unique() {
    let (_server, client) = server().await;
    let mgr = Manager::new(client, quiet()).unwrap();
    mgr.register_controller_name("a").unwrap();
    mgr.register_controller_name("b").unwrap();
    assert!(matches!(
        mgr.register_controller_name("a"),
        Err(Error::DuplicateControllerName(name)) if name == "a"
    ));
}

#[tokio::test]
async fn metrics_are_served_with_controller_runtime_names() {
    let (_server, client) = server().await;
    let options =
        ManagerOptions::default().with_metrics_bind_address("127.0.0.1:0".parse().unwrap());
    let mgr = Manager::new(client.clone(), options).unwrap();
    let reconciled = Arc::new(AtomicUsize::new(0));
    let reconciler = reconcile::from_fn({
        let reconciled = reconciled.clone();
        move |_req: Request, _ctx| {
            let reconciled = reconciled.clone();
            async move {
                reconciled.fetch_add(1, Ordering::SeqCst);
                Ok(Action::done())
            }
        }
    });
    let controller = Controller::new(
        "configmaps",
        reconciler,
        ControllerOptions::default().with_metrics(mgr.metrics().clone()),
    )
    .unwrap();
    controller
        .watch(
            Kind::<ConfigMap>::new(mgr.cache().clone()),
            EnqueueRequestForObject,
            vec![],
        )
        .await
        .unwrap();
    mgr.add(controller).unwrap();

    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    create_cm(&client, "one").await;
    eventually("a reconcile", async || {
        reconciled.load(Ordering::SeqCst) > 0
    })
    .await;
    let addr = mgr.metrics_addr().expect("bound once started");
    // The worker counts the result just after the reconcile returns.
    let success_counted = |body: &str| {
        body.lines().any(|l| {
            l.starts_with("controller_runtime_reconcile_total{")
                && l.contains("controller=\"configmaps\"")
                && l.contains("result=\"success\"")
                && !l.ends_with(" 0")
        })
    };
    eventually("the reconcile is counted", async || {
        success_counted(&get(addr, "/metrics").await.1)
    })
    .await;
    let (status, head, body) = get_with_head(addr, "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    for family in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "controller_runtime_max_concurrent_reconciles",
        "controller_runtime_active_workers",
        "workqueue_depth",
        "workqueue_adds_total",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_work_duration_seconds_bucket",
    ] {
        assert!(
            body.lines()
                .any(|l| l.starts_with(family) && l.contains("controller=\"configmaps\"")),
            "no {family} for the controller in:\n{body}"
        );
    }
    assert!(body.ends_with("# EOF\n"));
    assert_eq!(get(addr, "/other").await.0, 404);

    ctx.cancel();
    join(running).await.unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "the metrics server stopped"
    );
}

#[tokio::test]
async fn readyz_fails_until_the_caches_sync() {
    let (server, client) = server().await;
    let options = ManagerOptions::default()
        .with_metrics_bind_address(BindAddress::Disabled)
        .with_health_probe_bind_address("127.0.0.1:0".parse().unwrap());
    let mgr = Manager::new(client, options).unwrap();
    mgr.add_healthz_check("always", Arc::new(|| Ok(())));
    // An informer whose lists fail until the faults are cleared: the cache cannot sync.
    let informer = mgr.cache().get_informer::<ConfigMap>().await.unwrap();
    server.faults().fail_next(u32::MAX, 500);

    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    eventually("the probe server is bound", async || {
        mgr.health_probe_addr().is_some()
    })
    .await;
    let addr = mgr.health_probe_addr().unwrap();
    let (status, body) = get(addr, "/readyz").await;
    assert!(!informer.has_synced());
    assert_eq!(status, 500, "{body}");
    assert!(
        body.contains("[-]cache-sync failed: reason withheld"),
        "{body}"
    );
    let (status, body) = get(addr, "/readyz/cache-sync").await;
    assert_eq!(status, 500);
    assert!(body.contains("not synced"), "{body}");
    assert_eq!(get(addr, "/healthz").await, (200, "ok".into()));
    assert_eq!(
        get(addr, "/healthz?verbose").await,
        (200, "[+]always ok\nhealthz check passed\n".into())
    );

    server.faults().fail_next(0, 500);
    eventually("readyz turns 200", async || {
        get(addr, "/readyz").await == (200, "ok".into())
    })
    .await;
    assert!(informer.has_synced());
    assert_eq!(get(addr, "/readyz/cache-sync").await, (200, "ok".into()));

    ctx.cancel();
    join(running).await.unwrap();
}

/// A controller on a channel source whose reconciler is given as `f`.
async fn channel_controller<F, Fut>(
    mgr: &Manager,
    f: F,
) -> tokio::sync::mpsc::Sender<GenericEvent<ConfigMap>>
where
    F: Fn(Request, reconcile::ReconcileContext) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<Action, reconcile::ReconcileError>> + Send + 'static,
{
    let controller = Controller::new(
        "channel",
        reconcile::from_fn(f),
        ControllerOptions::default(),
    )
    .unwrap();
    let (tx, channel) = source::channel::<ConfigMap>(8);
    controller
        .watch(channel, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    mgr.add(controller).unwrap();
    tx
}

#[tokio::test]
async fn a_running_reconcile_finishes_before_start_returns() {
    let (_server, client) = server().await;
    let mgr = Manager::new(client, quiet()).unwrap();
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let finished = Arc::new(AtomicBool::new(false));
    let tx = channel_controller(&mgr, {
        let (started, release, finished) = (started.clone(), release.clone(), finished.clone());
        move |_req, _ctx| {
            let (started, release, finished) = (started.clone(), release.clone(), finished.clone());
            async move {
                started.notify_one();
                release.notified().await;
                finished.store(true, Ordering::SeqCst);
                Ok(Action::done())
            }
        }
    })
    .await;

    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    tx.send(GenericEvent {
        object: Arc::new(cm("work")),
    })
    .await
    .unwrap();
    started.notified().await;
    ctx.cancel();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!running.is_finished(), "start waits for the reconcile");
    release.notify_one();
    join(running).await.unwrap();
    assert!(finished.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_reconcile_ignoring_cancellation_is_abandoned_after_the_timeout() {
    let (_server, client) = server().await;
    let options = quiet().with_graceful_shutdown_timeout(Duration::from_millis(200));
    let mgr = Manager::new(client, options).unwrap();
    let started = Arc::new(Notify::new());
    let tx = channel_controller(&mgr, {
        let started = started.clone();
        move |_req, _ctx| {
            let started = started.clone();
            async move {
                started.notify_one();
                std::future::pending::<()>().await;
                Ok(Action::done())
            }
        }
    })
    .await;
    let log: Log = Arc::default();
    mgr.add(recording(&log, "http", RunnableGroup::HttpServers))
        .unwrap();

    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    tx.send(GenericEvent {
        object: Arc::new(cm("stuck")),
    })
    .await
    .unwrap();
    started.notified().await;
    ctx.cancel();
    match join(running).await {
        Err(Error::ShutdownTimeout(timeout)) => {
            assert_eq!(timeout, Duration::from_millis(200))
        }
        other => panic!("expected a shutdown timeout, got {other:?}"),
    }
    // The groups behind the stuck one were still cancelled.
    eventually("the http runnable is cancelled", async || {
        log.lock().contains(&"stop http".to_string())
    })
    .await;
}

#[tokio::test]
async fn a_failing_runnable_stops_the_manager() {
    let (_server, client) = server().await;
    let mgr = Manager::new(client, quiet()).unwrap();
    let log: Log = Arc::default();
    mgr.add(recording(&log, "leader", RunnableGroup::LeaderElection))
        .unwrap();
    mgr.add(from_fn("broken", RunnableGroup::Others, |_ctx| async {
        Err::<(), BoxError>("boom".into())
    }))
    .unwrap();
    // Never cancelled: the failure alone stops the manager.
    let running = spawn_start(&mgr, &CancellationToken::new());
    match join(running).await {
        Err(Error::Runnable { name, source }) => {
            assert_eq!(name, "broken");
            assert_eq!(source.to_string(), "boom");
        }
        other => panic!("expected the runnable's error, got {other:?}"),
    }
    let log = log.lock();
    if log.contains(&"start leader".to_string()) {
        assert!(log.contains(&"stop leader".to_string()), "{log:?}");
    }
}

#[tokio::test]
async fn bind_errors_fail_start() {
    let (_server, client) = server().await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let free_addr = free.local_addr().unwrap();
    drop(free);
    let options = ManagerOptions::default()
        .with_metrics_bind_address(free_addr.into())
        .with_health_probe_bind_address(taken.local_addr().unwrap().into());
    let mgr = Manager::new(client, options).unwrap();
    let result = mgr.start(CancellationToken::new()).await;
    match result {
        Err(Error::Bind { addr, .. }) => assert_eq!(addr, taken.local_addr().unwrap()),
        other => panic!("expected a bind error, got {other:?}"),
    }
    // The metrics server bound first was let go.
    assert!(std::net::TcpListener::bind(free_addr).is_ok());
}

/// One of three managers competing for a lease, with a controller that records who ran each
/// reconcile and whether that manager led at the time.
struct Candidate {
    mgr: Manager,
    queue: Arc<dyn controller_runtime::workqueue::Queue<Request>>,
    ctx: CancellationToken,
    running: tokio::task::JoinHandle<Result<(), Error>>,
}

#[tokio::test]
async fn three_managers_elect_one_leader_at_a_time() {
    let (server, client) = server().await;
    // (manager, was it leader) per reconcile.
    let reconciles: Arc<Mutex<Vec<(usize, bool)>>> = Arc::default();
    let mut candidates = Vec::new();
    for i in 0..3 {
        let options = quiet().with_leader_election(
            LeaderElectionConfig::default()
                .with_lease_name("three-managers")
                .with_identity(format!("manager-{i}"))
                .with_lease_duration(Duration::from_secs(2))
                .with_renew_deadline(Duration::from_millis(1500))
                .with_retry_period(Duration::from_millis(200)),
        );
        let mgr = Manager::new(client_for(&server).await, options).unwrap();
        let reconciler = reconcile::from_fn({
            let (mgr, reconciles) = (mgr.clone(), reconciles.clone());
            move |_req: Request, _ctx| {
                reconciles.lock().push((i, mgr.is_leader()));
                async { Ok(Action::done()) }
            }
        });
        let controller = Controller::new(
            "configmaps",
            reconciler,
            ControllerOptions::default()
                // Non-leaders fill their queues too: only workers wait for leadership.
                .with_enable_warm_up(true),
        )
        .unwrap();
        controller
            .watch(
                Kind::<ConfigMap>::new(mgr.cache().clone()),
                EnqueueRequestForObject,
                vec![],
            )
            .await
            .unwrap();
        let queue = controller.queue().clone();
        mgr.add(controller).unwrap();
        let ctx = CancellationToken::new();
        let running = spawn_start(&mgr, &ctx);
        candidates.push(Candidate {
            mgr,
            queue,
            ctx,
            running,
        });
    }

    // Sample every manager's view throughout: never two leaders.
    let managers: Vec<Manager> = candidates.iter().map(|c| c.mgr.clone()).collect();
    let sampling = CancellationToken::new();
    let sampler = tokio::spawn({
        let (managers, sampling) = (managers.clone(), sampling.clone());
        async move {
            let mut samples = 0usize;
            while !sampling.is_cancelled() {
                let leaders = managers.iter().filter(|m| m.is_leader()).count();
                assert!(leaders <= 1, "{leaders} leaders at once");
                samples += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            samples
        }
    });
    let leader = async || -> Option<usize> { managers.iter().position(|m| m.is_leader()) };

    eventually("a leader is elected", async || leader().await.is_some()).await;
    let first = leader().await.unwrap();
    create_cm(&client, "before-failover").await;
    eventually("the leader reconciles", async || {
        reconciles.lock().iter().any(|(i, _)| *i == first)
    })
    .await;

    // Warm-up: the others' sources run and fill their queues, but no worker takes a key.
    for (i, c) in candidates.iter().enumerate() {
        if i != first {
            let queue = c.queue.clone();
            eventually("a non-leader's queue fills", async || !queue.is_empty()).await;
        }
    }

    // Stop the leader: another takes over once the lease expires.
    let stopped_at = tokio::time::Instant::now();
    let old = candidates.remove(first);
    old.ctx.cancel();
    join(old.running).await.unwrap();
    assert!(!old.mgr.is_leader());
    eventually("a new leader", async || {
        leader().await.is_some_and(|l| l != first)
    })
    .await;
    let takeover = stopped_at.elapsed();
    eprintln!("a new leader after {takeover:?}");
    // lease_duration + retry_period = 2.2 s; generous slack for a loaded machine.
    assert!(
        takeover <= Duration::from_millis(3 * 2200),
        "took {takeover:?} to elect a new leader"
    );
    let second = leader().await.unwrap();
    // Its warmed-up queue drains without waiting for a new event.
    let second_queue = candidates
        .iter()
        .find(|c| c.mgr.is_leader())
        .unwrap()
        .queue
        .clone();
    eventually("the new leader drains its queue", async || {
        second_queue.is_empty()
    })
    .await;
    create_cm(&client, "after-failover").await;
    eventually("the new leader reconciles", async || {
        reconciles.lock().iter().any(|(i, _)| *i == second)
    })
    .await;

    sampling.cancel();
    let samples = sampler.await.expect("never two leaders");
    assert!(samples > 10);
    for c in candidates {
        c.ctx.cancel();
        join(c.running).await.unwrap();
    }
    let reconciles = reconciles.lock();
    assert!(
        reconciles.iter().all(|(_, leader)| *leader),
        "a reconcile ran on a non-leader: {reconciles:?}"
    );
    assert!(
        reconciles.iter().all(|(i, _)| *i == first || *i == second),
        "only the two leaders reconciled: {reconciles:?}"
    );
}

#[tokio::test]
async fn the_leader_gauge_follows_leadership() {
    let (_server, client) = server().await;
    let options = ManagerOptions::default()
        .with_metrics_bind_address("127.0.0.1:0".parse().unwrap())
        .with_leader_election(
            LeaderElectionConfig::default()
                .with_lease_name("gauge")
                .with_lease_duration(Duration::from_secs(2))
                .with_renew_deadline(Duration::from_millis(1500))
                .with_retry_period(Duration::from_millis(200))
                .with_release_on_cancel(true),
        );
    let mgr = Manager::new(client, options).unwrap();
    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    tokio::time::timeout(Duration::from_secs(10), mgr.elected())
        .await
        .expect("the only candidate is elected");
    let (_, body) = get(mgr.metrics_addr().unwrap(), "/metrics").await;
    assert!(
        body.contains("leader_election_master_status{name=\"gauge\"} 1"),
        "{body}"
    );
    ctx.cancel();
    join(running).await.unwrap();
    assert!(!mgr.is_leader());
}

#[tokio::test]
async fn from_a_kubeconfig_file() {
    let (server, client) = server().await;
    let path = std::env::temp_dir().join(format!("manager-test-{}.yaml", std::process::id()));
    server.write_kubeconfig(&path).unwrap();
    let mgr = Manager::from_kubeconfig_file(&path, quiet()).await.unwrap();
    std::fs::remove_file(&path).unwrap();
    create_cm(&client, "seen").await;
    let cms = mgr.cache().get_informer::<ConfigMap>().await.unwrap();
    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    mgr.elected().await;
    assert!(cms.has_synced(), "started after the cache synced");
    assert_eq!(cms.store().list(None).len(), 1);
    ctx.cancel();
    join(running).await.unwrap();

    let missing = Manager::from_kubeconfig_file("/nonexistent/kubeconfig", quiet()).await;
    assert!(
        matches!(&missing, Err(Error::Kubeconfig(msg)) if msg.contains("/nonexistent/kubeconfig")),
        "{:?}",
        missing.err()
    );
}

#[tokio::test]
async fn losing_the_lease_stops_the_manager_with_an_error() {
    let (server, client) = server().await;
    let options = quiet().with_leader_election(
        LeaderElectionConfig::default()
            .with_lease_name("lost")
            .with_lease_duration(Duration::from_secs(2))
            .with_renew_deadline(Duration::from_millis(1500))
            .with_retry_period(Duration::from_millis(200)),
    );
    let mgr = Manager::new(client, options).unwrap();
    let log: Log = Arc::default();
    mgr.add(recording(&log, "leader", RunnableGroup::LeaderElection))
        .unwrap();
    let running = spawn_start(&mgr, &CancellationToken::new());
    tokio::time::timeout(Duration::from_secs(10), mgr.elected())
        .await
        .expect("the only candidate is elected");
    assert!(mgr.is_leader());

    // Every renewal fails from now on: after renew_deadline the lease is lost.
    server.faults().fail_next(u32::MAX, 500);
    let result = join(running).await;
    server.faults().fail_next(0, 500);
    assert!(
        matches!(result, Err(Error::LeaderElectionLost)),
        "{result:?}"
    );
    assert!(!mgr.is_leader());
    // Cancelled without being waited for (someone else may lead already).
    eventually("the leader runnable is cancelled", async || {
        *log.lock() == ["start leader", "stop leader"]
    })
    .await;
}

#[tokio::test]
async fn the_signal_handler_cancels_on_sigterm() {
    let token = controller_runtime::manager::signal_handler();
    assert!(!token.is_cancelled());
    // Only one signal: a second would exit the test process.
    let status = std::process::Command::new("kill")
        .args(["-TERM", &std::process::id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    tokio::time::timeout(Duration::from_secs(10), token.cancelled())
        .await
        .expect("cancelled by SIGTERM");
    assert!(
        controller_runtime::manager::signal_handler().is_cancelled(),
        "one handler per process: later calls return the same token"
    );
}

#[tokio::test]
async fn event_recorders_are_shared_per_name() {
    use controller_runtime::recorder::EventRecord;
    use k8s_openapi::api::events::v1::Event;

    let (_server, client) = server().await;
    let mgr = Manager::new(client.clone(), quiet()).unwrap();
    let mut target = cm("recorded");
    target.metadata.uid = Some("1234".into());
    let record = EventRecord::normal("Synced", "Reconcile").note("all good");
    // Two handles for one name share their recent events: the repetition folds into a series.
    mgr.event_recorder_for("configmap-controller")
        .publish_for(&record, &target)
        .await
        .unwrap();
    mgr.event_recorder_for("configmap-controller")
        .publish_for(&record, &target)
        .await
        .unwrap();
    // Another name reports as another controller: its own Event.
    mgr.event_recorder_for("other-controller")
        .publish_for(&record, &target)
        .await
        .unwrap();

    let events = Api::<Event>::namespaced(client, "default")
        .list(&Default::default())
        .await
        .unwrap()
        .items;
    let mut seen: Vec<(String, i32)> = events
        .iter()
        .map(|e| {
            (
                e.reporting_controller.clone().unwrap_or_default(),
                e.series.as_ref().map_or(1, |s| s.count),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("configmap-controller".to_string(), 2),
            ("other-controller".to_string(), 1)
        ]
    );
}
