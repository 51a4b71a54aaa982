//! The Manager: runs controllers and everything they share.
//!
//! A [`Manager`] owns one [`Cache`], one [`Client`] reading from it, one metrics [`Registry`]
//! (with the runtime's [`Metrics`] registered), the HTTP endpoints for metrics and probes, and
//! optionally leader election. Everything it runs is a [`Runnable`], started by
//! [`Manager::start`] in controller-runtime's order and stopped in reverse:
//!
//! 1. HTTP servers (metrics, health probes)
//! 2. webhooks
//! 3. caches (and their wait for sync)
//! 4. other runnables that do not need leader election
//! 5. warm-up of the controllers that need leader election
//! 6. leader election, then the runnables that need it (on the leader only)
//!
//! SKELETON: the API below is fixed; the bodies are being written.

mod runnable;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

pub use runnable::{BoxError, Runnable, RunnableGroup, from_fn};

use crate::cache::{Cache, CacheOptions};
use crate::client::Client;
use crate::metrics::Metrics;

/// Why a manager could not be built, or why it stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kube-client configuration could not be loaded or a client built.
    #[error("building the kube client: {0}")]
    Client(#[source] kube_client::Error),
    /// The kubeconfig could not be read or used.
    #[error("loading the kubeconfig: {0}")]
    Kubeconfig(String),
    /// Two controllers with one name were added to the manager.
    #[error("a controller named {0:?} already exists in this manager")]
    DuplicateControllerName(String),
    /// `start` was called a second time.
    #[error("the manager was started more than once")]
    AlreadyStarted,
    /// A runnable failed; the manager stopped the others.
    #[error("runnable {name} failed: {source}")]
    Runnable {
        /// The runnable's name.
        name: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
    /// The caches did not sync.
    #[error("the caches did not sync")]
    CacheSync,
    /// Leadership was lost: the manager stopped.
    #[error("leader election lost")]
    LeaderElectionLost,
    /// The HTTP server could not bind its address.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// How a [`Manager`] runs. Every field has controller-runtime's default.
#[derive(Clone)]
pub struct ManagerOptions {
    /// The cache's options.
    pub cache: CacheOptions,
    /// Where `/metrics` is served (default `127.0.0.1:8080`, controller-runtime's `:8080`);
    /// `None` disables it. Port 0 picks a free port (see [`Manager::metrics_addr`]).
    pub metrics_bind_address: Option<String>,
    /// Where `/healthz` and `/readyz` are served (default `None`: disabled, as
    /// controller-runtime). Port 0 picks a free port (see [`Manager::health_probe_addr`]).
    pub health_probe_bind_address: Option<String>,
    /// Leader election; `None` (default) disables it: every runnable starts at once.
    pub leader_election: Option<crate::leaderelection::LeaderElectionConfig>,
    /// How long [`Manager::start`] waits for runnables to stop after cancellation (default
    /// 30 s); zero: do not wait.
    pub graceful_shutdown_timeout: Duration,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            cache: CacheOptions::default(),
            metrics_bind_address: Some("127.0.0.1:8080".into()),
            health_probe_bind_address: None,
            leader_election: None,
            graceful_shutdown_timeout: Duration::from_secs(30),
        }
    }
}

/// A health or readiness check: `Ok(())` when healthy, else why not.
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

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
}

impl Manager {
    /// A manager on `client` (any kube-client: from a kubeconfig, in-cluster, or an embedded
    /// API server's kubeconfig).
    pub fn new(client: kube_client::Client, options: ManagerOptions) -> Result<Self, Error> {
        let cache = Cache::new(client, options.cache.clone());
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        Ok(Manager {
            inner: Arc::new(Inner {
                client: Client::new(cache),
                metrics,
                registry: Arc::new(Mutex::new(registry)),
                options,
            }),
        })
    }

    /// A manager on the cluster kube-client infers: `$KUBECONFIG` or `~/.kube/config`, else
    /// the in-cluster service account.
    pub async fn infer(options: ManagerOptions) -> Result<Self, Error> {
        let _ = options;
        todo!()
    }

    /// A manager on the cluster a kubeconfig file names (its current context).
    pub async fn from_kubeconfig_file(
        path: impl AsRef<std::path::Path>,
        options: ManagerOptions,
    ) -> Result<Self, Error> {
        let _ = (path.as_ref(), options);
        todo!()
    }

    /// The cache every controller and the client read from.
    pub fn cache(&self) -> &Cache {
        self.inner.client.cache()
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

    /// The registry `/metrics` serves; register your own metrics here.
    pub fn registry(&self) -> &Arc<Mutex<Registry>> {
        &self.inner.registry
    }

    /// The manager's options.
    pub fn options(&self) -> &ManagerOptions {
        &self.inner.options
    }

    /// Adds a runnable. Before `start` it waits for it; after, it starts at once (in its group
    /// when that group is running).
    pub fn add(&self, runnable: impl Runnable) -> Result<(), Error> {
        let _ = runnable;
        todo!()
    }

    /// Reserves a controller name in this manager; the Builder calls it. Fails for a name
    /// already taken.
    pub fn register_controller_name(&self, name: &str) -> Result<(), Error> {
        let _ = name;
        todo!()
    }

    /// Adds a liveness check served under `/healthz/<name>` and folded into `/healthz`.
    pub fn add_healthz_check(&self, name: impl Into<String>, check: Check) {
        let _ = (name.into(), check);
        todo!()
    }

    /// Adds a readiness check served under `/readyz/<name>` and folded into `/readyz`. The
    /// manager adds its own check that fails until the caches have synced.
    pub fn add_readyz_check(&self, name: impl Into<String>, check: Check) {
        let _ = (name.into(), check);
        todo!()
    }

    /// Whether this manager is the leader now (always `true` without leader election, once
    /// started).
    pub fn is_leader(&self) -> bool {
        todo!()
    }

    /// Resolves once this manager is the leader (at once without leader election).
    pub async fn elected(&self) {
        todo!()
    }

    /// The bound address of the metrics server, once started.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        todo!()
    }

    /// The bound address of the health probe server, once started.
    pub fn health_probe_addr(&self) -> Option<std::net::SocketAddr> {
        todo!()
    }

    /// Runs everything until `ctx` is cancelled, a runnable fails, or leadership is lost; then
    /// stops the groups in reverse order, waiting at most `graceful_shutdown_timeout`.
    pub async fn start(&self, ctx: CancellationToken) -> Result<(), Error> {
        let _ = ctx;
        todo!()
    }
}

/// A token cancelled on the first SIGINT (Ctrl-C) or SIGTERM; a second signal exits the
/// process with code 1 (controller-runtime's `SetupSignalHandler`).
pub fn signal_handler() -> CancellationToken {
    todo!()
}
