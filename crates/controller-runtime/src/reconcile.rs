//! Reconcile: the [`Request`] a controller hands its workers, the [`Reconciler`] trait and the
//! result types.

use std::fmt;

/// The key of one object to reconcile: its namespace (`None` for cluster-scoped objects) and
/// name. It is the default item type of every workqueue.
///
/// A request carries no object: the reconciler reads the current state from the cache, so that
/// several events for one object collapse into one reconcile of its latest state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Request {
    /// Namespace of the object; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// Name of the object.
    pub name: String,
}

impl Request {
    /// A request for a namespaced object.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Request { namespace: Some(namespace.into()), name: name.into() }
    }

    /// A request for a cluster-scoped object.
    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        Request { namespace: None, name: name.into() }
    }
}

impl fmt::Display for Request {
    /// `namespace/name`, or `name` for cluster-scoped objects, as `kubectl` and client-go print keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) if !ns.is_empty() => write!(f, "{ns}/{}", self.name),
            _ => f.write_str(&self.name),
        }
    }
}
