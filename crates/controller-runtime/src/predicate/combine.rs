//! Combinators: [`and`], [`or`] and [`not`] over other predicates.

use std::sync::Arc;

use super::{BoxPredicate, Predicate};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};

/// Passes an event when every inner predicate passes it (an empty `And` passes everything).
/// Stops at the first predicate that rejects.
pub struct And<K>(Vec<BoxPredicate<K>>);

/// Passes an event when at least one inner predicate passes it (an empty `Or` passes nothing,
/// as controller-runtime's). Stops at the first predicate that accepts.
pub struct Or<K>(Vec<BoxPredicate<K>>);

/// Passes exactly the events the inner predicate rejects.
pub struct Not<K>(BoxPredicate<K>);

/// Every predicate must pass.
pub fn and<K: 'static>(predicates: impl IntoIterator<Item = BoxPredicate<K>>) -> BoxPredicate<K> {
    Arc::new(And(predicates.into_iter().collect()))
}

/// At least one predicate must pass.
pub fn or<K: 'static>(predicates: impl IntoIterator<Item = BoxPredicate<K>>) -> BoxPredicate<K> {
    Arc::new(Or(predicates.into_iter().collect()))
}

/// The inner predicate must reject.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::{event::UpdateEvent, predicate::{self, Predicate}};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// // Only resyncs (updates that did not change the resourceVersion).
/// let resyncs = predicate::not(predicate::resource_version_changed::<ConfigMap>());
/// let cm = Arc::new(ConfigMap::default());
/// assert!(resyncs.update(&UpdateEvent { old: cm.clone(), new: cm }));
/// ```
pub fn not<K: 'static>(predicate: BoxPredicate<K>) -> BoxPredicate<K> {
    Arc::new(Not(predicate))
}

impl<K> And<K> {
    /// An `And` over `predicates`.
    pub fn new(predicates: Vec<BoxPredicate<K>>) -> Self {
        And(predicates)
    }
}

impl<K> Or<K> {
    /// An `Or` over `predicates`.
    pub fn new(predicates: Vec<BoxPredicate<K>>) -> Self {
        Or(predicates)
    }
}

impl<K> Not<K> {
    /// The negation of `predicate`.
    pub fn new(predicate: BoxPredicate<K>) -> Self {
        Not(predicate)
    }
}

impl<K> Predicate<K> for And<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.0.iter().all(|p| p.create(e))
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.0.iter().all(|p| p.update(e))
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.0.iter().all(|p| p.delete(e))
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.0.iter().all(|p| p.generic(e))
    }
}

impl<K> Predicate<K> for Or<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.0.iter().any(|p| p.create(e))
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.0.iter().any(|p| p.update(e))
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.0.iter().any(|p| p.delete(e))
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.0.iter().any(|p| p.generic(e))
    }
}

impl<K> Predicate<K> for Not<K> {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        !self.0.create(e)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        !self.0.update(e)
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        !self.0.delete(e)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        !self.0.generic(e)
    }
}
