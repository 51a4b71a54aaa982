//! Owner references: who owns an object (garbage collection deletes it with its owners) and
//! which owner is its controller (the one whose reconciler manages it, and which
//! [`EnqueueRequestForOwner`](crate::handler::EnqueueRequestForOwner) wakes).
//!
//! References are matched as Go's controllerutil matches them: by API group, kind and name
//! (not version, not uid), so an owner read in another version, or re-created under the same
//! name, is the same owner.

use std::any::type_name;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube_core::Resource;

use crate::ObjectKey;

/// The owner in an owner reference: what [`set_controller_reference`] and its siblings need of
/// it. Every `&O` of a static type converts into one (`&deployment`); for a dynamic type
/// (`DynamicObject`) build it with [`Owner::of_with`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// `apiVersion` (`apps/v1`).
    pub api_version: String,
    /// `kind` (`Deployment`).
    pub kind: String,
    /// `metadata.name`; empty when the owner has none.
    pub name: String,
    /// `metadata.uid`; empty when the owner has none (it was never read from the API server).
    pub uid: String,
    /// `metadata.namespace`; `None` for a cluster-scoped owner.
    pub namespace: Option<String>,
}

impl Owner {
    /// The owner `owner`, of any type, with its dynamic type (an `ApiResource` for
    /// `DynamicObject`).
    pub fn of_with<O: Resource>(owner: &O, dt: &O::DynamicType) -> Self {
        let meta = owner.meta();
        Owner {
            api_version: O::api_version(dt).into_owned(),
            kind: O::kind(dt).into_owned(),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
        }
    }

    /// The reference to this owner, without the `controller` and `blockOwnerDeletion` flags.
    fn reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            ..OwnerReference::default()
        }
    }

    /// Whether `r` refers to this owner: same group, kind and name.
    fn is_referred_by(&self, r: &OwnerReference) -> bool {
        refer_same_object(r, &self.api_version, &self.kind, &self.name)
    }
}

impl<O: Resource<DynamicType = ()>> From<&O> for Owner {
    fn from(owner: &O) -> Self {
        Owner::of_with(owner, &())
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{} {ns}/{}", self.kind, self.name),
            None => write!(f, "{} {}", self.kind, self.name),
        }
    }
}

/// Why an owner reference could not be set or removed. The messages are Go controllerutil's.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OwnerReferenceError {
    /// [`set_controller_reference`]: the object already has another controller (Go's
    /// `AlreadyOwnedError`). Only one owner may be an object's controller.
    #[error("Object {}/{} is already owned by another {} controller {}", .namespace, .name, .owner.kind, .owner.name)]
    AlreadyOwned {
        /// The object's namespace (empty when cluster-scoped).
        namespace: String,
        /// The object's name.
        name: String,
        /// Its present controller.
        owner: Box<OwnerReference>,
    },
    /// A cluster-scoped object cannot have a namespaced owner.
    #[error(
        "cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_namespace}"
    )]
    ClusterScopedObject {
        /// The owner's namespace.
        owner_namespace: String,
    },
    /// Owner and object are in different namespaces.
    #[error(
        "cross-namespace owner references are disallowed, owner's namespace {owner_namespace}, obj's namespace {object_namespace}"
    )]
    CrossNamespace {
        /// The owner's namespace.
        owner_namespace: String,
        /// The object's namespace.
        object_namespace: String,
    },
    /// The owner has no name or no uid: it was never read from the API server, and the
    /// server would refuse the reference.
    #[error(
        "the owner {kind} {name:?} has no name or no uid: an owner must be an object read from the API server"
    )]
    OwnerNotPersisted {
        /// The owner's kind.
        kind: String,
        /// The owner's name (empty when it has none).
        name: String,
    },
    /// [`remove_owner_reference`]: the object has no owner references at all.
    #[error("{object} does not have any owner references")]
    NoOwnerReferences {
        /// The object (type, namespace and name).
        object: String,
    },
    /// [`remove_owner_reference`], [`remove_controller_reference`]: no reference to this owner.
    #[error("{object} does not have an owner reference for {owner}")]
    NotOwnedBy {
        /// The object (type, namespace and name).
        object: String,
        /// The owner (kind, namespace and name).
        owner: String,
    },
    /// [`remove_controller_reference`]: the object has no controller.
    #[error("{object} does not have an owner reference with controller equals true")]
    NoController {
        /// The object (type, namespace and name).
        object: String,
    },
    /// [`remove_controller_reference`]: the owner owns the object but is not its controller.
    #[error("{owner} owner is not the controller reference for {object}")]
    NotTheController {
        /// The object (type, namespace and name).
        object: String,
        /// The owner (kind, namespace and name).
        owner: String,
    },
}

/// Sets `owner` as the controller of `object`: an owner reference with `controller` and
/// `blockOwnerDeletion` true (Go's `controllerutil.SetControllerReference`). Garbage
/// collection then deletes `object` with its owner, and a controller that
/// [`owns`](crate::builder::ControllerBuilder::owns) `object`'s type reconciles the owner when
/// `object` changes.
///
/// An existing reference to the same owner (group, kind, name) is replaced, so calling it
/// on every reconcile is fine. Refused, leaving `object` as it was, when `object` already has
/// another controller ([`OwnerReferenceError::AlreadyOwned`]), when a namespaced owner is in
/// another namespace or `object` is cluster-scoped, and when the owner has no uid.
///
/// ```
/// use controller_runtime::controllerutil::{has_controller_reference, set_controller_reference};
/// use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
/// use kube_core::ObjectMeta;
///
/// let meta = |name: &str, uid: &str| ObjectMeta {
///     namespace: Some("default".into()),
///     name: Some(name.into()),
///     uid: Some(uid.into()),
///     ..Default::default()
/// };
/// let web = Deployment { metadata: meta("web", "u-1"), ..Default::default() };
/// let mut cm = ConfigMap { metadata: meta("web-config", "u-2"), ..Default::default() };
///
/// set_controller_reference(&web, &mut cm)?;
/// set_controller_reference(&web, &mut cm)?; // the same owner again: nothing new
/// assert!(has_controller_reference(&cm));
/// let refs = cm.metadata.owner_references.as_ref().unwrap();
/// assert_eq!((refs.len(), refs[0].kind.as_str(), refs[0].controller), (1, "Deployment", Some(true)));
///
/// let api = Deployment { metadata: meta("api", "u-3"), ..Default::default() };
/// let err = set_controller_reference(&api, &mut cm).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "Object default/web-config is already owned by another Deployment controller web"
/// );
/// # Ok::<(), controller_runtime::controllerutil::OwnerReferenceError>(())
/// ```
pub fn set_controller_reference<K: Resource>(
    owner: impl Into<Owner>,
    object: &mut K,
) -> Result<(), OwnerReferenceError> {
    let owner = owner.into();
    validate_owner(&owner, object)?;
    if let Some(existing) = controller_of(object)
        && !owner.is_referred_by(existing)
    {
        let meta = object.meta();
        return Err(OwnerReferenceError::AlreadyOwned {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
            owner: Box::new(existing.clone()),
        });
    }
    upsert(
        object,
        OwnerReference {
            controller: Some(true),
            block_owner_deletion: Some(true),
            ..owner.reference()
        },
    );
    Ok(())
}

/// Adds `owner` to `object`'s owner references, not as its controller (Go's
/// `controllerutil.SetOwnerReference`): `object` is deleted when all its owners are, but no
/// controller is implied. An existing reference to the same owner is replaced (so a
/// controller reference to it loses its flags). Refused like [`set_controller_reference`],
/// except that another controller is no obstacle.
///
/// ```
/// use controller_runtime::controllerutil::{has_owner_reference, set_owner_reference};
/// use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
/// use kube_core::ObjectMeta;
///
/// // A cluster-scoped owner of a namespaced object is fine.
/// let team = Namespace {
///     metadata: ObjectMeta { name: Some("team-a".into()), uid: Some("u-1".into()), ..Default::default() },
///     ..Default::default()
/// };
/// let mut cm = ConfigMap::default();
/// cm.metadata.namespace = Some("team-a".into());
/// cm.metadata.name = Some("settings".into());
/// set_owner_reference(&team, &mut cm)?;
/// set_owner_reference(&team, &mut cm)?;
/// assert!(has_owner_reference(&cm, &team));
/// assert_eq!(cm.metadata.owner_references.as_ref().unwrap().len(), 1);
/// assert_eq!(cm.metadata.owner_references.unwrap()[0].controller, None);
/// # Ok::<(), controller_runtime::controllerutil::OwnerReferenceError>(())
/// ```
pub fn set_owner_reference<K: Resource>(
    owner: impl Into<Owner>,
    object: &mut K,
) -> Result<(), OwnerReferenceError> {
    let owner = owner.into();
    validate_owner(&owner, object)?;
    upsert(object, owner.reference());
    Ok(())
}

/// Removes `object`'s reference to `owner` (Go's `controllerutil.RemoveOwnerReference`), e.g.
/// to hand it to another owner. Fails when there is no such reference.
pub fn remove_owner_reference<K: Resource>(
    owner: impl Into<Owner>,
    object: &mut K,
) -> Result<(), OwnerReferenceError> {
    let owner = owner.into();
    let refs = object
        .meta()
        .owner_references
        .as_deref()
        .unwrap_or_default();
    if refs.is_empty() {
        return Err(OwnerReferenceError::NoOwnerReferences {
            object: describe(object),
        });
    }
    let Some(index) = refs.iter().position(|r| owner.is_referred_by(r)) else {
        return Err(OwnerReferenceError::NotOwnedBy {
            object: describe(object),
            owner: owner.to_string(),
        });
    };
    remove_at(object, index);
    Ok(())
}

/// Removes `object`'s controller reference to `owner` (Go's
/// `controllerutil.RemoveControllerReference`). Fails when `object` has no controller, no
/// reference to `owner`, or one that is not the controller.
///
/// ```
/// use controller_runtime::controllerutil::{
///     has_controller_reference, remove_controller_reference, set_controller_reference,
/// };
/// use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
///
/// use kube_core::ObjectMeta;
///
/// let meta = |name: &str, uid: &str| ObjectMeta {
///     namespace: Some("default".into()),
///     name: Some(name.into()),
///     uid: Some(uid.into()),
///     ..Default::default()
/// };
/// let web = Deployment { metadata: meta("web", "u-1"), ..Default::default() };
/// let mut cm = ConfigMap { metadata: meta("web-config", "u-2"), ..Default::default() };
/// set_controller_reference(&web, &mut cm)?;
/// remove_controller_reference(&web, &mut cm)?;
/// assert!(!has_controller_reference(&cm));
/// assert_eq!(
///     remove_controller_reference(&web, &mut cm).unwrap_err().to_string(),
///     "ConfigMap default/web-config does not have an owner reference with controller equals true"
/// );
/// # Ok::<(), controller_runtime::controllerutil::OwnerReferenceError>(())
/// ```
pub fn remove_controller_reference<K: Resource>(
    owner: impl Into<Owner>,
    object: &mut K,
) -> Result<(), OwnerReferenceError> {
    let owner = owner.into();
    if !has_controller_reference(object) {
        return Err(OwnerReferenceError::NoController {
            object: describe(object),
        });
    }
    let refs = object
        .meta()
        .owner_references
        .as_deref()
        .unwrap_or_default();
    let Some(index) = refs.iter().position(|r| owner.is_referred_by(r)) else {
        return Err(OwnerReferenceError::NotOwnedBy {
            object: describe(object),
            owner: owner.to_string(),
        });
    };
    if refs[index].controller != Some(true) {
        return Err(OwnerReferenceError::NotTheController {
            object: describe(object),
            owner: owner.to_string(),
        });
    }
    remove_at(object, index);
    Ok(())
}

/// Whether `object` has a controller: an owner reference with `controller: true` (Go's
/// `controllerutil.HasControllerReference`).
pub fn has_controller_reference<K: Resource>(object: &K) -> bool {
    controller_of(object).is_some()
}

/// `object`'s controller reference, if it has one (Go's `metav1.GetControllerOf`).
pub fn controller_of<K: Resource>(object: &K) -> Option<&OwnerReference> {
    object
        .meta()
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|r| r.controller == Some(true))
}

/// Whether `object` has an owner reference to `owner` (group, kind and name; Go's
/// `controllerutil.HasOwnerReference`).
pub fn has_owner_reference<K: Resource>(object: &K, owner: impl Into<Owner>) -> bool {
    let owner = owner.into();
    object
        .meta()
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .any(|r| owner.is_referred_by(r))
}

/// Go's `validateOwner`, and a check that the owner exists on the server (has a name and a
/// uid): without, the API server refuses the reference, later and less clearly.
fn validate_owner<K: Resource>(owner: &Owner, object: &K) -> Result<(), OwnerReferenceError> {
    if let Some(owner_ns) = &owner.namespace {
        match object.meta().namespace.as_deref().unwrap_or_default() {
            "" => {
                return Err(OwnerReferenceError::ClusterScopedObject {
                    owner_namespace: owner_ns.clone(),
                });
            }
            object_ns if object_ns != owner_ns => {
                return Err(OwnerReferenceError::CrossNamespace {
                    owner_namespace: owner_ns.clone(),
                    object_namespace: object_ns.to_string(),
                });
            }
            _ => {}
        }
    }
    if owner.name.is_empty() || owner.uid.is_empty() {
        return Err(OwnerReferenceError::OwnerNotPersisted {
            kind: owner.kind.clone(),
            name: owner.name.clone(),
        });
    }
    Ok(())
}

/// Replaces the reference to the same object as `reference`, or appends it.
fn upsert<K: Resource>(object: &mut K, reference: OwnerReference) {
    let refs = object.meta_mut().owner_references.get_or_insert_default();
    match refs
        .iter_mut()
        .find(|r| refer_same_object(r, &reference.api_version, &reference.kind, &reference.name))
    {
        Some(existing) => *existing = reference,
        None => refs.push(reference),
    }
}

/// Removes the reference at `index`; an emptied list becomes `None`.
fn remove_at<K: Resource>(object: &mut K, index: usize) {
    let refs = &mut object.meta_mut().owner_references;
    if let Some(list) = refs {
        list.remove(index);
        if list.is_empty() {
            *refs = None;
        }
    }
}

/// Go's `referSameObject`: same API group, kind and name. An unparsable `apiVersion` (more
/// than one `/`) refers to nothing.
fn refer_same_object(r: &OwnerReference, api_version: &str, kind: &str, name: &str) -> bool {
    match (group_of(&r.api_version), group_of(api_version)) {
        (Some(a), Some(b)) => a == b && r.kind == kind && r.name == name,
        _ => false,
    }
}

/// The group of an `apiVersion` (`apps/v1` -> `apps`, `v1` -> ``), as Go's
/// `schema.ParseGroupVersion` reads it; `None` when it does not parse.
fn group_of(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None => Some(""),
        Some((_, version)) if version.contains('/') => None,
        Some((group, _)) => Some(group),
    }
}

/// `ConfigMap default/name`: the object in error messages (Go prints its type).
fn describe<K: Resource>(object: &K) -> String {
    let full = type_name::<K>();
    let base = full.split('<').next().unwrap_or(full);
    let short = base.rsplit("::").next().unwrap_or(base);
    format!("{short} {}", ObjectKey::of(object))
}
