//! NamespaceLifecycle, as upstream's `plugin/pkg/admission/namespace/lifecycle` validates a
//! request: an object is created only in a namespace that exists (else 404 `NotFound`) and is
//! not being terminated (else 403 `Forbidden`), and the immortal namespaces (`default`,
//! `kube-system`, `kube-public`) are never deleted (403 `Forbidden`).

use serde_json::json;

use super::{Attributes, Lookup, Operation, Plugin};
use crate::error::ApiError;

/// The namespaces a delete is refused for (upstream's `immortalNamespaces`).
const IMMORTAL: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The NamespaceLifecycle plugin.
pub(crate) struct NamespaceLifecycle;

impl Plugin for NamespaceLifecycle {
    fn handles(&self, operation: Operation) -> bool {
        matches!(operation, Operation::Create | Operation::Delete)
    }

    fn validate(
        &self,
        attrs: &Attributes<'_>,
        store: &dyn Lookup,
    ) -> Result<Vec<String>, ApiError> {
        let is_namespace = attrs.is(crate::resource::names::NAMESPACES);
        match attrs.operation {
            Operation::Delete if is_namespace && IMMORTAL.contains(&attrs.name) => {
                Err(forbidden(attrs.name, "this namespace may not be deleted"))
            }
            Operation::Create if attrs.namespaced => {
                let ns = attrs.namespace;
                let Some(found) = store.namespace(ns) else {
                    return Err(ApiError::not_found("namespaces", ns));
                };
                let terminating = found
                    .get("metadata")
                    .and_then(|m| m.get("deletionTimestamp"))
                    .is_some_and(|t| !t.is_null());
                if terminating {
                    return Err(ApiError::new(
                        403,
                        "Forbidden",
                        format!(
                            "unable to create new content in namespace {ns} because it is being terminated"
                        ),
                    )
                    .with_details(json!({"name": ns, "kind": "namespaces"})));
                }
                Ok(Vec::new())
            }
            _ => Ok(Vec::new()),
        }
    }
}

/// The 403 refusing a request on namespace `name`.
fn forbidden(name: &str, why: &str) -> ApiError {
    ApiError::new(
        403,
        "Forbidden",
        format!("namespaces \"{name}\" is forbidden: {why}"),
    )
    .with_details(json!({"name": name, "kind": "namespaces"}))
}
