//! [`EventDispatcher`]: predicates, then the handler, then the queue. Every source delivers
//! through it.

use std::fmt;
use std::sync::Arc;

use std::cell::OnceCell;

use kube_core::Resource;

use crate::Request;
use crate::cache::CachedObject;
use crate::event::{CreateEvent, DeleteEvent, Event, Object, UpdateEvent};
use crate::handler::{BoxEventHandler, EventHandler};
use crate::predicate::{BoxPredicate, Predicate};
use crate::workqueue::{AddOpts, Enqueue, QueueItem};

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
    ///
    /// See also [`dispatch_cached`](Self::dispatch_cached), for objects as a cache holds them.
    pub fn dispatch(&self, event: &Event<K>) -> bool {
        let pass = self.predicates.iter().all(|p| p.filter(event));
        if pass {
            self.handler.handle(event, &*self.queue);
        } else {
            tracing::trace!(event = event.kind(), "event filtered out by a predicate");
        }
        pass
    }

    /// Delivers an event about objects as a cache holds them ([`CachedObject`]): predicates
    /// and the handler that can decide from metadata
    /// ([`Predicate::filter_metadata`], [`EventHandler::handle_metadata`]) get an event
    /// of `dyn Object` over the cached metadata; the typed event is built (its objects
    /// decoded, once, and shared with the event's other handlers) only for one that cannot.
    /// An object that does not decode is logged and its event dropped. Returns whether the
    /// event passed the predicates.
    pub fn dispatch_cached(&self, event: CachedEvent<'_, K>) -> bool
    where
        K: Resource + 'static,
    {
        self.dispatch_cached_into(event, &*self.queue)
    }

    /// Delivers the creates of many objects (an informer's first list, or the replay a late
    /// handler gets) as [`dispatch_cached`](Self::dispatch_cached) does each, and hands what
    /// the handler adds to the queue in one [`Enqueue::add_all`]: one lock of the queue and one
    /// wakeup of its workers for the whole list. Returns how many passed the predicates.
    pub fn dispatch_cached_creates(
        &self,
        objects: &[CachedObject<K>],
        is_in_initial_list: bool,
    ) -> usize
    where
        K: Resource + 'static,
    {
        let collect = Collect(parking_lot::Mutex::new(Vec::with_capacity(objects.len())));
        let passed = objects
            .iter()
            .filter(|object| {
                self.dispatch_cached_into(
                    CachedEvent::Create {
                        object,
                        is_in_initial_list,
                    },
                    &collect,
                )
            })
            .count();
        let items = collect.0.into_inner();
        if !items.is_empty() {
            self.queue.add_all(items);
        }
        passed
    }

    fn dispatch_cached_into(&self, event: CachedEvent<'_, K>, queue: &dyn Enqueue<T>) -> bool
    where
        K: Resource + 'static,
    {
        let meta: OnceCell<Event<dyn Object>> = OnceCell::new();
        let typed: OnceCell<Option<Event<K>>> = OnceCell::new();
        let meta = || meta.get_or_init(|| event.metadata());
        let typed = || typed.get_or_init(|| event.typed()).as_ref();
        for p in self.predicates.iter() {
            let pass = match p.filter_metadata(meta()) {
                Some(pass) => pass,
                None => match typed() {
                    Some(e) => p.filter(e),
                    None => return false,
                },
            };
            if !pass {
                tracing::trace!(event = event.kind(), "event filtered out by a predicate");
                return false;
            }
        }
        if !self.handler.handle_metadata(meta(), queue) {
            match typed() {
                Some(e) => self.handler.handle(e, queue),
                None => return false,
            }
        }
        true
    }
}

/// A queue that only records what is added, for [`EventDispatcher::dispatch_cached_creates`]
/// to hand over in one batch. Uncontended: one dispatching thread at a time.
struct Collect<T>(parking_lot::Mutex<Vec<(AddOpts, T)>>);

impl<T: QueueItem> Enqueue<T> for Collect<T> {
    fn add_with_opts(&self, opts: AddOpts, item: T) {
        self.0.lock().push((opts, item));
    }
}

/// An event about objects as a cache holds them, for [`EventDispatcher::dispatch_cached`]:
/// the informer's callbacks, before anything is decoded.
#[derive(Debug)]
pub enum CachedEvent<'a, K> {
    /// An object was created (or listed: `is_in_initial_list`).
    Create {
        /// The object.
        object: &'a CachedObject<K>,
        /// As [`CreateEvent::is_in_initial_list`].
        is_in_initial_list: bool,
    },
    /// An object changed.
    Update {
        /// Before.
        old: &'a CachedObject<K>,
        /// After.
        new: &'a CachedObject<K>,
    },
    /// An object was deleted.
    Delete {
        /// Its last known state.
        object: &'a CachedObject<K>,
        /// As [`DeleteEvent::delete_state_unknown`].
        delete_state_unknown: bool,
    },
}

impl<K: Resource + 'static> CachedEvent<'_, K> {
    fn kind(&self) -> &'static str {
        match self {
            CachedEvent::Create { .. } => "create",
            CachedEvent::Update { .. } => "update",
            CachedEvent::Delete { .. } => "delete",
        }
    }

    /// The event over the objects' metadata: nothing decoded, nothing copied.
    fn metadata(&self) -> Event<dyn Object> {
        match *self {
            CachedEvent::Create {
                object,
                is_in_initial_list,
            } => Event::Create(CreateEvent {
                object: object.as_object(),
                is_in_initial_list,
            }),
            CachedEvent::Update { old, new } => Event::Update(UpdateEvent {
                old: old.as_object(),
                new: new.as_object(),
            }),
            CachedEvent::Delete {
                object,
                delete_state_unknown,
            } => Event::Delete(DeleteEvent {
                object: object.as_object(),
                delete_state_unknown,
            }),
        }
    }

    /// The typed event: its objects decoded (once per cached object); `None` if one does not
    /// decode.
    fn typed(&self) -> Option<Event<K>> {
        Some(match *self {
            CachedEvent::Create {
                object,
                is_in_initial_list,
            } => Event::Create(CreateEvent {
                object: object.object()?,
                is_in_initial_list,
            }),
            CachedEvent::Update { old, new } => Event::Update(UpdateEvent {
                old: old.object()?,
                new: new.object()?,
            }),
            CachedEvent::Delete {
                object,
                delete_state_unknown,
            } => Event::Delete(DeleteEvent {
                object: object.object()?,
                delete_state_unknown,
            }),
        })
    }
}
