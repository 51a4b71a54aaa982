//! Throughput of the embedded API server through kube-client over TLS (the real client path):
//! start time, creates/s (median of five rounds of 10,000) and gets/s with 8 concurrent
//! clients, a list of 10,000 objects, and 10,000 events fanned out to 100 watchers. Prints measured numbers; asserts nothing.
//!
//! Run: `cargo bench --manifest-path crates/benches/Cargo.toml --bench apiserver`.
//!
//! For instruction counts (valgrind's callgrind, which machine load does not disturb),
//! `CRT_BENCH_PROFILE=handler` (creates through the HTTP handler) or `CRT_BENCH_PROFILE=store`
//! (creates on the store) runs only that loop, `CRT_BENCH_PROFILE_N` times (default 2,000),
//! after 200 warm-up creates; `requests` builds the handler's requests and bodies without
//! sending them (subtract it from `handler`). `deployment` creates Deployments through the
//! handler (a pod template with two containers, ports, env, resources and probes: what
//! decoding, defaulting and validation of a built-in kind cost), and `deployment-requests`
//! builds those requests only (subtract it from `deployment`):
//!
//! ```text
//! CRT_BENCH_PROFILE=handler valgrind --tool=callgrind \
//!     --toggle-collect='*profile_measured*' crates/benches/target/release/deps/apiserver-HASH
//! ```
//!
//! `CRT_BENCH_PROFILE=server` runs only the creates against a server in its own process (see
//! `server_cpu_per_create`), to profile that process with `CRT_BENCH_SERVER_WRAPPER`;
//! `CRT_BENCH_PROFILE=inprocess` only the creates against a server in the bench's process.

use std::time::{Duration, Instant};

use crt_apiserver::{Config, Server};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::Client;
use kube_client::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube_client::config::{KubeConfigOptions, Kubeconfig};

/// The allocator `crt serve` runs the server with (see crates/crt/src/main.rs), so that these
/// figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CLIENTS: usize = 8;
const OBJECTS: usize = 10_000;
const WATCHERS: usize = 100;

async fn client(server: &Server) -> Client {
    let kc = Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

/// The object every create sends, built as a client program builds one (the same JSON body
/// as `{"metadata": {"name": ..., "labels": {"app": "bench"}}, "data": {"key": "value"}}`).
fn cm(prefix: &str, i: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{prefix}-{i}")),
            labels: Some([("app".to_string(), "bench".to_string())].into()),
            ..Default::default()
        },
        data: Some([("key".to_string(), "value".to_string())].into()),
        ..Default::default()
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Creates `n` ConfigMaps named `prefix-i` in `ns` from `CLIENTS` concurrent clients.
async fn create_all(apis: &[Api<ConfigMap>], prefix: &str, n: usize) -> Duration {
    let start = Instant::now();
    let tasks: Vec<_> = apis
        .iter()
        .enumerate()
        .map(|(c, api)| {
            let api = api.clone();
            let prefix = prefix.to_string();
            tokio::spawn(async move {
                for i in (c..n).step_by(CLIENTS) {
                    api.create(&PostParams::default(), &cm(&prefix, i))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed()
}

/// How many times the create phases run; their median is the figure (one round is half a
/// second, and two shared cores move a single round by a fifth).
const ROUNDS: usize = 5;

/// Creates `OBJECTS` ConfigMaps `ROUNDS` times from `apis`' clients: the last round in
/// `default` named `c-i` (what the gets and the list read afterwards), the others each in a
/// namespace of their own. Answers each round's duration.
async fn create_rounds(apis: &[Api<ConfigMap>]) -> Vec<Duration> {
    let namespaces: Api<Namespace> = Api::all(apis[0].clone().into_client());
    let mut took = Vec::new();
    for round in 1..=ROUNDS {
        let (ns, prefix) = if round == ROUNDS {
            ("default".to_string(), "c")
        } else {
            (format!("round-{round}"), "r")
        };
        if ns != "default" {
            let body = serde_json::json!({ "metadata": { "name": ns } });
            namespaces
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(body).unwrap(),
                )
                .await
                .unwrap();
        }
        let in_ns: Vec<Api<ConfigMap>> = apis
            .iter()
            .map(|a| Api::namespaced(a.clone().into_client(), &ns))
            .collect();
        took.push(create_all(&in_ns, prefix, OBJECTS).await);
    }
    took
}

/// `median/s (slowest-fastest/s over N rounds of n)` of rounds of `n` operations each.
fn rates(n: usize, rounds: &[Duration]) -> String {
    let per_s = |d: &Duration| n as f64 / d.as_secs_f64();
    let slowest = rounds.iter().max().unwrap();
    let fastest = rounds.iter().min().unwrap();
    format!(
        "{:.0}/s median ({:.0}-{:.0}/s over {} rounds of {n})",
        per_s(&median(rounds.to_vec())),
        per_s(slowest),
        per_s(fastest),
        rounds.len()
    )
}

/// Set in the child process that only serves (see [`server_cpu_per_create`]).
const SERVER_PROCESS: &str = "CRT_BENCH_SERVER_PROCESS";

/// The server in a process of its own: prints its kubeconfig then `READY`, serves until its
/// stdin closes.
async fn serve_in_child() {
    let server = Server::start(Config::default()).await.unwrap();
    print!("{}", server.kubeconfig());
    println!("READY");
    let _ = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    })
    .await;
    server.stop().await;
}

/// CPU seconds (user + system, all threads) a process has used, from `/proc/PID/stat`.
fn process_cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    let hz = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .unwrap_or(100.0);
    ticks / hz
}

/// The server's own cost of a create: the server runs in a child process, 8 kube-clients in
/// this one create 10,000 ConfigMaps five times (`create_rounds`), and the child's CPU time
/// over that phase is divided by the creates. Client and server still share the two cores, so the wall-clock rate is the
/// end-to-end one; `1 / cpu per create` is what one core of server sustains.
async fn server_cpu_per_create() {
    use std::io::BufRead;
    // `CRT_BENCH_SERVER_WRAPPER="perf record -e cpu-clock -g -o FILE"` (or `strace -f -c -o
    // FILE`) runs the server under that command; its CPU figure is then the wrapper's.
    let wrapper = std::env::var("CRT_BENCH_SERVER_WRAPPER").unwrap_or_default();
    let mut words = wrapper.split_whitespace();
    let mut command = match words.next() {
        Some(program) => {
            let mut c = std::process::Command::new(program);
            c.args(words).arg(std::env::current_exe().unwrap());
            c
        }
        None => std::process::Command::new(std::env::current_exe().unwrap()),
    };
    let mut child = command
        .env(SERVER_PROCESS, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut kubeconfig = String::new();
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line == "READY" {
            break;
        }
        kubeconfig.push_str(&line);
        kubeconfig.push('\n');
    }
    let kc = Kubeconfig::from_yaml(&kubeconfig).unwrap();
    let mut apis = Vec::new();
    for _ in 0..CLIENTS {
        let config =
            kube_client::Config::from_custom_kubeconfig(kc.clone(), &KubeConfigOptions::default())
                .await
                .unwrap();
        let api = Api::<ConfigMap>::namespaced(Client::try_from(config).unwrap(), "default");
        api.list(&ListParams::default().limit(1)).await.unwrap();
        apis.push(api);
    }
    let before = process_cpu_seconds(child.id());
    let took = create_rounds(&apis).await;
    let cpu = process_cpu_seconds(child.id()) - before;
    let creates = (ROUNDS * OBJECTS) as f64;
    println!(
        "server in its own process, creates from {CLIENTS} kube-clients: {} end to end; server CPU {:.1} us per create = {:.0} creates/s per server core",
        rates(OBJECTS, &took),
        cpu * 1e6 / creates,
        creates / cpu
    );
    drop(child.stdin.take());
    let _ = child.wait();
}

fn rate(n: usize, d: Duration) -> String {
    format!(
        "{:.0}/s ({n} in {:.2} s)",
        n as f64 / d.as_secs_f64(),
        d.as_secs_f64()
    )
}

/// The same work straight on the store, without HTTP, TLS or a client: what the layers above
/// cost is the difference.
async fn in_process() {
    use crt_apiserver::storage::{Storage, StorageConfig, WatchOptions, WriteOptions};
    let storage = Storage::new(StorageConfig::default());
    let res = storage.resolve("", "v1", "configmaps").unwrap();
    let body = |prefix: &str, i: usize| serde_json::to_value(cm(prefix, i)).unwrap();
    let start = Instant::now();
    for i in 0..OBJECTS {
        storage
            .create(
                &res,
                Some("default"),
                body("s", i),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    println!(
        "in-process creates (1 thread): {}",
        rate(OBJECTS, start.elapsed())
    );

    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let opts = WatchOptions {
            resource_version: Some(storage.resource_version().to_string()),
            ..Default::default()
        };
        let mut watch = storage
            .watch_shared(&res, Some("kube-public"), &opts)
            .unwrap();
        watchers.push(tokio::spawn(async move {
            let mut seen = 0;
            while seen < OBJECTS {
                // Encoding included, as the HTTP layer sends it.
                watch.events.recv().await.unwrap().to_json_line();
                seen += 1;
            }
            Instant::now()
        }));
    }
    let start = Instant::now();
    for i in 0..OBJECTS {
        storage
            .create(
                &res,
                Some("kube-public"),
                body("f", i),
                &WriteOptions::default(),
            )
            .unwrap();
    }
    let wrote = start.elapsed();
    let mut last = start;
    for w in watchers {
        last = last.max(w.await.unwrap());
    }
    println!(
        "in-process fan-out (shared events, encoded): {OBJECTS} events x {WATCHERS} watchers in {:.2} s (writes took {:.2} s)",
        (last - start).as_secs_f64(),
        wrote.as_secs_f64()
    );
}

/// Creates through the HTTP handler (routing, body limits, JSON in and out, auth) called
/// directly: no socket, TLS or client.
async fn http_handler() {
    use crt_apiserver::Faults;
    use crt_apiserver::http::{AppState, handle};
    use crt_apiserver::storage::{Storage, StorageConfig};
    use http_body_util::{BodyExt, Full};
    let storage = Storage::new(StorageConfig::default());
    let state = std::sync::Arc::new(AppState {
        faults: Faults::new(storage.clone()),
        authn: crt_apiserver::auth::authn::Authenticator::new("t".into()),
        authz: crt_apiserver::auth::authz::Authorizer::new(storage.clone()),
        storage,
        max_body_bytes: 3 << 20,
        server_address: "127.0.0.1:0".into(),
        apf: Default::default(),
    });
    let start = Instant::now();
    for i in 0..OBJECTS {
        let body = serde_json::to_vec(&cm("h", i)).unwrap();
        let req = http::Request::post("/api/v1/namespaces/default/configmaps")
            .header("authorization", "Bearer t")
            .header("content-type", "application/json")
            .body(Full::new(bytes::Bytes::from(body)))
            .unwrap();
        let resp = handle(state.clone(), req).await;
        assert_eq!(resp.status(), 201);
        resp.into_body().collect().await.unwrap();
    }
    println!(
        "in-process HTTP handler creates (1 thread): {}",
        rate(OBJECTS, start.elapsed())
    );
}

/// A Deployment as an operator writes one: two containers with ports, env, resources and
/// probes, a rolling-update strategy.
fn deployment(prefix: &str, i: usize) -> Deployment {
    use k8s_openapi::api::apps::v1::{DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment};
    use k8s_openapi::api::core::v1::{
        Container, ContainerPort, EnvVar, HTTPGetAction, PodSpec, PodTemplateSpec, Probe,
        ResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    let labels: std::collections::BTreeMap<String, String> = [
        ("app".to_string(), "web".to_string()),
        ("tier".to_string(), "frontend".to_string()),
    ]
    .into();
    let resources = |cpu: &str, memory: &str| ResourceRequirements {
        requests: Some(
            [
                ("cpu".to_string(), Quantity(cpu.to_string())),
                ("memory".to_string(), Quantity(memory.to_string())),
            ]
            .into(),
        ),
        limits: Some([("memory".to_string(), Quantity(memory.to_string()))].into()),
        ..Default::default()
    };
    let probe = |path: &str, port: &str| Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_string()),
            port: IntOrString::String(port.to_string()),
            ..Default::default()
        }),
        initial_delay_seconds: Some(5),
        period_seconds: Some(10),
        ..Default::default()
    };
    let env = |name: &str, value: &str| EnvVar {
        name: name.to_string(),
        value: Some(value.to_string()),
        ..Default::default()
    };
    Deployment {
        metadata: ObjectMeta {
            name: Some(format!("{prefix}-{i}")),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(3),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            strategy: Some(DeploymentStrategy {
                type_: Some("RollingUpdate".to_string()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::String("25%".to_string())),
                    max_unavailable: Some(IntOrString::Int(1)),
                }),
            }),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![
                        Container {
                            name: "web".to_string(),
                            image: Some("registry.example.com/web:1.4.2".to_string()),
                            ports: Some(vec![ContainerPort {
                                name: Some("http".to_string()),
                                container_port: 8080,
                                protocol: Some("TCP".to_string()),
                                ..Default::default()
                            }]),
                            env: Some(vec![
                                env("LOG_LEVEL", "info"),
                                env("CACHE_URL", "redis://cache:6379"),
                            ]),
                            resources: Some(resources("250m", "256Mi")),
                            liveness_probe: Some(probe("/healthz", "http")),
                            readiness_probe: Some(probe("/ready", "http")),
                            ..Default::default()
                        },
                        Container {
                            name: "metrics".to_string(),
                            image: Some("registry.example.com/exporter:0.9".to_string()),
                            ports: Some(vec![ContainerPort {
                                name: Some("metrics".to_string()),
                                container_port: 9090,
                                ..Default::default()
                            }]),
                            env: Some(vec![env("TARGET", "http://localhost:8080")]),
                            resources: Some(resources("50m", "64Mi")),
                            liveness_probe: Some(probe("/metrics", "metrics")),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `n` creates of `ConfigMap`s as the bench's clients send them, through the HTTP handler
/// (`handler`) or on the store (`store`); of `Deployment`s through the handler
/// (`deployment`). `requests` and `deployment-requests` only build the requests.
fn profile_loop(kind: &str, prefix: &str, n: usize) {
    use crt_apiserver::Faults;
    use crt_apiserver::http::{AppState, handle};
    use crt_apiserver::storage::{Storage, StorageConfig, WriteOptions};
    use http_body_util::{BodyExt, Full};
    thread_local! {
        static STORAGE: Storage = Storage::new(StorageConfig::default());
    }
    let storage = STORAGE.with(Storage::clone);
    let state = std::sync::Arc::new(AppState {
        faults: Faults::new(storage.clone()),
        storage: storage.clone(),
        authn: crt_apiserver::auth::authn::Authenticator::new("t".into()),
        authz: crt_apiserver::auth::authz::Authorizer::new(storage.clone()),
        max_body_bytes: 3 << 20,
        server_address: "127.0.0.1:0".into(),
        apf: Default::default(),
    });
    let res = storage.resolve("", "v1", "configmaps").unwrap();
    // kube-client sends no user agent: the HTTP layer names the manager "".
    let write = WriteOptions {
        field_manager: Some(String::new()),
        ..Default::default()
    };
    let deployments = kind.starts_with("deployment");
    for i in 0..n {
        let (body, uri) = if deployments {
            (
                serde_json::to_vec(&deployment(prefix, i)).unwrap(),
                "/apis/apps/v1/namespaces/default/deployments?",
            )
        } else {
            (
                serde_json::to_vec(&cm(prefix, i)).unwrap(),
                "/api/v1/namespaces/default/configmaps?",
            )
        };
        if kind == "store" {
            let obj = serde_json::from_slice(&body).unwrap();
            let created = storage
                .create_shared(&res, Some("default"), obj, &write)
                .unwrap();
            std::hint::black_box(serde_json::to_vec(&*created).unwrap());
            continue;
        }
        let req = http::Request::post(uri)
            .header("authorization", "Bearer t")
            .header("content-type", "application/json")
            .header("accept-encoding", "gzip")
            .body(Full::new(bytes::Bytes::from(body)))
            .unwrap();
        if kind.ends_with("requests") {
            // Only what the loop itself costs, to subtract from `handler`.
            std::hint::black_box(req);
            continue;
        }
        futures::executor::block_on(async {
            let resp = handle(state.clone(), req).await;
            let status = resp.status();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
            std::hint::black_box(body);
        });
    }
}

/// The measured loop, kept out of line so that callgrind can count only it
/// (`--toggle-collect='*profile_measured*'`).
#[inline(never)]
fn profile_measured(kind: &str, n: usize) {
    profile_loop(kind, "p", n);
}

/// `Server::start` (certificates, bind, serve), median of 20.
async fn start_time() {
    let mut starts = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let server = Server::start(Config::default()).await.unwrap();
        starts.push(t.elapsed());
        server.stop().await;
    }
    println!(
        "start (median of 20): {:.2} ms",
        median(starts).as_secs_f64() * 1e3
    );
}

#[tokio::main]
async fn main() {
    if std::env::var_os(SERVER_PROCESS).is_some() {
        return serve_in_child().await;
    }
    let profile = std::env::var("CRT_BENCH_PROFILE").ok();
    // `inprocess`: only the 8-client creates against the server in this process.
    let profile_only = profile.as_deref() == Some("inprocess");
    if let Some(kind) = profile.filter(|_| !profile_only) {
        if kind == "server" {
            return server_cpu_per_create().await;
        }
        let n = std::env::var("CRT_BENCH_PROFILE_N")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(2_000);
        // Warm-up (first-use allocations, lazily built tables), then the measured loop.
        profile_loop(&kind, "w", 200);
        profile_measured(&kind, n);
        return;
    }
    if !profile_only {
        in_process().await;
        http_handler().await;
        server_cpu_per_create().await;
    }

    if !profile_only {
        start_time().await;
    }

    let server = Server::start(Config::default()).await.unwrap();
    let mut apis = Vec::new();
    for _ in 0..CLIENTS {
        apis.push(Api::<ConfigMap>::namespaced(
            client(&server).await,
            "default",
        ));
    }
    // Warm up connections.
    for api in &apis {
        api.list(&ListParams::default().limit(1)).await.unwrap();
    }

    let took = create_rounds(&apis).await;
    println!("creates, {CLIENTS} clients: {}", rates(OBJECTS, &took));
    if profile_only {
        server.stop().await;
        return;
    }

    let start = Instant::now();
    let tasks: Vec<_> = apis
        .iter()
        .enumerate()
        .map(|(c, api)| {
            let api = api.clone();
            tokio::spawn(async move {
                for i in (c..OBJECTS).step_by(CLIENTS) {
                    api.get(&format!("c-{i}")).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    println!(
        "gets, {CLIENTS} clients: {}",
        rate(OBJECTS, start.elapsed())
    );

    let mut lists = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let list = apis[0].list(&ListParams::default()).await.unwrap();
        assert_eq!(list.items.len(), OBJECTS);
        lists.push(t.elapsed());
    }
    println!(
        "list of {OBJECTS} ConfigMaps (median of 5): {:.1} ms",
        median(lists).as_secs_f64() * 1e3
    );

    // Fan-out: 100 watchers (10 clients x 10 watches) each receive every one of 10,000 events.
    let ns_api: Api<Namespace> = Api::all(client(&server).await);
    ns_api
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "fan"}})).unwrap(),
        )
        .await
        .unwrap();
    let rv = apis[0]
        .list(&ListParams::default().limit(1))
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut watch_clients = Vec::new();
    for _ in 0..10 {
        watch_clients.push(client(&server).await);
    }
    let mut watchers = Vec::new();
    for w in 0..WATCHERS {
        let api: Api<ConfigMap> = Api::namespaced(watch_clients[w % 10].clone(), "fan");
        let stream = api
            .watch(&WatchParams::default().timeout(290), &rv)
            .await
            .unwrap();
        watchers.push(tokio::spawn(async move {
            let mut stream = stream.boxed();
            let mut seen = 0;
            while seen < OBJECTS {
                if let Some(WatchEvent::Added(_)) = stream.try_next().await.unwrap() {
                    seen += 1;
                }
            }
            Instant::now()
        }));
    }
    let fan_apis: Vec<Api<ConfigMap>> = apis
        .iter()
        .map(|a| Api::namespaced(a.clone().into_client(), "fan"))
        .collect();
    let start = Instant::now();
    let wrote = create_all(&fan_apis, "f", OBJECTS).await;
    let mut last = start;
    for w in watchers {
        last = last.max(w.await.unwrap());
    }
    let delivered = last - start;
    println!(
        "fan-out: {OBJECTS} events x {WATCHERS} watchers = {} deliveries in {:.2} s ({:.0} deliveries/s; writes took {:.2} s)",
        OBJECTS * WATCHERS,
        delivered.as_secs_f64(),
        (OBJECTS * WATCHERS) as f64 / delivered.as_secs_f64(),
        wrote.as_secs_f64()
    );
    server.stop().await;
}
