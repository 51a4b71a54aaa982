//! The [`Predicate`] trait every filter of this module implements, and its shared form. A
//! leaf of `predicate`.

use std::sync::Arc;

use crate::event::{Event, Object};

/// A filter on events: whether an event about objects of `K` reaches the handler.
///
/// A closure over the event is a predicate (Go's `predicate.Funcs` is a `match` on the event):
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{CreateEvent, DeleteEvent, Event};
/// use controller_runtime::predicate::Predicate;
/// use k8s_openapi::api::core::v1::Pod;
///
/// // Ignore deletes we only learned about on relist.
/// let p = |e: &Event<Pod>| !matches!(e, Event::Delete(d) if d.delete_state_unknown);
/// let pod = Arc::new(Pod::default());
/// assert!(!p.filter(&Event::Delete(DeleteEvent { object: pod.clone(), delete_state_unknown: true })));
/// assert!(p.filter(&Event::Create(CreateEvent { object: pod, is_in_initial_list: false })));
/// ```
pub trait Predicate<K: ?Sized>: Send + Sync {
    /// Whether `event` passes.
    fn filter(&self, event: &Event<K>) -> bool;

    /// The same decision from the event's metadata alone, when the predicate reads nothing
    /// else: `Some(pass)`; `None` (the default) when it needs the typed objects.
    ///
    /// A source whose cache holds objects compactly asks this first, and decodes an event's
    /// objects only for a predicate (or a handler) that answers `None`. The metadata predicates
    /// of this module, their combinations and the builder's event filters answer it.
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        let _ = event;
        None
    }
}

/// A shared, type-erased predicate, as watches hold them.
pub type BoxPredicate<K> = Arc<dyn Predicate<K>>;

/// Shares and type-erases `predicate`, for a list of predicates: a watch's (as
/// [`EventDispatcher::new`](crate::source::EventDispatcher::new) takes them), or one given to
/// [`all`](super::all) and [`any`](super::any). (The builder's
/// [`Input::with_predicate`](crate::builder::Input::with_predicate) and the
/// [`PredicateExt`](super::PredicateExt) combinators take a predicate as it is.)
///
/// ```
/// use controller_runtime::predicate::{self, BoxPredicate, GenerationChanged, LabelSelectorPredicate};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let predicates: Vec<BoxPredicate<Deployment>> = vec![
///     predicate::boxed(GenerationChanged),
///     predicate::boxed(LabelSelectorPredicate::parse("app=web").unwrap()),
/// ];
/// # assert_eq!(predicates.len(), 2);
/// ```
pub fn boxed<K: ?Sized, P: Predicate<K> + 'static>(predicate: P) -> BoxPredicate<K> {
    Arc::new(predicate)
}

impl<K: ?Sized, P: Predicate<K> + ?Sized> Predicate<K> for Arc<P> {
    fn filter(&self, event: &Event<K>) -> bool {
        (**self).filter(event)
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        (**self).filter_metadata(event)
    }
}

impl<K: ?Sized, F> Predicate<K> for F
where
    F: Fn(&Event<K>) -> bool + Send + Sync,
{
    fn filter(&self, event: &Event<K>) -> bool {
        self(event)
    }
}
