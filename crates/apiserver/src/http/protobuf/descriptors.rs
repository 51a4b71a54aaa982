//! The protobuf descriptors of the built-in kinds (compiled by `build.rs` from their `.proto`
//! files) and the message of a kind. A leaf of `protobuf`.

use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, MessageDescriptor};

/// The descriptor set `build.rs` compiled from the kinds' `.proto` files.
const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kinds.pb"));

fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(DESCRIPTORS).expect("build.rs writes a valid descriptor set")
    })
}

/// The package of a built-in API group's messages, as the `.proto` files name it; `None` for
/// any other group (custom resources, whose kinds may share a built-in kind's name).
fn package(group: &str) -> Option<&'static str> {
    Some(match group {
        "" => "api.core",
        "meta.k8s.io" => "apimachinery.pkg.apis.meta",
        "apiextensions.k8s.io" => "apiextensions_apiserver.pkg.apis.apiextensions",
        "apiregistration.k8s.io" => "kube_aggregator.pkg.apis.apiregistration",
        "metrics.k8s.io" => "metrics.pkg.apis.metrics",
        "internal.apiserver.k8s.io" => "api.apiserverinternal",
        "admission.k8s.io" => "api.admission",
        "admissionregistration.k8s.io" => "api.admissionregistration",
        "apps" => "api.apps",
        "authentication.k8s.io" => "api.authentication",
        "authorization.k8s.io" => "api.authorization",
        "autoscaling" => "api.autoscaling",
        "batch" => "api.batch",
        "certificates.k8s.io" => "api.certificates",
        "coordination.k8s.io" => "api.coordination",
        "discovery.k8s.io" => "api.discovery",
        "events.k8s.io" => "api.events",
        "extensions" => "api.extensions",
        "flowcontrol.apiserver.k8s.io" => "api.flowcontrol",
        "networking.k8s.io" => "api.networking",
        "node.k8s.io" => "api.node",
        "policy" => "api.policy",
        "rbac.authorization.k8s.io" => "api.rbac",
        "resource.k8s.io" => "api.resource",
        "scheduling.k8s.io" => "api.scheduling",
        "storage.k8s.io" => "api.storage",
        "storagemigration.k8s.io" => "api.storagemigration",
        _ => return None,
    })
}

/// The meta kinds every group version carries (`metav1.AddToGroupVersion`), found in
/// apimachinery's `meta.v1` whatever the `apiVersion` says.
const META_KINDS: &[&str] = &[
    "Status",
    "WatchEvent",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
    "GetOptions",
    "ListOptions",
];

/// The message of `kind` in `api_version` (`apps/v1`, `v1`), if it is a built-in kind or one
/// of the meta kinds.
pub fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if kind.is_empty() || version.is_empty() {
        return None;
    }
    let pool = pool();
    if META_KINDS.contains(&kind) {
        return pool.get_message_by_name(&format!("apimachinery.pkg.apis.meta.v1.{kind}"));
    }
    pool.get_message_by_name(&format!("{}.{version}.{kind}", package(group)?))
}
