//! The Manager's options against the embedded API server: controller defaults set once for
//! every Builder-made controller, per group-kind concurrency, skipping name validation, the
//! base context, and the profiling endpoint.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::server;

use controller_runtime::builder::{ControllerBuilder, Error as BuilderError, Input};
use controller_runtime::controller::ControllerOptions;
use controller_runtime::manager::{BindAddress, Error, Manager, ManagerOptions};
use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileError};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_client::Resource;
use kube_client::api::{Api, PostParams};
use kube_client::core::ObjectMeta;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Options without HTTP servers (tests that want them set port 0; never 8080).
fn quiet() -> ManagerOptions {
    ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled)
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some("default".into()),
        name: Some(name.into()),
        ..Default::default()
    }
}

/// Creates ConfigMaps and Secrets `p-0` .. `p-{n-1}`.
async fn create_objects(client: &kube_client::Client, n: usize) {
    let cms = Api::<ConfigMap>::namespaced(client.clone(), "default");
    let secrets = Api::<Secret>::namespaced(client.clone(), "default");
    for i in 0..n {
        let name = format!("p-{i}");
        let cm = ConfigMap {
            metadata: meta(&name),
            ..Default::default()
        };
        cms.create(&PostParams::default(), &cm).await.unwrap();
        let secret = Secret {
            metadata: meta(&name),
            ..Default::default()
        };
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .unwrap();
    }
}

/// Waits (at most 20 s, polling) until `cond` holds; panics with `what` otherwise.
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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

/// Counts a controller's reconciles of the `p-*` objects: how many run now, the most that ran
/// at once, how many finished. Each waits for the gate to open.
struct Probe {
    in_flight: AtomicUsize,
    max: AtomicUsize,
    done: AtomicUsize,
    gate: watch::Sender<bool>,
}

impl Probe {
    fn new() -> Arc<Self> {
        Arc::new(Probe {
            in_flight: AtomicUsize::new(0),
            max: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            gate: watch::Sender::new(false),
        })
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    fn max(&self) -> usize {
        self.max.load(Ordering::SeqCst)
    }

    fn done(&self) -> usize {
        self.done.load(Ordering::SeqCst)
    }

    fn open(&self) {
        self.gate.send_replace(true);
    }
}

/// The reconcile function of a probed controller of any kind.
async fn probe<K: Resource>(
    object: Arc<K>,
    ctx: ReconcileContext<Probe>,
) -> Result<Action, ReconcileError> {
    if !object
        .meta()
        .name
        .as_deref()
        .unwrap_or("")
        .starts_with("p-")
    {
        return Ok(Action::done());
    }
    let now = ctx.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    ctx.max.fetch_max(now, Ordering::SeqCst);
    let mut gate = ctx.gate.subscribe();
    let _ = gate.wait_for(|open| *open).await;
    ctx.in_flight.fetch_sub(1, Ordering::SeqCst);
    ctx.done.fetch_add(1, Ordering::SeqCst);
    Ok(Action::done())
}

/// Waits until each probe has `want` reconciles in flight, gives any extra worker time to
/// take one of the queued objects too, checks none did, then lets all `n` finish.
async fn assert_concurrency(probes: &[(&str, &Probe, usize)], n: usize) {
    eventually("the workers are busy", || {
        probes.iter().all(|(_, p, want)| p.in_flight() == *want)
    })
    .await;
    // More workers would have taken more of the queued objects by now (an upper bound: a
    // slow machine can only make this pass, not fail).
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (name, p, want) in probes {
        assert_eq!(p.max(), *want, "{name}: reconciles at once");
    }
    for (_, p, _) in probes {
        p.open();
    }
    eventually("every object is reconciled", || {
        probes.iter().all(|(_, p, _)| p.done() >= n)
    })
    .await;
    for (name, p, want) in probes {
        assert_eq!(p.max(), *want, "{name}: reconciles at once");
    }
}

/// The `controller_runtime_max_concurrent_reconciles` value of `controller` in `mgr`'s
/// registry (set when the controller is built).
fn max_concurrent_gauge(mgr: &Manager, controller: &str) -> Option<i64> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &mgr.registry().lock()).unwrap();
    let prefix =
        format!("controller_runtime_max_concurrent_reconciles{{controller=\"{controller}\"}} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map(|value| value.trim().parse().unwrap())
}

#[tokio::test]
async fn manager_defaults_apply_unless_the_controller_sets_them() {
    let (_server, client) = server().await;
    create_objects(&client, 6).await;
    let defaults = ControllerOptions::default().with_max_concurrent_reconciles(3);
    let mgr = Manager::new(client, quiet().with_controller_defaults(defaults)).unwrap();
    let (by_default, explicit) = (Probe::new(), Probe::new());
    ControllerBuilder::new(&mgr)
        .named("by-default")
        .for_(Input::<ConfigMap>::new())
        .complete(by_default.clone(), probe)
        .await
        .unwrap();
    // Set explicitly to the controller's own default: still set, so the manager's does not
    // apply.
    ControllerBuilder::new(&mgr)
        .named("explicit")
        .for_(Input::<ConfigMap>::new())
        .with_options(ControllerOptions::default().with_max_concurrent_reconciles(1))
        .complete(explicit.clone(), probe)
        .await
        .unwrap();

    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    assert_concurrency(
        &[("by-default", &by_default, 3), ("explicit", &explicit, 1)],
        6,
    )
    .await;
    ctx.cancel();
    join(running).await.unwrap();
}

#[tokio::test]
async fn group_kind_concurrency_overrides_the_default_for_that_kind_only() {
    let (_server, client) = server().await;
    create_objects(&client, 6).await;
    let defaults = ControllerOptions::default()
        .with_max_concurrent_reconciles(2)
        // The core group's key is the kind alone, as Go's `GroupKind.String()`.
        .with_group_kind_concurrency("ConfigMap", 3)
        .with_group_kind_concurrency("Deployment.apps", 4);
    let mgr = Manager::new(client, quiet().with_controller_defaults(defaults)).unwrap();
    let (configmaps, secrets) = (Probe::new(), Probe::new());
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .complete(configmaps.clone(), probe)
        .await
        .unwrap();
    ControllerBuilder::new(&mgr)
        .for_(Input::<Secret>::new())
        .complete(secrets.clone(), probe)
        .await
        .unwrap();
    // A kind of a named group: `Kind.group`. Built only (no Deployment is reconciled): the
    // gauge tells its workers.
    ControllerBuilder::new(&mgr)
        .for_(Input::<Deployment>::new())
        .complete(Probe::new(), probe)
        .await
        .unwrap();
    assert_eq!(max_concurrent_gauge(&mgr, "configmap"), Some(3));
    assert_eq!(max_concurrent_gauge(&mgr, "secret"), Some(2));
    assert_eq!(max_concurrent_gauge(&mgr, "deployment"), Some(4));

    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    assert_concurrency(&[("configmap", &configmaps, 3), ("secret", &secrets, 2)], 6).await;
    ctx.cancel();
    join(running).await.unwrap();
}

async fn noop(_cm: Arc<ConfigMap>, _ctx: ReconcileContext) -> Result<Action, ReconcileError> {
    Ok(Action::done())
}

/// Builds (without adding) a ConfigMap controller named "same", skipping name validation as
/// `skip` says (the manager's default when `None`).
async fn build_same(mgr: &Manager, skip: Option<bool>) -> Result<(), BuilderError> {
    let mut builder = ControllerBuilder::new(mgr)
        .named("same")
        .for_(Input::<ConfigMap>::new());
    if let Some(skip) = skip {
        builder =
            builder.with_options(ControllerOptions::default().with_skip_name_validation(skip));
    }
    builder.build(Arc::new(()), noop).await.map(drop)
}

#[tokio::test]
async fn skip_name_validation_lets_controllers_share_a_name() {
    let (_server, client) = server().await;

    // By default, a name is taken once.
    let mgr = Manager::new(client.clone(), quiet()).unwrap();
    build_same(&mgr, None).await.unwrap();
    assert!(matches!(
        build_same(&mgr, None).await,
        Err(BuilderError::DuplicateName(name)) if name == "same"
    ));
    // The controller's own option.
    build_same(&mgr, Some(true)).await.unwrap();
    build_same(&mgr, Some(true)).await.unwrap();

    // The manager's default: many alike.
    let defaults = ControllerOptions::default().with_skip_name_validation(true);
    let mgr = Manager::new(client, quiet().with_controller_defaults(defaults)).unwrap();
    for _ in 0..3 {
        build_same(&mgr, None).await.unwrap();
    }
    // Skipped names were not reserved: the first to validate takes it; the next is refused.
    build_same(&mgr, Some(false)).await.unwrap();
    assert!(matches!(
        build_same(&mgr, Some(false)).await,
        Err(BuilderError::DuplicateName(_))
    ));
    // Skipping still works alongside.
    build_same(&mgr, None).await.unwrap();
}

#[tokio::test]
async fn cancelling_the_base_context_stops_the_manager() {
    let (_server, client) = server().await;
    let base = CancellationToken::new();
    let mgr = Manager::new(client, quiet().with_base_context(base.clone())).unwrap();
    let probe = Probe::new();
    probe.open();
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .complete(probe, probe_fn)
        .await
        .unwrap();
    // A runnable sees the stop through its own token.
    let stopped = CancellationToken::new();
    mgr.add(controller_runtime::manager::from_fn(
        "watcher",
        controller_runtime::manager::RunnableGroup::Others,
        {
            let stopped = stopped.clone();
            move |ctx: CancellationToken| {
                let stopped = stopped.clone();
                async move {
                    ctx.cancelled().await;
                    stopped.cancel();
                    Ok(())
                }
            }
        },
    ))
    .unwrap();

    // `start`'s own token is never cancelled.
    let running = spawn_start(&mgr, &CancellationToken::new());
    tokio::time::timeout(Duration::from_secs(10), mgr.elected())
        .await
        .expect("started");
    assert!(!running.is_finished());
    base.cancel();
    join(running).await.unwrap();
    assert!(stopped.is_cancelled(), "the runnable was stopped");

    // Cancelled before `start`: it stops at once.
    let (_server, client) = server().await;
    let base = CancellationToken::new();
    base.cancel();
    let mgr = Manager::new(client, quiet().with_base_context(base)).unwrap();
    join(spawn_start(&mgr, &CancellationToken::new()))
        .await
        .unwrap();
}

/// `probe` for ConfigMaps, named.
async fn probe_fn(
    cm: Arc<ConfigMap>,
    ctx: ReconcileContext<Probe>,
) -> Result<Action, ReconcileError> {
    probe(cm, ctx).await
}

/// A plain HTTP/1.1 GET: (status, body).
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a full response");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_string())
}

#[tokio::test]
async fn profiling_endpoint_serves_runtime_metrics_when_enabled() {
    let (_server, client) = server().await;

    // Disabled by default.
    let mgr = Manager::new(client.clone(), quiet()).unwrap();
    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    tokio::time::timeout(Duration::from_secs(10), mgr.elected())
        .await
        .expect("started");
    assert_eq!(mgr.pprof_addr(), None);
    ctx.cancel();
    join(running).await.unwrap();

    let options = quiet().with_pprof_bind_address("127.0.0.1:0".parse().unwrap());
    let mgr = Manager::new(client, options).unwrap();
    let ctx = CancellationToken::new();
    let running = spawn_start(&mgr, &ctx);
    tokio::time::timeout(Duration::from_secs(10), mgr.elected())
        .await
        .expect("started");
    let addr = mgr.pprof_addr().expect("bound");
    let (status, body) = get(addr, "/debug/runtime").await;
    assert_eq!(status, 200, "{body}");
    let metrics: serde_json::Value = serde_json::from_str(&body).unwrap();
    // `#[tokio::test]` runs a current-thread runtime: one worker.
    assert_eq!(metrics["num_workers"], 1, "{body}");
    assert!(metrics["num_alive_tasks"].as_u64().unwrap() > 0, "{body}");
    assert!(metrics["global_queue_depth"].is_u64(), "{body}");
    let (status, index) = get(addr, "/debug/pprof/").await;
    assert_eq!(status, 200);
    assert!(index.contains("/debug/runtime"), "{index}");
    assert_eq!(get(addr, "/debug/pprof/profile").await.0, 404);
    ctx.cancel();
    join(running).await.unwrap();
}
