//! Predicates that let an update through only when a part of the object changed.

use kube_core::Resource;

use super::{BoxPredicate, Predicate};
use crate::event::UpdateEvent;

/// Passes updates whose `metadata.generation` changed, i.e. changes to the spec (the API server
/// bumps the generation on changes outside metadata and status). Status-only updates, metadata
/// updates and resyncs are dropped. Creates, deletes and generic events pass.
///
/// Objects without a generation (ConfigMaps, for instance) never have it change: use
/// [`ResourceVersionChanged`] for them.
///
/// ```
/// use std::sync::Arc;
/// use controller_runtime::{event::UpdateEvent, predicate::{GenerationChanged, Predicate}};
/// use k8s_openapi::api::apps::v1::Deployment;
///
/// let mut old = Deployment::default();
/// old.metadata.generation = Some(1);
/// let mut new = old.clone();
/// new.metadata.generation = Some(2);
/// let ev = UpdateEvent { old: Arc::new(old.clone()), new: Arc::new(new) };
/// assert!(GenerationChanged.update(&ev));
/// let same = UpdateEvent { old: Arc::new(old.clone()), new: Arc::new(old) };
/// assert!(!GenerationChanged.update(&same));
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

impl<K: Resource> Predicate<K> for GenerationChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        e.old.meta().generation != e.new.meta().generation
    }
}

impl<K: Resource> Predicate<K> for ResourceVersionChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        e.old.meta().resource_version != e.new.meta().resource_version
    }
}

fn same_map<V: PartialEq>(
    a: &Option<std::collections::BTreeMap<String, V>>,
    b: &Option<std::collections::BTreeMap<String, V>>,
) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        (Some(m), None) | (None, Some(m)) => m.is_empty(),
        (None, None) => true,
    }
}

impl<K: Resource> Predicate<K> for LabelChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        !same_map(&e.old.meta().labels, &e.new.meta().labels)
    }
}

impl<K: Resource> Predicate<K> for AnnotationChanged {
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        !same_map(&e.old.meta().annotations, &e.new.meta().annotations)
    }
}

/// [`GenerationChanged`], shared and type-erased, ready for a watch's predicate list.
pub fn generation_changed<K: Resource>() -> BoxPredicate<K> {
    std::sync::Arc::new(GenerationChanged)
}

/// [`ResourceVersionChanged`], shared and type-erased.
pub fn resource_version_changed<K: Resource>() -> BoxPredicate<K> {
    std::sync::Arc::new(ResourceVersionChanged)
}

/// [`LabelChanged`], shared and type-erased.
pub fn label_changed<K: Resource>() -> BoxPredicate<K> {
    std::sync::Arc::new(LabelChanged)
}

/// [`AnnotationChanged`], shared and type-erased.
pub fn annotation_changed<K: Resource>() -> BoxPredicate<K> {
    std::sync::Arc::new(AnnotationChanged)
}
