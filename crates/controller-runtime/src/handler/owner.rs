//! [`EnqueueRequestForOwner`]: reconcile the owner of the object the event is about.

use std::any::TypeId;

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_core::{ApiResource, Resource};

use super::event_handler::EventHandler;
use super::priority::with_low_priority;
use crate::Request;
use crate::event::{Event, Object};
use crate::workqueue::Enqueue;

/// Whether the owner type lives in a namespace. controller-runtime asks the RESTMapper; here the
/// caller says it (typed owners: [`EnqueueRequestForOwner::of`] reads it from the type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerScope {
    /// The owner is namespaced: the request gets the owned object's namespace (an owner reference
    /// can only point into the object's own namespace).
    Namespaced,
    /// The owner is cluster-scoped: the request has no namespace.
    Cluster,
}

/// Enqueues a [`Request`] for the owner of each event's object: the owner references whose
/// group and kind are the owner type's (the version does not matter). By default only the
/// controller reference (`controller: true`) counts; [`every_owner`](Self::every_owner) takes
/// every matching reference. Updates enqueue the owners of both the old and the new object, each
/// once.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{DeleteEvent, Event};
/// use controller_runtime::handler::{EnqueueRequestForOwner, EventHandler};
/// use k8s_openapi::api::{apps::v1::ReplicaSet, core::v1::Pod};
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
/// # use controller_runtime::workqueue::Enqueue;
/// # fn demo(queue: &dyn Enqueue<controller_runtime::Request>) {
///
/// let handler = EnqueueRequestForOwner::of::<ReplicaSet>();
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("default".into());
/// pod.metadata.owner_references = Some(vec![OwnerReference {
///     api_version: "apps/v1".into(), kind: "ReplicaSet".into(), name: "web-5d4f".into(),
///     controller: Some(true), ..Default::default()
/// }]);
/// // Enqueues default/web-5d4f.
/// let deleted = DeleteEvent { object: Arc::new(pod), delete_state_unknown: false };
/// handler.handle(&Event::Delete(deleted), queue);
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct EnqueueRequestForOwner {
    group: String,
    kind: String,
    scope: OwnerScope,
    only_controller: bool,
}

impl EnqueueRequestForOwner {
    /// Owners of the typed kind `O` (a k8s-openapi type or a `#[derive(CustomResource)]` type);
    /// its scope comes from the type.
    pub fn of<O>() -> Self
    where
        O: Resource<DynamicType = ()>,
        O::Scope: 'static,
    {
        let scope = if TypeId::of::<O::Scope>() == TypeId::of::<ClusterResourceScope>() {
            OwnerScope::Cluster
        } else {
            OwnerScope::Namespaced
        };
        Self::new(O::group(&()), O::kind(&()), scope)
    }

    /// Owners of group `group` (`""` for the core group) and kind `kind`.
    pub fn new(group: impl Into<String>, kind: impl Into<String>, scope: OwnerScope) -> Self {
        EnqueueRequestForOwner {
            group: group.into(),
            kind: kind.into(),
            scope,
            only_controller: true,
        }
    }

    /// Owners of the kind an [`ApiResource`] describes (dynamic objects).
    pub fn for_api_resource(resource: &ApiResource, scope: OwnerScope) -> Self {
        Self::new(resource.group.clone(), resource.kind.clone(), scope)
    }

    /// Take every owner reference of the owner kind, not only the controller one
    /// (controller-runtime's handler without `OnlyControllerOwner`).
    pub fn every_owner(mut self) -> Self {
        self.only_controller = false;
        self
    }

    /// Whether only the controller reference counts (the default).
    pub fn only_controller(&self) -> bool {
        self.only_controller
    }

    fn matches(&self, r: &OwnerReference) -> bool {
        if r.kind != self.kind {
            return false;
        }
        // apiVersion is "group/version", or "version" for the core group.
        match r.api_version.split_once('/') {
            Some((group, version)) if !version.contains('/') => group == self.group,
            Some(_) => {
                tracing::error!(api_version = %r.api_version, "invalid owner reference apiVersion");
                false
            }
            None => self.group.is_empty(),
        }
    }

    /// Appends the owner requests of `obj` to `out`, skipping duplicates.
    fn collect(&self, meta: &ObjectMeta, out: &mut Vec<Request>) {
        let refs = meta.owner_references.as_deref().unwrap_or_default();
        let namespace = match self.scope {
            OwnerScope::Namespaced => meta.namespace.clone().filter(|ns| !ns.is_empty()),
            OwnerScope::Cluster => None,
        };
        let mut push = |r: &OwnerReference| {
            let req = Request {
                namespace: namespace.clone(),
                name: r.name.clone(),
            };
            if !out.contains(&req) {
                out.push(req);
            }
        };
        if self.only_controller {
            // Kubernetes allows one controller reference; like metav1.GetControllerOf, take the
            // first and only then check its kind.
            if let Some(r) = refs.iter().find(|r| r.controller == Some(true))
                && self.matches(r)
            {
                push(r);
            }
        } else {
            refs.iter().filter(|r| self.matches(r)).for_each(push);
        }
    }

    /// Enqueues the owners of the event's object (and of the old one, for an update).
    fn enqueue<K: ?Sized + Object>(&self, event: &Event<K>, queue: &dyn Enqueue<Request>) {
        let mut reqs = Vec::new();
        if let Event::Update(e) = event {
            self.collect(e.old.metadata(), &mut reqs);
        }
        self.collect(event.object().metadata(), &mut reqs);
        with_low_priority(event, queue, |queue| {
            for req in reqs {
                queue.add(req);
            }
        });
    }
}

impl<K: Object> EventHandler<K> for EnqueueRequestForOwner {
    /// Updates enqueue the owners of the old and the new object, each once.
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<Request>) {
        self.enqueue(event, queue)
    }
    fn handle_metadata(&self, event: &Event<dyn Object>, queue: &dyn Enqueue<Request>) -> bool {
        self.enqueue(event, queue);
        true
    }
}
