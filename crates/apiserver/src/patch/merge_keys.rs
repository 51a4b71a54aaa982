//! The `patchStrategy` / `patchMergeKey` tags of the built-in kinds (k8s.io/api core/v1,
//! apps/v1, batch/v1), as a compact table of struct types and their list fields.
//!
//! Only lists need an entry: maps are always merged, and a list without an entry is replaced
//! whole (`tolerations`, `envFrom`, `args`, `command`, ...). `retainKeys` strategies need no
//! entry either: the server side only honours the `$retainKeys` directive a client sends.

/// A struct type of the built-in API whose fields carry patch tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Ty {
    /// A value with no tagged fields below it.
    Any,
    /// The top of any built-in object without more specific rules: metadata and
    /// `status.conditions`.
    Object,
    /// `metav1.ObjectMeta`.
    ObjectMeta,
    /// `status` of kinds whose conditions merge by `type`.
    ConditionsStatus,
    /// `Pod`.
    Pod,
    /// `PodTemplateSpec` (`metadata` + `spec`).
    PodTemplate,
    /// The `PodTemplate` kind (`metadata` + `template`, a `PodTemplateSpec`).
    PodTemplateKind,
    /// `PodSpec`.
    PodSpec,
    /// `Container` (also init and ephemeral containers).
    Container,
    /// `PodStatus`.
    PodStatus,
    /// Deployments, ReplicaSets, StatefulSets, DaemonSets and Jobs: a pod template in spec.
    Workload,
    /// Their `spec` (`template`).
    WorkloadSpec,
    /// `CronJob`.
    CronJob,
    /// `CronJobSpec` (`jobTemplate`).
    CronJobSpec,
    /// `JobTemplateSpec` (`metadata` + `spec`).
    JobTemplate,
    /// `Service`.
    Service,
    /// `ServiceSpec`.
    ServiceSpec,
    /// `Node`.
    Node,
    /// `NodeSpec`.
    NodeSpec,
    /// `NodeStatus`.
    NodeStatus,
    /// `ServiceAccount`.
    ServiceAccount,
    /// The `MergeItem` struct of upstream's strategic merge patch tests, for table tests.
    #[cfg(test)]
    MergeItem,
}

/// How a field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldMeta {
    /// The type of the field's value (of the list's elements for a list).
    pub ty: Ty,
    /// Whether a list is merged (`patchStrategy: merge`); otherwise replaced.
    pub merge: bool,
    /// The `patchMergeKey` of a merged list of objects.
    pub merge_key: Option<&'static str>,
}

const fn plain(ty: Ty) -> FieldMeta {
    FieldMeta {
        ty,
        merge: false,
        merge_key: None,
    }
}

const fn keyed(ty: Ty, key: &'static str) -> FieldMeta {
    FieldMeta {
        ty,
        merge: true,
        merge_key: Some(key),
    }
}

/// A merged list of primitives (a set), like `metadata.finalizers`.
const SET: FieldMeta = FieldMeta {
    ty: Ty::Any,
    merge: true,
    merge_key: None,
};

impl Ty {
    /// The patch metadata of field `name` of a value of this type.
    pub(crate) fn field(self, name: &str) -> FieldMeta {
        use Ty::*;
        match (self, name) {
            (
                Object | Pod | PodTemplate | PodTemplateKind | Workload | CronJob | JobTemplate
                | Service | Node | ServiceAccount,
                "metadata",
            ) => plain(ObjectMeta),
            (ObjectMeta, "ownerReferences") => keyed(Any, "uid"),
            (ObjectMeta, "finalizers") => SET,

            (Object | Workload | CronJob | Service, "status") => plain(ConditionsStatus),
            (ConditionsStatus | NodeStatus | PodStatus, "conditions") => keyed(Any, "type"),

            (Pod | PodTemplate, "spec") => plain(PodSpec),
            (Pod, "status") => plain(PodStatus),
            (PodSpec, "containers" | "initContainers" | "ephemeralContainers") => {
                keyed(Container, "name")
            }
            (PodSpec, "volumes" | "imagePullSecrets" | "resourceClaims" | "schedulingGates") => {
                keyed(Any, "name")
            }
            (PodSpec, "hostAliases") => keyed(Any, "ip"),
            (PodSpec, "topologySpreadConstraints") => keyed(Any, "topologyKey"),
            (Container, "ports") => keyed(Any, "containerPort"),
            (Container, "env") => keyed(Any, "name"),
            (Container, "volumeMounts") => keyed(Any, "mountPath"),
            (Container, "volumeDevices") => keyed(Any, "devicePath"),
            (PodStatus, "podIPs" | "hostIPs") => keyed(Any, "ip"),
            (PodStatus, "resourceClaimStatuses") => keyed(Any, "name"),

            (Workload, "spec") => plain(WorkloadSpec),
            (WorkloadSpec | PodTemplateKind, "template") => plain(PodTemplate),
            (CronJob, "spec") => plain(CronJobSpec),
            (CronJobSpec, "jobTemplate") => plain(JobTemplate),
            (JobTemplate, "spec") => plain(WorkloadSpec),

            (Service, "spec") => plain(ServiceSpec),
            (ServiceSpec, "ports") => keyed(Any, "port"),

            (Node, "spec") => plain(NodeSpec),
            (Node, "status") => plain(NodeStatus),
            (NodeSpec, "podCIDRs") => SET,
            (NodeStatus, "addresses") => keyed(Any, "type"),

            (ServiceAccount, "secrets") => keyed(Any, "name"),

            #[cfg(test)]
            (MergeItem, "mergingList" | "retainKeysMergingList" | "mergeItemPtr") => {
                keyed(MergeItem, "name")
            }
            #[cfg(test)]
            (MergeItem, "mergingIntList") => SET,
            #[cfg(test)]
            (MergeItem, "nonMergingList" | "retainKeysMap") => plain(MergeItem),
            _ => plain(Any),
        }
    }
}

/// The strategic-merge-patch metadata (merge keys and list strategies) of one built-in kind.
///
/// ```
/// use crt_apiserver::patch::MergeKeys;
/// let keys = MergeKeys::builtin("apps", "Deployment");
/// assert_eq!(keys.merge_key(&["spec", "template", "spec", "containers"]), Some("name"));
/// assert_eq!(keys.merge_key(&["spec", "template", "spec", "containers", "env"]), Some("name"));
/// assert_eq!(keys.merge_key(&["spec", "template", "spec", "tolerations"]), None);
/// // The PodTemplate kind holds its PodTemplateSpec in `template`.
/// let keys = MergeKeys::builtin("", "PodTemplate");
/// assert_eq!(keys.merge_key(&["template", "spec", "containers"]), Some("name"));
/// assert_eq!(keys.merge_key(&["metadata", "ownerReferences"]), Some("uid"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeKeys {
    root: Ty,
}

impl MergeKeys {
    /// The table of objects whose top-level type is `root` (what a built-in kind's strategy
    /// names; `MergeKeys::builtin` looks it up by kind).
    pub(crate) fn of_root(root: Ty) -> MergeKeys {
        MergeKeys { root }
    }

    /// The table of upstream's test type `MergeItem`.
    #[cfg(test)]
    pub(crate) fn merge_item() -> MergeKeys {
        MergeKeys {
            root: Ty::MergeItem,
        }
    }

    pub(crate) fn root(&self) -> Ty {
        self.root
    }

    /// The `patchMergeKey` of the list at `path` (field names, list elements skipped), or
    /// `None` when that list is replaced whole or is a merged list of primitives.
    pub fn merge_key(&self, path: &[&str]) -> Option<&'static str> {
        self.meta(path).merge_key
    }

    /// Whether the list at `path` is merged (`patchStrategy: merge`) rather than replaced.
    pub fn is_merged_list(&self, path: &[&str]) -> bool {
        self.meta(path).merge
    }

    fn meta(&self, path: &[&str]) -> FieldMeta {
        let mut meta = plain(self.root);
        for name in path {
            meta = meta.ty.field(name);
        }
        meta
    }
}
