//! Admission inside the writes ([`crate::admission`]): the store seen as
//! [`admission::Lookup`], the call every create, update and delete makes once its object is
//! final (after defaulting and validation, before it is stored), and the checks of the
//! admission configuration's own objects when they are written.
//!
//! A store without any ValidatingAdmissionPolicyBinding pays one map lookup per write.

use std::sync::Arc;

use serde_json::Value;

use super::Warnings;
use super::meta;
use super::store::{State, res_key};
use crate::admission::{self, Attributes, Operation, policy};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::validation::FieldError;

const GROUP: &str = "admissionregistration.k8s.io";
/// The storage keys (`plural.group`) of policies and bindings, written out so that the check
/// every write makes allocates nothing.
const POLICIES: &str = "validatingadmissionpolicies.admissionregistration.k8s.io";
const BINDINGS: &str = "validatingadmissionpolicybindings.admissionregistration.k8s.io";

/// The store, read by admission.
struct View<'a>(&'a State);

/// The store as [`admission::Lookup`] (webhooks resolve their `service` references through it).
pub(crate) fn lookup(st: &State) -> impl admission::Lookup + '_ {
    View(st)
}

impl View<'_> {
    /// The served resource of a kind.
    fn resource(&self, api_version: &str, kind: &str) -> Option<&ResourceInfo> {
        self.0
            .registry
            .all()
            .find(|r| r.kind == kind && r.api_version() == api_version)
    }
}

impl admission::Lookup for View<'_> {
    fn namespace(&self, name: &str) -> Option<Arc<Value>> {
        self.0
            .get("namespaces", &(String::new(), name.to_string()))
            .cloned()
    }

    fn policy(&self, name: &str) -> Option<Arc<Value>> {
        self.0
            .get(POLICIES, &(String::new(), name.to_string()))
            .cloned()
    }

    fn kind_scope(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.resource(api_version, kind).map(|r| r.namespaced)
    }

    fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Arc<Value>> {
        let res = self.resource(api_version, kind)?;
        self.0
            .get(&res_key(res), &(namespace.to_string(), name.to_string()))
            .cloned()
    }

    fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(res) = self.resource(api_version, kind) else {
            return Vec::new();
        };
        let Some(objects) = self.0.data.get(&res_key(res)) else {
            return Vec::new();
        };
        objects
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|want| want == ns))
            .map(|(_, o)| o.clone())
            .collect()
    }
}

/// Runs admission on a write of `res` (`subresource` when it writes one): `object` is what
/// would be stored (`None` on delete), `old` what is (`None` on create). Warnings go to
/// `warnings`; a denial is the error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn admit(
    st: &State,
    res: &ResourceInfo,
    operation: Operation,
    subresource: Option<&str>,
    object: Option<&Value>,
    old: Option<&Value>,
    dry_run: bool,
    warnings: &Warnings,
) -> Result<(), ApiError> {
    let Some(bindings) = st.data.get(BINDINGS).filter(|b| !b.is_empty()) else {
        return Ok(());
    };
    let bindings: Vec<Arc<Value>> = bindings.values().cloned().collect();
    let Some(obj) = object.or(old) else {
        return Ok(());
    };
    let attrs = Attributes {
        operation,
        group: &res.group,
        version: &res.version,
        kind: &res.kind,
        resource: &res.plural,
        subresource: subresource.unwrap_or(""),
        namespaced: res.namespaced,
        namespace: meta::meta_str(obj, "namespace").unwrap_or(""),
        name: meta::name(obj),
        object,
        old_object: old,
        dry_run,
    };
    for w in policy::admit(&st.policies, &bindings, &attrs, &View(st))? {
        warnings.push(w);
    }
    Ok(())
}

/// The checks of an admission configuration object on write (a policy whose expressions do
/// not compile is refused); none for other resources.
pub(crate) fn validate_config(res: &ResourceInfo, obj: &Value) -> Vec<FieldError> {
    match (res.group.as_str(), res.plural.as_str()) {
        (GROUP, "validatingadmissionpolicies") => policy::validate_policy(obj),
        (GROUP, "validatingadmissionpolicybindings") => policy::validate_binding(obj),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::convert::storage_key;

    #[test]
    fn the_keys_are_the_storage_keys() {
        assert_eq!(POLICIES, storage_key(GROUP, "validatingadmissionpolicies"));
        assert_eq!(
            BINDINGS,
            storage_key(GROUP, "validatingadmissionpolicybindings")
        );
    }
}
