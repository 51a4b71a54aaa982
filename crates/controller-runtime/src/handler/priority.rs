//! The low-priority rule of controller-runtime's handlers, in one place.

use std::time::Duration;

use futures::future::BoxFuture;
use kube_core::Resource;

use super::EventHandler;
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::workqueue::{AddOpts, LOW_PRIORITY, Queue, QueueItem};

/// The priority a create event's work goes in at: low for the initial list.
pub(crate) fn create_priority<K>(e: &CreateEvent<K>) -> Option<i32> {
    e.is_in_initial_list.then_some(LOW_PRIORITY)
}

/// The priority an update event's work goes in at: low when the resourceVersion did not change
/// (a resync replay).
pub(crate) fn update_priority<K: Resource>(e: &UpdateEvent<K>) -> Option<i32> {
    (e.old.meta().resource_version == e.new.meta().resource_version).then_some(LOW_PRIORITY)
}

/// Adds `item` at `priority` (a plain add when `None`).
pub(crate) fn add_at<T: QueueItem>(queue: &dyn Queue<T>, priority: Option<i32>, item: T) {
    match priority {
        Some(p) => queue.add_with_opts(
            AddOpts {
                priority: Some(p),
                ..AddOpts::default()
            },
            item,
        ),
        None => queue.add(item),
    }
}

/// A view of a queue whose `add` goes in at a fixed priority; every other call is forwarded.
/// Lets handlers that only know `add` (closures, user handlers) honour the low-priority rule.
struct AddAtPriority<'a, T: QueueItem> {
    inner: &'a dyn Queue<T>,
    priority: i32,
}

impl<T: QueueItem> Queue<T> for AddAtPriority<'_, T> {
    fn add(&self, item: T) {
        add_at(self.inner, Some(self.priority), item)
    }
    fn add_after(&self, item: T, delay: Duration) {
        self.inner.add_after(item, delay)
    }
    fn add_rate_limited(&self, item: T) {
        self.inner.add_rate_limited(item)
    }
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        self.inner.add_with_opts(opts, item)
    }
    fn forget(&self, item: &T) {
        self.inner.forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.inner.num_requeues(item)
    }
    fn get(&self) -> BoxFuture<'_, Option<T>> {
        self.inner.get()
    }
    fn done(&self, item: &T) {
        self.inner.done(item)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn shut_down(&self) {
        self.inner.shut_down()
    }
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        self.inner.shut_down_with_drain()
    }
    fn is_shutting_down(&self) -> bool {
        self.inner.is_shutting_down()
    }
}

/// Calls `f` with `queue`, or with a view of it whose `add` goes in at `priority`.
pub(crate) fn with_priority<T: QueueItem>(
    queue: &dyn Queue<T>,
    priority: Option<i32>,
    f: impl FnOnce(&dyn Queue<T>),
) {
    match priority {
        Some(priority) => f(&AddAtPriority {
            inner: queue,
            priority,
        }),
        None => f(queue),
    }
}

/// Wraps a handler so that the items it `add`s for initial-list creates and unchanged-
/// resourceVersion updates go in at [`LOW_PRIORITY`] (controller-runtime's
/// `WithLowPriorityWhenUnchanged`). See [`with_low_priority_when_unchanged`].
#[derive(Clone, Debug)]
pub struct LowPriorityWhenUnchanged<H>(pub H);

/// Wraps `handler` in [`LowPriorityWhenUnchanged`]. The built-in handlers already behave so.
pub fn with_low_priority_when_unchanged<H>(handler: H) -> LowPriorityWhenUnchanged<H> {
    LowPriorityWhenUnchanged(handler)
}

impl<K: Resource, T: QueueItem, H: EventHandler<K, T>> EventHandler<K, T>
    for LowPriorityWhenUnchanged<H>
{
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<T>) {
        with_priority(q, create_priority(e), |q| self.0.create(e, q))
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<T>) {
        with_priority(q, update_priority(e), |q| self.0.update(e, q))
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<T>) {
        self.0.delete(e, q)
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<T>) {
        self.0.generic(e, q)
    }
}
