//! The Manager: runs controllers and everything they share.
//!
//! A [`Manager`] owns one [`Cache`], one [`Client`] reading from it, one metrics [`Registry`]
//! (with the runtime's [`Metrics`] registered), the HTTP endpoints for metrics and probes, and
//! optionally leader election. Everything it runs is a [`Runnable`], started by
//! [`Manager::start`] in controller-runtime's order and stopped in reverse:
//!
//! 1. HTTP servers (metrics, health probes)
//! 2. webhooks (the [webhook server](Manager::webhook_server), listening before the caches
//!    start)
//! 3. caches (and their wait for sync)
//! 4. other runnables that do not need leader election
//! 5. warm-up of the controllers that need leader election
//! 6. leader election, then the runnables that need it (on the leader only)
//!
//! A typical `main`:
//!
//! ```no_run
//! use controller_runtime::controller::{Controller, ControllerOptions};
//! use controller_runtime::handler::EnqueueRequestForObject;
//! use controller_runtime::manager::{signal_handler, Manager, ManagerOptions};
//! use controller_runtime::reconcile::{self, Action};
//! use controller_runtime::source::Kind;
//! use controller_runtime::Request;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // $KUBECONFIG, ~/.kube/config, or the pod's service account.
//!     let options = ManagerOptions::default().with_health_probe_bind_address(":8081".parse()?);
//!     let mgr = Manager::infer(options).await?;
//!
//!     let reconciler = reconcile::from_fn(|req: Request, _ctx| async move {
//!         println!("reconcile {req}");
//!         Ok(Action::done())
//!     });
//!     let options = ControllerOptions::default().with_metrics(mgr.metrics().clone());
//!     let controller = Controller::new("configmaps", reconciler, options)?;
//!     let configmaps = Kind::<ConfigMap>::new(mgr.cache().clone());
//!     controller.watch(configmaps, EnqueueRequestForObject, vec![]).await?;
//!     mgr.add(controller)?;
//!
//!     // Until SIGINT or SIGTERM, then a graceful stop.
//!     mgr.start(signal_handler()).await?;
//!     Ok(())
//! }
//! ```
//!
//! # Groups
//!
//! [`Manager::add`] puts a runnable in the group it names ([`Runnable::group`]): a
//! [`Controller`](crate::controller::Controller) goes to
//! [`LeaderElection`](RunnableGroup::LeaderElection) unless its options say it needs no
//! leader election. Runnables added before `start` wait for their group; added later, they
//! start at once if their group runs. A group starts once the previous one has: the caches
//! group only once the cache has synced, so controllers and other runnables start on a full
//! cache.
//!
//! # Stopping
//!
//! `start` returns when its token (or the [base context](ManagerOptions::with_base_context))
//! is cancelled, when a runnable fails
//! ([`Error::Runnable`]: the others are stopped first), or when leadership is lost
//! ([`Error::LeaderElectionLost`]). It cancels the groups one by one, last started first, each
//! waited for, all within [`graceful_shutdown_timeout`](ManagerOptions::with_graceful_shutdown_timeout):
//! running reconciles finish. What has not returned by then is abandoned
//! ([`Error::ShutdownTimeout`]). After losing the lease nothing is waited for: another
//! process may lead already.
//!
//! # Leader election
//!
//! With [`ManagerOptions::with_leader_election`] set, the manager campaigns for a
//! `coordination.k8s.io/v1` Lease after the warm-up and starts the leader-election group once
//! it holds it; [`Manager::is_leader`] and [`Manager::elected`] tell, and the
//! `leader_election_master_status{name}` gauge shows it. The group stops before the lease is
//! given up, so no reconcile runs on a process that is not the leader.
//!
//! # HTTP
//!
//! `/metrics` serves the [registry](Manager::registry) as OpenMetrics text with
//! controller-runtime's metric names, over plain HTTP by default, or over HTTPS and only to
//! scrapers the API server authenticates and authorizes, as
//! [`ManagerOptions::with_metrics_server`] says (see [`metrics::server`](crate::metrics::server));
//! the probe server serves `/healthz` and `/readyz`
//! (aggregate, `?verbose`, `?exclude=`, and `/healthz/<check>`), as Kubernetes components do.
//! The manager adds a `cache-sync` readiness check that fails until the caches have synced.
//! With [`ManagerOptions::with_pprof_bind_address`], a profiling server serves the tokio
//! runtime's stable metrics under `/debug/runtime` (controller-runtime's pprof server, in
//! Rust terms).
//!
//! # Controller defaults
//!
//! [`ManagerOptions::with_controller_defaults`] sets controller options once (a
//! [`ControllerOptions`]: concurrency, per group-kind concurrency, timeouts, name
//! validation, ...): every controller the
//! [`ControllerBuilder`](crate::builder::ControllerBuilder) builds on the manager takes those
//! its own options do not set ([`ControllerOptions::merge`]).

mod address;
mod error;
mod groups;
mod healthz;
mod http;
mod profiling;
mod run;
mod runnable;
mod signal;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

pub use address::{BindAddress, InvalidBindAddress};
pub use error::Error;
pub use healthz::Check;
pub use runnable::{Runnable, RunnableGroup, from_fn};
pub use signal::signal_handler;

use crate::cache::{Cache, CacheOptions};
use crate::client::Client;
use crate::controller::ControllerOptions;
use crate::leaderelection::LeaderElector;
use crate::metrics::Metrics;
use crate::metrics::server::Options as MetricsServerOptions;
use crate::recorder::Recorder;
use crate::sharding::ShardMetrics;
use crate::webhook::{Options as WebhookOptions, Server as WebhookServer};
use groups::{Groups, ReadyCheck};
use healthz::Checks;

/// How a [`Manager`] runs. Every field has controller-runtime's default; set the others with
/// the `with_*` setters (one per field).
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::leaderelection::LeaderElectionConfig;
/// use controller_runtime::manager::{BindAddress, ManagerOptions};
///
/// let options = ManagerOptions::default()
///     .with_health_probe_bind_address(":8081".parse()?)
///     .with_leader_election(LeaderElectionConfig::default().with_lease_name("my-operator"))
///     .with_graceful_shutdown_timeout(Duration::from_secs(10));
///
/// // Go's `":8081"` is every interface; `BindAddress::Disabled` is Go's `"0"`.
/// let probes: BindAddress = ":8081".parse()?;
/// assert_eq!(probes.to_string(), "0.0.0.0:8081");
/// let quiet = ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled);
/// # let _ = (options, quiet);
/// # Ok::<(), controller_runtime::manager::InvalidBindAddress>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ManagerOptions {
    /// The cache's options.
    pub(crate) cache: CacheOptions,
    /// Where `/metrics` is served (default `127.0.0.1:8080`; controller-runtime's `:8080`
    /// listens on every interface). Port 0 picks a free port (see [`Manager::metrics_addr`]).
    pub(crate) metrics_bind_address: BindAddress,
    /// Where `/healthz` and `/readyz` are served (default [`BindAddress::Disabled`], as
    /// controller-runtime). Port 0 picks a free port (see [`Manager::health_probe_addr`]).
    pub(crate) health_probe_bind_address: BindAddress,
    /// Leader election; `None` (default) disables it: every runnable starts at once.
    pub(crate) leader_election: Option<crate::leaderelection::LeaderElectionConfig>,
    /// How long [`Manager::start`] waits for runnables to stop after cancellation (default
    /// 30 s); zero: do not wait.
    pub(crate) graceful_shutdown_timeout: Duration,
    /// The webhook server's options (port 9443, certificates in
    /// `<temp dir>/k8s-webhook-server/serving-certs`); see [`Manager::webhook_server`].
    pub(crate) webhook_server: WebhookOptions,
    /// How `/metrics` is served (default plain HTTP, no authentication).
    pub(crate) metrics_server: MetricsServerOptions,
    /// The options every Builder-made controller takes unless its own set them.
    pub(crate) controller_defaults: ControllerOptions,
    /// A parent token: cancelled, the manager stops as when `start`'s token is (default none).
    pub(crate) base_context: Option<CancellationToken>,
    /// Where the profiling endpoint is served (default [`BindAddress::Disabled`]).
    pub(crate) pprof_bind_address: BindAddress,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            cache: CacheOptions::default(),
            metrics_bind_address: BindAddress::Addr(SocketAddr::from(([127, 0, 0, 1], 8080))),
            health_probe_bind_address: BindAddress::Disabled,
            leader_election: None,
            graceful_shutdown_timeout: Duration::from_secs(30),
            webhook_server: WebhookOptions::default(),
            metrics_server: MetricsServerOptions::default(),
            controller_defaults: ControllerOptions::default(),
            base_context: None,
            pprof_bind_address: BindAddress::Disabled,
        }
    }
}

impl ManagerOptions {
    /// The cache's options.
    pub fn with_cache(self, cache: CacheOptions) -> Self {
        ManagerOptions { cache, ..self }
    }

    /// Where `/metrics` is served (default `127.0.0.1:8080`; controller-runtime's `:8080`
    /// listens on every interface). Port 0 picks a free port (see [`Manager::metrics_addr`]).
    pub fn with_metrics_bind_address(self, addr: BindAddress) -> Self {
        ManagerOptions {
            metrics_bind_address: addr,
            ..self
        }
    }

    /// Where `/healthz` and `/readyz` are served (default [`BindAddress::Disabled`], as
    /// controller-runtime). Port 0 picks a free port (see [`Manager::health_probe_addr`]).
    pub fn with_health_probe_bind_address(self, addr: BindAddress) -> Self {
        ManagerOptions {
            health_probe_bind_address: addr,
            ..self
        }
    }

    /// Leader election; `None` (default) disables it: every runnable starts at once.
    pub fn with_leader_election(self, config: crate::leaderelection::LeaderElectionConfig) -> Self {
        ManagerOptions {
            leader_election: Some(config),
            ..self
        }
    }

    /// How long [`Manager::start`] waits for runnables to stop after cancellation (default
    /// 30 s); zero: do not wait.
    pub fn with_graceful_shutdown_timeout(self, timeout: Duration) -> Self {
        ManagerOptions {
            graceful_shutdown_timeout: timeout,
            ..self
        }
    }

    /// The webhook server's options (port 9443, certificates in
    /// `<temp dir>/k8s-webhook-server/serving-certs`); see [`Manager::webhook_server`].
    pub fn with_webhook_server(self, options: WebhookOptions) -> Self {
        ManagerOptions {
            webhook_server: options,
            ..self
        }
    }

    /// How `/metrics` is served at the metrics bind address (default plain HTTP, no
    /// authentication, as controller-runtime): HTTPS with
    /// [`with_secure_serving`](MetricsServerOptions::with_secure_serving), each scrape
    /// authenticated and authorized by the API server with
    /// [`with_authentication_and_authorization`](MetricsServerOptions::with_authentication_and_authorization)
    /// (controller-runtime's `Metrics: metricsserver.Options{...}`). See
    /// [`metrics::server`](crate::metrics::server).
    pub fn with_metrics_server(self, options: MetricsServerOptions) -> Self {
        ManagerOptions {
            metrics_server: options,
            ..self
        }
    }

    /// Controller options set once for every controller the
    /// [`ControllerBuilder`](crate::builder::ControllerBuilder) builds on this manager: each
    /// controller takes every option its own options did not set
    /// ([`ControllerOptions::merge`]: concurrency, per group-kind concurrency, rate limiter,
    /// panics, timeouts, leader election, name validation, ...). Default: none set.
    /// controller-runtime: `manager.Options.Controller` (`config.Controller`); kube-rs: none
    /// (`controller::Config` is per controller).
    pub fn with_controller_defaults(self, defaults: ControllerOptions) -> Self {
        ManagerOptions {
            controller_defaults: defaults,
            ..self
        }
    }

    /// A parent token for the manager: cancelling it stops the manager as cancelling the token
    /// given to [`Manager::start`] does (the groups stop in order, `start` returns `Ok(())`);
    /// every runnable's token is cancelled once it is. For a manager embedded in a larger
    /// program, or a test, that stops it from outside. A token cancelled before `start` makes
    /// `start` stop at once. Default: none (only `start`'s token stops the manager).
    /// controller-runtime: `manager.Options.BaseContext`; kube-rs: none (a shutdown future
    /// given to `Controller::graceful_shutdown_on`).
    pub fn with_base_context(self, ctx: CancellationToken) -> Self {
        ManagerOptions {
            base_context: Some(ctx),
            ..self
        }
    }

    /// Where the profiling endpoint listens: `GET /debug/runtime` serves the tokio runtime's
    /// stable metrics as JSON (workers, alive tasks, global queue depth, per-worker busy time
    /// and parks) and `GET /debug/pprof/` an index. Port 0 picks a free port (see
    /// [`Manager::pprof_addr`]). Default [`BindAddress::Disabled`] (Go's `"0"`).
    /// controller-runtime: `manager.Options.PprofBindAddress`; kube-rs: none.
    pub fn with_pprof_bind_address(self, addr: BindAddress) -> Self {
        ManagerOptions {
            pprof_bind_address: addr,
            ..self
        }
    }
}

/// See the [module docs](self). Cheap to clone; clones are the same manager.
#[derive(Clone)]
pub struct Manager {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    metrics: Metrics,
    registry: Arc<Mutex<Registry>>,
    options: ManagerOptions,
    groups: Groups,
    /// Runnable failures (and leadership loss), read by `start`.
    failures: mpsc::UnboundedSender<Error>,
    failures_rx: Mutex<Option<mpsc::UnboundedReceiver<Error>>>,
    controller_names: Mutex<HashSet<String>>,
    /// One event recorder per reporting controller name.
    recorders: Mutex<HashMap<String, Recorder>>,
    healthz: Checks,
    readyz: Checks,
    caches_synced: Arc<AtomicBool>,
    started: AtomicBool,
    elector: Option<Arc<LeaderElector>>,
    /// `leader_election_master_status{name}`, when leader election is on.
    leader_gauge: Option<Gauge>,
    /// `true` once the leader-election group has started.
    elected: watch::Sender<bool>,
    metrics_addr: Mutex<Option<SocketAddr>>,
    health_probe_addr: Mutex<Option<SocketAddr>>,
    pprof_addr: Mutex<Option<SocketAddr>>,
    webhook_server: WebhookServer,
    /// Whether the webhook server was added to the webhooks group (on first use).
    webhook_server_added: AtomicBool,
    /// The `controller_runtime_shard_*` families its sharded controllers count in.
    shard_metrics: ShardMetrics,
}

impl Manager {
    /// A manager on `client` (any kube-client: from a kubeconfig, in-cluster, or an embedded
    /// API server's kubeconfig). Nothing is contacted or bound until [`start`](Self::start);
    /// an unusable leader election configuration fails here ([`Error::LeaderElection`]).
    /// The manager sends through an instrumented clone of `client`, whose requests its
    /// registry counts (see [`metrics::rest_client`](crate::metrics::rest_client)).
    pub fn new(client: kube_client::Client, options: ManagerOptions) -> Result<Self, Error> {
        let mut registry = Registry::default();
        // client-go's rest_client_* families count every request of the manager's client (the
        // address is inside the client: `host` stays empty), the process_* families and the
        // cache's gauge of objects, as controller-runtime's registry has them.
        let client = crate::metrics::rest_client::RestClientMetrics::register(&mut registry)
            .instrument(client, "");
        crate::metrics::process::register(&mut registry);
        let elector = match &options.leader_election {
            Some(config) => Some(Arc::new(
                LeaderElector::new(client.clone(), config.clone())
                    .map_err(Error::LeaderElection)?,
            )),
            None => None,
        };
        let cache = Cache::new(client, options.cache.clone());
        cache.register_metrics(&mut registry);
        let metrics = Metrics::register(&mut registry);
        let shard_metrics = ShardMetrics::register(&mut registry);
        let leader_gauge = options.leader_election.as_ref().map(|config| {
            let family = Family::<Vec<(String, String)>, Gauge>::default();
            registry.register(
                "leader_election_master_status",
                "Whether this process leads the lease named by the label (1) or waits (0)",
                family.clone(),
            );
            family
                .get_or_create(&vec![("name".into(), config.lease_name.clone())])
                .clone()
        });
        let webhook_server =
            WebhookServer::new(options.webhook_server.clone(), metrics.webhook.clone());
        let (failures, failures_rx) = mpsc::unbounded_channel();
        let caches_synced = Arc::new(AtomicBool::new(false));
        let readyz = Checks::default();
        let synced = caches_synced.clone();
        readyz.add(
            "cache-sync".into(),
            Arc::new(move || {
                if synced.load(Ordering::Acquire) {
                    Ok(())
                } else {
                    Err("the caches have not synced yet".into())
                }
            }),
        );
        Ok(Manager {
            inner: Arc::new(Inner {
                client: Client::new(cache),
                metrics,
                registry: Arc::new(Mutex::new(registry)),
                recorders: Mutex::default(),
                options,
                groups: Groups::new(failures.clone()),
                failures,
                failures_rx: Mutex::new(Some(failures_rx)),
                controller_names: Mutex::default(),
                healthz: Checks::default(),
                readyz,
                caches_synced,
                started: AtomicBool::new(false),
                elector,
                leader_gauge,
                elected: watch::Sender::new(false),
                metrics_addr: Mutex::default(),
                health_probe_addr: Mutex::default(),
                pprof_addr: Mutex::default(),
                webhook_server,
                webhook_server_added: AtomicBool::new(false),
                shard_metrics,
            }),
        })
    }

    /// A manager on the cluster kube-client infers: `$KUBECONFIG` or `~/.kube/config`, else
    /// the in-cluster service account.
    pub async fn infer(options: ManagerOptions) -> Result<Self, Error> {
        let config = kube_client::Config::infer()
            .await
            .map_err(|e| Error::Kubeconfig(e.to_string()))?;
        Self::new(
            kube_client::Client::try_from(config).map_err(Error::Client)?,
            options,
        )
    }

    /// A manager on the cluster a kubeconfig file names (its current context).
    pub async fn from_kubeconfig_file(
        path: impl AsRef<std::path::Path>,
        options: ManagerOptions,
    ) -> Result<Self, Error> {
        let path = path.as_ref();
        let kubeconfig = kube_client::config::Kubeconfig::read_from(path)
            .map_err(|e| Error::Kubeconfig(format!("{}: {e}", path.display())))?;
        let config = kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .map_err(|e| Error::Kubeconfig(format!("{}: {e}", path.display())))?;
        Self::new(
            kube_client::Client::try_from(config).map_err(Error::Client)?,
            options,
        )
    }

    /// The cache every controller and the client read from.
    pub fn cache(&self) -> &Cache {
        self.inner.client.cache()
    }

    /// The event recorder reporting as `name` (controller-runtime's `GetEventRecorderFor`):
    /// Events about objects, written to `events.k8s.io/v1`, repetitions folded into a series.
    /// Every call with one name returns the same recorder, so repetitions from several places
    /// of a controller still fold into one Event.
    ///
    /// ```no_run
    /// # async fn f(mgr: controller_runtime::manager::Manager, pod: k8s_openapi::api::core::v1::Pod) {
    /// use controller_runtime::recorder::EventRecord;
    ///
    /// let recorder = mgr.event_recorder_for("pod-controller");
    /// let record = EventRecord::normal("Scheduled", "Reconcile").note("placed on node-1");
    /// recorder.publish_for(&record, &pod).await.unwrap();
    /// # }
    /// ```
    pub fn event_recorder_for(&self, name: &str) -> Recorder {
        self.inner
            .recorders
            .lock()
            .entry(name.to_string())
            .or_insert_with(|| Recorder::new(self.inner.client.kube_client().clone(), name))
            .clone()
    }

    /// The client: reads from the cache, writes to the API server.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The runtime's metric families, registered in [`registry`](Self::registry); hand them to
    /// controllers through `ControllerOptions::metrics` (the Builder does).
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The sharding metrics of the manager's sharded controllers (see
    /// [`sharding`](crate::sharding)), registered in its registry.
    pub fn shard_metrics(&self) -> &ShardMetrics {
        &self.inner.shard_metrics
    }

    /// The registry `/metrics` serves; register your own metrics here.
    pub fn registry(&self) -> &Arc<Mutex<Registry>> {
        &self.inner.registry
    }

    /// Adds a runnable to its [group](Runnable::group). Before `start` it waits for it; after,
    /// it starts at once when its group is running (else when the group starts). Fails with
    /// [`Error::Stopping`] once the manager is stopping.
    pub fn add(&self, runnable: impl Runnable) -> Result<(), Error> {
        self.inner.groups.add(Arc::new(runnable), None)
    }

    /// The webhook server (controller-runtime's `GetWebhookServer`), configured by
    /// [`ManagerOptions::with_webhook_server`]. The first call adds it to the
    /// [`Webhooks`](RunnableGroup::Webhooks) group, so a manager that never asks for it binds
    /// nothing; the manager starts the caches only once it listens. Register webhooks on it
    /// (the [`WebhookBuilder`](crate::builder::WebhookBuilder) does), before or after `start`,
    /// and its readiness check with
    /// `mgr.add_readyz_check("webhook", mgr.webhook_server().started_checker())`.
    pub fn webhook_server(&self) -> &WebhookServer {
        let server = &self.inner.webhook_server;
        if !self.inner.webhook_server_added.swap(true, Ordering::AcqRel) {
            let ready: ReadyCheck = Box::new({
                let server = server.clone();
                move |ctx: CancellationToken| {
                    Box::pin(async move {
                        tokio::select! {
                            listening = server.listening() => match listening {
                                Ok(_) => true,
                                // The server's own error stops the manager: wait for that.
                                Err(_) => {
                                    ctx.cancelled().await;
                                    false
                                }
                            },
                            _ = ctx.cancelled() => false,
                        }
                    })
                }
            });
            let runnable = Arc::new(runnable::WebhookServerRunnable(server.clone()));
            if let Err(e) = self.inner.groups.add(runnable, Some(ready)) {
                tracing::warn!(error = %e, "the webhook server was not added to the manager");
            }
        }
        server
    }

    /// Reserves a controller name in this manager; the Builder calls it, unless name validation
    /// is skipped ([`ControllerOptions::with_skip_name_validation`]). Fails for a name
    /// already taken.
    pub fn register_controller_name(&self, name: &str) -> Result<(), Error> {
        if self.inner.controller_names.lock().insert(name.to_string()) {
            Ok(())
        } else {
            Err(Error::DuplicateControllerName(name.to_string()))
        }
    }

    /// Adds a liveness check served under `/healthz/<name>` and folded into `/healthz`
    /// (replacing a check of that name).
    pub fn add_healthz_check(&self, name: impl Into<String>, check: Check) {
        self.inner.healthz.add(name.into(), check);
    }

    /// Adds a readiness check served under `/readyz/<name>` and folded into `/readyz`. The
    /// manager adds its own check that fails until the caches have synced.
    pub fn add_readyz_check(&self, name: impl Into<String>, check: Check) {
        self.inner.readyz.add(name.into(), check);
    }

    /// Whether this manager is the leader now (always `true` without leader election, once
    /// started).
    pub fn is_leader(&self) -> bool {
        match &self.inner.elector {
            Some(elector) => *elector.leader_status().borrow(),
            None => *self.inner.elected.borrow(),
        }
    }

    /// Resolves once this manager leads and its leader-election group has started (without
    /// leader election: once that group started). Never resolves if it never leads.
    pub async fn elected(&self) {
        let mut elected = self.inner.elected.subscribe();
        // The sender lives as long as `self`: this only returns once elected.
        let _ = elected.wait_for(|elected| *elected).await;
    }

    /// The bound address of the metrics server, once started.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        *self.inner.metrics_addr.lock()
    }

    /// The bound address of the health probe server, once started.
    pub fn health_probe_addr(&self) -> Option<std::net::SocketAddr> {
        *self.inner.health_probe_addr.lock()
    }

    /// The bound address of the profiling endpoint, once started (see
    /// [`ManagerOptions::with_pprof_bind_address`]); `None` when disabled.
    pub fn pprof_addr(&self) -> Option<std::net::SocketAddr> {
        *self.inner.pprof_addr.lock()
    }

    /// The controller defaults of [`ManagerOptions::with_controller_defaults`]
    /// (controller-runtime's `GetControllerOptions`); the Builder applies them.
    pub fn controller_defaults(&self) -> &ControllerOptions {
        &self.inner.options.controller_defaults
    }

    /// Runs everything until `ctx` (or the [base context](ManagerOptions::with_base_context))
    /// is cancelled, a runnable fails, or leadership is lost; then
    /// stops the groups in reverse order, waiting at most `graceful_shutdown_timeout`.
    ///
    /// Returns `Ok(())` after a clean stop on cancellation; the runnable's error, the lost
    /// lease, or [`Error::ShutdownTimeout`] when runnables had to be abandoned. Binding the HTTP
    /// servers fails at once with [`Error::Bind`]. A manager starts once.
    pub async fn start(&self, ctx: CancellationToken) -> Result<(), Error> {
        run::start(&self.inner, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{BindAddress, ManagerOptions};

    #[test]
    fn defaults_are_controller_runtimes_but_local() {
        let options = ManagerOptions::default();
        assert_eq!(options.metrics_bind_address.to_string(), "127.0.0.1:8080");
        assert_eq!(options.health_probe_bind_address, BindAddress::Disabled);
        assert!(options.leader_election.is_none());
        assert_eq!(options.graceful_shutdown_timeout, Duration::from_secs(30));
        let options = options.with_health_probe_bind_address(":8081".parse().unwrap());
        assert_eq!(
            options.health_probe_bind_address.to_string(),
            "0.0.0.0:8081"
        );
    }
}
