//! Combinators: [`and`], [`or`] and [`not`] over other predicates.

use std::sync::Arc;

use super::filter::{BoxPredicate, Predicate};
use crate::event::Event;

/// Every predicate must pass (an empty `and` passes everything). Stops at the first predicate
/// that rejects.
pub fn and<K: ?Sized + 'static>(
    predicates: impl IntoIterator<Item = BoxPredicate<K>>,
) -> BoxPredicate<K> {
    let all: Vec<BoxPredicate<K>> = predicates.into_iter().collect();
    Arc::new(move |e: &Event<K>| all.iter().all(|p| p.filter(e)))
}

/// At least one predicate must pass (an empty `or` passes nothing, as controller-runtime's).
/// Stops at the first predicate that accepts.
pub fn or<K: ?Sized + 'static>(
    predicates: impl IntoIterator<Item = BoxPredicate<K>>,
) -> BoxPredicate<K> {
    let any: Vec<BoxPredicate<K>> = predicates.into_iter().collect();
    Arc::new(move |e: &Event<K>| any.iter().any(|p| p.filter(e)))
}

/// The inner predicate must reject.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::{event::{Event, UpdateEvent}, predicate::{self, Predicate}};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// // Only resyncs (updates that did not change the resourceVersion).
/// let resyncs = predicate::not::<ConfigMap>(predicate::boxed(predicate::ResourceVersionChanged));
/// let cm = Arc::new(ConfigMap::default());
/// assert!(resyncs.filter(&Event::Update(UpdateEvent { old: cm.clone(), new: cm })));
/// ```
pub fn not<K: ?Sized + 'static>(predicate: BoxPredicate<K>) -> BoxPredicate<K> {
    Arc::new(move |e: &Event<K>| !predicate.filter(e))
}
