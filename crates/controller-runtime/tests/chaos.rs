//! Chaos: a Manager+Builder controller over 10,000 ConfigMaps (2,000 in debug builds) while
//! writers keep changing them and the embedded API server, every 100 ms, throws a random fault
//! (`crt_apiserver::faults::Chaos`): it closes every watch, compacts its history (410 on
//! resume), fails the next requests with 429 (Retry-After), 500 or 503, or restarts its
//! listener. After each round's faults stop, every object's last resourceVersion is reconciled;
//! no key is ever reconciled by two workers at once; the runtime's task count and the live heap
//! do not grow round over round. Then three managers with leader election under the same
//! faults: never two leaders at once, and a leader again once the faults stop.
//!
//! Every bound is generous (tens of seconds): the assertions are about correctness, not speed.

#[path = "it/support/mod.rs"]
mod support;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cap::Cap;
use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::controller::ControllerOptions;
use controller_runtime::leaderelection::LeaderElectionConfig;
use controller_runtime::manager::from_fn;
use controller_runtime::manager::{BindAddress, Error, Manager, ManagerOptions, RunnableGroup};
use controller_runtime::reconcile::Action;
use crt_apiserver::faults::Chaos;
use crt_apiserver::storage::StorageConfig;
use crt_apiserver::storage::WriteOptions;
use crt_apiserver::{Config, Server};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, Patch, PatchParams};
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use support::client_for;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOCATOR: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

/// The two tests take turns: the live heap is the process's, so a test running beside the
/// other would count the other's allocations as its own growth, and both load the same cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The objects the controller watches: the 10,000 in optimized builds, fewer in debug
/// builds (a debug build decodes every relist several times slower).
const OBJECTS: usize = if cfg!(debug_assertions) {
    2_000
} else {
    10_000
};
const WRITERS: usize = 4;
/// Rounds of faults; the first warms up (connections, the server's watch window filling), the
/// later ones must hold no more tasks or heap than the second.
const ROUNDS: usize = 4;
/// Faults thrown per round, one every 100 ms.
const FAULTS_PER_ROUND: usize = 20;
const FAULT_INTERVAL: Duration = Duration::from_millis(100);
/// How long after the faults stop every object must be reconciled at its last version: the
/// informer may be in its reconnect backoff (800 ms doubling) when the faults stop.
const CONVERGENCE: Duration = Duration::from_secs(45);

/// A server whose watch window (1,000 events) the first round's writes fill: later rounds
/// must not find it, or anything else, bigger.
async fn server() -> (Server, kube_client::Client) {
    let config = Config {
        storage: StorageConfig {
            watch_window: 1_000,
            ..StorageConfig::default()
        },
        ..Config::default()
    };
    let server = Server::start(config).await.expect("server starts");
    let client = client_for(&server).await;
    (server, client)
}

fn quiet() -> ManagerOptions {
    ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled)
}

/// Throws a random fault every [`FAULT_INTERVAL`], `n` of them.
async fn throw_faults(
    server: &Server,
    chaos: &mut Chaos,
    n: usize,
    thrown: &mut HashMap<String, usize>,
) {
    for _ in 0..n {
        let fault = chaos.next_fault();
        let kind = format!("{fault:?}");
        let kind = kind
            .split([' ', '{'])
            .next()
            .unwrap_or_default()
            .to_string();
        *thrown.entry(kind).or_default() += 1;
        server.inject(&fault).await.expect("the fault is thrown");
        tokio::time::sleep(FAULT_INTERVAL).await;
    }
    // No failure left pending for the next phase.
    server.faults().fail_next(0, 500);
}

/// Creates the objects directly in the store (fast, and not what is under test).
fn create_objects(server: &Server) {
    let storage = server.storage();
    let res = storage.resolve("", "v1", "configmaps").unwrap();
    for i in 0..OBJECTS {
        let body = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}"), "namespace": "default", "labels": {"chaos": "yes"}},
            "data": {"n": "0"},
        });
        storage
            .create(&res, Some("default"), body, &WriteOptions::default())
            .unwrap();
    }
}

/// The resourceVersion of every object, as the server has it now.
fn server_versions(server: &Server) -> HashMap<String, u64> {
    let storage = server.storage();
    let res = storage.resolve("", "v1", "configmaps").unwrap();
    let list = storage
        .list(&res, Some("default"), &Default::default())
        .unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["metadata"]["labels"]["chaos"] == "yes")
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap().to_string();
            let rv = o["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            (name, rv)
        })
        .collect()
}

/// What the reconciler records.
#[derive(Default)]
struct Record {
    /// Keys being reconciled now.
    in_flight: Mutex<HashSet<String>>,
    /// Keys a second worker took while one was at it (must stay empty).
    overlaps: Mutex<Vec<String>>,
    /// The newest resourceVersion each key was reconciled at.
    reconciled: Mutex<HashMap<String, u64>>,
    reconciles: AtomicUsize,
}

/// Writers changing random objects until `stop`: merge patches of `data.n` from their own
/// clients; the faults fail some of them, which is fine.
fn spawn_writers(
    clients: &[kube_client::Client],
    stop: &CancellationToken,
    seed: u64,
) -> Vec<tokio::task::JoinHandle<usize>> {
    clients
        .iter()
        .enumerate()
        .map(|(w, client)| {
            let api = Api::<ConfigMap>::namespaced(client.clone(), "default");
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed + w as u64);
                let mut ok = 0usize;
                let mut n = 0u64;
                while !stop.is_cancelled() {
                    n += 1;
                    let name = format!("cm-{}", rng.random_range(0..OBJECTS));
                    let patch = serde_json::json!({"data": {"n": format!("{w}-{n}")}});
                    let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
                    let write = api.patch(&name, &params, &patch);
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        r = write => ok += usize::from(r.is_ok()),
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                ok
            })
        })
        .collect()
}

/// Waits until every object's last resourceVersion was reconciled; panics after
/// [`CONVERGENCE`] with the keys still behind.
async fn converge(server: &Server, record: &Record) -> Duration {
    let started = Instant::now();
    let want = server_versions(server);
    assert_eq!(want.len(), OBJECTS);
    loop {
        let behind: Vec<String> = {
            let reconciled = record.reconciled.lock();
            want.iter()
                .filter(|(k, rv)| reconciled.get(*k).is_none_or(|got| got < rv))
                .map(|(k, _)| k.clone())
                .collect()
        };
        if behind.is_empty() {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < CONVERGENCE,
            "{} objects not reconciled at their last version within {CONVERGENCE:?}, e.g. {:?}",
            behind.len(),
            &behind[..behind.len().min(5)]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_converges_under_random_faults() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let test_started = Instant::now();
    let (server, client) = server().await;
    create_objects(&server);

    let record = Arc::new(Record::default());
    let mgr = Manager::new(client, quiet()).unwrap();
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .with_options(ControllerOptions::default().with_max_concurrent_reconciles(4))
        .complete(record.clone(), |cm: Arc<ConfigMap>, ctx| async move {
            let key = cm.metadata.name.clone().unwrap_or_default();
            if !ctx.in_flight.lock().insert(key.clone()) {
                ctx.overlaps.lock().push(key.clone());
            }
            // Let another worker run meanwhile, were it to take the same key.
            tokio::task::yield_now().await;
            let rv: u64 = cm
                .metadata
                .resource_version
                .as_deref()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            {
                let mut reconciled = ctx.reconciled.lock();
                let at = reconciled.entry(key.clone()).or_default();
                *at = (*at).max(rv);
            }
            ctx.reconciles.fetch_add(1, Ordering::Relaxed);
            ctx.in_flight.lock().remove(&key);
            Ok(Action::done())
        })
        .await
        .unwrap();
    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        async move { mgr.start(ctx).await }
    });
    let first_sync = converge(&server, &record).await;
    eprintln!("{OBJECTS} objects reconciled once after {first_sync:?}");

    let mut writer_clients = Vec::new();
    for _ in 0..WRITERS {
        writer_clients.push(client_for(&server).await);
    }
    let mut chaos = Chaos::new(0x5eed);
    let mut thrown = HashMap::new();
    let mut per_round = Vec::new();
    for round in 0..ROUNDS {
        let stop = CancellationToken::new();
        let writers = spawn_writers(&writer_clients, &stop, round as u64 * 100);
        throw_faults(&server, &mut chaos, FAULTS_PER_ROUND, &mut thrown).await;
        stop.cancel();
        let mut writes = 0;
        for w in writers {
            writes += w.await.expect("no writer panics");
        }
        let took = converge(&server, &record).await;
        // Quiet: connections the faults broke are gone, queues drained.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let tasks = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        let heap = ALLOCATOR.allocated();
        eprintln!(
            "round {round}: {writes} writes, converged {took:?} after the faults, \
             {tasks} tasks, live heap {:.1} MB, {} reconciles so far",
            heap as f64 / 1e6,
            record.reconciles.load(Ordering::Relaxed)
        );
        per_round.push((tasks, heap));
        assert!(
            record.overlaps.lock().is_empty(),
            "a key reconciled by two workers at once: {:?}",
            record.overlaps.lock()
        );
    }
    eprintln!("faults thrown: {thrown:?}");
    for kind in ["CloseWatches", "Compact", "FailNext", "RestartListener"] {
        assert!(thrown.contains_key(kind), "no {kind} thrown: {thrown:?}");
    }

    // No growth round over round. Bounded server state (the watch window, the 64 list
    // snapshots kept for continue tokens and exact-version lists) fills during the first round;
    // after it, the last two rounds hold no more tasks than the most of the rounds between (a few
    // connections' worth of slack) and no more live heap (a quarter, and 8 MB, of slack for
    // the allocator's and the caches' churn). A leak grows every round and fails this.
    let warm = &per_round[1..ROUNDS - 2];
    let tasks0 = warm.iter().map(|r| r.0).max().unwrap_or(0);
    let heap0 = warm.iter().map(|r| r.1).max().unwrap_or(0);
    for &(tasks_n, heap_n) in &per_round[ROUNDS - 2..] {
        assert!(tasks_n <= tasks0 + 16, "tasks grew: {per_round:?}");
        assert!(
            heap_n <= heap0 + heap0 / 4 + 8_000_000,
            "live heap grew: {per_round:?}"
        );
    }

    ctx.cancel();
    tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the manager stops")
        .expect("no panic")
        .expect("the manager stops cleanly");
    assert!(record.overlaps.lock().is_empty());
    eprintln!("chaos test (controller) took {:?}", test_started.elapsed());
}

/// One leading interval of one candidate: (identity, start, end or `None` while leading).
type Intervals = Arc<Mutex<Vec<(usize, Instant, Option<Instant>)>>>;

/// A candidate: its manager restarts whenever it loses leadership (as a pod would), until
/// `ctx` is cancelled. Each term is recorded by a leader-election runnable: from its start
/// (elected) to its cancellation (leadership lost or stopping).
fn spawn_candidate(
    i: usize,
    client: kube_client::Client,
    intervals: &Intervals,
    ctx: &CancellationToken,
) -> tokio::task::JoinHandle<usize> {
    let (intervals, ctx) = (intervals.clone(), ctx.clone());
    tokio::spawn(async move {
        let mut lost = 0;
        while !ctx.is_cancelled() {
            let options = quiet().with_leader_election(
                LeaderElectionConfig::default()
                    .with_lease_name("chaos")
                    .with_identity(format!("candidate-{i}"))
                    .with_lease_duration(Duration::from_secs(2))
                    .with_renew_deadline(Duration::from_millis(1500))
                    .with_retry_period(Duration::from_millis(200)),
            );
            let mgr = Manager::new(client.clone(), options).unwrap();
            let log = intervals.clone();
            mgr.add(from_fn(
                "term",
                RunnableGroup::LeaderElection,
                move |stop: CancellationToken| {
                    let log = log.clone();
                    let at = log.lock().len();
                    log.lock().push((i, Instant::now(), None));
                    async move {
                        stop.cancelled().await;
                        log.lock()[at].2 = Some(Instant::now());
                        Ok(())
                    }
                },
            ))
            .unwrap();
            match mgr.start(ctx.clone()).await {
                Ok(()) => {}
                Err(Error::LeaderElectionLost) => lost += 1,
                Err(e) => panic!("candidate {i}: {e}"),
            }
        }
        lost
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_candidates_never_lead_at_once_under_random_faults() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let test_started = Instant::now();
    let (server, _client) = server().await;
    let intervals: Intervals = Arc::default();
    let ctx = CancellationToken::new();
    let mut candidates = Vec::new();
    for i in 0..3 {
        candidates.push(spawn_candidate(
            i,
            client_for(&server).await,
            &intervals,
            &ctx,
        ));
    }
    let leading = || {
        intervals
            .lock()
            .iter()
            .filter(|(_, _, end)| end.is_none())
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while leading() == 0 {
        assert!(Instant::now() < deadline, "no leader elected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let mut chaos = Chaos::new(0xe1ec7);
    let mut thrown = HashMap::new();
    throw_faults(&server, &mut chaos, 2 * FAULTS_PER_ROUND, &mut thrown).await;
    eprintln!("faults thrown: {thrown:?}");

    // After the faults: a leader again, within a few lease durations.
    let deadline = Instant::now() + Duration::from_secs(30);
    while leading() != 1 {
        assert!(Instant::now() < deadline, "no leader after the faults");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // And one leader then keeps leading (renewals go through): within 30 s, some term lasts
    // 3 s. A term may still end just after the faults (a renewal that missed its deadline on
    // loaded cores is a lost lease, not a bug); safety is the no-overlap check below.
    let deadline = Instant::now() + Duration::from_secs(30);
    let current = || {
        intervals
            .lock()
            .iter()
            .find(|(_, _, end)| end.is_none())
            .map(|l| (l.0, l.1))
    };
    loop {
        let leader = current();
        tokio::time::sleep(Duration::from_secs(3)).await;
        if leader.is_some() && leader == current() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no leader kept its lease for 3 s within 30 s of the faults' end"
        );
    }

    ctx.cancel();
    let mut lost = 0;
    for c in candidates {
        lost += tokio::time::timeout(Duration::from_secs(30), c)
            .await
            .expect("every candidate stops")
            .expect("no panic");
    }
    let mut terms = intervals.lock().clone();
    terms.sort_by_key(|t| t.1);
    eprintln!(
        "{} terms, {lost} lost to the faults: {:?}",
        terms.len(),
        terms
            .iter()
            .map(|(i, s, e)| (
                i,
                s.duration_since(test_started),
                e.map(|e| e.duration_since(test_started))
            ))
            .collect::<Vec<_>>()
    );
    // Never two leaders: each term ends before the next begins. (A term ends when its
    // manager sees it could not renew within the renew deadline, 1.5 s after its last renewal;
    // another candidate acquires only once the lease (2 s) has expired since it last saw the
    // record change: the terms cannot overlap, with 0.5 s to spare.)
    for pair in terms.windows(2) {
        let end = pair[0].2.expect("every term ended at shutdown");
        assert!(
            end <= pair[1].1,
            "candidate {} led until {:?}, candidate {} from {:?}",
            pair[0].0,
            end.duration_since(test_started),
            pair[1].0,
            pair[1].1.duration_since(test_started)
        );
    }
    eprintln!(
        "chaos test (leader election) took {:?}",
        test_started.elapsed()
    );
}
