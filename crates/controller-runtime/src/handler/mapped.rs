//! [`EnqueueRequestsFromMapFunc`]: reconcile whatever a function maps the object to.

use std::collections::HashSet;
use std::fmt;

use kube_core::Resource;

use super::event_handler::EventHandler;
use super::priority::with_low_priority;
use crate::event::Event;
use crate::workqueue::{Enqueue, QueueItem};

/// Enqueues the items a function maps each event's object to: for watching a type the
/// controller does not own (e.g. Nodes -> every Foo that runs on them). Updates map both the old
/// and the new object and enqueue each item once. The function should be quick: it runs on the
/// source's task.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{Event, GenericEvent};
/// use controller_runtime::handler::{EnqueueRequestsFromMapFunc, EventHandler};
/// use controller_runtime::Request;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_core::ResourceExt;
/// # fn demo(queue: &dyn controller_runtime::workqueue::Enqueue<Request>) {
///
/// // A ConfigMap "web-config" triggers the reconcile of the app "web" in its namespace.
/// let handler = EnqueueRequestsFromMapFunc::new(|cm: &ConfigMap| {
///     let app = cm.name_any().strip_suffix("-config")?.to_string();
///     Some(Request { namespace: cm.namespace(), name: app })
/// });
/// # handler.handle(&Event::Generic(GenericEvent { object: Arc::new(ConfigMap::default()) }), queue);
/// # }
/// ```
pub struct EnqueueRequestsFromMapFunc<F> {
    map: F,
}

impl<F> EnqueueRequestsFromMapFunc<F> {
    /// A handler enqueueing what `map` returns (any iterable: a `Vec`, an `Option`, ...).
    pub fn new<K, I>(map: F) -> Self
    where
        F: Fn(&K) -> I,
        I: IntoIterator,
    {
        EnqueueRequestsFromMapFunc { map }
    }
}

impl<F> fmt::Debug for EnqueueRequestsFromMapFunc<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EnqueueRequestsFromMapFunc")
    }
}

impl<K, T, F, I> EventHandler<K, T> for EnqueueRequestsFromMapFunc<F>
where
    K: Resource,
    T: QueueItem,
    F: Fn(&K) -> I + Send + Sync,
    I: IntoIterator<Item = T>,
{
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>) {
        let items = match event {
            Event::Update(e) => dedup((self.map)(&e.old).into_iter().chain((self.map)(&e.new))),
            _ => dedup((self.map)(event.object())),
        };
        with_low_priority(event, queue, |queue| {
            for item in items {
                queue.add(item);
            }
        });
    }
}

/// The items in first-seen order, each once.
fn dedup<T: QueueItem>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = HashSet::new();
    items
        .into_iter()
        .filter(|item| seen.insert(item.clone()))
        .collect()
}
