//! [`Input`]: what one watch of the builder is about: the object type, where its events come
//! from, and the watch's options (controller-runtime's `ForInput`, `OwnsInput` and
//! `WatchesInput`, and Go's variadic options of `For`, `Owns` and `Watches`).

use std::any::TypeId;
use std::fmt;
use std::sync::Arc;

use k8s_openapi::ClusterResourceScope;
use kube_core::{PartialObjectMeta, Resource};

use crate::cache::{Cache, CacheObject};
use crate::handler::OwnerScope;
use crate::predicate::{BoxPredicate, Predicate};
use crate::source::{Kind, Source};

/// What one watch of the builder is about, the value [`for_`], [`owns`] and [`watches`] take:
/// the object type `K` (with its dynamic type), where the events come from (the manager's
/// cache, or any [`Source`]), the watch's own predicates, and for `owns`, which owner
/// references count.
///
/// Metadata-only projection is a type: an `Input<PartialObjectMeta<K>>` (made by
/// [`Input::metadata`]) watches through a metadata-only informer, so the cache holds only the
/// objects' metadata (controller-runtime's `OnlyMetadata`). Predicates then see
/// `PartialObjectMeta<K>` objects.
///
/// ```
/// use controller_runtime::builder::Input;
/// use controller_runtime::predicate;
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kube_core::{ApiResource, DynamicObject};
///
/// // Spec changes only.
/// let foos = Input::<ConfigMap>::new().with_predicate(predicate::GenerationChanged);
/// // Pods, metadata only; every owner reference counts, not only the controller one.
/// let pods = Input::<Pod>::metadata().every_owner();
/// // A type known at run time.
/// let dynamic = Input::<DynamicObject>::with_dynamic_type(ApiResource::erase::<Pod>(&()));
/// # drop((foos, pods, dynamic));
/// ```
///
/// [`for_`]: super::ControllerBuilder::for_
/// [`owns`]: super::ControllerBuilder::owns
/// [`watches`]: super::ControllerBuilder::watches
pub struct Input<K: CacheObject> {
    pub(crate) dt: K::DynamicType,
    pub(crate) source: Option<Arc<dyn Source<K>>>,
    pub(crate) predicates: Vec<BoxPredicate<K>>,
    pub(crate) every_owner: bool,
    pub(crate) scope: Option<OwnerScope>,
}

impl<K: CacheObject + Resource<DynamicType = ()>> Input<K> {
    /// A watch of the static type `K` (a k8s-openapi or `#[derive(CustomResource)]` type).
    pub fn new() -> Self {
        Self::with_dynamic_type(())
    }

    /// A metadata-only watch of `K`: objects are `PartialObjectMeta<K>`.
    pub fn metadata() -> Input<PartialObjectMeta<K>> {
        Input::with_dynamic_type(())
    }
}

impl<K: CacheObject + Resource<DynamicType = ()>> Default for Input<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: CacheObject> Input<K> {
    /// A watch of any type with its dynamic type (an `ApiResource` for `DynamicObject` or
    /// `PartialObjectMeta<DynamicObject>`).
    pub fn with_dynamic_type(dt: K::DynamicType) -> Self {
        Input {
            dt,
            source: None,
            predicates: Vec::new(),
            every_owner: false,
            scope: None,
        }
    }

    /// Takes the events from `source` (a [`Channel`](crate::source::Channel), an
    /// [`Informer`](crate::source::Informer), your own) instead of a [`Kind`] source on the
    /// manager's cache.
    pub fn with_source(mut self, source: impl Source<K> + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// Adds a predicate of this watch alone (asked after the builder's event filters).
    pub fn with_predicate(mut self, predicate: impl Predicate<K> + 'static) -> Self {
        self.predicates.push(Arc::new(predicate));
        self
    }

    /// For `owns`: enqueue the owner for every owner reference of the `for` kind, not only the
    /// controller reference (controller-runtime's `MatchEveryOwner`). Ignored elsewhere.
    pub fn every_owner(mut self) -> Self {
        self.every_owner = true;
        self
    }

    /// For the `for` type: whether its objects are namespaced, so `owns` watches build the
    /// right owner keys. Typed objects tell it themselves; dynamic objects are taken as
    /// namespaced unless set here.
    pub fn scope(mut self, scope: OwnerScope) -> Self {
        self.scope = Some(scope);
        self
    }

    /// The kind (`Pod`), as the builder names controllers after it.
    pub(crate) fn kind(&self) -> String {
        K::kind(&self.dt).into_owned()
    }

    /// The owner scope of `K`: what was set, else what the type says (dynamic: namespaced).
    pub(crate) fn owner_scope(&self) -> OwnerScope
    where
        K::Scope: 'static,
    {
        self.scope.unwrap_or_else(|| {
            if TypeId::of::<K::Scope>() == TypeId::of::<ClusterResourceScope>() {
                OwnerScope::Cluster
            } else {
                OwnerScope::Namespaced
            }
        })
    }

    /// The source and predicates: the given source, or a [`Kind`] on `cache`.
    pub(crate) fn into_parts(self, cache: &Cache) -> (Arc<dyn Source<K>>, Vec<BoxPredicate<K>>) {
        let source = match self.source {
            Some(source) => source,
            None => Arc::new(Kind::<K>::new_with(cache.clone(), self.dt)),
        };
        (source, self.predicates)
    }
}

impl<K: CacheObject> fmt::Debug for Input<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Input")
            .field("kind", &self.kind())
            .field("source", &self.source.as_ref().map(|s| s.describe()))
            .field("predicates", &self.predicates.len())
            .field("every_owner", &self.every_owner)
            .field("scope", &self.scope)
            .finish()
    }
}
