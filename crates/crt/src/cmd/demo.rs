//! `crt demo`: an operator, end to end, on an embedded API server (or any cluster).
//!
//! 1. It installs a CustomResourceDefinition, `greetings.demo.crt.dev` ([`crd::Greeting`]: a
//!    spec with `replicas` and `message`, a status subresource with conditions, and the scale
//!    subresource on `.spec.replicas`).
//! 2. It runs an operator ([`operator`]) through a Manager: built with the Builder, `for_`
//!    Greetings, `owns` ConfigMaps. For each Greeting it keeps `replicas` ConfigMaps carrying
//!    `message`, reports them in the status with a `Ready` condition, tells what it changed in
//!    Kubernetes Events (the recorder), and deletes them through a finalizer when the Greeting
//!    goes. On the embedded server, the same Manager serves the Greeting's admission webhooks
//!    ([`webhook`]: a defaulter fills in an empty message, a validator refuses a bad one and
//!    warns on delete) over HTTPS, with a certificate made for the run, and installs their
//!    configuration on the API server, which calls them on every write of a Greeting. With
//!    `--kubeconfig` there are no webhooks: a cluster cannot call back into this process.
//! 3. It plays a scenario against the API ([`scenario`]) and checks each step's outcome,
//!    printing the pipeline as it runs ([`flow`]): event, predicate, handler, queue, reconcile,
//!    result.
//!
//! It ends with a summary and exit code 0, or a non-zero exit naming the step that failed. With
//! `--serve` the server and the operator keep running for kubectl until Ctrl-C or SIGTERM.
//!
//! ```text
//! crt demo                       # on an embedded API server
//! crt demo --kubeconfig ~/.kube/config
//! crt demo --serve               # then: kubectl --kubeconfig <printed path> get greetings -A
//! ```

/// `println!` that ignores a closed stdout (`crt demo | head`): the demo goes on and exits
/// normally instead of panicking on every later line.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

mod crd;
mod flow;
mod operator;
mod scenario;
mod webhook;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::cache::{ByObject, CacheOptions, namespaces};
use controller_runtime::controller::ControllerOptions;
use controller_runtime::envtest::{Environment, Running};
use controller_runtime::manager::{Manager, ManagerOptions};
use controller_runtime::webhook::admission::{mutate_path, validate_path};
use controller_runtime::workqueue::{QueueConfig, QueueOrder, Workqueue};
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

use crd::Greeting;
use flow::{FlowPredicate, FlowQueue, FlowReconciler, Notes, Stats};

/// The namespace the demo works in (created if missing).
pub const NAMESPACE: &str = "crt-demo";

/// Arguments of `crt demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The cluster to run on; without it, an embedded API server is started.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// After the scenario, keep the server and the operator running (for kubectl) until
    /// Ctrl-C or SIGTERM.
    #[arg(long)]
    pub serve: bool,
}

/// Runs the demo; an error names the step that failed.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let started = Instant::now();
    let (kubeconfig, embedded) = match &args.kubeconfig {
        Some(path) => (path.clone(), None),
        None => {
            // The embedded API server, started as a test environment: envtest also makes the
            // webhook server's certificate and installs the webhooks' configuration.
            let env = Environment::new()
                .use_existing_cluster(false)
                .start()
                .await
                .context("starting the embedded API server")?;
            let server = env
                .server()
                .context("the environment started no embedded API server")?;
            let path =
                std::env::temp_dir().join(format!("crt-demo-{}.kubeconfig", std::process::id()));
            server.write_kubeconfig(&path)?;
            say!("embedded API server at {}", server.url());
            (path.clone(), Some((env, RemoveOnDrop(path))))
        }
    };
    let client = client_from_file(&kubeconfig).await?;

    say!("== install the CustomResourceDefinition greetings.demo.crt.dev");
    scenario::install(&client).await?;

    // The operator: a Manager, and one controller built with the Builder.
    let stats = Arc::new(Stats::default());
    let env = embedded.as_ref().map(|(env, _)| env);
    let mgr = manager(client.clone(), env)?;
    let notes = Arc::new(Notes::default());
    let reconciler = FlowReconciler::new(
        operator::reconciler(mgr.client(), notes.clone(), stats.clone()),
        notes,
        stats.clone(),
    );
    ControllerBuilder::new(&mgr)
        .for_(Input::<Greeting>::new().with_predicate(FlowPredicate::new(stats.clone())))
        .owns(Input::<ConfigMap>::new().with_predicate(FlowPredicate::new(stats.clone())))
        .with_options(controller_options(&mgr))
        .complete_reconciler(reconciler)
        .await
        .context("building the greeting controller")?;
    // A cluster cannot call back into this process: webhooks only on the embedded server.
    if env.is_some() {
        webhook::register(&mgr).context("registering the Greeting's webhooks")?;
    }
    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        async move { mgr.start(ctx).await }
    });
    let webhooks = match env {
        Some(env) => Some(install_webhooks(&mgr, env).await?),
        None => None,
    };
    scenario::wait_started(&mgr).await?;
    say!(
        "== operator running: controller \"greeting\" (for Greeting, owns ConfigMap){}",
        endpoints(&mgr)
    );
    match &webhooks {
        Some(addr) => say!(
            "   webhooks at https://{addr}: {} defaults an empty message to {:?}, {} refuses \
             {:?} and messages over {} characters; installed on the API server",
            mutate_path::<Greeting>(),
            webhook::DEFAULT_MESSAGE,
            validate_path::<Greeting>(),
            webhook::FORBIDDEN,
            webhook::MAX_MESSAGE
        ),
        None => say!(
            "   webhooks: off (the cluster cannot call back into this process); Greetings are \
             checked by their schema only"
        ),
    }
    say!(
        "   an event prints: event | predicate | handler | queue; a reconcile: reconcile, then result"
    );

    let outcome = scenario::play(&client, &stats, webhooks.is_some()).await;
    if let Err(e) = outcome {
        ctx.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(5), running).await;
        return Err(e);
    }
    summary(&stats, started.elapsed());
    if let Some(addr) = mgr.metrics_addr() {
        print_metrics(addr).await;
    }

    if args.serve {
        say!("== serving: a new Greeting hello to play with");
        scenario::create_for_kubectl(&client).await?;
        scenario::settle(&stats).await;
        let path = kubeconfig.display();
        say!("== serving until Ctrl-C or SIGTERM");
        say!("   kubeconfig: {path}");
        say!("   try: kubectl --kubeconfig {path} -n {NAMESPACE} get greetings,configmaps");
        say!(
            "        kubectl --kubeconfig {path} -n {NAMESPACE} scale greeting/hello --replicas 3"
        );
        say!("        kubectl --kubeconfig {path} -n {NAMESPACE} describe greeting hello");
        if webhooks.is_some() {
            say!(
                "        kubectl --kubeconfig {path} -n {NAMESPACE} patch greeting hello --type merge \
                 -p '{{\"spec\":{{\"message\":\"goodbye\"}}}}'   # refused by the webhook"
            );
        }
        controller_runtime::manager::signal_handler()
            .cancelled()
            .await;
    }

    ctx.cancel();
    match tokio::time::timeout(Duration::from_secs(10), running).await {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => eprintln!("the manager stopped with an error: {e}"),
        Ok(Err(e)) => eprintln!("the manager task failed: {e}"),
        Err(_) => eprintln!("the manager did not stop within 10 s"),
    }
    match embedded {
        Some((env, _kubeconfig_file)) => {
            if let Err(e) = env.stop().await {
                eprintln!("stopping the embedded API server: {e}");
            }
        }
        None => say!(
            "   left on the cluster: namespace {NAMESPACE} and the CRD greetings.demo.crt.dev \
             (kubectl delete namespace {NAMESPACE}; kubectl delete crd greetings.demo.crt.dev)"
        ),
    }
    Ok(())
}

/// The Manager: its cache holds the demo namespace only, and of ConfigMaps only the operator's
/// (the label every child carries), so other ConfigMaps never reach the controller. Metrics and
/// probes listen on free ports (never a fixed one: tests run in parallel); on the embedded
/// server, so does the webhook server, with the certificate `env` made for it.
fn manager(client: kube_client::Client, env: Option<&Running>) -> anyhow::Result<Manager> {
    let cache = CacheOptions::default()
        .with_default_namespaces(namespaces([NAMESPACE]))
        .by_object::<ConfigMap>(
            &(),
            ByObject::default().with_label_selector(operator::MANAGED_BY),
        );
    let options = ManagerOptions::default()
        .with_cache(cache)
        .with_metrics_bind_address("127.0.0.1:0".parse()?)
        .with_health_probe_bind_address("127.0.0.1:0".parse()?)
        .with_graceful_shutdown_timeout(Duration::from_secs(5));
    let options = match env {
        Some(env) => options.with_webhook_server(
            env.webhook_options()
                .context("making the webhook serving certificate")?,
        ),
        None => options,
    };
    Manager::new(client, options).context("creating the manager")
}

/// Waits until the manager's webhook server listens, then installs the webhooks' configuration
/// objects on the embedded server (their URLs and the CA that signed the serving certificate),
/// so every later write of a Greeting goes through them. Returns where they are served.
async fn install_webhooks(mgr: &Manager, env: &Running) -> anyhow::Result<SocketAddr> {
    let addr = tokio::time::timeout(Duration::from_secs(30), mgr.webhook_server().listening())
        .await
        .context("the webhook server did not listen within 30 s")?
        .map_err(|e| anyhow::anyhow!("starting the webhook server: {e}"))?;
    env.install_webhooks(mgr.webhook_server())
        .await
        .context("installing the webhook configurations")?;
    Ok(addr)
}

/// The controller's options: the default priority queue, seen through [`FlowQueue`]; one
/// worker, so the printed reconciles come one at a time.
fn controller_options(mgr: &Manager) -> ControllerOptions {
    let metrics = mgr.metrics().workqueue.clone();
    ControllerOptions::default()
        .with_max_concurrent_reconciles(1)
        .with_new_queue(Arc::new(move |name, rate_limiter| {
            FlowQueue::wrap(Workqueue::new(
                QueueConfig::default()
                    .name(name)
                    .rate_limiter(rate_limiter)
                    .metrics(metrics.clone())
                    .order(QueueOrder::Priority),
            ))
        }))
}

/// Where the manager's HTTP endpoints listen, for the banner.
fn endpoints(mgr: &Manager) -> String {
    let mut out = String::new();
    if let Some(addr) = mgr.metrics_addr() {
        out.push_str(&format!("; metrics at http://{addr}/metrics"));
    }
    if let Some(addr) = mgr.health_probe_addr() {
        out.push_str(&format!(", probes at http://{addr}/readyz"));
    }
    out
}

fn summary(stats: &Stats, took: Duration) {
    let n = Stats::get;
    say!("== summary");
    say!(
        "   scenario: {} steps, each verified, in {:.2} s",
        scenario::STEPS,
        took.as_secs_f64()
    );
    say!(
        "   objects: 1 CustomResourceDefinition, 1 Greeting; the operator created {} ConfigMaps, updated {} objects, deleted {} ConfigMaps",
        n(&stats.created),
        n(&stats.updated),
        n(&stats.deleted)
    );
    say!(
        "   Events: the operator recorded {} (kubectl describe greeting shows them)",
        n(&stats.recorded)
    );
    say!(
        "   pipeline: {} watch events ({} dropped by the predicate), {} reconciles ({} failed and were retried)",
        n(&stats.events),
        n(&stats.filtered),
        n(&stats.reconciles),
        n(&stats.errors)
    );
}

/// Prints the controller's counters as the manager's `/metrics` serves them (controller-runtime's
/// metric names, so existing dashboards work).
async fn print_metrics(addr: std::net::SocketAddr) {
    let Ok(text) = http_get(addr, "/metrics").await else {
        return;
    };
    let wanted = [
        "controller_runtime_reconcile_total{",
        "controller_runtime_reconcile_errors_total{",
        "workqueue_adds_total{",
        // The webhook server's, when it serves the Greeting's webhooks.
        "controller_runtime_webhook_requests_total{",
    ];
    say!("   metrics (GET http://{addr}/metrics):");
    for line in text
        .lines()
        .filter(|l| wanted.iter().any(|w| l.starts_with(w)))
    {
        // The four result labels of reconcile_total: show the ones that happened.
        if !line.ends_with(" 0") || line.contains("errors_total") {
            say!("     {line}");
        }
    }
}

/// A plain HTTP/1.1 GET on a local address (the metrics server), body only.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut response))
        .await
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))??;
    Ok(response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default())
}

/// Removes the embedded server's kubeconfig file however `run` ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

async fn client_from_file(path: &Path) -> anyhow::Result<kube_client::Client> {
    let kubeconfig = kube_client::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let config =
        kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kube_client::Client::try_from(config)?)
}
