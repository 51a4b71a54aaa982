//! [`ObjectKey`]: the namespace and name that name one object (apimachinery's
//! `types.NamespacedName`, controller-runtime's `client.ObjectKey`).
//!
//! It is the crate's one key type: a reconcile [`Request`](crate::Request) is an `ObjectKey`
//! (a type alias, under the name reconcilers know it by), so the key a handler puts on a
//! workqueue is the key a reconciler reads the cache and the client with, without a
//! conversion. It depends on nothing else in the crate, so every module can use it.

use std::fmt;

use kube_core::Resource;

/// The key of one object: its namespace (`None` for cluster-scoped objects) and name.
///
/// The item of every workqueue (as [`Request`](crate::Request)) and the key of every cache
/// store, cache read and client call.
///
/// ```
/// use controller_runtime::{ObjectKey, Request};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube_core::ObjectMeta;
///
/// let cm = ConfigMap {
///     metadata: ObjectMeta {
///         namespace: Some("default".into()),
///         name: Some("settings".into()),
///         ..Default::default()
///     },
///     ..Default::default()
/// };
/// let key = ObjectKey::of(&cm);
/// assert_eq!(key, ObjectKey::new("default", "settings"));
/// assert_eq!(key.to_string(), "default/settings");
/// // A request is a key: no conversion between them.
/// let request: Request = key;
/// assert_eq!(ObjectKey::cluster_scoped("node-1").to_string(), "node-1");
/// # drop(request);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ObjectKey {
    /// Namespace of the object; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name of the object.
    pub name: String,
}

impl ObjectKey {
    /// The key of a namespaced object.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// The key of a cluster-scoped object.
    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of `obj`, read from its metadata (an empty namespace is none).
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        ObjectKey {
            namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

impl fmt::Display for ObjectKey {
    /// `namespace/name`, or `name` for cluster-scoped objects, as `kubectl` and client-go print
    /// keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) if !ns.is_empty() => write!(f, "{ns}/{}", self.name),
            _ => f.write_str(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_prints_keys_as_kubectl_does() {
        assert_eq!(ObjectKey::new("ns", "a").to_string(), "ns/a");
        assert_eq!(ObjectKey::cluster_scoped("n").to_string(), "n");
        // An empty namespace is no namespace.
        assert_eq!(ObjectKey::new("", "n").to_string(), "n");
    }
}
