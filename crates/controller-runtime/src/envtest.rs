//! A test environment for operators: one call starts an embedded Kubernetes API server, installs
//! your CRDs and hands back a ready client (controller-runtime's `envtest`, with nothing to
//! download: the server is [`crt_apiserver`], in this process).
//!
//! Enable the `envtest` feature where your tests are:
//!
//! ```toml
//! [dev-dependencies]
//! controller-runtime = { version = "0.1", features = ["envtest"] }
//! ```
//!
//! An operator's test, from nothing to a running [`Manager`](crate::manager::Manager) reconciling
//! a custom resource in ten lines (the type and the reconciler are the operator's own code):
//!
//! ```
//! use std::time::Duration;
//! use controller_runtime::envtest::Environment;
//! use controller_runtime::prelude::*;
//! use kube_client::{Api, api::{Patch, PatchParams, PostParams}};
//! use kube_derive::CustomResource;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! // The operator: a custom resource...
//! #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Guestbook")]
//! #[kube(namespaced, status = "GuestbookStatus")]
//! # #[kube(crates(kube_core = "::kube_core"))]
//! pub struct GuestbookSpec {
//!     pub greeting: String,
//! }
//! #[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! pub struct GuestbookStatus {
//!     pub seen: bool,
//! }
//!
//! // ...and its reconciler, which marks every Guestbook seen.
//! async fn reconcile(
//!     gb: Arc<Guestbook>,
//!     client: ReconcileContext<kube_client::Client>,
//! ) -> Result<Action, ReconcileError> {
//!     let api = Api::<Guestbook>::namespaced((*client).clone(), &gb.namespace().unwrap());
//!     let status = Patch::Merge(serde_json::json!({ "status": { "seen": true } }));
//!     api.patch_status(&gb.name_any(), &PatchParams::default(), &status)
//!         .await
//!         .map_err(ReconcileError::new)?;
//!     Ok(Action::done())
//! }
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The test: ten lines from nothing to a running manager, then what the test checks.
//! let env = Environment::new().crd::<Guestbook>().start().await?;
//! // Tests run side by side: no metrics server on a fixed port.
//! let options = ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled);
//! let mgr = Manager::new(env.client(), options)?;
//! ControllerBuilder::new(&mgr)
//!     .for_(Input::<Guestbook>::new())
//!     .complete(Arc::new(env.client()), reconcile)
//!     .await?;
//! let stop = CancellationToken::new();
//! let (run, test) = tokio::join!(mgr.start(stop.clone()), async {
//!     let _stop_manager = stop.clone().drop_guard(); // when the steps below end, however
//!     let api: Api<Guestbook> = Api::default_namespaced(env.client());
//!     let hello = Guestbook::new("hello", GuestbookSpec::default());
//!     api.create(&PostParams::default(), &hello).await?;
//!     tokio::time::timeout(Duration::from_secs(30), async {
//!         while api.get_status("hello").await?.status.is_none() {
//!             tokio::time::sleep(Duration::from_millis(10)).await;
//!         }
//!         Ok::<_, kube_client::Error>(())
//!     })
//!     .await??;
//!     Ok::<_, Box<dyn std::error::Error>>(())
//! });
//! run?;
//! test?;
//! env.stop().await?;
//! # Ok(()) }
//! ```
//!
//! ## What [`Environment::start`] does
//!
//! 1. Reads the CRDs of every [`crd_path`](Environment::crd_path) and the manifests of every
//!    [`manifest_path`](Environment::manifest_path) (before anything starts, so
//!    a bad file fails fast): a file, or a directory's `.yaml`, `.yml` and `.json` files in
//!    name order (not its subdirectories). A YAML file may hold several documents; each of a
//!    CRD path must be an `apiextensions.k8s.io/v1` `CustomResourceDefinition`, or the start
//!    fails naming the file and the document ([`Error::NotACrd`]). A path that does not exist is an error too
//!    (envtest skips it unless told otherwise; here a typo does not silently test nothing).
//! 2. Starts an embedded API server on a free port of `127.0.0.1` with a fresh CA and token, or,
//!    for an [existing cluster](#an-existing-cluster), reads the kubeconfig `$KUBECONFIG` names
//!    (or `~/.kube/config`).
//! 3. Installs every CRD, those of [`crd`](Environment::crd) and
//!    [`crd_object`](Environment::crd_object) and those read from files: creates it, or updates
//!    its spec when it exists (a second run against one cluster), then waits until its
//!    `Established` condition is `True` and discovery lists its resource in every served
//!    version: a client, a cache or a [`Manager`](crate::manager::Manager) can use it as soon
//!    as `start` returns. A CRD not ready within
//!    [`crd_install_timeout`](Environment::crd_install_timeout) (10 s by default, as envtest)
//!    fails the start with [`Error::CrdNotReady`], saying what it last saw.
//! 4. Installs the [manifests](#installing-manifests), Namespaces first.
//!
//! ## Installing manifests
//!
//! Beside CRDs, an operator ships manifests, above all its RBAC: the ServiceAccount it runs
//! as, its Roles and ClusterRoles, and their bindings. [`manifest_path`](Environment::manifest_path)
//! reads them from files or directories as `crd_path` reads CRDs (any kind, several documents
//! a file; each needs `apiVersion`, `kind` and `metadata.name`, or the start fails naming the
//! file and the document, [`Error::ParseManifest`]), and
//! [`manifest_object`](Environment::manifest_object) takes objects built in code. Once the
//! CRDs are served, each is created, or updated to the manifest when it exists, by a forced
//! server-side apply (field manager `envtest`): Namespaces first, then the rest in order; a
//! namespaced object without a namespace goes to `default`. A kind the server does not serve,
//! or an object it refuses, fails the start with [`Error::InstallManifest`], naming the
//! object, where it came from and the server's reason.
//!
//! ## Running as a ServiceAccount
//!
//! The environment's own client is an administrator: it may do everything, so a test running
//! the operator with it cannot notice a permission missing from the operator's RBAC. Run the
//! operator as its ServiceAccount instead, with your RBAC manifests installed, and a missing
//! permission fails the test as it fails in production, saying what was refused: the
//! controller's [`SyncTimeout`](crate::controller::Error::SyncTimeout) ends with the API
//! server's `configmaps is forbidden: User "system:serviceaccount:system:my-operator" cannot
//! list resource "configmaps" ...`, and the informer logs it once as a warning.
//!
//! ```no_run
//! use controller_runtime::envtest::Environment;
//! use controller_runtime::prelude::*;
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! // config/rbac/: service_account.yaml, role.yaml, role_binding.yaml, as deployed.
//! let env = Environment::new()
//!     .manifest_path("config/rbac")
//!     .start()
//!     .await?;
//! // The operator's identity: a token of its ServiceAccount, asked through TokenRequest.
//! let operator = env.service_account_client("system", "my-operator").await?;
//! let options = ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled);
//! let mgr = Manager::new(operator, options)?;
//! // ... the controllers, as in main; the test's own reads and writes use env.client().
//! # Ok(()) }
//! ```
//!
//! Which role is enough follows from behaviour: the embedded server records, per user, every
//! access it allowed once its [`access_recorder`](crt_apiserver::Server::access_recorder) is
//! started, and [`rbac`] turns a recording into the minimal ClusterRole and compares a
//! shipped role with it (what it lacks, what it grants and nobody used).
//!
//! [`Running::service_account_config`] creates the ServiceAccount (and its namespace) when the
//! manifests do not, and needs an API server that issues ServiceAccount tokens through the
//! TokenRequest subresource (`kubectl create token`); one that does not is named in the
//! error ([`Error::TokenRequest`]).
//!
//! ## A simulated cluster
//!
//! By default the environment is Go envtest's: an API server and nothing else, so a pod stays
//! `Pending` and a Deployment never gets a ReplicaSet. [`Environment::simulate_cluster`] adds a
//! simulated cluster ([`crt_cluster`]): nodes, a scheduler, kubelets that run the bound pods
//! (annotations script delays, failures and crash loops), and kube-controller-manager's
//! workload controllers (Deployments, ReplicaSets, ReplicationControllers, StatefulSets,
//! DaemonSets, Jobs, CronJobs, Services' endpoints, claims bound to provisioned volumes,
//! quota usage, disruption budgets; the
//! crate's docs list them and what each leaves out), so an operator that owns workloads or
//! Services can be tested on what they become.
//!
//! ## An existing cluster
//!
//! Set `USE_EXISTING_CLUSTER=true` (or `1`) and the same tests run against the cluster
//! `$KUBECONFIG` names instead of an embedded server, as with envtest;
//! [`use_existing_cluster`](Environment::use_existing_cluster) decides in code and wins over the
//! variable. CRDs are installed there the same way; they stay after the test unless
//! [`clean_up_after_use`](Environment::clean_up_after_use) asks [`Running::stop`] to delete
//! them (envtest's `CRDInstallOptions.CleanUpAfterUse`).
//!
//! ## Webhooks
//!
//! As envtest's `WebhookInstallOptions`: [`Running::webhook_options`] gives the options of a
//! webhook server serving on `127.0.0.1` at a free port with a certificate made for the
//! environment; once the manager's webhooks are registered, [`Running::install_webhooks`]
//! writes their configuration objects (`url: https://127.0.0.1:<port>/<path>`, the CA bundle)
//! and the conversion stanza of the installed CRDs, so the API server calls this process.
//!
//! ## Waiting for a controller
//!
//! A controller acts some time after a test's write: [`eventually()`] polls a read (from the API
//! server through a `kube_client::Client`, or from a started [`Cache`](crate::cache::Cache))
//! until an object passes a check, is gone, or a list has the expected length (or any async
//! check of yours returns `Some`, with [`Eventually::until`]), and fails after
//! a timeout saying what it last saw (controller-runtime's `komega` with Gomega's
//! `Eventually`): `eventually(&env.client()).until_object(&key, |cm: &ConfigMap| ...).await?`.
//!
//! ## Stopping
//!
//! [`Running::stop`] deletes the CRDs it was asked to clean up, then stops the embedded server:
//! its port is closed and every connection ended when `stop` returns. Dropping a [`Running`]
//! stops the embedded server too (its port closes shortly after, on the runtime), but cannot
//! delete CRDs from an existing cluster: that needs the `async` [`Running::stop`].

mod crds;
mod documents;
mod error;
pub mod eventually;
mod manifests;
pub mod rbac;
mod service_account;
mod webhooks;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Api;
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_core::CustomResourceExt;

pub use error::Error;
pub use eventually::{Eventually, eventually};
pub use webhooks::{MUTATING_CONFIGURATION, VALIDATING_CONFIGURATION};

/// The shape of the simulated cluster [`Environment::simulate_cluster`] runs.
pub use crt_cluster::ClusterConfig;

/// The environment variable that points tests at an existing cluster (`true` or `1`), as
/// envtest's.
pub const USE_EXISTING_CLUSTER: &str = "USE_EXISTING_CLUSTER";

/// What a test environment starts with: CRDs, and where to run (an embedded API server, or an
/// existing cluster). Build one with the methods below, then [`start`](Self::start) it. See the
/// [module docs](self).
#[derive(Clone, Debug)]
pub struct Environment {
    crds: Vec<CustomResourceDefinition>,
    crd_paths: Vec<PathBuf>,
    manifest_paths: Vec<PathBuf>,
    /// Objects given in code, or why one could not be serialized.
    manifest_objects: Vec<Result<serde_json::Value, String>>,
    use_existing_cluster: Option<bool>,
    crd_install_timeout: Duration,
    clean_up_after_use: bool,
    cluster: Option<ClusterConfig>,
}

impl Default for Environment {
    fn default() -> Self {
        Environment {
            crds: Vec::new(),
            crd_paths: Vec::new(),
            manifest_paths: Vec::new(),
            manifest_objects: Vec::new(),
            use_existing_cluster: None,
            crd_install_timeout: Duration::from_secs(10),
            clean_up_after_use: false,
            cluster: None,
        }
    }
}

impl Environment {
    /// An environment with no CRDs, on an embedded API server unless `USE_EXISTING_CLUSTER`
    /// says otherwise.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs the CRD of `K`, a `#[derive(CustomResource)]` type (`K::crd()`).
    pub fn crd<K: CustomResourceExt>(self) -> Self {
        self.crd_object(K::crd())
    }

    /// Installs `crd` (envtest's `CRDs`).
    pub fn crd_object(mut self, crd: CustomResourceDefinition) -> Self {
        self.crds.push(crd);
        self
    }

    /// Installs the CRDs of `path`, a YAML or JSON file or a directory of them (envtest's
    /// `CRDDirectoryPaths`); see the [module docs](self) for what is read.
    pub fn crd_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.crd_paths.push(path.into());
        self
    }

    /// Installs the manifests of `path` once the CRDs are served: a YAML or JSON file, or a
    /// directory of them (its `.yaml`, `.yml` and `.json` files in name order), holding any
    /// objects (RBAC above all: ServiceAccounts, Roles, ClusterRoles, RoleBindings,
    /// ClusterRoleBindings; also custom resources of the installed CRDs). See
    /// [installing manifests](self#installing-manifests).
    pub fn manifest_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.manifest_paths.push(path.into());
        self
    }

    /// Installs `object` (any serializable Kubernetes object: a k8s-openapi type, a
    /// `DynamicObject`, a `serde_json::Value`) with the manifests, after those read from
    /// [`manifest_path`](Self::manifest_path)s.
    pub fn manifest_object(mut self, object: impl serde::Serialize) -> Self {
        self.manifest_objects
            .push(serde_json::to_value(object).map_err(|e| e.to_string()));
        self
    }

    /// `true`: run against the cluster `$KUBECONFIG` names; `false`: on an embedded API server,
    /// whatever `USE_EXISTING_CLUSTER` says. Unset, the variable decides.
    pub fn use_existing_cluster(mut self, existing: bool) -> Self {
        self.use_existing_cluster = Some(existing);
        self
    }

    /// How long to wait for each CRD to be established and served, and, on
    /// [`Running::stop`], to be gone (default 10 s).
    pub fn crd_install_timeout(mut self, timeout: Duration) -> Self {
        self.crd_install_timeout = timeout;
        self
    }

    /// `true`: [`Running::stop`] deletes the CRDs this environment installed (envtest's
    /// `CleanUpAfterUse`), and with them every object of their kinds. Only matters for an
    /// existing cluster (an embedded server goes away with its data). Default `false`.
    pub fn clean_up_after_use(mut self, clean_up: bool) -> Self {
        self.clean_up_after_use = clean_up;
        self
    }

    /// Runs a simulated cluster on the embedded API server ([`crt_cluster`]): `config`'s nodes,
    /// a scheduler, kubelets that run the bound pods, and the workload controllers
    /// (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs, endpoints, volume
    /// claims: see [`crt_cluster`]), so Deployments roll out, pods turn Running and Ready, and
    /// Services get endpoints. Without it the environment is Go envtest's: an API
    /// server alone (pods stay Pending). An existing cluster runs its own controllers: this
    /// setting is ignored there.
    pub fn simulate_cluster(mut self, config: ClusterConfig) -> Self {
        self.cluster = Some(config);
        self
    }

    /// Starts the environment: reads the CRD files, starts the embedded API server (or
    /// connects to the existing cluster), installs every CRD and waits until each is served.
    /// See the [module docs](self) for each step.
    pub async fn start(self) -> Result<Running, Error> {
        let existing = match self.use_existing_cluster {
            Some(existing) => existing,
            None => use_existing_from_env(std::env::var(USE_EXISTING_CLUSTER).ok().as_deref())?,
        };
        let mut all = self.crds;
        for path in &self.crd_paths {
            all.extend(crds::read_path(path)?);
        }
        let mut manifests = Vec::new();
        for path in &self.manifest_paths {
            manifests.extend(manifests::read_path(path)?);
        }
        for (i, object) in self.manifest_objects.into_iter().enumerate() {
            let invalid = |reason| Error::InvalidManifestObject {
                index: i + 1,
                reason,
            };
            let object = object.map_err(invalid)?;
            manifests::check(&object).map_err(invalid)?;
            manifests.push(manifests::Manifest {
                origin: format!("manifest object {}", i + 1),
                object,
            });
        }

        let (server, kubeconfig) = if existing {
            let kubeconfig = Kubeconfig::read().map_err(|source| Error::Kubeconfig {
                what: "the existing cluster's, from $KUBECONFIG",
                source,
            })?;
            (None, kubeconfig)
        } else {
            let server = crt_apiserver::Server::start(crt_apiserver::Config::default())
                .await
                .map_err(Error::StartServer)?;
            let kubeconfig = Kubeconfig::from_yaml(&server.kubeconfig()).map_err(|source| {
                Error::Kubeconfig {
                    what: "the embedded server's",
                    source,
                }
            })?;
            (Some(server), kubeconfig)
        };
        let cluster = match (&server, self.cluster) {
            (Some(server), Some(config)) => {
                Some(crt_cluster::Cluster::start(server.storage(), config))
            }
            _ => None,
        };
        let config = kube_client::Config::from_custom_kubeconfig(
            kubeconfig.clone(),
            &KubeConfigOptions::default(),
        )
        .await
        .map_err(|source| Error::Kubeconfig {
            what: if existing {
                "the existing cluster's, from $KUBECONFIG"
            } else {
                "the embedded server's"
            },
            source,
        })?;
        let client = kube_client::Client::try_from(config.clone()).map_err(Error::Client)?;

        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let mut installed = Vec::with_capacity(all.len());
        for crd in all {
            let name = crds::install(&api, crd).await?;
            if !installed.contains(&name) {
                installed.push(name);
            }
        }
        for name in &installed {
            crds::wait_ready(&client, name, self.crd_install_timeout).await?;
        }
        manifests::install(&client, &manifests).await?;
        Ok(Running {
            server,
            cluster,
            kubeconfig,
            config,
            client,
            installed,
            clean_up_after_use: self.clean_up_after_use,
            timeout: self.crd_install_timeout,
            webhook_serving: parking_lot::Mutex::default(),
        })
    }
}

/// Reads `USE_EXISTING_CLUSTER`'s value: `true`/`1` (any case) yes, `false`/`0`/empty/unset no,
/// anything else an error (a typo must not silently test the wrong cluster).
fn use_existing_from_env(value: Option<&str>) -> Result<bool, Error> {
    match value.map(str::trim) {
        None | Some("") => Ok(false),
        Some(v) if v == "1" || v.eq_ignore_ascii_case("true") => Ok(true),
        Some(v) if v == "0" || v.eq_ignore_ascii_case("false") => Ok(false),
        Some(v) => Err(Error::InvalidUseExistingCluster {
            value: v.to_string(),
        }),
    }
}

/// A started test environment: a client for its API server and the CRDs it installed. See the
/// [module docs](self).
pub struct Running {
    server: Option<crt_apiserver::Server>,
    /// The simulated cluster's controllers, stopped before the server.
    cluster: Option<crt_cluster::Cluster>,
    kubeconfig: Kubeconfig,
    config: kube_client::Config,
    client: kube_client::Client,
    installed: Vec<String>,
    clean_up_after_use: bool,
    timeout: Duration,
    /// The webhooks' local serving certificate and port, made on first use.
    webhook_serving: parking_lot::Mutex<Option<Arc<webhooks::LocalServing>>>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("cluster_url", &self.config.cluster_url)
            .field("embedded", &self.server.is_some())
            .field("installed", &self.installed)
            .finish_non_exhaustive()
    }
}

impl Running {
    /// A client for the environment's API server (a cheap clone: clients share connections),
    /// ready for a [`Manager`](crate::manager::Manager) or an [`Api`].
    pub fn client(&self) -> kube_client::Client {
        self.client.clone()
    }

    /// The client's configuration (envtest's `*rest.Config`).
    pub fn config(&self) -> &kube_client::Config {
        &self.config
    }

    /// The kubeconfig the client was built from: the embedded server's (its URL, CA and token;
    /// serialise it for `kubectl`, or use [`server`](Self::server)'s `write_kubeconfig`), or the
    /// existing cluster's.
    pub fn kubeconfig(&self) -> &Kubeconfig {
        &self.kubeconfig
    }

    /// The embedded API server (for its kubeconfig file, its storage, fault injection), or
    /// `None` on an existing cluster.
    pub fn server(&self) -> Option<&crt_apiserver::Server> {
        self.server.as_ref()
    }

    /// `true` when running against an existing cluster rather than an embedded server.
    pub fn is_existing_cluster(&self) -> bool {
        self.server.is_none()
    }

    /// A client configuration acting as the ServiceAccount `namespace/name`: the account (and
    /// its namespace) is created when missing, and a token for it asked through the
    /// TokenRequest subresource (`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`, what
    /// `kubectl create token` does), valid for an hour. The configuration has the
    /// environment's server and CA, the token as bearer, and the account's namespace as
    /// default, as in a pod. Give it to a [`Manager`](crate::manager::Manager) to run the
    /// operator with its own permissions: see [running as a ServiceAccount](self#running-as-a-serviceaccount).
    ///
    /// Fails with [`Error::TokenRequest`] when no token is issued, `unsupported` when the API
    /// server does not serve the subresource at all (an embedded server without
    /// ServiceAccount tokens).
    pub async fn service_account_config(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<kube_client::Config, Error> {
        service_account::config(&self.config, &self.client, namespace, name).await
    }

    /// A client acting as the ServiceAccount `namespace/name`: see
    /// [`service_account_config`](Self::service_account_config).
    pub async fn service_account_client(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<kube_client::Client, Error> {
        let config = self.service_account_config(namespace, name).await?;
        kube_client::Client::try_from(config).map_err(Error::Client)
    }

    /// The names of the CRDs [`Environment::start`] installed, in install order.
    pub fn installed_crds(&self) -> &[String] {
        &self.installed
    }

    fn webhook_serving(&self) -> Result<Arc<webhooks::LocalServing>, Error> {
        let mut serving = self.webhook_serving.lock();
        if let Some(serving) = &*serving {
            return Ok(serving.clone());
        }
        let made = Arc::new(webhooks::local_serving()?);
        *serving = Some(made.clone());
        Ok(made)
    }

    /// The options of a webhook server serving this process's webhooks to the environment
    /// (envtest's `WebhookInstallOptions.LocalServing*`): `127.0.0.1`, a port that was free, and
    /// a directory with a serving certificate for `127.0.0.1` signed by a CA made for this
    /// environment (removed with it). Give them to the manager
    /// ([`ManagerOptions::with_webhook_server`](crate::manager::ManagerOptions::with_webhook_server)),
    /// register the webhooks, then [`install_webhooks`](Self::install_webhooks).
    pub fn webhook_options(&self) -> Result<crate::webhook::Options, Error> {
        Ok(self.webhook_serving()?.options())
    }

    /// The CA (PEM) that signed the webhook serving certificate (the `caBundle` of the
    /// installed configurations).
    pub fn webhook_ca_pem(&self) -> Result<String, Error> {
        Ok(self.webhook_serving()?.ca_pem.clone())
    }

    /// Installs `server`'s webhooks as envtest does: its `MutatingWebhookConfiguration`
    /// ([`MUTATING_CONFIGURATION`]) and `ValidatingWebhookConfiguration`
    /// ([`VALIDATING_CONFIGURATION`]) with `url: https://127.0.0.1:<port>/<path>` and the CA
    /// bundle, and the `spec.conversion` of every installed CRD whose kind has a registered
    /// conversion. Call it once the webhooks are registered; the server must run with
    /// [`webhook_options`](Self::webhook_options) for the API server to reach it.
    ///
    /// ```no_run
    /// # async fn f(mgr_options: controller_runtime::manager::ManagerOptions) -> Result<(), Box<dyn std::error::Error>> {
    /// use controller_runtime::envtest::Environment;
    /// use controller_runtime::manager::Manager;
    ///
    /// let env = Environment::new().start().await?;
    /// let mgr = Manager::new(env.client(), mgr_options.with_webhook_server(env.webhook_options()?))?;
    /// // WebhookBuilder::new(&mgr).for_::<Foo>().with_validator(..).complete()?;
    /// env.install_webhooks(mgr.webhook_server()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn install_webhooks(&self, server: &crate::webhook::Server) -> Result<(), Error> {
        let serving = self.webhook_serving()?;
        webhooks::install(&self.client, &serving, server, &self.installed).await
    }

    /// Stops the environment: deletes the CRDs it installed if
    /// [`clean_up_after_use`](Environment::clean_up_after_use) asked for it (and waits until
    /// they are gone), then stops the embedded server; its port is closed when this returns.
    /// The server stops even when the clean-up fails.
    pub async fn stop(self) -> Result<(), Error> {
        let cleaned = if self.clean_up_after_use {
            crds::uninstall(&self.client, &self.installed, self.timeout).await
        } else {
            Ok(())
        };
        drop(self.cluster);
        if let Some(server) = self.server {
            server.stop().await;
        }
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn use_existing_cluster_reads_true_and_false_and_refuses_the_rest() {
        for yes in ["true", "TRUE", "True", "1", " true "] {
            assert!(use_existing_from_env(Some(yes)).unwrap(), "{yes:?}");
        }
        for no in [None, Some(""), Some("false"), Some("FALSE"), Some("0")] {
            assert!(!use_existing_from_env(no).unwrap(), "{no:?}");
        }
        let err = use_existing_from_env(Some("yes")).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidUseExistingCluster { value } if value == "yes"),
            "{err:?}"
        );
        assert!(err.to_string().contains("\"yes\""));
    }
}
