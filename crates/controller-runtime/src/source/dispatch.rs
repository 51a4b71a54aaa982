//! [`EventDispatcher`]: predicates, then the handler, then the queue. Every source delivers
//! through it.

use std::fmt;
use std::sync::Arc;

use crate::Request;
use crate::event::Event;
use crate::handler::{BoxEventHandler, EventHandler};
use crate::predicate::{BoxPredicate, Predicate};
use crate::workqueue::{Enqueue, QueueItem};

/// One watch's destination: its handler, its predicates and the controller's queue (its
/// enqueue-only side).
///
/// A source calls [`dispatch`](Self::dispatch) for each event; the event reaches the handler
/// only if every predicate passes it. Cloning is cheap (three `Arc`s), so a source can hand a
/// clone to each task it spawns.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{Event, GenericEvent};
/// use controller_runtime::handler::Funcs;
/// use controller_runtime::predicate;
/// use controller_runtime::source::EventDispatcher;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// # fn demo(queue: Arc<dyn controller_runtime::workqueue::Enqueue<controller_runtime::Request>>) {
///
/// let handler = Funcs::<ConfigMap>::new().on_generic(|_e, _q| println!("generic event"));
/// let only_labelled = predicate::boxed(predicate::LabelSelectorPredicate::parse("app").unwrap());
/// let dispatcher = EventDispatcher::new(Arc::new(handler), queue, vec![only_labelled]);
/// // Filtered out: the ConfigMap has no "app" label.
/// let event = Event::Generic(GenericEvent { object: Arc::new(ConfigMap::default()) });
/// assert!(!dispatcher.dispatch(&event));
/// # }
/// ```
pub struct EventDispatcher<K, T: QueueItem = Request> {
    handler: BoxEventHandler<K, T>,
    queue: Arc<dyn Enqueue<T>>,
    predicates: Arc<[BoxPredicate<K>]>,
}

impl<K, T: QueueItem> Clone for EventDispatcher<K, T> {
    fn clone(&self) -> Self {
        EventDispatcher {
            handler: self.handler.clone(),
            queue: self.queue.clone(),
            predicates: self.predicates.clone(),
        }
    }
}

impl<K, T: QueueItem> fmt::Debug for EventDispatcher<K, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventDispatcher")
            .field("predicates", &self.predicates.len())
            .finish()
    }
}

impl<K, T: QueueItem> EventDispatcher<K, T> {
    /// Bundles a handler, a queue and predicates.
    pub fn new(
        handler: BoxEventHandler<K, T>,
        queue: Arc<dyn Enqueue<T>>,
        predicates: Vec<BoxPredicate<K>>,
    ) -> Self {
        EventDispatcher {
            handler,
            queue,
            predicates: predicates.into(),
        }
    }

    /// The queue the handler feeds.
    pub fn queue(&self) -> &Arc<dyn Enqueue<T>> {
        &self.queue
    }

    /// The handler.
    pub fn handler(&self) -> &dyn EventHandler<K, T> {
        &*self.handler
    }

    /// Delivers `event`: to the handler if every predicate passes it. Returns whether it
    /// passed.
    pub fn dispatch(&self, event: &Event<K>) -> bool {
        let pass = self.predicates.iter().all(|p| p.filter(event));
        if pass {
            self.handler.handle(event, &*self.queue);
        } else {
            tracing::trace!(event = event.kind(), "event filtered out by a predicate");
        }
        pass
    }
}
