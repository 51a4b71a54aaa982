//! Admission inside the writes ([`crate::admission`]): the store seen as
//! [`admission::Lookup`], the call every create, update and delete makes once its object is
//! final (after defaulting and validation, before it is stored), and the checks of the
//! admission configuration's own objects when they are written.
//!
//! A store without any ValidatingAdmissionPolicyBinding pays one map lookup per write for the
//! policies, one for the quotas when it has no ResourceQuota, and one namespace lookup per
//! create of a namespaced object for the lifecycle.

use std::sync::Arc;

use serde_json::Value;

use super::convert::{to_version, to_version_shared};
use super::meta;
use super::options::Warnings;
use super::store::{Data, Registry, State, res_key};
use crate::admission::chain::{self, ValidatingAdmissionPolicy};
use crate::admission::{self, Attributes, Operation, policy, webhook};
use crate::error::ApiError;
use crate::resource::{ResourceInfo, names};
use crate::validation::FieldError;

/// The storage keys (`plural.group`) of policies and bindings, written out so that the check
/// every write makes allocates nothing.
const POLICIES: &str = "validatingadmissionpolicies.admissionregistration.k8s.io";
const BINDINGS: &str = "validatingadmissionpolicybindings.admissionregistration.k8s.io";
const MUTATING: &str = "mutatingwebhookconfigurations.admissionregistration.k8s.io";
const VALIDATING: &str = "validatingwebhookconfigurations.admissionregistration.k8s.io";
const QUOTAS: &str = "resourcequotas";

/// The store, read by admission.
#[derive(Clone, Copy)]
struct View<'a> {
    data: &'a Data,
    registry: &'a Registry,
}

impl<'a> View<'a> {
    fn of(st: &'a State) -> Self {
        View {
            data: &st.data,
            registry: &st.registry,
        }
    }

    /// The served resource of a kind.
    fn resource(&self, api_version: &str, kind: &str) -> Option<&'a ResourceInfo> {
        self.registry
            .all()
            .find(|r| r.kind == kind && r.api_version() == api_version)
    }

    fn object(&self, key: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.data
            .get(key)?
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }
}

/// The store as [`admission::Lookup`] (conversion webhooks resolve their `service`
/// references through it).
pub(crate) fn lookup(st: &State) -> impl admission::Lookup + '_ {
    View::of(st)
}

impl admission::Lookup for View<'_> {
    fn namespace(&self, name: &str) -> Option<Arc<Value>> {
        self.object("namespaces", "", name)
    }

    fn policy(&self, name: &str) -> Option<Arc<Value>> {
        self.object(POLICIES, "", name)
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
        self.object(&res_key(res), namespace, name)
            .map(|o| to_version_shared(&o, api_version))
    }

    fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let Some(res) = self.resource(api_version, kind) else {
            return Vec::new();
        };
        let Some(objects) = self.data.get(&res_key(res)) else {
            return Vec::new();
        };
        objects
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|want| want == ns))
            .map(|(_, o)| to_version_shared(o, api_version))
            .collect()
    }

    fn equivalents(&self, group: &str, resource: &str) -> Vec<(String, String)> {
        self.registry
            .all()
            .filter(|r| r.group == group && r.plural == resource)
            .map(|r| (r.version.clone(), r.kind.clone()))
            .collect()
    }

    fn convert(&self, obj: &Value, api_version: &str) -> Value {
        to_version(obj, api_version)
    }
}

/// The store as admission webhooks read it while their calls are under way, without the
/// lock: a snapshot (O(1): the maps are persistent) of the objects and served resources.
pub(crate) struct Snapshot {
    data: Data,
    registry: Registry,
}

impl Snapshot {
    fn view(&self) -> View<'_> {
        View {
            data: &self.data,
            registry: &self.registry,
        }
    }
}

impl admission::Lookup for Snapshot {
    fn namespace(&self, name: &str) -> Option<Arc<Value>> {
        self.view().namespace(name)
    }
    fn policy(&self, name: &str) -> Option<Arc<Value>> {
        self.view().policy(name)
    }
    fn kind_scope(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.view().kind_scope(api_version, kind)
    }
    fn get(&self, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.view().get(api_version, kind, ns, name)
    }
    fn list(&self, api_version: &str, kind: &str, namespace: Option<&str>) -> Vec<Arc<Value>> {
        self.view().list(api_version, kind, namespace)
    }
    fn equivalents(&self, group: &str, resource: &str) -> Vec<(String, String)> {
        self.view().equivalents(group, resource)
    }
    fn convert(&self, obj: &Value, api_version: &str) -> Value {
        self.view().convert(obj, api_version)
    }
}

/// The admission webhooks configured now, and the store they read.
pub(crate) struct Webhooks {
    /// The mutating webhooks, in call order.
    pub(crate) mutating: Vec<webhook::Hook>,
    /// The validating webhooks, in call order.
    pub(crate) validating: Vec<webhook::Hook>,
    /// The store, for selectors, conditions and `service` references.
    pub(crate) snapshot: Snapshot,
}

/// Whether any admission webhook configuration is stored.
pub(crate) fn has_webhooks(st: &State) -> bool {
    let present = |key: &str| st.data.get(key).is_some_and(|m| !m.is_empty());
    present(MUTATING) || present(VALIDATING)
}

/// The admission webhooks configured now; `None` (one lookup per kind of configuration)
/// when there are none, the common case.
pub(crate) fn webhooks(st: &State) -> Option<Webhooks> {
    let configs = |key: &str| -> Vec<Arc<Value>> {
        st.data
            .get(key)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    };
    if !has_webhooks(st) {
        return None;
    }
    Some(Webhooks {
        mutating: webhook::hooks(&configs(MUTATING)),
        validating: webhook::hooks(&configs(VALIDATING)),
        snapshot: Snapshot {
            data: st.data.clone(),
            registry: st.registry.clone(),
        },
    })
}

/// Runs the admission chain ([`admission::chain`]) on a write of `res` (`subresource` when
/// it writes one): `object` is what would be stored (`None` on delete), `old` what is (`None`
/// on create). Warnings go to `warnings`; a refusal is the error. Admitted, the answer is
/// the ResourceQuotas the write charges, with their new `status.used`, for the caller to
/// store once the write is stored (none for a dry run).
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
    user: Option<&crate::user::UserInfo>,
) -> Result<Vec<Value>, ApiError> {
    let Some(obj) = object.or(old) else {
        return Ok(Vec::new());
    };
    let policies =
        st.data
            .get(BINDINGS)
            .filter(|b| !b.is_empty())
            .map(|b| ValidatingAdmissionPolicy {
                cache: &st.policies,
                bindings: b.values().cloned().collect(),
            });
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
        user: user.unwrap_or(&crate::admission::ADMIN),
    };
    let quotas = st.data.get(QUOTAS).is_some_and(|q| !q.is_empty());
    let admitted = chain::validate(&attrs, policies, quotas, &View::of(st))?;
    for w in admitted.warnings {
        warnings.push(w);
    }
    Ok(admitted.quota_charges)
}

/// The checks of an admission configuration object on write (a policy whose expressions do
/// not compile is refused); none for other resources.
pub(crate) fn validate_config(res: &ResourceInfo, obj: &Value) -> Vec<FieldError> {
    match res.gr() {
        names::VALIDATING_ADMISSION_POLICIES => policy::validate_policy(obj),
        names::VALIDATING_ADMISSION_POLICY_BINDINGS => policy::validate_binding(obj),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::convert::storage_key;

    const GROUP: &str = "admissionregistration.k8s.io";

    #[test]
    fn the_keys_are_the_storage_keys() {
        assert_eq!(POLICIES, storage_key(GROUP, "validatingadmissionpolicies"));
        assert_eq!(
            BINDINGS,
            storage_key(GROUP, "validatingadmissionpolicybindings")
        );
        assert_eq!(
            MUTATING,
            storage_key(GROUP, "mutatingwebhookconfigurations")
        );
        assert_eq!(
            VALIDATING,
            storage_key(GROUP, "validatingwebhookconfigurations")
        );
        assert_eq!(QUOTAS, storage_key("", "resourcequotas"));
    }
}
