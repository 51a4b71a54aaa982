//! Multicluster: fairness under a flood, and the cost of an engaged cluster.
//!
//! **Fairness.** Two member clusters on one manager, one cluster-aware controller with one worker
//! whose reconcile costs `CRT_BENCH_COST_US` (default 100 µs of CPU). Each member is an embedded
//! API server in a process of its own, as member clusters are elsewhere: this binary again
//! (`CRT_BENCH_ROLE=member`), writing through its own storage when told to. The quiet member writes
//! a ConfigMap every 10 ms (200 of them); its change-to-reconcile latency is the time from the
//! member's write (the wall clock read just before it, the machine's clock being shared by the
//! processes) to the start of the reconcile of that object. (A create call from this process would
//! add the client's request, queued on the manager's own threads, to the change it measures.) The
//! noisy member runs at the lowest CPU priority (`nice -n 19`), so that on a small machine it takes
//! only the CPU the manager leaves (a member's API server does not run on the manager's cores;
//! `CRT_BENCH_NOISY_NICE=0` shares them at equal priority instead). The quiet member runs under
//! real-time scheduling (`chrt -f 1`, `CRT_BENCH_QUIET_FIFO=0` for nice 0; nice 0 also where
//! the machine refuses it), as if it had cores of its own: at nice 0, `perf sched timehist`
//! showed its server's threads waiting 3-5 ms for a core during the live flood, the manager
//! holding both, so its tail measured this machine rather than the controller. Measured alone
//! (the noisy member engaged, idle); while the noisy member takes 10,000 creates at the rate its
//! server takes them, once not engaged (the control: its server's CPU is spent on this machine all
//! the same, and on two cores even a background process at the lowest priority moves the quiet
//! member's tail by milliseconds) and once engaged (the flood reaches the manager); once engaged
//! at 5,000 a second (a paced flood); and while the noisy member joins with 10,000 objects (its
//! initial list queues a second of reconciles at once). `CRT_BENCH_ROUNDS` rounds (default 5) of
//! each, their latencies pooled. The live flood's p99 is set against alone's and the control's;
//! the paced flood's and the backlog's, against alone's. The fair queue serves the quiet member
//! between two noisy keys.
//!
//! **Scale.** `CRT_BENCH_CLUSTERS` (default 50) embedded servers of 100 ConfigMaps each,
//! started and filled first; then all are engaged with a manager running one controller for
//! ConfigMaps, and the time until every object was reconciled once and the live heap of the
//! process (a counting allocator) after minus before are reported, per cluster. The servers
//! live in this process, but are started before the baseline.
//!
//! ```sh
//! cargo bench --manifest-path crates/benches/Cargo.toml --bench multicluster
//! ```

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use cap::Cap;
use controller_runtime::CancellationToken;
use controller_runtime::controller::ControllerOptions;
use controller_runtime::manager::{BindAddress, Manager as LocalManager, ManagerOptions};
use controller_runtime::multicluster::providers::ClusterSet;
use controller_runtime::multicluster::{
    Aware, Cluster, ClusterRequest, ControllerBuilder, EngageOptions, Manager,
};
use controller_runtime::reconcile::Action;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::PostParams;
use parking_lot::Mutex;

#[global_allocator]
static ALLOCATOR: Cap<std::alloc::System> = Cap::new(std::alloc::System, usize::MAX);

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn server() -> (crt_apiserver::Server, kube_client::Client) {
    let server = crt_apiserver::Server::start(Default::default())
        .await
        .unwrap();
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    (server, kube_client::Client::try_from(config).unwrap())
}

fn configmap(name: String) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name);
    cm
}

fn options() -> ManagerOptions {
    ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled)
}

fn spin(cost: Duration) {
    let start = Instant::now();
    while start.elapsed() < cost {
        std::hint::spin_loop();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// The CPU priority a member process runs at.
#[derive(Clone, Copy, Debug)]
enum Priority {
    /// `nice -n N`: a time-shared process, 19 the lowest.
    Nice(u32),
    /// `chrt -f 1`: real-time (first in, first out), ahead of every time-shared thread, as if
    /// the member had cores of its own.
    Fifo,
}

impl Priority {
    /// The quiet member's: `Fifo` unless `CRT_BENCH_QUIET_FIFO=0` or the machine refuses it
    /// (real-time scheduling needs root or `CAP_SYS_NICE`), then `Nice(0)`.
    fn quiet() -> Priority {
        let allowed = || {
            Command::new("chrt")
                .args(["-f", "1", "true"])
                .status()
                .is_ok_and(|s| s.success())
        };
        if env("CRT_BENCH_QUIET_FIFO", 1) != 0 && allowed() {
            Priority::Fifo
        } else {
            Priority::Nice(0)
        }
    }
}

/// A member cluster in a process of its own: an embedded API server that writes through its
/// own storage when told to.
struct Member {
    child: Child,
    stdin: ChildStdin,
    lines: std::io::Lines<BufReader<ChildStdout>>,
    client: kube_client::Client,
}

impl Member {
    /// Starts the member process (at `priority`) and connects to its server.
    async fn start(priority: Priority) -> Member {
        let exe = std::env::current_exe().expect("this binary");
        let mut command = match priority {
            Priority::Nice(nice) => {
                let mut command = Command::new("nice");
                command.arg("-n").arg(nice.to_string());
                command
            }
            Priority::Fifo => {
                let mut command = Command::new("chrt");
                command.arg("-f").arg("1");
                command
            }
        };
        command.arg(exe);
        let mut child = command
            .env("CRT_BENCH_ROLE", "member")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the member process");
        let stdin = child.stdin.take().expect("stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut kubeconfig = String::new();
        loop {
            match lines.next() {
                Some(Ok(line)) if line == "READY" => break,
                Some(Ok(line)) => {
                    kubeconfig.push_str(&line);
                    kubeconfig.push('\n');
                }
                _ => panic!("the member process ended before it was ready"),
            }
        }
        let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&kubeconfig).unwrap();
        let config = kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        let client = kube_client::Client::try_from(config).unwrap();
        Member {
            child,
            stdin,
            lines,
            client,
        }
    }

    /// Tells the member to create `n` ConfigMaps named `prefix-i`, `rate` a second (0: as fast
    /// as its storage takes them); answers the seconds it took, once done, and when each
    /// write began (wall clock).
    async fn create(&mut self, prefix: &str, n: usize, rate: usize) -> (f64, Vec<SystemTime>) {
        writeln!(self.stdin, "create {prefix} {n} {rate}").expect("to the member");
        let lines = &mut self.lines;
        let answer = tokio::task::block_in_place(|| lines.next());
        match answer {
            Some(Ok(line)) if line.starts_with("CREATED ") => {
                let mut words = line[8..].split(' ');
                let secs = words.next().and_then(|w| w.parse().ok()).unwrap_or(0.0);
                let at = words
                    .map(|w| SystemTime::UNIX_EPOCH + Duration::from_nanos(w.parse().unwrap()))
                    .collect();
                (secs, at)
            }
            other => panic!("the member answered {other:?}"),
        }
    }

    fn stop(mut self) {
        let _ = writeln!(self.stdin, "stop");
        let _ = self.child.wait();
    }
}

/// The member role: an embedded API server; on `create PREFIX N RATE` creates N ConfigMaps
/// through its storage, RATE a second (0: at once), and answers `CREATED secs` followed by the
/// wall-clock nanoseconds at which each write began (for up to 1,000 writes); `stop` (or the
/// end of input) stops it.
fn member() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt
        .block_on(crt_apiserver::Server::start(Default::default()))
        .unwrap();
    let storage = server.storage().clone();
    let configmaps = storage.resolve("", "v1", "configmaps").expect("configmaps");
    print!("{}", server.kubeconfig());
    println!("READY");
    for line in std::io::stdin().lines() {
        let Ok(line) = line else { break };
        let words: Vec<&str> = line.split_whitespace().collect();
        let ["create", prefix, n, rate] = words[..] else {
            break;
        };
        let (n, rate): (usize, f64) = (n.parse().unwrap_or(0), rate.parse().unwrap_or(0.0));
        let began = Instant::now();
        let mut at = Vec::with_capacity(n.min(1_000));
        for i in 0..n {
            if rate > 0.0 {
                let due = began + Duration::from_secs_f64(i as f64 / rate);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            let cm = serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("{prefix}-{i}"), "namespace": "default"},
            });
            if at.len() < 1_000 {
                at.push(SystemTime::now());
            }
            storage
                .create_shared(&configmaps, Some("default"), cm, &Default::default())
                .expect("create");
        }
        let mut answer = format!("CREATED {}", began.elapsed().as_secs_f64());
        for t in at {
            let nanos = t.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_nanos();
            answer.push_str(&format!(" {nanos}"));
        }
        println!("{answer}");
    }
    rt.block_on(server.stop());
}

/// The paced flood's creates a second: as many as a busy API server writes, a flood for a
/// worker whose reconcile takes 100 µs (its 10,000 a second, half of them the noisy member's).
const PACE: usize = 5_000;

/// How the noisy member floods.
#[derive(Clone, Copy, PartialEq)]
enum Flood {
    /// Not at all.
    None,
    /// 10,000 creates while the quiet member is measured, the noisy member not engaged.
    Unengaged,
    /// 10,000 creates while the quiet member is measured.
    Live,
    /// 10,000 creates at 5,000 a second while the quiet member is measured.
    Paced,
    /// 10,000 objects already there, engaged when the measure starts: its initial list queues
    /// them at once.
    Backlog,
}

/// The quiet member's latencies, sorted, with or without the noisy member's flood.
async fn fairness_run(
    flood: Flood,
    cost: Duration,
    noisy: Priority,
    quiet: Priority,
) -> Vec<Duration> {
    let (_hub_server, hub) = server().await;
    let mut noisy = Member::start(noisy).await;
    let mut quiet_member = Member::start(quiet).await;
    let quiet = quiet_member.client.clone();
    let set = ClusterSet::new();
    match flood {
        Flood::Backlog => {
            noisy.create("noisy", 10_000, 0).await;
        }
        Flood::Unengaged => {}
        Flood::None | Flood::Live | Flood::Paced => {
            set.add("noisy", noisy.client.clone()).await.unwrap()
        }
    }
    set.add("quiet", quiet.clone()).await.unwrap();
    let mgr = Manager::new(
        LocalManager::new(hub, options()).unwrap(),
        Some(Arc::new(set.clone())),
    )
    .unwrap();
    let started: Arc<Mutex<HashMap<String, SystemTime>>> = Arc::default();
    let reconciled = Arc::new(AtomicUsize::new(0));
    let noisy_reconciled = Arc::new(AtomicUsize::new(0));
    ControllerBuilder::new(&mgr)
        .with_options(ControllerOptions::default().with_max_concurrent_reconciles(1))
        .for_::<ConfigMap>()
        .complete({
            let (started, reconciled) = (started.clone(), reconciled.clone());
            let noisy_reconciled = noisy_reconciled.clone();
            move |req: ClusterRequest, _cluster, _ctx| {
                if &*req.cluster == "quiet" {
                    started
                        .lock()
                        .entry(req.key.name.clone())
                        .or_insert_with(SystemTime::now);
                } else if &*req.cluster == "noisy" {
                    noisy_reconciled.fetch_add(1, Ordering::Relaxed);
                }
                spin(cost);
                reconciled.fetch_add(1, Ordering::Relaxed);
                async { Ok(Action::done()) }
            }
        })
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let want = if matches!(flood, Flood::Backlog | Flood::Unengaged) {
        1
    } else {
        2
    };
    while mgr.clusters().len() < want {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;

    let noisy_client = noisy.client.clone();
    let flooding = tokio::spawn(async move {
        let wrote = match flood {
            Flood::None => None,
            Flood::Live | Flood::Unengaged => Some(noisy.create("noisy", 10_000, 0).await.0),
            Flood::Paced => Some(noisy.create("noisy", 10_000, PACE).await.0),
            Flood::Backlog => {
                set.add("noisy", noisy_client).await.unwrap();
                None
            }
        };
        (noisy, wrote)
    });
    let (_, at) = quiet_member.create("quiet", 200, 100).await;
    let created: Vec<(String, SystemTime)> = (at.into_iter().enumerate())
        .map(|(i, at)| (format!("quiet-{i}"), at))
        .collect();
    let noisy_during = noisy_reconciled.load(Ordering::Relaxed);
    let (noisy, wrote) = flooding.await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while started.lock().len() < created.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = started.lock().clone();
    let mut latencies: Vec<Duration> = (created.iter())
        .filter_map(|(name, at)| {
            let started = started.get(name)?;
            Some(started.duration_since(*at).unwrap_or_default())
        })
        .collect();
    latencies.sort();
    println!(
        "  {}: {} quiet reconciles seen, {noisy_during} noisy reconciles while they were measured{}",
        match flood {
            Flood::None => "alone",
            Flood::Unengaged => "writes, not engaged",
            Flood::Live => "live flood",
            Flood::Paced => "paced flood",
            Flood::Backlog => "backlog",
        },
        latencies.len(),
        wrote.map_or(String::new(), |secs| format!(
            ", the noisy member wrote its 10,000 in {secs:.2} s"
        )),
    );
    stop.cancel();
    running.await.unwrap().unwrap();
    noisy.stop();
    quiet_member.stop();
    latencies
}

async fn fairness() {
    let cost = Duration::from_micros(env("CRT_BENCH_COST_US", 100) as u64);
    let nice = env("CRT_BENCH_NOISY_NICE", 19) as u32;
    let quiet = Priority::quiet();
    let rounds = env("CRT_BENCH_ROUNDS", 5).max(1);
    println!(
        "fairness: reconcile cost {cost:?}, 1 worker, quiet member every 10 ms, \
         noisy member's process at nice {nice}, quiet member's at {quiet:?}, {rounds} rounds"
    );
    let floods = [
        (Flood::None, "alone"),
        (
            Flood::Unengaged,
            "noisy member, not engaged, creates 10,000 meanwhile (control)",
        ),
        (Flood::Live, "noisy member creates 10,000 meanwhile"),
        (
            Flood::Paced,
            "noisy member creates 10,000 at 5,000/s meanwhile",
        ),
        (Flood::Backlog, "noisy member joins with 10,000 queued"),
    ];
    // Per flood, every round's latencies, and each round's p99.
    let mut pooled = vec![Vec::new(); floods.len()];
    let mut p99s = vec![Vec::new(); floods.len()];
    for _ in 0..rounds {
        for (i, (flood, _)) in floods.iter().enumerate() {
            let l = fairness_run(*flood, cost, Priority::Nice(nice), quiet).await;
            p99s[i].push(percentile(&l, 0.99));
            pooled[i].extend(l);
        }
    }
    println!(
        "| quiet member's change-to-reconcile ({rounds} rounds pooled) | p50 | p90 | p99 | max | p99 of each round |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    let mut p99 = Vec::new();
    for (((_, label), l), rounds) in floods.iter().zip(&mut pooled).zip(&mut p99s) {
        l.sort();
        rounds.sort();
        p99.push(percentile(l, 0.99));
        println!(
            "| {label} | {:?} | {:?} | {:?} | {:?} | {:?}-{:?} |",
            percentile(l, 0.5),
            percentile(l, 0.9),
            percentile(l, 0.99),
            l.last().copied().unwrap_or_default(),
            rounds[0],
            rounds[rounds.len() - 1],
        );
    }
    let ratio = |a: usize, b: usize| p99[a].as_secs_f64() / p99[b].as_secs_f64();
    println!(
        "p99: live flood / alone {:.2}x, live flood / control {:.2}x, paced flood / alone \
         {:.2}x, backlog / alone {:.2}x (control / alone {:.2}x)",
        ratio(2, 0),
        ratio(2, 1),
        ratio(3, 0),
        ratio(4, 0),
        ratio(1, 0),
    );
}

async fn scale() {
    let clusters = env("CRT_BENCH_CLUSTERS", 50);
    let objects = 100;
    println!("scale: {clusters} clusters of {objects} ConfigMaps");
    let (_hub_server, hub) = server().await;
    let mut servers = Vec::new();
    for _ in 0..clusters {
        let (s, client) = server().await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        for i in 0..objects {
            api.create(&PostParams::default(), &configmap(format!("cm-{i}")))
                .await
                .unwrap();
        }
        servers.push((s, client));
    }
    let mgr = Manager::new(LocalManager::new(hub, options()).unwrap(), None).unwrap();
    let reconciled = Arc::new(AtomicUsize::new(0));
    ControllerBuilder::new(&mgr)
        .with_options(ControllerOptions::default().with_max_concurrent_reconciles(4))
        .with_engage_options(EngageOptions::default().with_local_cluster(false))
        .for_::<ConfigMap>()
        .complete({
            let reconciled = reconciled.clone();
            move |_req: ClusterRequest, _cluster, _ctx| {
                reconciled.fetch_add(1, Ordering::Relaxed);
                async { Ok(Action::done()) }
            }
        })
        .await
        .unwrap();
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = ALLOCATOR.allocated();
    let start = Instant::now();
    // The clusters are engaged by hand (as a provider would), all at once.
    let ctx = CancellationToken::new();
    for (i, (_, client)) in servers.iter().enumerate() {
        let cluster = Cluster::new(format!("member-{i}"), client.clone(), Default::default());
        mgr.engage(ctx.child_token(), cluster).await.unwrap();
    }
    let engaged = start.elapsed();
    let want = clusters * objects;
    while reconciled.load(Ordering::Relaxed) < want {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let all = start.elapsed();
    let heap = ALLOCATOR.allocated().saturating_sub(before);
    println!("| figure | all {clusters} clusters | per cluster |");
    println!("| --- | --- | --- |");
    println!(
        "| engage (caches started, watches added) | {engaged:?} | {:?} |",
        engaged / clusters as u32
    );
    println!(
        "| engage to every object reconciled once | {all:?} | {:?} |",
        all / clusters as u32
    );
    println!(
        "| live heap after minus before | {:.1} MiB | {:.0} KiB |",
        heap as f64 / (1 << 20) as f64,
        heap as f64 / 1024.0 / clusters as f64
    );
    ctx.cancel();
    stop.cancel();
    running.await.unwrap().unwrap();
}

fn main() {
    if std::env::var("CRT_BENCH_ROLE").is_ok_and(|r| r == "member") {
        return member();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        fairness().await;
        scale().await;
    });
}
