//! Predicates: filters that decide, per event, whether a handler sees it.
//!
//! A source asks every predicate of a watch before calling the handler; the event reaches the
//! handler only if all of them return `true` (see
//! [`EventDispatcher`](crate::source::EventDispatcher)). A predicate has one method,
//! [`filter`](Predicate::filter), over the [`Event`](crate::event::Event) (create, update, delete or generic), and a
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

#[cfg(doc)]
use crate::event::Object;

mod changed;
mod combine;
mod filter;
mod selector;

pub use changed::{AnnotationChanged, GenerationChanged, LabelChanged, ResourceVersionChanged};
pub use combine::{And, Not, Or, PredicateExt, all, any};
pub use filter::{BoxPredicate, Predicate, boxed};
pub use selector::{Error, LabelSelectorPredicate};
