//! The admission chain: every plugin run inside a write, in upstream's order
//! (`pkg/kubeapiserver/options/plugins.go`, `AllOrderedPlugins`), each only for the operations
//! it handles. A request passes the validating phase of each plugin in turn; the first error
//! refuses it, and the warnings of those it passed are its response's.
//!
//! The order, with the plugins this server has: NamespaceLifecycle, MutatingAdmissionWebhook,
//! ValidatingAdmissionPolicy, ValidatingAdmissionWebhook, ResourceQuota. The in-process
//! plugins ([`NamespaceLifecycle`], [`ValidatingAdmissionPolicy`], [`ResourceQuota`]) run
//! here, inside the store's lock, from every create, update and delete; ResourceQuota, last
//! as upstream runs it, answers the quota statuses the write charges (stored with it). The webhooks are network calls and run outside the
//! lock (`storage/hooked.rs`): the mutating ones on the object the dry run of the write
//! computed, the validating ones after this chain has run on their result.

use std::sync::Arc;

use serde_json::Value;

use super::lifecycle::NamespaceLifecycle;
use super::policy::{self, Cache};
use super::quota::ResourceQuota;
use super::{Attributes, Lookup, Plugin};
use crate::error::ApiError;

/// ValidatingAdmissionPolicy: the policies the store's bindings bind (see [`policy`]).
pub(crate) struct ValidatingAdmissionPolicy<'a> {
    /// The policies' compiled CEL.
    pub(crate) cache: &'a Cache,
    /// Every ValidatingAdmissionPolicyBinding stored.
    pub(crate) bindings: Vec<Arc<Value>>,
}

impl Plugin for ValidatingAdmissionPolicy<'_> {
    fn handles(&self, _operation: super::Operation) -> bool {
        true
    }

    fn validate(
        &self,
        attrs: &Attributes<'_>,
        store: &dyn Lookup,
    ) -> Result<Vec<String>, ApiError> {
        policy::admit(self.cache, &self.bindings, attrs, store)
    }
}

/// What a request that passed the chain carries on.
#[derive(Debug, Default)]
pub(crate) struct Admitted {
    /// The warnings of the plugins it passed.
    pub(crate) warnings: Vec<String>,
    /// The ResourceQuotas to store with the write, each with its new `status.used`.
    pub(crate) quota_charges: Vec<Value>,
}

/// Runs the validating phase of the in-process plugins on `attrs`, in order; `policies` is
/// `None` when no binding is stored, `quotas` false when no ResourceQuota is (those plugins
/// then have nothing to do).
pub(crate) fn validate(
    attrs: &Attributes<'_>,
    policies: Option<ValidatingAdmissionPolicy<'_>>,
    quotas: bool,
    store: &dyn Lookup,
) -> Result<Admitted, ApiError> {
    let quota = ResourceQuota::default();
    let mut plugins: Vec<&dyn Plugin> = vec![&NamespaceLifecycle];
    if let Some(p) = &policies {
        plugins.push(p);
    }
    if quotas {
        plugins.push(&quota);
    }
    let mut warnings = Vec::new();
    for plugin in plugins {
        if plugin.handles(attrs.operation) {
            warnings.extend(plugin.validate(attrs, store)?);
        }
    }
    Ok(Admitted {
        warnings,
        quota_charges: quota.charges(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::validate;
    use crate::admission::{ADMIN, Attributes, Lookup, Operation};

    /// A store holding the namespace `live` and the terminating namespace `gone`.
    struct Store;

    impl Lookup for Store {
        fn namespace(&self, name: &str) -> Option<Arc<Value>> {
            match name {
                "live" => Some(Arc::new(json!({"metadata": {"name": "live"}}))),
                "gone" => Some(Arc::new(json!({"metadata": {
                    "name": "gone", "deletionTimestamp": "2026-01-01T00:00:00Z"}}))),
                _ => None,
            }
        }
        fn policy(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn kind_scope(&self, _: &str, _: &str) -> Option<bool> {
            None
        }
        fn get(&self, _: &str, _: &str, _: &str, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn list(&self, _: &str, _: &str, _: Option<&str>) -> Vec<Arc<Value>> {
            Vec::new()
        }
    }

    fn attrs<'a>(
        operation: Operation,
        resource: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            operation,
            group: "",
            version: "v1",
            kind: "",
            resource,
            subresource: "",
            namespaced: !namespace.is_empty(),
            namespace,
            name,
            object: None,
            old_object: None,
            dry_run: false,
            user: &ADMIN,
        }
    }

    /// `(code, message)` of the chain's answer, `(0, "")` when it admits.
    fn outcome(a: &Attributes<'_>) -> (u16, String) {
        match validate(a, None, true, &Store) {
            Ok(w) => {
                assert!(w.warnings.is_empty(), "{w:?}");
                (0, String::new())
            }
            Err(e) => (e.code, e.message),
        }
    }

    #[test]
    fn namespace_lifecycle_refuses_what_upstream_refuses() {
        let create = |ns| outcome(&attrs(Operation::Create, "configmaps", ns, "c"));
        assert_eq!(create("live"), (0, String::new()));
        assert_eq!(
            create("nope"),
            (404, r#"namespaces "nope" not found"#.into())
        );
        assert_eq!(
            create("gone"),
            (
                403,
                "unable to create new content in namespace gone because it is being terminated"
                    .into()
            )
        );
        // Only creates: an update or delete in a terminating namespace passes.
        for op in [Operation::Update, Operation::Delete] {
            assert_eq!(outcome(&attrs(op, "configmaps", "gone", "c")).0, 0);
        }
        let delete = |name| outcome(&attrs(Operation::Delete, "namespaces", "", name));
        assert_eq!(
            delete("kube-system"),
            (
                403,
                r#"namespaces "kube-system" is forbidden: this namespace may not be deleted"#
                    .into()
            )
        );
        assert_eq!(delete("kube-node-lease"), (0, String::new()));
    }
}
