//! Event handlers: turn events into [`Request`](crate::Request)s (or other queue items) on the
//! workqueue.
//!
//! | handler | enqueues |
//! | --- | --- |
//! | [`EnqueueRequestForObject`] | the object the event is about (a controller's `for` type) |
//! | [`EnqueueRequestForOwner`] | the owner(s) of the object, by owner group and kind (`owns`) |
//! | [`EnqueueRequestsFromMapFunc`] | whatever a function maps the object to |
//! | [`Funcs`] | whatever your closures add |
//!
//! ## Priorities
//! With a priority queue (the controllers' default), handlers put work that is probably not
//! urgent behind real changes, as controller-runtime's do: creates from an informer's initial
//! list (`is_in_initial_list`) and updates whose old and new resourceVersion are equal (resync
//! replays) go in at [`LOW_PRIORITY`](crate::workqueue::LOW_PRIORITY); everything else at the
//! default priority. Handlers always call
//! [`Queue::add_with_opts`] for those, which a queue
//! without priorities treats as a plain add. Wrap a handler of your own in
//! [`with_low_priority_when_unchanged`] to get the same behaviour.
//!
//! ```
//! use std::sync::Arc;
//! use controller_runtime::event::CreateEvent;
//! use controller_runtime::handler::{EnqueueRequestForObject, EventHandler};
//! use controller_runtime::workqueue::Queue;
//! use controller_runtime::Request;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! fn on_create(queue: &dyn Queue<Request>) {
//!     let mut cm = ConfigMap::default();
//!     cm.metadata.namespace = Some("default".into());
//!     cm.metadata.name = Some("settings".into());
//!     let event = CreateEvent { object: Arc::new(cm), is_in_initial_list: false };
//!     EnqueueRequestForObject.create(&event, queue); // adds Request{default/settings}
//! }
//! ```

use std::sync::Arc;

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::workqueue::{Queue, QueueItem};

mod enqueue;
mod funcs;
mod mapped;
mod owner;
mod priority;

pub use enqueue::EnqueueRequestForObject;
pub use funcs::Funcs;
pub use mapped::EnqueueRequestsFromMapFunc;
pub use owner::{EnqueueRequestForOwner, OwnerScope};
pub use priority::{LowPriorityWhenUnchanged, with_low_priority_when_unchanged};

/// Maps events about objects of type `K` to work items of type `T` on a queue.
pub trait EventHandler<K, T: QueueItem = crate::Request>: Send + Sync {
    /// Called for a create event that passed the predicates.
    fn create(&self, event: &CreateEvent<K>, queue: &dyn Queue<T>);
    /// Called for an update event that passed the predicates.
    fn update(&self, event: &UpdateEvent<K>, queue: &dyn Queue<T>);
    /// Called for a delete event that passed the predicates.
    fn delete(&self, event: &DeleteEvent<K>, queue: &dyn Queue<T>);
    /// Called for a generic event that passed the predicates.
    fn generic(&self, event: &GenericEvent<K>, queue: &dyn Queue<T>);
}

/// A shared, type-erased handler, as watches hold them.
pub type BoxEventHandler<K, T = crate::Request> = Arc<dyn EventHandler<K, T>>;

impl<K, T: QueueItem, H: EventHandler<K, T> + ?Sized> EventHandler<K, T> for Arc<H> {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<T>) {
        (**self).create(e, q)
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<T>) {
        (**self).update(e, q)
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<T>) {
        (**self).delete(e, q)
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<T>) {
        (**self).generic(e, q)
    }
}

impl<K, T: QueueItem, H: EventHandler<K, T> + ?Sized> EventHandler<K, T> for Box<H> {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<T>) {
        (**self).create(e, q)
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<T>) {
        (**self).update(e, q)
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<T>) {
        (**self).delete(e, q)
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<T>) {
        (**self).generic(e, q)
    }
}
