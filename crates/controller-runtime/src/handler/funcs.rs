//! [`Funcs`]: an event handler from closures.

use std::fmt;

use kube_core::Resource;

use super::event_handler::EventHandler;
use super::priority::with_low_priority;
use crate::event::{CreateEvent, DeleteEvent, Event, GenericEvent, UpdateEvent};
use crate::workqueue::{Enqueue, QueueItem};

type On<E, T> = Box<dyn Fn(&E, &dyn Enqueue<T>) + Send + Sync>;

/// An event handler with one optional closure per event kind; a kind without a closure does
/// nothing (controller-runtime's `handler.Funcs`).
///
/// As controller-runtime's, the closures of creates and updates get a queue whose `add` puts
/// initial-list creates and resync updates at low priority.
///
/// ```
/// use controller_runtime::handler::Funcs;
/// use controller_runtime::Request;
/// use k8s_openapi::api::core::v1::Node;
/// use kube_core::ResourceExt;
///
/// // Any Node deletion re-checks the one scheduler object.
/// let handler = Funcs::<Node>::new()
///     .on_delete(|_event, queue| queue.add(Request::new("kube-system", "scheduler")));
/// ```
pub struct Funcs<K, T = crate::Request> {
    create: Option<On<CreateEvent<K>, T>>,
    update: Option<On<UpdateEvent<K>, T>>,
    delete: Option<On<DeleteEvent<K>, T>>,
    generic: Option<On<GenericEvent<K>, T>>,
}

impl<K, T> Default for Funcs<K, T> {
    fn default() -> Self {
        Funcs {
            create: None,
            update: None,
            delete: None,
            generic: None,
        }
    }
}

impl<K, T> fmt::Debug for Funcs<K, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Funcs")
            .field("create", &self.create.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("generic", &self.generic.is_some())
            .finish()
    }
}

impl<K, T> Funcs<K, T> {
    /// A handler that does nothing until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Handles create events.
    pub fn on_create(
        mut self,
        f: impl Fn(&CreateEvent<K>, &dyn Enqueue<T>) + Send + Sync + 'static,
    ) -> Self {
        self.create = Some(Box::new(f));
        self
    }

    /// Handles update events.
    pub fn on_update(
        mut self,
        f: impl Fn(&UpdateEvent<K>, &dyn Enqueue<T>) + Send + Sync + 'static,
    ) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Handles delete events.
    pub fn on_delete(
        mut self,
        f: impl Fn(&DeleteEvent<K>, &dyn Enqueue<T>) + Send + Sync + 'static,
    ) -> Self {
        self.delete = Some(Box::new(f));
        self
    }

    /// Handles generic events.
    pub fn on_generic(
        mut self,
        f: impl Fn(&GenericEvent<K>, &dyn Enqueue<T>) + Send + Sync + 'static,
    ) -> Self {
        self.generic = Some(Box::new(f));
        self
    }
}

impl<K: Resource, T: QueueItem> EventHandler<K, T> for Funcs<K, T> {
    fn handle(&self, event: &Event<K>, queue: &dyn Enqueue<T>) {
        with_low_priority(event, queue, |q| match event {
            Event::Create(e) => self.create.iter().for_each(|f| f(e, q)),
            Event::Update(e) => self.update.iter().for_each(|f| f(e, q)),
            Event::Delete(e) => self.delete.iter().for_each(|f| f(e, q)),
            Event::Generic(e) => self.generic.iter().for_each(|f| f(e, q)),
        });
    }
}
