//! Events: what a [`Source`](crate::source::Source) tells predicates and handlers about an object.
//!
//! Objects are shared behind an [`Arc`]: every predicate and handler of an event reads the same
//! allocation; nothing is deep-copied per handler. When the cache holds objects compactly (its
//! default), a [`Kind`](crate::source::Kind) source first offers predicates and the handler an
//! `Event<dyn Object>` over the cached metadata
//! ([`Predicate::filter_metadata`](crate::predicate::Predicate::filter_metadata),
//! [`EventHandler::handle_metadata`](crate::handler::EventHandler::handle_metadata)), and
//! builds the typed event, decoding its objects once, only for those that need it.
//!
//! `K` is any Kubernetes object: a k8s-openapi type, a `#[derive(CustomResource)]` type, a
//! [`kube_core::DynamicObject`] or a [`kube_core::PartialObjectMeta`]. It may also be
//! `dyn` [`Object`]: any object seen through its metadata, what the builder's event filters read
//! ([`Event::erased`] turns an event of a concrete type into one).

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::Resource;

/// Any Kubernetes object, seen through its metadata (Go's `client.Object`, as far as
/// predicates go). Every [`Resource`] is one. `Event<dyn Object>` is the event of a predicate
/// that fits every object type, such as the builder's
/// [event filters](crate::builder::ControllerBuilder::with_event_filter).
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{Event, GenericEvent, Object};
/// use k8s_openapi::api::core::v1::Pod;
///
/// let mut pod = Pod::default();
/// pod.metadata.name = Some("web".into());
/// let event = Event::Generic(GenericEvent { object: Arc::new(pod) });
/// let any: Event<dyn Object> = event.erased();
/// assert_eq!(any.object().metadata().name.as_deref(), Some("web"));
/// ```
pub trait Object {
    /// The object's metadata.
    fn metadata(&self) -> &ObjectMeta;

    /// The object's namespace (`None` when empty or cluster-scoped) and name (empty when it
    /// has none): the metadata's, unless the object knows them without reading its metadata
    /// (an object of a compact cache, whose metadata is read from its JSON on demand).
    fn namespace_and_name(&self) -> (Option<&str>, &str) {
        let meta = self.metadata();
        (
            meta.namespace.as_deref().filter(|ns| !ns.is_empty()),
            meta.name.as_deref().unwrap_or_default(),
        )
    }
}

impl<K: Resource> Object for K {
    fn metadata(&self) -> &ObjectMeta {
        self.meta()
    }
}

/// An object was created (or, with `is_in_initial_list`, found by the informer's initial list).
#[derive(Debug)]
pub struct CreateEvent<K: ?Sized> {
    /// The object.
    pub object: Arc<K>,
    /// True when the event comes from the informer's initial list (or the replay a handler gets
    /// when it is added to a running informer) rather than from a watch.
    pub is_in_initial_list: bool,
}

/// An object changed (or, on resync, is replayed with `old` and `new` the same object).
#[derive(Debug)]
pub struct UpdateEvent<K: ?Sized> {
    /// The object before the change.
    pub old: Arc<K>,
    /// The object after the change.
    pub new: Arc<K>,
}

/// An object was deleted.
#[derive(Debug)]
pub struct DeleteEvent<K: ?Sized> {
    /// The last state of the object known to the informer.
    pub object: Arc<K>,
    /// True when the deletion was missed (e.g. during a watch gap) and found on relist: `object`
    /// is then the last state the informer saw, which may be stale (client-go's
    /// `DeletedFinalStateUnknown`).
    pub delete_state_unknown: bool,
}

/// An event from outside the cluster (a [`Channel`](crate::source::Channel) or a custom source).
#[derive(Debug)]
pub struct GenericEvent<K: ?Sized> {
    /// The object the event is about.
    pub object: Arc<K>,
}

// Manual impls: deriving Clone would needlessly require `K: Clone`; cloning an event clones Arcs.
impl<K: ?Sized> Clone for CreateEvent<K> {
    fn clone(&self) -> Self {
        CreateEvent {
            object: self.object.clone(),
            is_in_initial_list: self.is_in_initial_list,
        }
    }
}
impl<K: ?Sized> Clone for UpdateEvent<K> {
    fn clone(&self) -> Self {
        UpdateEvent {
            old: self.old.clone(),
            new: self.new.clone(),
        }
    }
}
impl<K: ?Sized> Clone for DeleteEvent<K> {
    fn clone(&self) -> Self {
        DeleteEvent {
            object: self.object.clone(),
            delete_state_unknown: self.delete_state_unknown,
        }
    }
}
impl<K: ?Sized> Clone for GenericEvent<K> {
    fn clone(&self) -> Self {
        GenericEvent {
            object: self.object.clone(),
        }
    }
}

/// Any of the four events, for code that handles them uniformly (logging, channels).
#[derive(Debug)]
pub enum Event<K: ?Sized> {
    /// See [`CreateEvent`].
    Create(CreateEvent<K>),
    /// See [`UpdateEvent`].
    Update(UpdateEvent<K>),
    /// See [`DeleteEvent`].
    Delete(DeleteEvent<K>),
    /// See [`GenericEvent`].
    Generic(GenericEvent<K>),
}

impl<K: ?Sized> Clone for Event<K> {
    fn clone(&self) -> Self {
        match self {
            Event::Create(e) => Event::Create(e.clone()),
            Event::Update(e) => Event::Update(e.clone()),
            Event::Delete(e) => Event::Delete(e.clone()),
            Event::Generic(e) => Event::Generic(e.clone()),
        }
    }
}

impl<K: ?Sized> Event<K> {
    /// The object the event is about (the new state for updates).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Event::Create(e) => &e.object,
            Event::Update(e) => &e.new,
            Event::Delete(e) => &e.object,
            Event::Generic(e) => &e.object,
        }
    }

    /// `"create"`, `"update"`, `"delete"` or `"generic"`, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Create(_) => "create",
            Event::Update(_) => "update",
            Event::Delete(_) => "delete",
            Event::Generic(_) => "generic",
        }
    }
}

impl<K: Object + 'static> Event<K> {
    /// The same event about the same objects (shared, not copied), seen through their
    /// metadata: what a predicate of `dyn Object` reads.
    pub fn erased(&self) -> Event<dyn Object> {
        let any = |o: &Arc<K>| o.clone() as Arc<dyn Object>;
        match self {
            Event::Create(e) => Event::Create(CreateEvent {
                object: any(&e.object),
                is_in_initial_list: e.is_in_initial_list,
            }),
            Event::Update(e) => Event::Update(UpdateEvent {
                old: any(&e.old),
                new: any(&e.new),
            }),
            Event::Delete(e) => Event::Delete(DeleteEvent {
                object: any(&e.object),
                delete_state_unknown: e.delete_state_unknown,
            }),
            Event::Generic(e) => Event::Generic(GenericEvent {
                object: any(&e.object),
            }),
        }
    }
}
