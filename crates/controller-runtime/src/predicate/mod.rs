//! Predicates: filters that decide, per event, whether a handler sees it.
//!
//! A source asks every predicate of a watch before calling the handler; the event reaches the
//! handler only if all of them return `true` (see
//! [`EventDispatcher`](crate::source::EventDispatcher)). A predicate has one method,
//! [`filter`](Predicate::filter), over the [`Event`] (create, update, delete or generic), and a
//! closure `Fn(&Event<K>) -> bool` is a predicate.
//!
//! | predicate | lets through |
//! | --- | --- |
//! | [`GenerationChanged`] | updates whose `metadata.generation` changed (spec changes) |
//! | [`ResourceVersionChanged`] | updates whose `metadata.resourceVersion` changed (drops resyncs) |
//! | [`LabelChanged`] / [`AnnotationChanged`] | updates whose labels / annotations changed |
//! | [`LabelSelectorPredicate`] | events about objects whose labels match a selector |
//! | a closure `Fn(&Event<K>) -> bool` | whatever it says |
//! | `a.and(b)`, `a.or(b)`, `a.not()` ([`PredicateExt`]) | combinations of the above |
//! | [`all`], [`any`] | every / any predicate of a list made at run time |
//!
//! The `*Changed` predicates only filter updates: creates, deletes and generic events pass.
//!
//! The metadata predicates above are written once, over metadata, and are predicates of every
//! `K` that is an [`Object`]: of each typed, dynamic or metadata-only object type, and of
//! `dyn Object`, the type of the builder's
//! [event filters](crate::builder::ControllerBuilder::with_event_filter), asked by every watch
//! of a controller whatever its type.
//!
//! ```
//! use std::sync::Arc;
//! use controller_runtime::event::{Event, UpdateEvent};
//! use controller_runtime::predicate::{GenerationChanged, LabelChanged, Predicate, PredicateExt};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! // Spec changes, or a change of labels.
//! let p = GenerationChanged.or(LabelChanged);
//!
//! let old = Arc::new(ConfigMap::default());
//! let mut changed = ConfigMap::default();
//! changed.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
//! assert!(p.filter(&Event::Update(UpdateEvent { old: old.clone(), new: Arc::new(changed) })));
//! assert!(!p.filter(&Event::Update(UpdateEvent { old: old.clone(), new: old })));
//! ```

use std::sync::Arc;

use crate::event::Event;
#[cfg(doc)]
use crate::event::Object;

mod changed;
mod combine;
mod selector;

pub use changed::{AnnotationChanged, GenerationChanged, LabelChanged, ResourceVersionChanged};
pub use combine::{And, Not, Or, PredicateExt, all, any};
pub use selector::{Error, LabelSelectorPredicate};

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
}

/// A shared, type-erased predicate, as watches hold them.
pub type BoxPredicate<K> = Arc<dyn Predicate<K>>;

/// Shares and type-erases `predicate`, for a list of predicates: a watch's (as
/// [`EventDispatcher::new`](crate::source::EventDispatcher::new) takes them), or one given to
/// [`all`] and [`any`]. (The builder's [`Input::with_predicate`](crate::builder::Input::with_predicate)
/// and the [`PredicateExt`] combinators take a predicate as it is.)
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
}

impl<K: ?Sized, F> Predicate<K> for F
where
    F: Fn(&Event<K>) -> bool + Send + Sync,
{
    fn filter(&self, event: &Event<K>) -> bool {
        self(event)
    }
}
