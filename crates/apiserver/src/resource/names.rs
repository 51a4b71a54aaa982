//! The built-in resources the server's code names, as typed constants rather than string
//! literals: a [`GroupResource`] is matched against a [`ResourceInfo`](super::ResourceInfo)
//! with [`ResourceInfo::is`](super::ResourceInfo::is), or in a `match` on
//! [`ResourceInfo::gr`](super::ResourceInfo::gr).
//!
//! Only resources some code treats specially are here; data that lists resources as upstream
//! does (the bootstrap RBAC policy, API Priority and Fairness' bootstrap schemas) keeps
//! upstream's strings.

/// An API group and a resource's plural name (`apps`, `deployments`; the core group is `""`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupResource<'a> {
    /// The API group, `""` for the core group.
    pub group: &'a str,
    /// The plural resource name.
    pub resource: &'a str,
}

impl GroupResource<'static> {
    /// A resource of the core group.
    pub const fn core(resource: &'static str) -> Self {
        GroupResource {
            group: "",
            resource,
        }
    }

    /// A resource of `group`.
    pub const fn of(group: &'static str, resource: &'static str) -> Self {
        GroupResource { group, resource }
    }
}

/// `namespaces`.
pub const NAMESPACES: GroupResource<'static> = GroupResource::core("namespaces");
/// `pods`.
pub const PODS: GroupResource<'static> = GroupResource::core("pods");
/// `services`.
pub const SERVICES: GroupResource<'static> = GroupResource::core("services");
/// `resourcequotas`.
pub const RESOURCE_QUOTAS: GroupResource<'static> = GroupResource::core("resourcequotas");
/// `serviceaccounts`.
pub const SERVICE_ACCOUNTS: GroupResource<'static> = GroupResource::core("serviceaccounts");
/// `componentstatuses`.
pub const COMPONENT_STATUSES: GroupResource<'static> = GroupResource::core("componentstatuses");
/// `customresourcedefinitions.apiextensions.k8s.io`.
pub const CUSTOM_RESOURCE_DEFINITIONS: GroupResource<'static> =
    GroupResource::of("apiextensions.k8s.io", "customresourcedefinitions");
/// `clusterroles.rbac.authorization.k8s.io`.
pub const CLUSTER_ROLES: GroupResource<'static> =
    GroupResource::of("rbac.authorization.k8s.io", "clusterroles");
/// `clusterrolebindings.rbac.authorization.k8s.io`.
pub const CLUSTER_ROLE_BINDINGS: GroupResource<'static> =
    GroupResource::of("rbac.authorization.k8s.io", "clusterrolebindings");
/// `poddisruptionbudgets.policy`.
pub const POD_DISRUPTION_BUDGETS: GroupResource<'static> =
    GroupResource::of("policy", "poddisruptionbudgets");
/// `servicecidrs.networking.k8s.io`.
pub const SERVICE_CIDRS: GroupResource<'static> =
    GroupResource::of("networking.k8s.io", "servicecidrs");
/// `events.events.k8s.io`.
pub const EVENTS_V1: GroupResource<'static> = GroupResource::of("events.k8s.io", "events");
/// `horizontalpodautoscalers.autoscaling`.
pub const HORIZONTAL_POD_AUTOSCALERS: GroupResource<'static> =
    GroupResource::of("autoscaling", "horizontalpodautoscalers");
/// `validatingadmissionpolicies.admissionregistration.k8s.io`.
pub const VALIDATING_ADMISSION_POLICIES: GroupResource<'static> = GroupResource::of(
    "admissionregistration.k8s.io",
    "validatingadmissionpolicies",
);
/// `validatingadmissionpolicybindings.admissionregistration.k8s.io`.
pub const VALIDATING_ADMISSION_POLICY_BINDINGS: GroupResource<'static> = GroupResource::of(
    "admissionregistration.k8s.io",
    "validatingadmissionpolicybindings",
);
/// `localsubjectaccessreviews.authorization.k8s.io`.
pub const LOCAL_SUBJECT_ACCESS_REVIEWS: GroupResource<'static> =
    GroupResource::of("authorization.k8s.io", "localsubjectaccessreviews");
