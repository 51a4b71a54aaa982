//! The [`EventHandler`] trait every handler of this module implements. A leaf of `handler`.

use std::sync::Arc;

use crate::event::{Event, Object};
use crate::workqueue::{Enqueue, QueueItem};

/// Maps events about objects of type `K` to work items of type `T` on a queue.
pub trait EventHandler<K, T: QueueItem = crate::Request>: Send + Sync {
    /// Called for each event that passed the watch's predicates; adds the work it means to
    /// `queue`.
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>);

    /// Handles the event from its metadata alone, if the handler reads nothing else, and says
    /// whether it did; `false` (the default, doing nothing) when it needs the typed objects.
    ///
    /// A source whose cache holds objects compactly asks this first, and decodes an event's
    /// objects only when the handler (or a predicate) needs them.
    /// [`EnqueueRequestForObject`](super::EnqueueRequestForObject),
    /// [`EnqueueRequestForOwner`](super::EnqueueRequestForOwner) and
    /// [`LowPriorityWhenUnchanged`](super::LowPriorityWhenUnchanged) over either handle it.
    fn handle_metadata(&self, event: &Event<dyn Object>, queue: &dyn Enqueue<T>) -> bool {
        let _ = (event, queue);
        false
    }
}

/// A shared, type-erased handler, as watches hold them.
pub type BoxEventHandler<K, T = crate::Request> = Arc<dyn EventHandler<K, T>>;

impl<K, T: QueueItem, H: EventHandler<K, T> + ?Sized> EventHandler<K, T> for Arc<H> {
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>) {
        (**self).handle(event, queue)
    }
    fn handle_metadata(&self, event: &Event<dyn Object>, queue: &dyn Enqueue<T>) -> bool {
        (**self).handle_metadata(event, queue)
    }
}

impl<K, T: QueueItem, H: EventHandler<K, T> + ?Sized> EventHandler<K, T> for Box<H> {
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>) {
        (**self).handle(event, queue)
    }
    fn handle_metadata(&self, event: &Event<dyn Object>, queue: &dyn Enqueue<T>) -> bool {
        (**self).handle_metadata(event, queue)
    }
}
