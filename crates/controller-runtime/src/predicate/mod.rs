//! Predicates: filters that decide, per event, whether a handler sees it.
//!
//! A source asks every predicate of a watch before calling the handler; the event reaches the
//! handler only if all of them return `true` (see
//! [`EventDispatcher`](crate::source::EventDispatcher)).
//!
//! | predicate | lets through |
//! | --- | --- |
//! | [`GenerationChanged`] | updates whose `metadata.generation` changed (spec changes) |
//! | [`ResourceVersionChanged`] | updates whose `metadata.resourceVersion` changed (drops resyncs) |
//! | [`LabelChanged`] / [`AnnotationChanged`] | updates whose labels / annotations changed |
//! | [`LabelSelectorPredicate`] | events about objects whose labels match a selector |
//! | [`Funcs`], [`from_fn`] | whatever your closures say |
//! | [`and`], [`or`], [`not`] | combinations of the above |
//!
//! The `*Changed` predicates only filter updates: creates, deletes and generic events pass.
//!
//! ```
//! use std::sync::Arc;
//! use controller_runtime::event::UpdateEvent;
//! use controller_runtime::predicate::{self, Predicate};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! // Spec changes, or a change of labels.
//! let p = predicate::or::<ConfigMap>([predicate::generation_changed(), predicate::label_changed()]);
//!
//! let old = Arc::new(ConfigMap::default());
//! let mut changed = ConfigMap::default();
//! changed.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
//! assert!(p.update(&UpdateEvent { old: old.clone(), new: Arc::new(changed) }));
//! assert!(!p.update(&UpdateEvent { old: old.clone(), new: old }));
//! ```

use std::sync::Arc;

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

mod changed;
mod combine;
mod funcs;
mod selector;

pub use changed::{
    AnnotationChanged, GenerationChanged, LabelChanged, ResourceVersionChanged, annotation_changed,
    generation_changed, label_changed, resource_version_changed,
};
pub use combine::{And, Not, Or, and, not, or};
pub use funcs::{FilterFn, Funcs, from_fn};
pub use selector::{Error, LabelSelectorPredicate, label_selector};

/// A filter on events. Every method defaults to `true` (let the event through).
pub trait Predicate<K>: Send + Sync {
    /// Whether a create event passes.
    fn create(&self, _event: &CreateEvent<K>) -> bool {
        true
    }
    /// Whether an update event passes.
    fn update(&self, _event: &UpdateEvent<K>) -> bool {
        true
    }
    /// Whether a delete event passes.
    fn delete(&self, _event: &DeleteEvent<K>) -> bool {
        true
    }
    /// Whether a generic event passes.
    fn generic(&self, _event: &GenericEvent<K>) -> bool {
        true
    }
}

/// A shared, type-erased predicate, as watches hold them.
pub type BoxPredicate<K> = Arc<dyn Predicate<K>>;

impl<K, P: Predicate<K> + ?Sized> Predicate<K> for Arc<P> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        (**self).create(e)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        (**self).update(e)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        (**self).delete(e)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        (**self).generic(e)
    }
}

impl<K, P: Predicate<K> + ?Sized> Predicate<K> for Box<P> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        (**self).create(e)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        (**self).update(e)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        (**self).delete(e)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        (**self).generic(e)
    }
}
