//! [`EventDispatcher`]: predicates, then the handler, then the queue. Every source delivers
//! through it.

use std::fmt;
use std::sync::Arc;

use crate::Request;
use crate::event::{CreateEvent, DeleteEvent, Event, GenericEvent, UpdateEvent};
use crate::handler::{BoxEventHandler, EventHandler};
use crate::predicate::{BoxPredicate, Predicate};
use crate::workqueue::{Queue, QueueItem};

/// One watch's destination: its handler, its predicates and the controller's queue.
///
/// A source calls [`create`](Self::create), [`update`](Self::update), [`delete`](Self::delete)
/// or [`generic`](Self::generic) for each event; the event reaches the handler only if every
/// predicate passes it. Cloning is cheap (three `Arc`s), so a source can hand a clone to each
/// task it spawns.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::GenericEvent;
/// use controller_runtime::handler::Funcs;
/// use controller_runtime::predicate;
/// use controller_runtime::source::EventDispatcher;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// # fn demo(queue: Arc<dyn controller_runtime::workqueue::Queue<controller_runtime::Request>>) {
///
/// let handler = Funcs::<ConfigMap>::new().on_generic(|_e, _q| println!("generic event"));
/// let only_labelled = predicate::label_selector::<ConfigMap>("app").unwrap();
/// let dispatcher = EventDispatcher::new(Arc::new(handler), queue, vec![only_labelled]);
/// // Filtered out: the ConfigMap has no "app" label.
/// dispatcher.generic(&GenericEvent { object: Arc::new(ConfigMap::default()) });
/// # }
/// ```
pub struct EventDispatcher<K, T: QueueItem = Request> {
    handler: BoxEventHandler<K, T>,
    queue: Arc<dyn Queue<T>>,
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
        queue: Arc<dyn Queue<T>>,
        predicates: Vec<BoxPredicate<K>>,
    ) -> Self {
        EventDispatcher {
            handler,
            queue,
            predicates: predicates.into(),
        }
    }

    /// The queue the handler feeds.
    pub fn queue(&self) -> &Arc<dyn Queue<T>> {
        &self.queue
    }

    /// The handler.
    pub fn handler(&self) -> &dyn EventHandler<K, T> {
        &*self.handler
    }

    /// Delivers a create event; returns whether it passed the predicates.
    pub fn create(&self, event: &CreateEvent<K>) -> bool {
        let pass = self.predicates.iter().all(|p| p.create(event));
        if pass {
            self.handler.create(event, &*self.queue);
        } else {
            tracing::trace!("create event filtered out by a predicate");
        }
        pass
    }

    /// Delivers an update event; returns whether it passed the predicates.
    pub fn update(&self, event: &UpdateEvent<K>) -> bool {
        let pass = self.predicates.iter().all(|p| p.update(event));
        if pass {
            self.handler.update(event, &*self.queue);
        } else {
            tracing::trace!("update event filtered out by a predicate");
        }
        pass
    }

    /// Delivers a delete event; returns whether it passed the predicates.
    pub fn delete(&self, event: &DeleteEvent<K>) -> bool {
        let pass = self.predicates.iter().all(|p| p.delete(event));
        if pass {
            self.handler.delete(event, &*self.queue);
        } else {
            tracing::trace!("delete event filtered out by a predicate");
        }
        pass
    }

    /// Delivers a generic event; returns whether it passed the predicates.
    pub fn generic(&self, event: &GenericEvent<K>) -> bool {
        let pass = self.predicates.iter().all(|p| p.generic(event));
        if pass {
            self.handler.generic(event, &*self.queue);
        } else {
            tracing::trace!("generic event filtered out by a predicate");
        }
        pass
    }

    /// Delivers any event; returns whether it passed the predicates.
    pub fn dispatch(&self, event: &Event<K>) -> bool {
        match event {
            Event::Create(e) => self.create(e),
            Event::Update(e) => self.update(e),
            Event::Delete(e) => self.delete(e),
            Event::Generic(e) => self.generic(e),
        }
    }
}
