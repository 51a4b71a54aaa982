//! [`EnqueueRequestForObject`]: reconcile the object the event is about.

use kube_core::Resource;

use super::EventHandler;
use super::priority::{add_at, create_priority, update_priority};
use crate::Request;
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::workqueue::Queue;

/// Enqueues a [`Request`] for the object of each event: the namespace and name of the created,
/// updated (new state), deleted or generic object. The handler of a controller's primary type.
///
/// Initial-list creates and resync updates go in at low priority (see the
/// [module docs](crate::handler#priorities)). An object without a name (only possible in a
/// hand-made generic event) is logged and skipped.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnqueueRequestForObject;

/// The request naming `obj`, or `None` (logged) when it has no name.
pub(crate) fn request_for<K: Resource>(obj: &K, event: &str) -> Option<Request> {
    let meta = obj.meta();
    match meta.name.as_deref() {
        Some(name) if !name.is_empty() => Some(Request {
            namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
            name: name.to_string(),
        }),
        _ => {
            tracing::error!(
                event,
                "event about an object without a name: nothing to enqueue"
            );
            None
        }
    }
}

impl<K: Resource> EventHandler<K> for EnqueueRequestForObject {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<Request>) {
        if let Some(req) = request_for(&*e.object, "create") {
            add_at(q, create_priority(e), req);
        }
    }

    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<Request>) {
        if let Some(req) = request_for(&*e.new, "update") {
            add_at(q, update_priority(e), req);
        }
    }

    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<Request>) {
        if let Some(req) = request_for(&*e.object, "delete") {
            q.add(req);
        }
    }

    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<Request>) {
        if let Some(req) = request_for(&*e.object, "generic") {
            q.add(req);
        }
    }
}
