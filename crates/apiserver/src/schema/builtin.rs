//! The schemas of the built-in kinds, as kube-apiserver publishes them, generated from
//! k8s-openapi's `JsonSchema` impls (which k8s-openapi generates from upstream's OpenAPI
//! document), so that no schema is written or copied here.
//!
//! [`kinds`] lists every built-in kind a kube-apiserver 1.33 serves by default, at each version
//! it serves it; [`definitions`] holds the schema of every type they reach, keyed by upstream's
//! definition names (`io.k8s.api.core.v1.ConfigMap`), with references written as
//! `#/$defs/<name>`. Consumers (the OpenAPI documents, decoding and validation of built-in
//! objects) rewrite or follow those references as they need.
//!
//! The table is built once per process, on first use; [`kind`] finds a kind in a map built with
//! it, not by scanning the list.
//!
//! ```
//! use crt_apiserver::schema::builtin;
//!
//! let cm = builtin::kind("", "v1", "ConfigMap").unwrap();
//! assert_eq!(cm.definition, "io.k8s.api.core.v1.ConfigMap");
//! let schema = &builtin::definitions()[cm.definition];
//! assert_eq!(schema["properties"]["data"]["type"], "object");
//! ```

use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::Resource;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::Value;

/// One built-in kind at one served version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuiltinKind {
    /// API group; `""` for the core group.
    pub group: &'static str,
    /// Version, e.g. `v1`.
    pub version: &'static str,
    /// Kind, e.g. `ConfigMap`.
    pub kind: &'static str,
    /// Plural resource name, e.g. `configmaps`.
    pub plural: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The kind's schema's name in [`definitions`], e.g. `io.k8s.api.core.v1.ConfigMap`.
    pub definition: &'static str,
}

/// What [`kinds`] and [`definitions`] are built from.
struct Table {
    kinds: Vec<BuiltinKind>,
    /// Index in `kinds` by (kind, group, version): kinds differ early, so a lookup's string
    /// comparisons mostly stop at the first bytes.
    by_gvk: BTreeMap<(&'static str, &'static str, &'static str), usize>,
    definitions: BTreeMap<String, Value>,
}

fn entry<K>(generator: &mut SchemaGenerator) -> BuiltinKind
where
    K: Resource + JsonSchema,
{
    let name: &'static str = Box::leak(K::schema_name().into_owned().into_boxed_str());
    // Registers the kind's schema, and every schema it reaches, under `$defs`.
    generator.subschema_for::<K>();
    BuiltinKind {
        group: K::GROUP,
        version: K::VERSION,
        kind: K::KIND,
        plural: K::URL_PATH_SEGMENT,
        namespaced: std::any::type_name::<K::Scope>().ends_with("NamespaceResourceScope"),
        definition: name,
    }
}

fn build() -> Table {
    use k8s_openapi::api::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions_v1;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration_v1;

    let mut g = SchemaGenerator::default();
    macro_rules! kinds {
        ($($t:ty),* $(,)?) => { vec![$(entry::<$t>(&mut g)),*] };
    }
    // Every kind kube-apiserver 1.33 serves with its default feature gates and runtime config
    // (`kubectl api-resources` on a fresh cluster), in every version it serves.
    let kinds = kinds![
        core::v1::Binding,
        core::v1::ComponentStatus,
        core::v1::ConfigMap,
        core::v1::Endpoints,
        core::v1::Event,
        core::v1::LimitRange,
        core::v1::Namespace,
        core::v1::Node,
        core::v1::PersistentVolumeClaim,
        core::v1::PersistentVolume,
        core::v1::Pod,
        core::v1::PodTemplate,
        core::v1::ReplicationController,
        core::v1::ResourceQuota,
        core::v1::Secret,
        core::v1::ServiceAccount,
        core::v1::Service,
        admissionregistration::v1::MutatingWebhookConfiguration,
        admissionregistration::v1::ValidatingAdmissionPolicy,
        admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        admissionregistration::v1::ValidatingWebhookConfiguration,
        apiextensions_v1::CustomResourceDefinition,
        apiregistration_v1::APIService,
        apps::v1::ControllerRevision,
        apps::v1::DaemonSet,
        apps::v1::Deployment,
        apps::v1::ReplicaSet,
        apps::v1::StatefulSet,
        authentication::v1::SelfSubjectReview,
        authentication::v1::TokenReview,
        authorization::v1::LocalSubjectAccessReview,
        authorization::v1::SelfSubjectAccessReview,
        authorization::v1::SelfSubjectRulesReview,
        authorization::v1::SubjectAccessReview,
        autoscaling::v1::HorizontalPodAutoscaler,
        autoscaling::v2::HorizontalPodAutoscaler,
        batch::v1::CronJob,
        batch::v1::Job,
        certificates::v1::CertificateSigningRequest,
        coordination::v1::Lease,
        discovery::v1::EndpointSlice,
        events::v1::Event,
        flowcontrol::v1::FlowSchema,
        flowcontrol::v1::PriorityLevelConfiguration,
        networking::v1::IngressClass,
        networking::v1::Ingress,
        networking::v1::IPAddress,
        networking::v1::NetworkPolicy,
        networking::v1::ServiceCIDR,
        node::v1::RuntimeClass,
        policy::v1::PodDisruptionBudget,
        rbac::v1::ClusterRoleBinding,
        rbac::v1::ClusterRole,
        rbac::v1::RoleBinding,
        rbac::v1::Role,
        scheduling::v1::PriorityClass,
        storage::v1::CSIDriver,
        storage::v1::CSINode,
        storage::v1::CSIStorageCapacity,
        storage::v1::StorageClass,
        storage::v1::VolumeAttachment,
    ];
    let definitions = g
        .take_definitions(true)
        .into_iter()
        .collect::<BTreeMap<String, Value>>();
    let by_gvk = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| ((k.kind, k.group, k.version), i))
        .collect();
    Table {
        kinds,
        by_gvk,
        definitions,
    }
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(build)
}

/// Every built-in kind served, at every version it is served in.
pub fn kinds() -> &'static [BuiltinKind] {
    &table().kinds
}

/// The built-in kind `kind` of `group`/`version`, if one is served.
pub fn kind(group: &str, version: &str, kind: &str) -> Option<&'static BuiltinKind> {
    kind_index(group, version, kind).map(|i| &kinds()[i])
}

/// The index in [`kinds`] of the built-in kind `kind` of `group`/`version`.
pub(crate) fn kind_index(group: &str, version: &str, kind: &str) -> Option<usize> {
    // The map is covariant in its keys' lifetimes: looked up with borrowed strings.
    let by_gvk: &BTreeMap<(&str, &str, &str), usize> = &table().by_gvk;
    by_gvk.get(&(kind, group, version)).copied()
}

/// The schema of every type the built-in kinds reach, by upstream's definition name;
/// references inside are `{"$ref": "#/$defs/<name>"}`.
pub fn definitions() -> &'static BTreeMap<String, Value> {
    &table().definitions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_schema_and_names() {
        assert_eq!(kinds().len(), 61);
        for (i, k) in kinds().iter().enumerate() {
            assert_eq!(kind_index(k.group, k.version, k.kind), Some(i));
        }
        assert_eq!(kind("", "v1", "Widget"), None);
        assert_eq!(kind("apps", "v1beta1", "Deployment"), None);
        for k in kinds() {
            let schema = definitions()
                .get(k.definition)
                .unwrap_or_else(|| panic!("no schema for {}", k.definition));
            assert_eq!(schema["type"], "object", "{}", k.definition);
        }
        let role = kind("rbac.authorization.k8s.io", "v1", "Role").unwrap();
        assert_eq!((role.plural, role.namespaced), ("roles", true));
        let pc = kind("scheduling.k8s.io", "v1", "PriorityClass").unwrap();
        assert!(!pc.namespaced);
        let hpa = kind("autoscaling", "v2", "HorizontalPodAutoscaler").unwrap();
        assert_eq!(
            hpa.definition,
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"
        );
        // References stay within the table.
        let pod = definitions()["io.k8s.api.core.v1.Pod"].to_string();
        assert!(
            pod.contains("\"$ref\":\"#/$defs/io.k8s.api.core.v1.PodSpec\""),
            "{pod}"
        );
        assert!(definitions().contains_key("io.k8s.api.core.v1.PodSpec"));
    }
}
