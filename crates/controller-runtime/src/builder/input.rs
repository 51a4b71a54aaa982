//! [`Input`]: the object type a `for`, `owns` or `watches_object` watch is about, with its
//! predicates (controller-runtime's `ForInput`, `OwnsInput` and `WatchesInput`).

use std::any::TypeId;
use std::fmt;

use k8s_openapi::ClusterResourceScope;
use kube_core::{PartialObjectMeta, Resource};

use crate::cache::CacheObject;
use crate::handler::OwnerScope;
use crate::predicate::{BoxPredicate, Predicate};

/// What one watch of the builder is about: the object type `K` (with its dynamic type), the
/// watch's own predicates, and for `owns`, which owner references count.
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
///
/// // Spec changes only.
/// let foos = Input::<ConfigMap>::new().with_predicate(predicate::GenerationChanged);
/// // Pods, metadata only; every owner reference counts, not only the controller one.
/// let pods = Input::<Pod>::metadata().every_owner();
/// # drop((foos, pods));
/// ```
pub struct Input<K: CacheObject> {
    pub(crate) dt: K::DynamicType,
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
            predicates: Vec::new(),
            every_owner: false,
            scope: None,
        }
    }

    /// Adds a predicate of this watch alone (after the builder's event filters).
    pub fn with_predicate(mut self, predicate: impl Predicate<K> + 'static) -> Self {
        self.predicates.push(std::sync::Arc::new(predicate));
        self
    }

    /// Adds predicates of this watch alone.
    pub fn with_predicates(
        mut self,
        predicates: impl IntoIterator<Item = BoxPredicate<K>>,
    ) -> Self {
        self.predicates.extend(predicates);
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
}

impl<K: CacheObject> fmt::Debug for Input<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Input")
            .field("kind", &self.kind())
            .field("predicates", &self.predicates.len())
            .field("every_owner", &self.every_owner)
            .field("scope", &self.scope)
            .finish()
    }
}
