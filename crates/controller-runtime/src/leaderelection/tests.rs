//! The elector's timing on a [`MemoryLock`] under tokio's paused clock: every duration below is
//! virtual, exact, and costs no wall-clock time.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};
use tokio_util::sync::CancellationToken;

use super::*;

const LEASE: Duration = Duration::from_secs(15);
const RENEW: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(2);
/// The longest wait between two acquisition tries.
const MAX_RETRY_WAIT: Duration = Duration::from_millis(4400);

fn config(id: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_name: "test".into(),
        identity: id.into(),
        ..Default::default()
    }
}

fn candidate(lock: &MemoryLock, id: &str) -> Arc<LeaderElector> {
    Arc::new(LeaderElector::with_lock(Arc::new(lock.clone()), config(id)).unwrap())
}

fn spawn(el: &Arc<LeaderElector>, ctx: &CancellationToken) -> JoinHandle<Result<(), Error>> {
    let (el, ctx) = (el.clone(), ctx.clone());
    tokio::spawn(async move { el.run(ctx).await })
}

async fn until_leader(el: &LeaderElector) {
    el.leader_status().wait_for(|l| *l).await.unwrap();
}

fn holder(lock: &MemoryLock) -> String {
    lock.record().unwrap().holder_identity
}

#[test]
fn config_is_checked_as_client_go() {
    let ok = config("a");
    assert!(ok.validate().is_ok());
    let bad = [
        LeaderElectionConfig {
            renew_deadline: LEASE,
            ..ok.clone()
        },
        LeaderElectionConfig {
            // 2 s * 1.2 = 2.4 s > 2.2 s
            renew_deadline: Duration::from_millis(2200),
            ..ok.clone()
        },
        LeaderElectionConfig {
            retry_period: Duration::ZERO,
            ..ok.clone()
        },
        LeaderElectionConfig {
            lease_duration: Duration::from_millis(900),
            renew_deadline: Duration::from_millis(800),
            retry_period: Duration::from_millis(100),
            ..ok.clone()
        },
        LeaderElectionConfig {
            identity: String::new(),
            ..ok.clone()
        },
        LeaderElectionConfig {
            lease_name: String::new(),
            ..ok.clone()
        },
    ];
    for c in bad {
        let err = LeaderElector::with_lock(Arc::new(MemoryLock::new()), c.clone())
            .err()
            .unwrap_or_else(|| panic!("accepted {c:?}"));
        assert!(matches!(err, Error::InvalidConfig(_)), "{err}");
    }
    let half = LeaderElectionConfig {
        lease_duration: Duration::from_millis(1500),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(200),
        ..ok
    };
    assert_eq!(half.lease_duration_seconds(), 2, "rounded up");
}

#[test]
fn identities_are_host_name_and_a_uuid() {
    let id = default_identity();
    let (host, uuid) = id.rsplit_once('_').unwrap();
    assert!(!host.is_empty());
    assert_eq!(uuid.len(), 36);
    assert_eq!(uuid.as_bytes()[14], b'4', "version 4: {uuid}");
}

#[tokio::test(start_paused = true)]
async fn acquires_a_free_lease_at_once_and_renews_it() {
    let lock = MemoryLock::new();
    let a = candidate(&lock, "a");
    let ctx = CancellationToken::new();
    let start = Instant::now();
    let run = spawn(&a, &ctx);
    until_leader(&a).await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    let first = lock.record().unwrap();
    assert_eq!(first.holder_identity, "a");
    assert_eq!(first.lease_duration_seconds, 15);
    assert_eq!(first.lease_transitions, 0);
    assert!(first.acquire_time.is_some());

    // Renewals every retry period, keeping acquireTime and the transition count.
    sleep(Duration::from_secs(60)).await;
    assert!(a.is_leader());
    let later = lock.record().unwrap();
    assert_eq!(later.acquire_time, first.acquire_time);
    assert_eq!(later.lease_transitions, 0);
    let version = lock.get().await.unwrap().unwrap().version;
    assert!(
        version.parse::<u64>().unwrap() >= 30,
        "renewed: version {version}"
    );

    ctx.cancel();
    run.await.unwrap().unwrap();
    assert!(!a.is_leader());
    assert_eq!(holder(&lock), "a", "no release unless configured");
}

#[tokio::test(start_paused = true)]
async fn waits_while_another_renews() {
    let lock = MemoryLock::new();
    let (a, b) = (candidate(&lock, "a"), candidate(&lock.handle(), "b"));
    let ctx = CancellationToken::new();
    let _ra = spawn(&a, &ctx);
    until_leader(&a).await;
    let rb = spawn(&b, &ctx);
    sleep(Duration::from_secs(120)).await;
    assert!(a.is_leader());
    assert!(!b.is_leader());
    assert_eq!(holder(&lock), "a");
    ctx.cancel();
    rb.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn takes_over_a_lease_not_renewed_for_its_duration() {
    let lock = MemoryLock::new();
    // A holder that died: its record stays, never renewed.
    let dead = LeaderElectionRecord {
        holder_identity: "dead".into(),
        lease_duration_seconds: 15,
        lease_transitions: 3,
        ..Default::default()
    };
    lock.create(dead).await.unwrap();
    let b = candidate(&lock, "b");
    let ctx = CancellationToken::new();
    let start = Instant::now();
    let _rb = spawn(&b, &ctx);
    until_leader(&b).await;
    let waited = start.elapsed();
    // b first saw the record at 0 and may take it from 15 s on, at its next try.
    assert!(waited >= LEASE, "took over after {waited:?}");
    assert!(
        waited <= LEASE + MAX_RETRY_WAIT,
        "took over after {waited:?}"
    );
    let record = lock.record().unwrap();
    assert_eq!(record.holder_identity, "b");
    assert_eq!(
        record.lease_transitions, 4,
        "a change of holder is a transition"
    );
    ctx.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_steps_down_before_another_takes_over() {
    let lock = MemoryLock::new();
    let a_lock = lock.handle();
    let a = Arc::new(LeaderElector::with_lock(Arc::new(a_lock.clone()), config("a")).unwrap());
    let b = candidate(&lock.handle(), "b");
    let ctx = CancellationToken::new();
    let ra = spawn(&a, &ctx);
    until_leader(&a).await;
    let _rb = spawn(&b, &ctx);
    sleep(Duration::from_secs(7)).await;
    // a's last successful renewal started at 6 s (renewals at 0, 2, 4, 6).
    let cut = Instant::now();
    a_lock.set_failing(true);

    let err = ra.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }), "{err}");
    let lost = cut.elapsed() + Duration::from_secs(1);
    assert_eq!(
        lost, RENEW,
        "steps down renew_deadline after the last renewal"
    );
    assert!(!a.is_leader());
    assert!(!b.is_leader(), "b waits a whole lease duration");

    until_leader(&b).await;
    let taken = cut.elapsed() + Duration::from_secs(1);
    assert!(
        taken >= LEASE,
        "b took over {taken:?} after a's last renewal"
    );
    // b saw that renewal at its next try, and takes over at its first try a lease later.
    assert!(taken <= LEASE + 2 * MAX_RETRY_WAIT, "{taken:?}");
    assert_eq!(holder(&lock), "b");
    ctx.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_sees_another_holder_steps_down_at_once() {
    let lock = MemoryLock::new();
    let a = candidate(&lock, "a");
    let ctx = CancellationToken::new();
    let ra = spawn(&a, &ctx);
    until_leader(&a).await;
    // Someone overwrites the lease (e.g. an operator by hand).
    let current = lock.get().await.unwrap().unwrap();
    let stolen = LeaderElectionRecord {
        holder_identity: "thief".into(),
        ..current.record
    };
    lock.update(stolen, current.version).await.unwrap();
    let start = Instant::now();
    let err = ra.await.unwrap().unwrap_err();
    assert!(matches!(err, Error::LeaseLost { .. }));
    assert!(start.elapsed() <= RETRY);
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_over_at_the_next_try() {
    let lock = MemoryLock::new();
    let a = Arc::new(
        LeaderElector::with_lock(
            Arc::new(lock.clone()),
            LeaderElectionConfig {
                release_on_cancel: true,
                ..config("a")
            },
        )
        .unwrap(),
    );
    let b = candidate(&lock.handle(), "b");
    let (ctx_a, ctx_b) = (CancellationToken::new(), CancellationToken::new());
    let ra = spawn(&a, &ctx_a);
    until_leader(&a).await;
    let _rb = spawn(&b, &ctx_b);
    sleep(Duration::from_secs(30)).await;
    assert!(!b.is_leader());

    ctx_a.cancel();
    ra.await.unwrap().unwrap();
    let released = lock.record().unwrap();
    assert_eq!(released.holder_identity, "");
    assert_eq!(released.lease_duration_seconds, 1);
    let start = Instant::now();
    until_leader(&b).await;
    assert!(start.elapsed() <= MAX_RETRY_WAIT, "{:?}", start.elapsed());
    let record = lock.record().unwrap();
    assert_eq!(record.holder_identity, "b");
    assert_eq!(record.lease_transitions, 1);
    ctx_b.cancel();
}

#[tokio::test(start_paused = true)]
async fn cancel_before_acquiring_returns_ok_without_leading() {
    let lock = MemoryLock::new();
    lock.create(LeaderElectionRecord {
        holder_identity: "other".into(),
        lease_duration_seconds: 15,
        ..Default::default()
    })
    .await
    .unwrap();
    let a = candidate(&lock, "a");
    let ctx = CancellationToken::new();
    let ra = spawn(&a, &ctx);
    sleep(Duration::from_secs(5)).await;
    ctx.cancel();
    ra.await.unwrap().unwrap();
    assert!(!a.is_leader());
    assert_eq!(holder(&lock), "other", "a non-leader releases nothing");
}

#[tokio::test(start_paused = true)]
async fn the_leader_renews_with_one_write_and_no_read() {
    let lock = MemoryLock::new();
    let a = candidate(&lock, "a");
    let ctx = CancellationToken::new();
    let _ra = spawn(&a, &ctx);
    until_leader(&a).await;
    let before = lock.requests();
    sleep(Duration::from_secs(20) + Duration::from_millis(1)).await;
    // Renewals at 2, 4, ..., 20 s: ten, one request each.
    assert_eq!(lock.requests() - before, 10);
    assert!(a.is_leader());
    ctx.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_write_cut_short_by_cancellation_is_released() {
    let lock = MemoryLock::new();
    lock.set_latency(Duration::from_secs(1));
    let a = Arc::new(
        LeaderElector::with_lock(
            Arc::new(lock.clone()),
            LeaderElectionConfig {
                release_on_cancel: true,
                ..config("a")
            },
        )
        .unwrap(),
    );
    let ctx = CancellationToken::new();
    let ra = spawn(&a, &ctx);
    // The read answers at 1 s; the create takes effect then, its answer is due at 2 s.
    sleep(Duration::from_millis(1500)).await;
    assert_eq!(holder(&lock), "a", "the create took effect");
    assert!(!a.is_leader(), "but a does not know yet");
    ctx.cancel();
    ra.await.unwrap().unwrap();
    assert!(!a.is_leader());
    let record = lock.record().unwrap();
    assert_eq!(record.holder_identity, "", "released");
    assert_eq!(record.lease_duration_seconds, 1);
}

/// Five candidates on one lock, for twenty runs (seeds) of a simulated ten minutes each, while
/// a chaos task cuts them off the storage, slows their requests and cancels and restarts them
/// at random: no two ever lead at once, and leadership does change hands.
#[tokio::test(start_paused = true)]
async fn never_two_leaders() {
    for seed in 0..20 {
        let (changes, distinct) = chaos(seed).await;
        assert!(
            changes >= 10,
            "seed {seed}: leadership changed {changes} times"
        );
        assert!(distinct >= 3, "seed {seed}: {distinct} candidates led");
    }
}

/// One chaos run: how often the leader status changed, and how many candidates led.
async fn chaos(seed: u64) -> (usize, usize) {
    use rand::{Rng, SeedableRng};

    let lock = MemoryLock::new();
    let ids = ["a", "b", "c", "d", "e"];
    let handles: Vec<MemoryLock> = ids.iter().map(|_| lock.handle()).collect();
    let electors: Vec<Arc<LeaderElector>> = ids
        .iter()
        .zip(&handles)
        .enumerate()
        .map(|(i, (id, h))| {
            let config = LeaderElectionConfig {
                release_on_cancel: i % 2 == 0,
                ..config(id)
            };
            Arc::new(LeaderElector::with_lock(Arc::new(h.clone()), config).unwrap())
        })
        .collect();
    let stop = CancellationToken::new();

    // Each candidate runs in a loop; `restart[i]` cancels its current run.
    let restart: Vec<Arc<parking_lot::Mutex<CancellationToken>>> = electors
        .iter()
        .map(|_| Arc::new(parking_lot::Mutex::new(stop.child_token())))
        .collect();
    for (el, slot) in electors.iter().zip(&restart) {
        let (el, slot, stop) = (el.clone(), slot.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.is_cancelled() {
                let ctx = slot.lock().clone();
                let _ = el.run(ctx).await;
                *slot.lock() = stop.child_token();
                sleep(Duration::from_millis(500)).await;
            }
        });
    }

    // Watches every status change and records leadership intervals.
    let checker = {
        let mut rxs: Vec<_> = electors.iter().map(|e| e.leader_status()).collect();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut changes = 0usize;
            let mut leaders_seen = std::collections::HashSet::new();
            loop {
                let changed =
                    futures::future::select_all(rxs.iter_mut().map(|rx| Box::pin(rx.changed())));
                tokio::select! {
                    _ = changed => {}
                    _ = stop.cancelled() => break,
                }
                changes += 1;
                let leading: Vec<usize> = (0..rxs.len())
                    .filter(|&i| *rxs[i].borrow_and_update())
                    .collect();
                assert!(leading.len() <= 1, "two leaders at once: {leading:?}");
                leaders_seen.extend(leading);
            }
            (changes, leaders_seen.len())
        })
    };

    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let end = Instant::now() + Duration::from_secs(600);
    while Instant::now() < end {
        sleep(Duration::from_millis(rng.random_range(500..6000))).await;
        let i = rng.random_range(0..ids.len());
        match rng.random_range(0..4) {
            0 => handles[i].set_failing(true),
            1 => handles[i].set_failing(false),
            2 => handles[i].set_latency(Duration::from_millis(rng.random_range(0..3000))),
            _ => restart[i].lock().cancel(),
        }
    }
    stop.cancel();
    let result = checker.await.unwrap();
    // Let the candidates' tasks end before the next run.
    sleep(Duration::from_secs(60)).await;
    result
}

/// Two candidates on a real Lease in the embedded API server, with short durations.
mod server {
    use k8s_openapi::api::coordination::v1::Lease;
    use kube_client::Api;

    use super::*;

    async fn client(server: &crt_apiserver::Server) -> kube_client::Client {
        let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
        let config = kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        kube_client::Client::try_from(config).unwrap()
    }

    fn fast(id: &str) -> LeaderElectionConfig {
        LeaderElectionConfig {
            lease_name: "real".into(),
            identity: id.into(),
            // Short, yet roomy enough for a loaded machine's slow answers.
            lease_duration: Duration::from_secs(5),
            renew_deadline: Duration::from_secs(4),
            retry_period: Duration::from_millis(250),
            release_on_cancel: true,
            ..Default::default()
        }
    }

    async fn leading(el: &LeaderElector) {
        tokio::time::timeout(Duration::from_secs(30), until_leader(el))
            .await
            .expect("leads within 30 s");
    }

    #[tokio::test]
    async fn the_lease_lock_writes_under_resource_version_and_keeps_other_fields() {
        let server = crt_apiserver::Server::start(crt_apiserver::Config::default())
            .await
            .unwrap();
        let client = client(&server).await;
        let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
        let lock = KubeLeaseLock::new(client.clone(), "default", "kept");
        assert!(lock.get().await.unwrap().is_none());
        let mut lease = Lease::default();
        lease.metadata.name = Some("kept".into());
        lease.metadata.labels = Some([("app".to_string(), "x".to_string())].into());
        leases.create(&Default::default(), &lease).await.unwrap();

        let read = lock.get().await.unwrap().unwrap();
        assert_eq!(read.record, LeaderElectionRecord::default());
        let record = LeaderElectionRecord {
            holder_identity: "a".into(),
            lease_duration_seconds: 15,
            lease_transitions: 2,
            ..Default::default()
        };
        let v2 = lock
            .update(record.clone(), read.version.clone())
            .await
            .unwrap();
        assert_ne!(v2, read.version);
        let stored = leases.get("kept").await.unwrap();
        assert_eq!(stored.metadata.labels.unwrap()["app"], "x", "labels kept");
        assert_eq!(lock.get().await.unwrap().unwrap().record, record);

        // A write naming the old version is a conflict, as is creating it again.
        let stale = lock.update(record.clone(), read.version).await.unwrap_err();
        assert!(matches!(stale, LockError::Conflict(_)), "{stale}");
        let exists = lock.create(record).await.unwrap_err();
        assert!(matches!(exists, LockError::Conflict(_)), "{exists}");
    }

    #[tokio::test]
    async fn candidates_share_a_lease_on_the_api_server() {
        let server = crt_apiserver::Server::start(crt_apiserver::Config::default())
            .await
            .unwrap();
        let client = client(&server).await;
        let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
        let a = Arc::new(LeaderElector::new(client.clone(), fast("a")).unwrap());
        let b = Arc::new(LeaderElector::new(client.clone(), fast("b")).unwrap());
        let (ctx_a, ctx_b) = (CancellationToken::new(), CancellationToken::new());
        // Both race for the Lease that does not exist yet: one creates it, the other gets a
        // conflict and waits.
        let ra = spawn(&a, &ctx_a);
        let rb = spawn(&b, &ctx_b);
        tokio::time::timeout(Duration::from_secs(30), async {
            while !a.is_leader() && !b.is_leader() {
                sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .unwrap();
        // The leader renews; the other does not lead meanwhile.
        sleep(Duration::from_secs(1)).await;
        assert!(a.is_leader() != b.is_leader(), "exactly one leader");
        let (leader, follower, ctx_leader, ctx_follower, run_leader, run_follower) =
            if a.is_leader() {
                (a, b, ctx_a, ctx_b, ra, rb)
            } else {
                (b, a, ctx_b, ctx_a, rb, ra)
            };
        let lease = leases.get("real").await.unwrap();
        let spec = lease.spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some(leader.identity()));
        assert_eq!(spec.lease_duration_seconds, Some(5));
        assert_eq!(spec.lease_transitions, Some(0));
        assert!(spec.acquire_time.is_some() && spec.renew_time > spec.acquire_time);

        // The leader is cancelled and releases: the follower takes over, one transition later.
        ctx_leader.cancel();
        run_leader.await.unwrap().unwrap();
        assert!(!leader.is_leader());
        leading(&follower).await;
        let spec = leases.get("real").await.unwrap().spec.unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some(follower.identity()));
        assert_eq!(spec.lease_transitions, Some(1));

        ctx_follower.cancel();
        run_follower.await.unwrap().unwrap();
        let spec = leases.get("real").await.unwrap().spec.unwrap();
        assert_eq!(spec.holder_identity, None, "released");
        assert_eq!(spec.lease_duration_seconds, Some(1));
    }
}

#[test]
fn defaults_are_controller_runtimes() {
    let config = LeaderElectionConfig::default();
    assert_eq!(config.lease_name, "controller-runtime-leader");
    assert_eq!(config.lease_duration, Duration::from_secs(15));
    assert_eq!(config.renew_deadline, Duration::from_secs(10));
    assert_eq!(config.retry_period, Duration::from_secs(2));
    assert!(!config.release_on_cancel);
}
