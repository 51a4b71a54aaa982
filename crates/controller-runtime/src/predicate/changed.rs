//! Predicates that let an update through only when a part of the object's metadata changed.
//!
//! Each rule is written once, over [`ObjectMeta`], and holds for every [`Object`]: a typed
//! object as well as `dyn Object` (the builder's event filters).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::filter::Predicate;
use crate::event::{Event, Object};

/// Passes updates whose `metadata.generation` changed, i.e. changes to the spec (the API server
/// bumps the generation on changes outside metadata and status). Status-only updates, metadata
/// updates and resyncs are dropped. Creates, deletes and generic events pass.
///
/// Objects without a generation (ConfigMaps, for instance) never have it change: use
/// [`ResourceVersionChanged`] for them.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::event::{Event, UpdateEvent};
/// use controller_runtime::predicate::{GenerationChanged, Predicate};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let mut old = Deployment::default();
/// old.metadata.generation = Some(1);
/// let mut new = old.clone();
/// new.metadata.generation = Some(2);
/// let ev = Event::Update(UpdateEvent { old: Arc::new(old.clone()), new: Arc::new(new) });
/// assert!(GenerationChanged.filter(&ev));
/// // The same rule, seen by an event filter of any type.
/// assert!(GenerationChanged.filter(&ev.erased()));
/// let same = Event::Update(UpdateEvent { old: Arc::new(old.clone()), new: Arc::new(old) });
/// assert!(!GenerationChanged.filter(&same));
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct GenerationChanged;

/// Passes updates whose `metadata.resourceVersion` changed: drops the `Update(obj, obj)` replays
/// of an informer resync. Creates, deletes and generic events pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceVersionChanged;

/// Passes updates whose labels changed (a missing label map equals an empty one). Creates,
/// deletes and generic events pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct LabelChanged;

/// Passes updates whose annotations changed (a missing annotation map equals an empty one).
/// Creates, deletes and generic events pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct AnnotationChanged;

/// Applies `changed(old, new)` to updates; every other event passes.
fn on_update<K: ?Sized + Object>(
    event: &Event<K>,
    changed: impl FnOnce(&ObjectMeta, &ObjectMeta) -> bool,
) -> bool {
    match event {
        Event::Update(e) => changed(e.old.metadata(), e.new.metadata()),
        _ => true,
    }
}

impl<K: ?Sized + Object> Predicate<K> for GenerationChanged {
    fn filter(&self, event: &Event<K>) -> bool {
        on_update(event, |old, new| old.generation != new.generation)
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        Some(Predicate::<dyn Object>::filter(self, event))
    }
}

impl<K: ?Sized + Object> Predicate<K> for ResourceVersionChanged {
    fn filter(&self, event: &Event<K>) -> bool {
        on_update(event, |old, new| {
            old.resource_version != new.resource_version
        })
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        Some(Predicate::<dyn Object>::filter(self, event))
    }
}

/// Whether two optional maps are the same, a missing map being an empty one.
fn same_map<V: PartialEq>(
    a: &Option<BTreeMap<String, V>>,
    b: &Option<BTreeMap<String, V>>,
) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        (Some(m), None) | (None, Some(m)) => m.is_empty(),
        (None, None) => true,
    }
}

impl<K: ?Sized + Object> Predicate<K> for LabelChanged {
    fn filter(&self, event: &Event<K>) -> bool {
        on_update(event, |old, new| !same_map(&old.labels, &new.labels))
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        Some(Predicate::<dyn Object>::filter(self, event))
    }
}

impl<K: ?Sized + Object> Predicate<K> for AnnotationChanged {
    fn filter(&self, event: &Event<K>) -> bool {
        on_update(event, |old, new| {
            !same_map(&old.annotations, &new.annotations)
        })
    }
    fn filter_metadata(&self, event: &Event<dyn Object>) -> Option<bool> {
        Some(Predicate::<dyn Object>::filter(self, event))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::event::UpdateEvent;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn labelled(labels: Option<&[(&str, &str)]>) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.labels = labels.map(|l| {
            l.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        });
        Arc::new(cm)
    }

    /// One rule for both views: a typed event and the same event seen as `dyn Object` agree.
    #[test]
    fn a_rule_holds_for_the_typed_and_the_erased_event() {
        let cases = [
            (None, Some(&[][..]), false), // a missing label map equals an empty one
            (None, Some(&[("a", "")][..]), true),
            (Some(&[("a", "1")][..]), Some(&[("a", "1")][..]), false),
        ];
        for (old, new, want) in cases {
            let ev = Event::Update(UpdateEvent {
                old: labelled(old),
                new: labelled(new),
            });
            assert_eq!(LabelChanged.filter(&ev), want, "{old:?} -> {new:?}");
            assert_eq!(
                LabelChanged.filter(&ev.erased()),
                want,
                "erased {old:?} -> {new:?}"
            );
        }
    }
}
