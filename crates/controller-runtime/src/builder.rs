//! The Builder: declare what a controller watches, hand it a reconciler, and it is built and
//! added to a [`Manager`] (controller-runtime's `builder.ControllerManagedBy`).
//!
//! A controller reconciles one type, its `for` type; it usually also creates objects of other
//! types and wants to hear when they change. The builder wires the usual watches, one verb per
//! concept:
//!
//! | builder call | handler | enqueues |
//! | --- | --- | --- |
//! | [`for_(input)`](ControllerBuilder::for_) | [`EnqueueRequestForObject`] | the object itself |
//! | [`owns(input)`](ControllerBuilder::owns) | [`EnqueueRequestForOwner`] for the `for` kind | its controller owner (every owner with [`Input::every_owner`]) |
//! | [`watches(input, h)`](ControllerBuilder::watches) | `h` | whatever `h` says |
//! | [`watches_raw(watch)`](ControllerBuilder::watches_raw) | (bound) | (bound) |
//!
//! Each verb takes an [`Input`]: the object type, where its events come from (a [`Kind`](source::Kind)
//! source on the manager's cache unless [`Input::with_source`] names another [`Source`]), and
//! the watch's options (predicates, a dynamic type, [`Input::every_owner`]). Options are a
//! value rather than a family of near-copies of each verb (`for_with`, `for_input`, ...): a
//! static type, a metadata-only projection (`Input::<K>::metadata()`, or `PartialObjectMeta<K>`
//! anywhere `K` goes) and a `DynamicObject` with its `ApiResource` all go through the same verb.
//! [`watches_raw`](ControllerBuilder::watches_raw) takes a ready [`Watch`] (a source already
//! bound to its handler and predicates), as Go's `WatchesRawSource`.
//!
//! The `for` type is a type parameter of the builder: [`for_`](ControllerBuilder::for_) turns a
//! `ControllerBuilder<NoFor>` into a `ControllerBuilder<For<K>>`, and only that one has
//! [`owns`](ControllerBuilder::owns) (whose owners are of the `for` kind) and the typed
//! [`complete`](ControllerBuilder::complete), whose reconcile function takes an `Arc<K>` (and
//! a [`ReconcileContext`] carrying the data given to `complete`): a
//! second `for`, an `owns` without a `for`, or a reconcile function for another type do not
//! compile. A builder without a `for` type takes `watches`, `watches_raw` and a request-level
//! [`Reconciler`] ([`complete_reconciler`](ControllerBuilder::complete_reconciler)), which a
//! typed builder takes too. (A `_with` suffix in this crate always means "with a dynamic
//! type", as kube-rs's `Api::all_with`.)
//!
//! Every watch asks, in order, the builder's [event filters](ControllerBuilder::with_event_filter)
//! (predicates of `dyn Object`, such as the metadata predicates, so one filter fits every type),
//! then its own predicates ([`Input::with_predicate`]), then hands the event to its handler. A
//! ready [`Watch`] is already bound: the filters do not apply to it. A controller with
//! [operations annotations](crate::operations) on
//! ([`ControllerOptions::with_operations_annotations`]) also lets a paused object alone and
//! hears a requested reconcile of its `for` type whatever its filters say.
//!
//! The controller is named after the `for` kind, lowercased (`foo` for `Foo`), unless
//! [`named`](ControllerBuilder::named); names are unique within a manager (unless
//! [validation is skipped](ControllerOptions::with_skip_name_validation)). Options the
//! controller's own do not set come from the manager's
//! [controller defaults](manager::ManagerOptions::with_controller_defaults).
//! [`build`](ControllerBuilder::build) returns the controller;
//! [`complete`](ControllerBuilder::complete) also adds it to the manager, which starts it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use controller_runtime::builder::{ControllerBuilder, Input};
//! use controller_runtime::manager::{Manager, ManagerOptions};
//! use controller_runtime::predicate::GenerationChanged;
//! use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileError};
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! struct Ctx; // your clients, settings, metrics
//!
//! async fn reconcile(deploy: Arc<Deployment>, _ctx: ReconcileContext<Ctx>) -> Result<Action, ReconcileError> {
//!     println!("reconcile {:?}", deploy.metadata.name);
//!     Ok(Action::done())
//! }
//!
//! # async fn run(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let mgr = Manager::new(client, ManagerOptions::default())?;
//!
//! // A Deployment (think: your `Foo`) owns Pods: a change to one of its Pods reconciles it.
//! ControllerBuilder::new(&mgr)
//!     .for_(Input::<Deployment>::new())
//!     .owns(Input::<Pod>::new())
//!     .with_event_filter(GenerationChanged) // spec changes only, on every watch
//!     .complete(Arc::new(Ctx), reconcile)
//!     .await?;
//!
//! mgr.start(controller_runtime::manager::signal_handler()).await?;
//! # Ok(()) }
//! ```
//!
//! A reconcile function for another type than the `for` type does not compile (with
//! `Arc<Deployment>` it would):
//!
//! ```compile_fail,E0631
//! # use std::sync::Arc;
//! # use controller_runtime::builder::{ControllerBuilder, Input};
//! # use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileError};
//! # use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
//! async fn reconcile(pod: Arc<Pod>, _ctx: ReconcileContext) -> Result<Action, ReconcileError> {
//!     Ok(Action::done())
//! }
//! # async fn f(mgr: controller_runtime::manager::Manager) {
//! let _ = ControllerBuilder::new(&mgr)
//!     .for_(Input::<Deployment>::new())
//!     .complete(Arc::new(()), reconcile)
//!     .await;
//! # }
//! ```
//!
//! Nor does `owns` without a `for` type (whose objects would be the owners):
//!
//! ```compile_fail,E0599
//! # use controller_runtime::builder::{ControllerBuilder, Input};
//! # use k8s_openapi::api::core::v1::Pod;
//! # fn f(mgr: controller_runtime::manager::Manager) {
//! let _ = ControllerBuilder::new(&mgr).named("pods").owns(Input::<Pod>::new());
//! # }
//! ```
//!
//! Nor a second `for` (a controller reconciles one type):
//!
//! ```compile_fail,E0599
//! # use controller_runtime::builder::{ControllerBuilder, Input};
//! # use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
//! # fn f(mgr: controller_runtime::manager::Manager) {
//! let _ = ControllerBuilder::new(&mgr)
//!     .for_(Input::<Deployment>::new())
//!     .for_(Input::<Pod>::new());
//! # }
//! ```
//!
//! The same three, without the mistake, compile:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use controller_runtime::builder::{ControllerBuilder, Input};
//! # use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileError};
//! # use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
//! async fn reconcile(deploy: Arc<Deployment>, _ctx: ReconcileContext) -> Result<Action, ReconcileError> {
//!     Ok(Action::done())
//! }
//! # async fn f(mgr: controller_runtime::manager::Manager) {
//! let _ = ControllerBuilder::new(&mgr)
//!     .for_(Input::<Deployment>::new())
//!     .complete(Arc::new(()), reconcile)
//!     .await;
//! let _ = ControllerBuilder::new(&mgr)
//!     .named("pods")
//!     .for_(Input::<Deployment>::new())
//!     .owns(Input::<Pod>::new());
//! let _ = ControllerBuilder::new(&mgr).for_(Input::<Deployment>::new());
//! # }
//! ```

mod input;
mod state;
mod webhook;

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub use input::Input;
pub use state::NoFor;
pub use webhook::{WebhookBuilder, WebhookFor};

use crate::Request;
use crate::cache::{Cache, CacheObject};
use crate::controller::{self, Controller, ControllerOptions};
use crate::event::{Event, Object};
use crate::handler::{
    EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler, LowPriorityWhenUnchanged,
};
use crate::manager::{self, Manager};
use crate::operations::{self, OperationsReconciler};
use crate::predicate::{BoxPredicate, Predicate};
use crate::reconcile::{self, Action, ReconcileContext, ReconcileError, Reconciler};
use crate::sharding::{self, ShardingOptions};
use crate::source::{self, Source, Watch};
use crate::workqueue::Enqueue;

/// Why a controller could not be built or added to its manager.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing to watch: a builder without a `for` type had no `watches` call.
    #[error("controller {name:?} has no watches: call for_ or watches")]
    NoWatches {
        /// The controller's name.
        name: String,
    },
    /// No name: a controller without a `for` type must be [`named`](ControllerBuilder::named).
    #[error("a controller without a for_ type needs a name: call named()")]
    MissingName,
    /// The name is taken by another controller of the manager.
    #[error("a controller named {0:?} already exists in this manager")]
    DuplicateName(String),
    /// The controller could not be created (e.g. invalid options).
    #[error("creating controller {name:?}")]
    Controller {
        /// The controller's name.
        name: String,
        /// Why.
        #[source]
        source: controller::Error,
    },
    /// The controller cannot be sharded as asked (see [`ControllerBuilder::with_sharding`]).
    #[error("sharding controller {name:?}")]
    Sharding {
        /// The controller's name.
        name: String,
        /// Why.
        #[source]
        source: sharding::Error,
    },
    /// The manager refused the controller or its name.
    #[error("adding controller {name:?} to the manager")]
    Manager {
        /// The controller's name.
        name: String,
        /// Why.
        #[source]
        source: manager::Error,
    },
}

/// The state of a builder whose `for` type is `K`: its dynamic type, and the owner handler its
/// `owns` watches use.
pub struct For<K: CacheObject> {
    dt: K::DynamicType,
    kind: String,
    /// `Kind.group` (`Kind` in the core group), for the manager's group-kind concurrency.
    group_kind: String,
    owner: EnqueueRequestForOwner,
    /// Set by `with_sharding`.
    sharding: Option<ShardingOptions>,
}

impl<K: CacheObject> std::fmt::Debug for For<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("For").field(&self.kind).finish()
    }
}

/// What the deferred watches need at build time, when every event filter is known.
struct BuildContext {
    cache: Cache,
    filters: Arc<[BoxPredicate<dyn Object>]>,
    /// The controller honours the operations annotations: the `for` watch lets their changes
    /// through whatever the filters say.
    operations: bool,
}

impl BuildContext {
    /// A watch of `source` with `handler`: the builder's filters, then the watch's predicates.
    fn watch<K, H>(
        &self,
        source: Arc<dyn Source<K>>,
        handler: H,
        own: Vec<BoxPredicate<K>>,
    ) -> Box<dyn Watch>
    where
        K: Object + Send + Sync + 'static,
        H: EventHandler<K> + 'static,
    {
        let mut predicates: Vec<BoxPredicate<K>> = Vec::with_capacity(own.len() + 1);
        if !self.filters.is_empty() {
            predicates.push(Arc::new(EventFilters(self.filters.clone())));
        }
        predicates.extend(own);
        Box::new(source::watch(source, handler, predicates))
    }

    /// The `for` watch: [`watch`](Self::watch), except that with operations annotations on an
    /// [`OperationRequested`](crate::operations::OperationRequested) update passes whatever
    /// the filters and predicates say.
    fn watch_for<K, H>(
        &self,
        source: Arc<dyn Source<K>>,
        handler: H,
        own: Vec<BoxPredicate<K>>,
    ) -> Box<dyn Watch>
    where
        K: Object + Send + Sync + 'static,
        H: EventHandler<K> + 'static,
    {
        if !self.operations {
            return self.watch(source, handler, own);
        }
        let mut all: Vec<BoxPredicate<K>> = Vec::with_capacity(own.len() + 1);
        if !self.filters.is_empty() {
            all.push(Arc::new(EventFilters(self.filters.clone())));
        }
        all.extend(own);
        let bypass: BoxPredicate<K> = Arc::new(operations::Bypass(all));
        Box::new(source::watch(source, handler, vec![bypass]))
    }
}

/// The builder's event filters as one predicate of a watch's `K`: the event is seen as
/// `dyn Object` once (its objects shared, not copied), then every filter is asked.
struct EventFilters(Arc<[BoxPredicate<dyn Object>]>);

impl<K: Object + 'static> Predicate<K> for EventFilters {
    fn filter(&self, event: &Event<K>) -> bool {
        let event = event.erased();
        self.0.iter().all(|f| f.filter(&event))
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        Some(
            self.0
                .iter()
                .all(|f| f.filter_metadata(event).unwrap_or_else(|| f.filter(event))),
        )
    }
}

/// A watch made at build time, when the filters are known.
type MakeWatch = Box<dyn FnOnce(&BuildContext) -> Box<dyn Watch> + Send>;

/// Builds a controller: see the [module docs](self). Made by [`ControllerBuilder::new`] (a
/// `ControllerBuilder<NoFor>`); [`for_`](Self::for_) makes it a `ControllerBuilder<For<K>>`.
/// Every method consumes and returns the builder.
#[must_use = "a builder does nothing until build or complete"]
pub struct ControllerBuilder<S = NoFor> {
    mgr: Manager,
    state: S,
    /// The kinds of the watches, for `Debug`.
    kinds: Vec<String>,
    watches: Vec<MakeWatch>,
    filters: Vec<BoxPredicate<dyn Object>>,
    options: ControllerOptions,
    name: Option<String>,
}

impl<S: std::fmt::Debug> std::fmt::Debug for ControllerBuilder<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerBuilder")
            .field("name", &self.name)
            .field("state", &self.state)
            .field("watches", &self.kinds)
            .field("filters", &self.filters.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ControllerBuilder<NoFor> {
    /// A builder for a controller run by `mgr` (controller-runtime's `ControllerManagedBy`).
    pub fn new(mgr: &Manager) -> Self {
        ControllerBuilder {
            mgr: mgr.clone(),
            state: NoFor(()),
            kinds: Vec::new(),
            watches: Vec::new(),
            filters: Vec::new(),
            options: ControllerOptions::default(),
            name: None,
        }
    }

    /// The type the controller reconciles: its objects' creates, updates and deletes enqueue
    /// their own keys (controller-runtime's `For`). Once only: the builder then knows `K`.
    pub fn for_<K>(mut self, input: Input<K>) -> ControllerBuilder<For<K>>
    where
        K: CacheObject,
        K::Scope: 'static,
    {
        let kind = input.kind();
        let (group, scope) = (K::group(&input.dt).into_owned(), input.owner_scope());
        let group_kind = if group.is_empty() {
            kind.clone()
        } else {
            format!("{kind}.{group}")
        };
        let state = For {
            dt: input.dt.clone(),
            kind: kind.clone(),
            group_kind,
            owner: EnqueueRequestForOwner::new(group, kind.clone(), scope),
            sharding: None,
        };
        self.kinds.push(kind);
        self.watches.push(Box::new(move |cx: &BuildContext| {
            let (source, predicates) = input.into_parts(&cx.cache);
            cx.watch_for(source, EnqueueRequestForObject, predicates)
        }));
        ControllerBuilder {
            mgr: self.mgr,
            state,
            kinds: self.kinds,
            watches: self.watches,
            filters: self.filters,
            options: self.options,
            name: self.name,
        }
    }
}

impl<K: CacheObject> ControllerBuilder<For<K>> {
    /// A type the controller creates and owns: a change to one of its objects enqueues the
    /// object's controller owner when that owner is of the `for` kind (every such owner with
    /// [`Input::every_owner`]); controller-runtime's `Owns`.
    pub fn owns<O: CacheObject>(mut self, input: Input<O>) -> Self {
        let handler = if input.every_owner {
            self.state.owner.clone().every_owner()
        } else {
            self.state.owner.clone()
        };
        self.kinds.push(input.kind());
        self.watches.push(Box::new(move |cx: &BuildContext| {
            let (source, predicates) = input.into_parts(&cx.cache);
            cx.watch(source, handler, predicates)
        }));
        self
    }

    /// Runs the controller sharded across replicas (see [`sharding`]): this replica reconciles
    /// only the `for` objects assigned to it, which are all its cache holds, and announces
    /// itself in the controller's ring of Leases; objects move between replicas through a
    /// drain, so none is reconciled by two at once. Off by default. A sharded controller runs
    /// on every replica, leader or not (it does not need leader election).
    ///
    /// Build it before anything reads the `for` kind through the manager's cache (the build
    /// fails with [`Error::Sharding`] otherwise: that cache would hold every object). Owned
    /// objects follow their owner's shard without more ado; their caches divide too when the
    /// reconciler labels them with [`sharding::copy_shard_label`].
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use controller_runtime::builder::{ControllerBuilder, Input};
    /// # use controller_runtime::reconcile::Action;
    /// # use controller_runtime::sharding::ShardingOptions;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # async fn f(mgr: controller_runtime::manager::Manager) -> Result<(), Box<dyn std::error::Error>> {
    /// ControllerBuilder::new(&mgr)
    ///     .for_(Input::<ConfigMap>::new())
    ///     .with_sharding(ShardingOptions::default().with_replica("replica-0"))
    ///     .complete(Arc::new(()), |cm, _ctx| async move {
    ///         println!("reconcile {:?}", cm.metadata.name); // only this replica's ConfigMaps
    ///         Ok(Action::done())
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn with_sharding(mut self, options: ShardingOptions) -> Self {
        self.state.sharding = Some(options);
        self
    }

    /// Builds the controller with a typed reconcile function for the `for` type, and reserves
    /// its name in the manager without adding the controller to it: start it yourself, or add
    /// it with `mgr.add`. Each request's object is read from the cache and handed to
    /// `reconcile` with the reconcile's context, which carries `data` (see
    /// [`reconcile::for_object`]); a request for an object that is gone is done at once.
    /// A [sharded](Self::with_sharding) controller's ring is added to the manager here.
    pub async fn build<C, F, Fut>(mut self, data: Arc<C>, reconcile: F) -> Result<Controller, Error>
    where
        C: Send + Sync + 'static,
        F: Fn(Arc<K>, ReconcileContext<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
    {
        let dt = self.state.dt.clone();
        let Some(options) = self.state.sharding.take() else {
            let reconciler = reconcile::for_object(self.mgr.client(), dt, data, reconcile);
            return self.build_reconciler(reconciler).await;
        };
        let name = match &self.name {
            Some(name) if !name.is_empty() => name.clone(),
            _ => self.state.kind.to_lowercase(),
        };
        let refused = |source| Error::Sharding {
            name: name.clone(),
            source,
        };
        options.check(&name).map_err(refused)?;
        let selector = sharding::selector(&name, options.replica());
        if !self.mgr.cache().restrict_labels::<K>(&dt, selector) {
            return Err(refused(sharding::Error::CacheInUse {
                controller: name.clone(),
                kind: self.state.kind.clone(),
            }));
        }
        // Set, not defaulted: the manager's controller defaults must not undo it.
        self.options = std::mem::take(&mut self.options).with_need_leader_election(false);
        let mgr = self.mgr.clone();
        let kube = mgr.client().kube_client().clone();
        let shard = Arc::new(sharding::Membership::new(&name, options));
        let guarded =
            sharding::guard::<K, C, F, Fut>(shard.clone(), kube.clone(), dt.clone(), reconcile);
        let sharder = Arc::new(sharding::Sharder::<K>::new(
            shard,
            kube,
            dt.clone(),
            mgr.shard_metrics().clone(),
        ));
        let reconciler = reconcile::for_object(mgr.client(), dt, data, guarded);
        let controller = self.build_reconciler(reconciler).await?;
        let ring = manager::from_fn(
            format!("shard ring {name}"),
            manager::RunnableGroup::Others,
            move |ctx| sharder.clone().run(ctx),
        );
        mgr.add(ring)
            .map_err(|source| Error::Manager { name, source })?;
        Ok(controller)
    }

    /// [`build`](Self::build), then adds the controller to the manager, which starts it
    /// (controller-runtime's `Complete`). `reconcile` is a plain
    /// `async fn(Arc<K>, ReconcileContext<C>) -> Result<Action, ReconcileError>`, or a closure
    /// whose types are inferred; the context derefs to `data` (`ctx.client`, say) and tells the
    /// controller's name, the reconcile's id and when the controller is stopping:
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use controller_runtime::builder::{ControllerBuilder, Input};
    /// # use controller_runtime::reconcile::Action;
    /// # use k8s_openapi::api::{apps::v1::Deployment, core::v1::Pod};
    /// # async fn f(mgr: controller_runtime::manager::Manager) -> Result<(), Box<dyn std::error::Error>> {
    /// ControllerBuilder::new(&mgr)
    ///     .for_(Input::<Deployment>::new())
    ///     .owns(Input::<Pod>::new())
    ///     .complete(Arc::new(()), |deploy, _ctx| async move {
    ///         println!("reconcile {:?}", deploy.metadata.name); // deploy: Arc<Deployment>
    ///         Ok(Action::done())
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn complete<C, F, Fut>(self, data: Arc<C>, reconcile: F) -> Result<(), Error>
    where
        C: Send + Sync + 'static,
        F: Fn(Arc<K>, ReconcileContext<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, ReconcileError>> + Send + 'static,
    {
        let mgr = self.mgr.clone();
        let controller = self.build(data, reconcile).await?;
        add_to(&mgr, controller)
    }
}

/// The default name a state gives: the `for` kind, lowercased; and the `for` group-kind.
trait DefaultName {
    fn default_name(&self) -> Option<String>;
    /// `Kind.group` of the `for` type (`Kind` in the core group), if any.
    fn group_kind(&self) -> Option<&str>;
    /// The `for` objects as the operations reconciler reads and annotates them, if any.
    fn operations_target(
        &self,
        client: &crate::client::Client,
    ) -> Option<Box<dyn operations::Target>>;
}

impl DefaultName for NoFor {
    fn default_name(&self) -> Option<String> {
        None
    }
    fn group_kind(&self) -> Option<&str> {
        None
    }
    fn operations_target(&self, _: &crate::client::Client) -> Option<Box<dyn operations::Target>> {
        None
    }
}

impl<K: CacheObject> DefaultName for For<K> {
    fn default_name(&self) -> Option<String> {
        Some(self.kind.to_lowercase())
    }
    fn group_kind(&self) -> Option<&str> {
        Some(&self.group_kind)
    }
    fn operations_target(
        &self,
        client: &crate::client::Client,
    ) -> Option<Box<dyn operations::Target>> {
        Some(Box::new(client.objects_with::<K>(self.dt.clone())))
    }
}

#[allow(private_bounds)]
impl<S: DefaultName> ControllerBuilder<S> {
    /// Watches objects with your handler (e.g.
    /// [`EnqueueRequestsFromMapFunc`](crate::handler::EnqueueRequestsFromMapFunc)); by default
    /// through the manager's cache, or from any [`Source`] given with [`Input::with_source`]
    /// (controller-runtime's `Watches`, and `WatchesMetadata` with [`Input::metadata`]). As
    /// there, the handler's initial-list creates and resync updates go in at low priority
    /// ([`LowPriorityWhenUnchanged`]).
    pub fn watches<O, H>(mut self, input: Input<O>, handler: H) -> Self
    where
        O: CacheObject,
        H: EventHandler<O> + 'static,
    {
        self.kinds.push(input.kind());
        self.watches.push(Box::new(move |cx: &BuildContext| {
            let (source, predicates) = input.into_parts(&cx.cache);
            cx.watch(source, LowPriorityWhenUnchanged(handler), predicates)
        }));
        self
    }

    /// Adds a ready [`Watch`] (a source already bound to its handler and predicates by
    /// [`source::watch`], or a [`Func`](crate::source::Func)); controller-runtime's
    /// `WatchesRawSource`. The builder's event filters do not apply to it.
    pub fn watches_raw(mut self, watch: impl Watch + 'static) -> Self {
        let watch: Box<dyn Watch> = Box::new(watch);
        self.kinds.push(watch.describe());
        self.watches.push(Box::new(move |_: &BuildContext| watch));
        self
    }

    /// Adds an event filter asked by every watch of the controller (`for_`, `owns`, `watches`),
    /// before the watch's own predicates (controller-runtime's `WithEventFilter`). A filter is a
    /// predicate of `dyn` [`Object`]: it sees any object through its metadata, so one filter
    /// fits every type: [`GenerationChanged`](crate::predicate::GenerationChanged) and the other
    /// metadata predicates, or a closure `|e: &Event<dyn Object>| ...`.
    pub fn with_event_filter(mut self, filter: impl Predicate<dyn Object> + 'static) -> Self {
        self.filters.push(Arc::new(filter));
        self
    }

    /// Sets the controller's options. Without `metrics`, the controller reports to the
    /// manager's registry. Each field no `with_*` setter set takes the manager's
    /// [controller defaults](manager::ManagerOptions::with_controller_defaults) (the
    /// concurrency first from its group-kind map, for the `for` type;
    /// [`ControllerOptions::merge`]), as in controller-runtime: the controller's options win,
    /// then the manager's, then the controller's built-in defaults.
    pub fn with_options(mut self, options: ControllerOptions) -> Self {
        self.options = options;
        self
    }

    /// Names the controller (default: the `for` kind, lowercased). The name labels logs and
    /// metrics and must be unique within the manager.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Builds the controller with a request-level [`Reconciler`] and reserves its name in the
    /// manager, without adding the controller to it: start it yourself, or add it with
    /// `mgr.add`.
    pub async fn build_reconciler(
        self,
        reconciler: impl Reconciler + 'static,
    ) -> Result<Controller, Error> {
        let name = match (self.name, self.state.default_name()) {
            (Some(name), _) if !name.is_empty() => name,
            (_, Some(name)) => name,
            _ => return Err(Error::MissingName),
        };
        if self.watches.is_empty() {
            return Err(Error::NoWatches { name });
        }
        let defaults = self.mgr.controller_defaults();
        let mut options = self.options.merge(defaults, self.state.group_kind());
        let skip_name_validation = options.skips_name_validation();
        if options.metrics.is_none() {
            options.metrics = Some(self.mgr.metrics().clone());
        }
        let target = options
            .honours_operations_annotations()
            .then(|| self.state.operations_target(self.mgr.client()))
            .flatten();
        let operations = target.is_some();
        let reconciler: Box<dyn Reconciler> = match (target, &options.metrics) {
            (Some(target), Some(metrics)) => Box::new(OperationsReconciler::new(
                reconciler,
                target,
                metrics.controller.paused(&name),
            )),
            _ => Box::new(reconciler),
        };
        let controller = Controller::new(name.clone(), reconciler, options).map_err(|source| {
            Error::Controller {
                name: name.clone(),
                source,
            }
        })?;
        // Reserve the name last among the checks, so a build that fails leaves it free.
        if !skip_name_validation {
            self.mgr
                .register_controller_name(&name)
                .map_err(|e| match e {
                    manager::Error::DuplicateControllerName(n) => Error::DuplicateName(n),
                    source => Error::Manager {
                        name: name.clone(),
                        source,
                    },
                })?;
        }
        let cx = BuildContext {
            cache: self.mgr.cache().clone(),
            filters: self.filters.into(),
            operations,
        };
        for make in self.watches {
            let watch = make(&cx);
            // Before start, adding a watch only records it: it cannot fail.
            controller
                .add_watch(BoxedWatch(watch))
                .await
                .map_err(|source| Error::Controller {
                    name: name.clone(),
                    source,
                })?;
        }
        Ok(controller)
    }

    /// [`build_reconciler`](Self::build_reconciler), then adds the controller to the manager,
    /// which starts it (controller-runtime's `Complete`).
    pub async fn complete_reconciler(
        self,
        reconciler: impl Reconciler + 'static,
    ) -> Result<(), Error> {
        let mgr = self.mgr.clone();
        let controller = self.build_reconciler(reconciler).await?;
        add_to(&mgr, controller)
    }
}

fn add_to(mgr: &Manager, controller: Controller) -> Result<(), Error> {
    let name = controller.name().to_string();
    mgr.add(controller)
        .map_err(|source| Error::Manager { name, source })
}

/// A boxed [`Watch`] is a watch.
struct BoxedWatch(Box<dyn Watch>);

impl Watch for BoxedWatch {
    fn start(
        &self,
        ctx: CancellationToken,
        queue: Arc<dyn Enqueue<Request>>,
    ) -> BoxFuture<'_, Result<(), source::Error>> {
        self.0.start(ctx, queue)
    }
    fn wait_for_sync(&self, ctx: CancellationToken) -> BoxFuture<'_, Result<(), source::Error>> {
        self.0.wait_for_sync(ctx)
    }
    fn describe(&self) -> String {
        self.0.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CreateEvent, UpdateEvent};
    use crate::predicate::GenerationChanged;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn named(name: &str) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        Arc::new(cm)
    }

    /// The filters of `dyn Object` decide on a watch's typed event: all must pass; updates
    /// decide on the new object.
    #[test]
    fn event_filters_read_the_typed_event_through_its_metadata() {
        let is_x = |e: &Event<dyn Object>| e.object().metadata().name.as_deref() == Some("x");
        let filters: Vec<BoxPredicate<dyn Object>> = vec![Arc::new(is_x)];
        let p = EventFilters(filters.into());
        let create = |o| {
            Event::Create(CreateEvent {
                object: o,
                is_in_initial_list: false,
            })
        };
        assert!(p.filter(&create(named("x"))));
        assert!(!p.filter(&create(named("y"))));
        let update = Event::Update(UpdateEvent {
            old: named("y"),
            new: named("x"),
        });
        assert!(p.filter(&update));

        let mut both: Vec<BoxPredicate<dyn Object>> = vec![Arc::new(is_x)];
        both.push(Arc::new(GenerationChanged));
        let p = EventFilters(both.into());
        assert!(
            !p.filter(&update),
            "same generation: GenerationChanged drops it"
        );
        assert!(p.filter(&create(named("x"))));
    }
}
