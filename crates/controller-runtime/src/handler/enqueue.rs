//! [`EnqueueRequestForObject`]: reconcile the object the event is about.

use super::event_handler::EventHandler;
use super::priority::with_low_priority;
use crate::Request;
use crate::event::{Event, Object};
use crate::workqueue::Enqueue;

/// Enqueues a [`Request`] for the object of each event: the namespace and name of the created,
/// updated (new state), deleted or generic object. The handler of a controller's primary type.
///
/// Initial-list creates and resync updates go in at low priority (see the
/// [module docs](crate::handler#priorities)). An object without a name (only possible in a
/// hand-made generic event) is logged and skipped.
#[derive(Clone, Copy, Debug, Default)]
pub struct EnqueueRequestForObject;

/// The request naming `obj`, or `None` (logged) when it has no name. Reads only its namespace
/// and name ([`Object::namespace_and_name`]).
pub(crate) fn request_for<K: ?Sized + Object>(obj: &K, event: &str) -> Option<Request> {
    match obj.namespace_and_name() {
        (namespace, name) if !name.is_empty() => Some(Request {
            namespace: namespace.map(str::to_owned),
            name: name.to_owned(),
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

impl EnqueueRequestForObject {
    fn enqueue<K: ?Sized + Object>(event: &Event<K>, queue: &dyn Enqueue<Request>) {
        if let Some(req) = request_for(&**event.object(), event.kind()) {
            with_low_priority(event, queue, |queue| queue.add(req));
        }
    }
}

impl<K: Object> EventHandler<K> for EnqueueRequestForObject {
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<Request>) {
        Self::enqueue(event, queue)
    }
    fn handle_metadata(&self, event: &Event<dyn Object>, queue: &dyn Enqueue<Request>) -> bool {
        Self::enqueue(event, queue);
        true
    }
}
