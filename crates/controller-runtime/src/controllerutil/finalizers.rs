//! Finalizers in memory: add, remove, check. They change only the object you hold; write it
//! back yourself, or call them inside the mutate function of
//! [`create_or_update`](super::create_or_update) / [`create_or_patch`](super::create_or_patch).
//! For the whole add-before-work, clean-up-before-delete cycle, see
//! [`finalizer`](crate::finalizer).

use kube_core::Resource;

/// Adds `finalizer` to `obj`'s `metadata.finalizers` unless it is there already; returns
/// whether it changed the list (Go's `controllerutil.AddFinalizer`).
///
/// ```
/// use controller_runtime::controllerutil::{add_finalizer, contains_finalizer};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let mut cm = ConfigMap::default();
/// assert!(add_finalizer(&mut cm, "example.com/cleanup"));
/// assert!(!add_finalizer(&mut cm, "example.com/cleanup"), "already there: no change");
/// assert!(contains_finalizer(&cm, "example.com/cleanup"));
/// assert_eq!(cm.metadata.finalizers.unwrap(), ["example.com/cleanup"]);
/// ```
pub fn add_finalizer<K: Resource>(obj: &mut K, finalizer: &str) -> bool {
    add_to(obj.meta_mut().finalizers.get_or_insert_default(), finalizer)
}

/// Removes every occurrence of `finalizer` from `obj`'s `metadata.finalizers`; returns whether
/// it changed the list (Go's `controllerutil.RemoveFinalizer`). An emptied list becomes
/// `None`, which the API server stores alike.
///
/// ```
/// use controller_runtime::controllerutil::{add_finalizer, remove_finalizer};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let mut cm = ConfigMap::default();
/// add_finalizer(&mut cm, "example.com/cleanup");
/// assert!(remove_finalizer(&mut cm, "example.com/cleanup"));
/// assert!(!remove_finalizer(&mut cm, "example.com/cleanup"), "gone already: no change");
/// assert_eq!(cm.metadata.finalizers, None);
/// ```
pub fn remove_finalizer<K: Resource>(obj: &mut K, finalizer: &str) -> bool {
    let finalizers = &mut obj.meta_mut().finalizers;
    let Some(list) = finalizers else {
        return false;
    };
    let changed = remove_from(list, finalizer);
    if list.is_empty() {
        *finalizers = None;
    }
    changed
}

/// Whether `obj`'s `metadata.finalizers` holds `finalizer` (Go's
/// `controllerutil.ContainsFinalizer`).
///
/// ```
/// use controller_runtime::controllerutil::contains_finalizer;
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let mut cm = ConfigMap::default();
/// assert!(!contains_finalizer(&cm, "example.com/cleanup"));
/// cm.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
/// assert!(contains_finalizer(&cm, "example.com/cleanup"));
/// ```
pub fn contains_finalizer<K: Resource>(obj: &K, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .as_deref()
        .is_some_and(|list| list.iter().any(|f| f == finalizer))
}

/// Appends `finalizer` to `list` unless present; whether it did. Shared with
/// [`finalizer`](crate::finalizer), which builds its patches from a plain list.
pub(crate) fn add_to(list: &mut Vec<String>, finalizer: &str) -> bool {
    if list.iter().any(|f| f == finalizer) {
        return false;
    }
    list.push(finalizer.to_string());
    true
}

/// Removes every `finalizer` from `list`; whether there was one.
pub(crate) fn remove_from(list: &mut Vec<String>, finalizer: &str) -> bool {
    let before = list.len();
    list.retain(|f| f != finalizer);
    list.len() != before
}
