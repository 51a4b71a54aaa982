//! The Builder: declare what a controller watches, hand it a reconciler, and it is built and
//! added to a [`Manager`] (controller-runtime's `builder.ControllerManagedBy`).
//!
//! A controller reconciles one type, its `for` type; it usually also creates objects of other
//! types and wants to hear when they change. The builder wires the usual watches:
//!
//! | builder call | source | handler | enqueues |
//! | --- | --- | --- | --- |
//! | [`for_::<K>()`](ControllerBuilder::for_) | [`Kind<K>`] on the manager's cache | [`EnqueueRequestForObject`] | the object itself |
//! | [`owns::<O>()`](ControllerBuilder::owns) | [`Kind<O>`] on the manager's cache | [`EnqueueRequestForOwner`] for the `for` kind | its controller owner (every owner with [`Input::every_owner`]) |
//! | [`watches_object(input, h)`](ControllerBuilder::watches_object) | [`Kind`] on the manager's cache | `h` | whatever `h` says |
//! | [`watches(source, h)`](ControllerBuilder::watches) | any [`Source`] | `h` | whatever `h` says |
//! | [`watches_raw(watch)`](ControllerBuilder::watches_raw) | a ready [`Watch`] | (bound) | (bound) |
//!
//! Every watch asks, in order, the builder's [event filters](ControllerBuilder::with_event_filter)
//! (metadata predicates that fit any object type), then its own predicates ([`Input`]), then
//! hands the event to its handler. A ready [`Watch`] is already bound: the filters do not apply
//! to it. Metadata-only projection is a type: use `PartialObjectMeta<K>` (or
//! [`Input::metadata`]) anywhere `K` goes, and the watch uses a metadata-only informer.
//!
//! The controller is named after the `for` kind, lowercased (`foo` for `Foo`), unless
//! [`named`](ControllerBuilder::named); names are unique within a manager.
//! [`build`](ControllerBuilder::build) returns the controller;
//! [`complete`](ControllerBuilder::complete) also adds it to the manager, which starts it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use controller_runtime::builder::{ControllerBuilder, Input};
//! use controller_runtime::manager::{Manager, ManagerOptions};
//! use controller_runtime::predicate::GenerationChanged;
//! use controller_runtime::reconcile::{Action, ReconcileError};
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::Pod;
//!
//! # async fn run(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let mgr = Manager::new(client, ManagerOptions::default())?;
//!
//! // A Deployment (think: your `Foo`) owns Pods: a change to one of its Pods reconciles it.
//! ControllerBuilder::new(&mgr)
//!     .for_::<Deployment>()
//!     .owns::<Pod>()
//!     .with_event_filter(GenerationChanged) // spec changes only, on every watch
//!     .complete_typed(Arc::new(()), |deploy: Arc<Deployment>, _ctx: Arc<()>| async move {
//!         println!("reconcile {:?}", deploy.metadata.name);
//!         Ok::<_, ReconcileError>(Action::done())
//!     })
//!     .await?;
//!
//! mgr.start(controller_runtime::manager::signal_handler()).await?;
//! # Ok(()) }
//! ```

mod filter;
mod input;

use std::any::{Any, TypeId};
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;

pub use filter::{BoxEventFilter, EventFilter, MetaFilterFn, from_fn as filter_fn};
pub use input::Input;

use crate::Request;
use crate::cache::{Cache, CacheObject};
use crate::controller::{self, Controller, ControllerOptions};
use crate::handler::{
    EnqueueRequestForObject, EnqueueRequestForOwner, EventHandler, with_low_priority_when_unchanged,
};
use crate::manager::{self, Manager};
use crate::predicate::BoxPredicate;
use crate::reconcile::{self, ReconcileError, Reconciler};
use crate::source::{self, Kind, Source, Watch};
use crate::workqueue::Enqueue;
use filter::FilterPredicate;

/// Why a controller could not be built or added to its manager.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing to watch: the builder had no `for_`, `owns` or `watches` call.
    #[error("controller {name:?} has no watches: call for_, owns or watches")]
    NoWatches {
        /// The controller's name.
        name: String,
    },
    /// `owns` was called without a `for_` type (whose objects would be the owners).
    #[error("owns({owned}) needs a for_ type: the owners it enqueues are of the for_ kind")]
    OwnsWithoutFor {
        /// The owned kind.
        owned: String,
    },
    /// `for_` was called more than once: a controller reconciles one type.
    #[error(
        "for_ was called more than once ({first} and {second}); a controller reconciles one type"
    )]
    MultipleFor {
        /// The first `for_` kind.
        first: String,
        /// The next one.
        second: String,
    },
    /// No name: a controller without a `for_` type must be [`named`](ControllerBuilder::named).
    #[error("a controller without a for_ type needs a name: call named()")]
    MissingName,
    /// The name is taken by another controller of the manager.
    #[error("a controller named {0:?} already exists in this manager")]
    DuplicateName(String),
    /// A typed reconciler's type is not the controller's `for_` type.
    #[error("the typed reconciler reads {reconciler} but the controller's for_ type is {for_type}")]
    ForTypeMismatch {
        /// The type the reconciler reads.
        reconciler: String,
        /// The `for_` type (`none` without one).
        for_type: String,
    },
    /// The controller could not be created (e.g. invalid options).
    #[error("creating controller {name:?}")]
    Controller {
        /// The controller's name.
        name: String,
        /// Why.
        #[source]
        source: controller::Error,
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

/// What the deferred watches need at build time.
struct BuildContext {
    cache: Cache,
    filters: Vec<BoxEventFilter>,
    owner: Option<EnqueueRequestForOwner>,
}

impl BuildContext {
    /// The builder's filters as predicates of `K`, then the watch's own.
    fn predicates<K: kube_core::Resource + 'static>(
        &self,
        own: Vec<BoxPredicate<K>>,
    ) -> Vec<BoxPredicate<K>> {
        let mut all: Vec<BoxPredicate<K>> = self
            .filters
            .iter()
            .map(|f| Arc::new(FilterPredicate(f.clone())) as BoxPredicate<K>)
            .collect();
        all.extend(own);
        all
    }
}

/// A watch made at build time, when the filters and the owner are known.
type MakeWatch = Box<dyn FnOnce(&BuildContext) -> Box<dyn Watch> + Send>;

/// The `for_` type: its kind, the owner handler `owns` uses, and for typed reconcilers its Rust
/// type and dynamic type.
struct ForType {
    kind: String,
    type_name: &'static str,
    type_id: TypeId,
    dt: Box<dyn Any + Send + Sync>,
    owner: EnqueueRequestForOwner,
}

/// Builds a controller: see the [module docs](self). Made by [`ControllerBuilder::new`]; every
/// method consumes and returns the builder.
#[must_use = "a builder does nothing until build or complete"]
pub struct ControllerBuilder {
    mgr: Manager,
    for_type: Option<ForType>,
    /// The kind of a second `for_`, reported at build.
    extra_for: Option<String>,
    /// The kinds of the `owns` watches; the first is reported at build when there is no `for_`.
    owns: Vec<String>,
    watches: Vec<MakeWatch>,
    filters: Vec<BoxEventFilter>,
    options: ControllerOptions,
    name: Option<String>,
}

impl std::fmt::Debug for ControllerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerBuilder")
            .field("name", &self.name)
            .field("for", &self.for_type.as_ref().map(|t| &t.kind))
            .field("owns", &self.owns)
            .field("watches", &self.watches.len())
            .field("filters", &self.filters.len())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ControllerBuilder {
    /// A builder for a controller run by `mgr` (controller-runtime's `ControllerManagedBy`).
    pub fn new(mgr: &Manager) -> Self {
        ControllerBuilder {
            mgr: mgr.clone(),
            for_type: None,
            extra_for: None,
            owns: Vec::new(),
            watches: Vec::new(),
            filters: Vec::new(),
            options: ControllerOptions::default(),
            name: None,
        }
    }

    /// The type the controller reconciles, a static type: its objects' creates, updates and
    /// deletes enqueue their own keys. Call it once; a second call fails the build.
    pub fn for_<K>(self) -> Self
    where
        K: CacheObject + kube_core::Resource<DynamicType = ()>,
        K::Scope: 'static,
    {
        self.for_input(Input::<K>::new())
    }

    /// [`for_`](Self::for_) for any type with its dynamic type (an `ApiResource` for
    /// `DynamicObject`).
    pub fn for_with<K>(self, dt: K::DynamicType) -> Self
    where
        K: CacheObject,
        K::Scope: 'static,
    {
        self.for_input(Input::<K>::with_dynamic_type(dt))
    }

    /// [`for_`](Self::for_) with predicates, metadata-only projection or a dynamic type.
    pub fn for_input<K>(mut self, input: Input<K>) -> Self
    where
        K: CacheObject,
        K::Scope: 'static,
    {
        let kind = input.kind();
        if let Some(first) = &self.for_type {
            if self.extra_for.is_none() {
                tracing::debug!(first = %first.kind, second = %kind, "for_ called twice");
                self.extra_for = Some(kind);
            }
            return self;
        }
        let (group, scope) = (K::group(&input.dt).into_owned(), input.owner_scope());
        self.for_type = Some(ForType {
            kind: kind.clone(),
            type_name: std::any::type_name::<K>(),
            type_id: TypeId::of::<K>(),
            dt: Box::new(input.dt.clone()),
            owner: EnqueueRequestForOwner::new(group, kind, scope),
        });
        self.watches.push(Box::new(move |cx: &BuildContext| {
            let source = Kind::<K>::new_with(cx.cache.clone(), input.dt);
            let predicates = cx.predicates(input.predicates);
            Box::new(source::watch(source, EnqueueRequestForObject, predicates)) as Box<dyn Watch>
        }));
        self
    }

    /// A type the controller creates and owns, a static type: a change to one of its objects
    /// enqueues the object's controller owner when that owner is of the `for_` kind
    /// (controller-runtime's `Owns`). Needs a `for_` type.
    pub fn owns<K>(self) -> Self
    where
        K: CacheObject + kube_core::Resource<DynamicType = ()>,
    {
        self.owns_input(Input::<K>::new())
    }

    /// [`owns`](Self::owns) for any type with its dynamic type.
    pub fn owns_with<K: CacheObject>(self, dt: K::DynamicType) -> Self {
        self.owns_input(Input::<K>::with_dynamic_type(dt))
    }

    /// [`owns`](Self::owns) with predicates, metadata-only projection, a dynamic type, or
    /// [`Input::every_owner`].
    pub fn owns_input<K: CacheObject>(mut self, input: Input<K>) -> Self {
        self.owns.push(input.kind());
        self.watches.push(Box::new(move |cx: &BuildContext| {
            let owner = cx
                .owner
                .clone()
                .expect("owns is checked to have a for_ type");
            let handler = if input.every_owner {
                owner.every_owner()
            } else {
                owner
            };
            let source = Kind::<K>::new_with(cx.cache.clone(), input.dt);
            let predicates = cx.predicates(input.predicates);
            Box::new(source::watch(source, handler, predicates)) as Box<dyn Watch>
        }));
        self
    }

    /// Watches objects of a type through the manager's cache with your handler (e.g.
    /// [`EnqueueRequestsFromMapFunc`](crate::handler::EnqueueRequestsFromMapFunc));
    /// controller-runtime's `Watches(object, handler)` (and `WatchesMetadata` with
    /// [`Input::metadata`]). As there, the handler's initial-list creates and resync updates go
    /// in at low priority ([`with_low_priority_when_unchanged`]).
    pub fn watches_object<K, H>(mut self, input: Input<K>, handler: H) -> Self
    where
        K: CacheObject,
        H: EventHandler<K> + 'static,
    {
        self.watches.push(Box::new(move |cx: &BuildContext| {
            let source = Kind::<K>::new_with(cx.cache.clone(), input.dt);
            let predicates = cx.predicates(input.predicates);
            let handler = with_low_priority_when_unchanged(handler);
            Box::new(source::watch(source, handler, predicates)) as Box<dyn Watch>
        }));
        self
    }

    /// Watches any [`Source`] (a [`Channel`](crate::source::Channel), an
    /// [`Informer`](crate::source::Informer), your own) with a handler. The builder's event
    /// filters apply, and the handler is wrapped in [`with_low_priority_when_unchanged`] like
    /// [`watches_object`](Self::watches_object)'s.
    pub fn watches<K, S, H>(self, source: S, handler: H) -> Self
    where
        K: kube_core::Resource + Send + Sync + 'static,
        S: Source<K> + 'static,
        H: EventHandler<K> + 'static,
    {
        self.watches_with_predicates(source, handler, Vec::new())
    }

    /// [`watches`](Self::watches) with predicates of this watch alone (asked after the builder's
    /// event filters).
    pub fn watches_with_predicates<K, S, H>(
        mut self,
        source: S,
        handler: H,
        predicates: Vec<BoxPredicate<K>>,
    ) -> Self
    where
        K: kube_core::Resource + Send + Sync + 'static,
        S: Source<K> + 'static,
        H: EventHandler<K> + 'static,
    {
        self.watches.push(Box::new(move |cx: &BuildContext| {
            let predicates = cx.predicates(predicates);
            let handler = with_low_priority_when_unchanged(handler);
            Box::new(source::watch(source, handler, predicates)) as Box<dyn Watch>
        }));
        self
    }

    /// Adds a ready [`Watch`] (a source already bound to its handler and predicates, or a
    /// [`Func`](crate::source::Func)); controller-runtime's `WatchesRawSource`. The builder's
    /// event filters do not apply to it.
    pub fn watches_raw(mut self, watch: impl Watch + 'static) -> Self {
        let watch: Box<dyn Watch> = Box::new(watch);
        self.watches.push(Box::new(move |_: &BuildContext| watch));
        self
    }

    /// Adds an event filter asked by every watch of the controller (`for_`, `owns`, `watches`),
    /// before the watch's own predicates (controller-runtime's `WithEventFilter`). Filters see
    /// the objects' metadata, so one filter fits every type: [`GenerationChanged`]
    /// and the other metadata predicates, or [`filter_fn`].
    ///
    /// [`GenerationChanged`]: crate::predicate::GenerationChanged
    pub fn with_event_filter(mut self, filter: impl EventFilter + 'static) -> Self {
        self.filters.push(Arc::new(filter));
        self
    }

    /// Sets the controller's options. Without `metrics`, the controller reports to the
    /// manager's registry.
    pub fn with_options(mut self, options: ControllerOptions) -> Self {
        self.options = options;
        self
    }

    /// Names the controller (default: the `for_` kind, lowercased). The name labels logs and
    /// metrics and must be unique within the manager.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Builds the controller with its watches and reserves its name in the manager, without
    /// adding it to the manager: start it yourself, or add it with `mgr.add`.
    pub async fn build(self, reconciler: impl Reconciler + 'static) -> Result<Controller, Error> {
        let (name, parts) = self.check()?;
        parts.finish(name, reconciler).await
    }

    /// Builds the controller and adds it to the manager, which starts it (controller-runtime's
    /// `Complete`).
    pub async fn complete(self, reconciler: impl Reconciler + 'static) -> Result<(), Error> {
        let mgr = self.mgr.clone();
        let controller = self.build(reconciler).await?;
        add_to(&mgr, controller)
    }

    /// Builds the controller with a typed reconciler for the `for_` type (see
    /// [`reconcile::for_object`]): each request's object is read from the cache and handed to
    /// `f` with `ctx`; a request for an object that is gone is done at once. Fails if `K` is not
    /// the `for_` type.
    pub async fn build_typed<K, C, F, Fut>(self, ctx: Arc<C>, f: F) -> Result<Controller, Error>
    where
        K: CacheObject,
        C: Send + Sync + 'static,
        F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<reconcile::Action, ReconcileError>> + Send + 'static,
    {
        let (name, parts) = self.check()?;
        let found = parts
            .for_type
            .as_ref()
            .filter(|t| t.type_id == TypeId::of::<K>());
        let Some(dt) = found.and_then(|t| t.dt.downcast_ref::<K::DynamicType>()) else {
            return Err(Error::ForTypeMismatch {
                reconciler: std::any::type_name::<K>().to_string(),
                for_type: parts
                    .for_type
                    .as_ref()
                    .map_or("none", |t| t.type_name)
                    .to_string(),
            });
        };
        let reconciler =
            reconcile::for_object_with::<K, C, F, Fut>(parts.mgr.client(), dt.clone(), ctx, f);
        parts.finish(name, reconciler).await
    }

    /// [`build_typed`](Self::build_typed), then adds the controller to the manager.
    pub async fn complete_typed<K, C, F, Fut>(self, ctx: Arc<C>, f: F) -> Result<(), Error>
    where
        K: CacheObject,
        C: Send + Sync + 'static,
        F: Fn(Arc<K>, Arc<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<reconcile::Action, ReconcileError>> + Send + 'static,
    {
        let mgr = self.mgr.clone();
        let controller = self.build_typed(ctx, f).await?;
        add_to(&mgr, controller)
    }

    /// The checks that need no manager: one `for_`, `owns` with a `for_`, some watch, a
    /// name. Returns the name and what the build needs.
    fn check(self) -> Result<(String, Parts), Error> {
        if let (Some(first), Some(second)) = (&self.for_type, &self.extra_for) {
            return Err(Error::MultipleFor {
                first: first.kind.clone(),
                second: second.clone(),
            });
        }
        let name = match (&self.name, &self.for_type) {
            (Some(name), _) if !name.is_empty() => name.clone(),
            (_, Some(for_type)) => for_type.kind.to_lowercase(),
            _ => return Err(Error::MissingName),
        };
        if self.for_type.is_none()
            && let Some(owned) = self.owns.first()
        {
            return Err(Error::OwnsWithoutFor {
                owned: owned.clone(),
            });
        }
        if self.watches.is_empty() {
            return Err(Error::NoWatches { name });
        }
        let mut options = self.options;
        if options.metrics.is_none() {
            options.metrics = Some(self.mgr.metrics().clone());
        }
        Ok((
            name,
            Parts {
                mgr: self.mgr,
                for_type: self.for_type,
                watches: self.watches,
                filters: self.filters,
                options,
            },
        ))
    }
}

/// A checked builder.
struct Parts {
    mgr: Manager,
    for_type: Option<ForType>,
    watches: Vec<MakeWatch>,
    filters: Vec<BoxEventFilter>,
    options: ControllerOptions,
}

impl Parts {
    /// Reserves the name, creates the controller and adds its watches.
    async fn finish(
        self,
        name: String,
        reconciler: impl Reconciler + 'static,
    ) -> Result<Controller, Error> {
        let controller =
            Controller::new(name.clone(), reconciler, self.options).map_err(|source| {
                Error::Controller {
                    name: name.clone(),
                    source,
                }
            })?;
        // Reserve the name last among the checks, so a build that fails leaves it free.
        self.mgr
            .register_controller_name(&name)
            .map_err(|e| match e {
                manager::Error::DuplicateControllerName(n) => Error::DuplicateName(n),
                source => Error::Manager {
                    name: name.clone(),
                    source,
                },
            })?;
        let cx = BuildContext {
            cache: self.mgr.cache().clone(),
            filters: self.filters,
            owner: self.for_type.map(|t| t.owner),
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
