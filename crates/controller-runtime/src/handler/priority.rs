//! The low-priority rule of controller-runtime's handlers, in one place.

use kube_core::Resource;

use super::EventHandler;
use crate::event::Event;
use crate::workqueue::{AddOpts, Enqueue, LOW_PRIORITY, QueueItem};

/// The priority rule of controller-runtime's handlers: [`LOW_PRIORITY`] for a create from the
/// informer's initial list and for an update whose resourceVersion did not change (a resync
/// replay); `None` (the default priority) for every other event.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{CreateEvent, Event};
/// use controller_runtime::handler::low_priority;
/// use controller_runtime::workqueue::LOW_PRIORITY;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let listed = Event::Create(CreateEvent { object: Arc::new(ConfigMap::default()), is_in_initial_list: true });
/// assert_eq!(low_priority(&listed), Some(LOW_PRIORITY));
/// ```
pub fn low_priority<K: Resource>(event: &Event<K>) -> Option<i32> {
    let low = match event {
        Event::Create(e) => e.is_in_initial_list,
        Event::Update(e) => e.old.meta().resource_version == e.new.meta().resource_version,
        Event::Delete(_) | Event::Generic(_) => false,
    };
    low.then_some(LOW_PRIORITY)
}

/// A view of a queue whose plain `add` goes in at a fixed priority; every other add (a delay,
/// rate limiting, a priority of its own) is passed on unchanged, as controller-runtime's
/// `priorityQueueWrapper` does.
struct AddAtPriority<'a, T: QueueItem> {
    inner: &'a dyn Enqueue<T>,
    priority: i32,
}

impl<T: QueueItem> Enqueue<T> for AddAtPriority<'_, T> {
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        let opts = if opts == AddOpts::default() {
            opts.priority(self.priority)
        } else {
            opts
        };
        self.inner.add_with_opts(opts, item)
    }
}

/// Wraps a handler so that the items it `add`s for initial-list creates and unchanged-
/// resourceVersion updates go in at [`LOW_PRIORITY`] (controller-runtime's
/// `WithLowPriorityWhenUnchanged`); see [`low_priority`]. The built-in handlers already behave
/// so.
#[derive(Clone, Debug)]
pub struct LowPriorityWhenUnchanged<H>(pub H);

/// Wraps `handler` in [`LowPriorityWhenUnchanged`].
pub fn with_low_priority_when_unchanged<H>(handler: H) -> LowPriorityWhenUnchanged<H> {
    LowPriorityWhenUnchanged(handler)
}

impl<K: Resource, T: QueueItem, H: EventHandler<K, T>> EventHandler<K, T>
    for LowPriorityWhenUnchanged<H>
{
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>) {
        with_low_priority(event, queue, |queue| self.0.handle(event, queue))
    }
}

/// Calls `f` with `queue`, or, when [`low_priority`] says so, with a view of it whose plain
/// `add` goes in at that priority.
pub(crate) fn with_low_priority<K: Resource, T: QueueItem>(
    event: &Event<K>,
    queue: &dyn Enqueue<T>,
    f: impl FnOnce(&dyn Enqueue<T>),
) {
    match low_priority(event) {
        Some(priority) => f(&AddAtPriority {
            inner: queue,
            priority,
        }),
        None => f(queue),
    }
}
