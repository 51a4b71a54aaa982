//! [`EventFilter`]: a predicate over object metadata, so that one filter fits every watch of a
//! controller whatever its object type ([`ControllerBuilder::with_event_filter`]).
//!
//! [`ControllerBuilder::with_event_filter`]: super::ControllerBuilder::with_event_filter

use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::Resource;

use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::predicate::{
    AnnotationChanged, GenerationChanged, LabelChanged, LabelSelectorPredicate, Predicate,
    ResourceVersionChanged,
};

/// A filter on events that only looks at the objects' metadata, so that it applies to watches
/// of any object type (typed, dynamic or metadata-only). Every method defaults to `true`.
///
/// The metadata predicates of [`crate::predicate`] ([`GenerationChanged`],
/// [`ResourceVersionChanged`], [`LabelChanged`], [`AnnotationChanged`],
/// [`LabelSelectorPredicate`]) are event filters too; [`from_fn`] makes one from a closure.
///
/// ```
/// use controller_runtime::builder::{EventFilter, filter_fn};
/// use controller_runtime::predicate::GenerationChanged;
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
///
/// let mut old = ObjectMeta::default();
/// old.generation = Some(1);
/// let mut new = old.clone();
/// new.resource_version = Some("7".into());
/// // A status-only change: the generation did not move.
/// assert!(!GenerationChanged.update(&old, &new));
///
/// let not_system = filter_fn(|meta: &ObjectMeta| meta.namespace.as_deref() != Some("kube-system"));
/// assert!(not_system.create(&new, false));
/// ```
pub trait EventFilter: Send + Sync {
    /// Whether a create event about `object` passes.
    fn create(&self, _object: &ObjectMeta, _is_in_initial_list: bool) -> bool {
        true
    }
    /// Whether an update event from `old` to `new` passes.
    fn update(&self, _old: &ObjectMeta, _new: &ObjectMeta) -> bool {
        true
    }
    /// Whether a delete event about `object` passes.
    fn delete(&self, _object: &ObjectMeta, _delete_state_unknown: bool) -> bool {
        true
    }
    /// Whether a generic event about `object` passes.
    fn generic(&self, _object: &ObjectMeta) -> bool {
        true
    }
}

/// A shared event filter, as the builder holds them.
pub type BoxEventFilter = Arc<dyn EventFilter>;

impl<F: EventFilter + ?Sized> EventFilter for Arc<F> {
    fn create(&self, o: &ObjectMeta, initial: bool) -> bool {
        (**self).create(o, initial)
    }
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        (**self).update(old, new)
    }
    fn delete(&self, o: &ObjectMeta, unknown: bool) -> bool {
        (**self).delete(o, unknown)
    }
    fn generic(&self, o: &ObjectMeta) -> bool {
        (**self).generic(o)
    }
}

/// An [`EventFilter`] from one closure over the object's metadata (the new object's for
/// updates), for every kind of event; see [`from_fn`].
pub struct MetaFilterFn<F>(F);

/// Makes an [`EventFilter`] from a closure deciding on the object's metadata (for updates: the
/// new object's), whatever the kind of event.
pub fn from_fn<F>(filter: F) -> MetaFilterFn<F>
where
    F: Fn(&ObjectMeta) -> bool + Send + Sync,
{
    MetaFilterFn(filter)
}

impl<F> fmt::Debug for MetaFilterFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MetaFilterFn")
    }
}

impl<F: Fn(&ObjectMeta) -> bool + Send + Sync> EventFilter for MetaFilterFn<F> {
    fn create(&self, o: &ObjectMeta, _: bool) -> bool {
        (self.0)(o)
    }
    fn update(&self, _old: &ObjectMeta, new: &ObjectMeta) -> bool {
        (self.0)(new)
    }
    fn delete(&self, o: &ObjectMeta, _: bool) -> bool {
        (self.0)(o)
    }
    fn generic(&self, o: &ObjectMeta) -> bool {
        (self.0)(o)
    }
}

impl EventFilter for GenerationChanged {
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.generation != new.generation
    }
}

impl EventFilter for ResourceVersionChanged {
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.resource_version != new.resource_version
    }
}

impl EventFilter for LabelChanged {
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.labels.as_ref().filter(|l| !l.is_empty())
            != new.labels.as_ref().filter(|l| !l.is_empty())
    }
}

impl EventFilter for AnnotationChanged {
    fn update(&self, old: &ObjectMeta, new: &ObjectMeta) -> bool {
        old.annotations.as_ref().filter(|a| !a.is_empty())
            != new.annotations.as_ref().filter(|a| !a.is_empty())
    }
}

impl EventFilter for LabelSelectorPredicate {
    fn create(&self, o: &ObjectMeta, _: bool) -> bool {
        selects(self, o)
    }
    fn update(&self, _old: &ObjectMeta, new: &ObjectMeta) -> bool {
        selects(self, new)
    }
    fn delete(&self, o: &ObjectMeta, _: bool) -> bool {
        selects(self, o)
    }
    fn generic(&self, o: &ObjectMeta) -> bool {
        selects(self, o)
    }
}

fn selects(p: &LabelSelectorPredicate, meta: &ObjectMeta) -> bool {
    match &meta.labels {
        Some(labels) => p.selector().matches(labels),
        None => p.selector().matches_fn(|_| None::<&str>),
    }
}

/// The [`Predicate`] view of an event filter for watches of `K`: reads `K`'s metadata in place,
/// no copy.
pub(crate) struct FilterPredicate(pub(crate) BoxEventFilter);

impl<K: Resource> Predicate<K> for FilterPredicate {
    fn create(&self, e: &CreateEvent<K>) -> bool {
        self.0.create(e.object.meta(), e.is_in_initial_list)
    }
    fn update(&self, e: &UpdateEvent<K>) -> bool {
        self.0.update(e.old.meta(), e.new.meta())
    }
    fn delete(&self, e: &DeleteEvent<K>) -> bool {
        self.0.delete(e.object.meta(), e.delete_state_unknown)
    }
    fn generic(&self, e: &GenericEvent<K>) -> bool {
        self.0.generic(e.object.meta())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn meta(labels: Option<&[(&str, &str)]>) -> ObjectMeta {
        ObjectMeta {
            labels: labels.map(|l| {
                l.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn metadata_filters_match_their_predicates() {
        // A missing label map equals an empty one, as for the typed predicate.
        assert!(!EventFilter::update(
            &LabelChanged,
            &meta(None),
            &meta(Some(&[]))
        ));
        assert!(EventFilter::update(
            &LabelChanged,
            &meta(None),
            &meta(Some(&[("a", "")]))
        ));
        let selector = LabelSelectorPredicate::parse("app=web").unwrap();
        assert!(EventFilter::generic(
            &selector,
            &meta(Some(&[("app", "web")]))
        ));
        assert!(!EventFilter::create(&selector, &meta(None), false));
        let not_selector = LabelSelectorPredicate::parse("!app").unwrap();
        assert!(EventFilter::delete(&not_selector, &meta(None), false));
    }

    #[test]
    fn the_predicate_view_reads_the_object_metadata() {
        let p = FilterPredicate(Arc::new(from_fn(|m: &ObjectMeta| {
            m.name.as_deref() == Some("x")
        })));
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("x".into());
        let (x, other) = (Arc::new(cm), Arc::new(ConfigMap::default()));
        assert!(Predicate::create(
            &p,
            &CreateEvent {
                object: x.clone(),
                is_in_initial_list: true
            }
        ));
        assert!(!Predicate::generic(
            &p,
            &GenericEvent {
                object: other.clone()
            }
        ));
        // Updates decide on the new object.
        assert!(Predicate::update(&p, &UpdateEvent { old: other, new: x }));
    }
}
