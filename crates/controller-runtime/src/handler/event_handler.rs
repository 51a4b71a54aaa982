//! The [`EventHandler`] trait every handler of this module implements. A leaf of `handler`.

use std::sync::Arc;

use crate::event::Event;
use crate::workqueue::{Enqueue, QueueItem};

/// Maps events about objects of type `K` to work items of type `T` on a queue.
pub trait EventHandler<K, T: QueueItem = crate::Request>: Send + Sync {
    /// Called for each event that passed the watch's predicates; adds the work it means to
    /// `queue`.
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>);
}

/// A shared, type-erased handler, as watches hold them.
pub type BoxEventHandler<K, T = crate::Request> = Arc<dyn EventHandler<K, T>>;

impl<K, T: QueueItem, H: EventHandler<K, T> + ?Sized> EventHandler<K, T> for Arc<H> {
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>) {
        (**self).handle(event, queue)
    }
}

impl<K, T: QueueItem, H: EventHandler<K, T> + ?Sized> EventHandler<K, T> for Box<H> {
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>) {
        (**self).handle(event, queue)
    }
}
