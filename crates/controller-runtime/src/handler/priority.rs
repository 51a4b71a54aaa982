//! The low-priority rule of controller-runtime's handlers, in one place.

use crate::event::Object;

use super::event_handler::EventHandler;
use crate::event::Event;
use crate::workqueue::{AddOpts, Enqueue, LOW_PRIORITY, QueueItem};

/// The priority rule of controller-runtime's handlers: [`LOW_PRIORITY`] for a create from the
/// informer's initial list and for an update whose resourceVersion did not change (a resync
/// replay); `None` (the default priority) for every other event.
pub(crate) fn low_priority<K: ?Sized + Object>(event: &Event<K>) -> Option<i32> {
    let low = match event {
        Event::Create(e) => e.is_in_initial_list,
        Event::Update(e) => e.old.metadata().resource_version == e.new.metadata().resource_version,
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
/// `WithLowPriorityWhenUnchanged`): a create from the informer's initial list, or an update
/// whose resourceVersion did not change (a resync replay). The built-in handlers already
/// behave so.
///
/// ```
/// use controller_runtime::handler::{Funcs, LowPriorityWhenUnchanged};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let handler = LowPriorityWhenUnchanged(Funcs::<ConfigMap>::default());
/// # let _ = handler;
/// ```
#[derive(Clone, Debug)]
pub struct LowPriorityWhenUnchanged<H>(pub H);

impl<K: Object, T: QueueItem, H: EventHandler<K, T>> EventHandler<K, T>
    for LowPriorityWhenUnchanged<H>
{
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>) {
        with_low_priority(event, queue, |queue| self.0.handle(event, queue))
    }
    fn handle_metadata(&self, event: &Event<dyn Object>, queue: &dyn Enqueue<T>) -> bool {
        let mut handled = false;
        with_low_priority(event, queue, |queue| {
            handled = self.0.handle_metadata(event, queue)
        });
        handled
    }
}

/// Calls `f` with `queue`, or, when [`low_priority`] says so, with a view of it whose plain
/// `add` goes in at that priority.
pub(crate) fn with_low_priority<K: ?Sized + Object, T: QueueItem>(
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::low_priority;
    use crate::event::{CreateEvent, DeleteEvent, Event, UpdateEvent};
    use crate::workqueue::LOW_PRIORITY;

    fn cm(rv: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    #[test]
    fn initial_list_creates_and_resync_replays_are_low_priority() {
        let listed = Event::Create(CreateEvent {
            object: cm("1"),
            is_in_initial_list: true,
        });
        assert_eq!(low_priority(&listed), Some(LOW_PRIORITY));
        let created = Event::Create(CreateEvent {
            object: cm("1"),
            is_in_initial_list: false,
        });
        assert_eq!(low_priority(&created), None);
        let replay = Event::Update(UpdateEvent {
            old: cm("2"),
            new: cm("2"),
        });
        assert_eq!(low_priority(&replay), Some(LOW_PRIORITY));
        let changed = Event::Update(UpdateEvent {
            old: cm("2"),
            new: cm("3"),
        });
        assert_eq!(low_priority(&changed), None);
        let deleted = Event::Delete(DeleteEvent {
            object: cm("3"),
            delete_state_unknown: false,
        });
        assert_eq!(low_priority(&deleted), None);
    }
}
