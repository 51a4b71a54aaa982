//! Event handlers: turn events into [`Request`](crate::Request)s (or other queue items) on the
//! workqueue.

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::workqueue::{Queue, QueueItem};

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
