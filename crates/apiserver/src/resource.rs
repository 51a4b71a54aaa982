//! Resource descriptions: what the server serves (built-in kinds and CRD-defined ones), their
//! scope, names, subresources and per-kind rules.
//!
//! [`builtin_resources`] is the table of the built-in kinds, with the short names, categories
//! and subresources the real kube-apiserver publishes. CRD-defined resources are built by the
//! storage when a `CustomResourceDefinition` is created (see `storage::crd`).

/// One served resource at one group/version, e.g. `apps/v1 deployments`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group; `""` for the core group.
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Plural resource name used in paths, e.g. `deployments`.
    pub plural: String,
    /// Singular name, e.g. `deployment`.
    pub singular: String,
    /// Kind, e.g. `Deployment`.
    pub kind: String,
    /// Kind of the list, e.g. `DeploymentList`.
    pub list_kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names for kubectl, e.g. `deploy`.
    pub short_names: Vec<String>,
    /// Categories, e.g. `all`.
    pub categories: Vec<String>,
    /// Whether a `status` subresource is served (and status is isolated from the main resource).
    pub status_subresource: bool,
    /// The `scale` subresource, when served.
    pub scale: Option<ScaleInfo>,
    /// Whether `metadata.generation` is maintained for this resource.
    pub generation: bool,
    /// Whether this resource is defined by a CustomResourceDefinition (no strategic merge patch,
    /// schema validation and pruning).
    pub custom: bool,
}

impl ResourceInfo {
    /// `group/version`, or `version` for the core group: the `apiVersion` of its objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` (or `plural` for the core group), as error messages name a resource.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The verbs served on the resource, as discovery lists them.
    pub fn verbs(&self) -> Vec<&'static str> {
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }

    /// The subresources served (`status`, `scale`), as discovery lists them.
    ///
    /// ```
    /// let deploy = crt_apiserver::resource::builtin_resources()
    ///     .into_iter()
    ///     .find(|r| r.plural == "deployments")
    ///     .unwrap();
    /// assert_eq!(deploy.subresources(), vec!["status", "scale"]);
    /// ```
    pub fn subresources(&self) -> Vec<&'static str> {
        let mut subs = Vec::new();
        if self.status_subresource {
            subs.push("status");
        }
        if self.scale.is_some() {
            subs.push("scale");
        }
        subs
    }

    /// Whether `subresource` is served on this resource.
    pub fn has_subresource(&self, subresource: &str) -> bool {
        self.subresources().contains(&subresource)
    }
}

/// Where the scale subresource reads and writes replicas (JSON paths as in a CRD's
/// `subresources.scale`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleInfo {
    /// e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// e.g. `.status.selector`, when the label selector is published.
    pub label_selector_path: Option<String>,
}

impl ScaleInfo {
    /// The scale of the built-in workloads: `.spec.replicas`, `.status.replicas`, and the label
    /// selector taken from `.spec.selector`.
    pub fn builtin() -> Self {
        ScaleInfo {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".spec.selector".into()),
        }
    }
}

/// One row of the built-in table; `flags` is a set of the `F_*` bits.
struct Builtin {
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    flags: u8,
}

const F_STATUS: u8 = 1;
const F_SCALE: u8 = 2;
const F_GENERATION: u8 = 4;

const ALL: &[&str] = &["all"];

#[rustfmt::skip]
const BUILTINS: &[Builtin] = &[
    Builtin { group: "", plural: "namespaces", kind: "Namespace", namespaced: false, short_names: &["ns"], categories: &[], flags: F_STATUS },
    Builtin { group: "", plural: "configmaps", kind: "ConfigMap", namespaced: true, short_names: &["cm"], categories: &[], flags: 0 },
    Builtin { group: "", plural: "secrets", kind: "Secret", namespaced: true, short_names: &[], categories: &[], flags: 0 },
    Builtin { group: "", plural: "pods", kind: "Pod", namespaced: true, short_names: &["po"], categories: ALL, flags: F_STATUS },
    Builtin { group: "", plural: "services", kind: "Service", namespaced: true, short_names: &["svc"], categories: ALL, flags: F_STATUS },
    Builtin { group: "", plural: "serviceaccounts", kind: "ServiceAccount", namespaced: true, short_names: &["sa"], categories: &[], flags: 0 },
    Builtin { group: "", plural: "events", kind: "Event", namespaced: true, short_names: &["ev"], categories: &[], flags: 0 },
    Builtin { group: "", plural: "nodes", kind: "Node", namespaced: false, short_names: &["no"], categories: &[], flags: F_STATUS },
    Builtin { group: "", plural: "persistentvolumeclaims", kind: "PersistentVolumeClaim", namespaced: true, short_names: &["pvc"], categories: &[], flags: F_STATUS },
    Builtin { group: "apps", plural: "deployments", kind: "Deployment", namespaced: true, short_names: &["deploy"], categories: ALL, flags: F_STATUS | F_SCALE | F_GENERATION },
    Builtin { group: "apps", plural: "replicasets", kind: "ReplicaSet", namespaced: true, short_names: &["rs"], categories: ALL, flags: F_STATUS | F_SCALE | F_GENERATION },
    Builtin { group: "apps", plural: "statefulsets", kind: "StatefulSet", namespaced: true, short_names: &["sts"], categories: ALL, flags: F_STATUS | F_SCALE | F_GENERATION },
    Builtin { group: "apps", plural: "daemonsets", kind: "DaemonSet", namespaced: true, short_names: &["ds"], categories: ALL, flags: F_STATUS | F_GENERATION },
    Builtin { group: "batch", plural: "jobs", kind: "Job", namespaced: true, short_names: &[], categories: ALL, flags: F_STATUS | F_GENERATION },
    Builtin { group: "batch", plural: "cronjobs", kind: "CronJob", namespaced: true, short_names: &["cj"], categories: ALL, flags: F_STATUS | F_GENERATION },
    Builtin { group: "coordination.k8s.io", plural: "leases", kind: "Lease", namespaced: true, short_names: &[], categories: &[], flags: 0 },
    Builtin { group: "events.k8s.io", plural: "events", kind: "Event", namespaced: true, short_names: &["ev"], categories: &[], flags: 0 },
    Builtin { group: "apiextensions.k8s.io", plural: "customresourcedefinitions", kind: "CustomResourceDefinition", namespaced: false, short_names: &["crd", "crds"], categories: &["api-extensions"], flags: F_STATUS | F_GENERATION },
];

/// The built-in resources, in discovery order (core group first), all at version `v1`.
///
/// ```
/// let all = crt_apiserver::resource::builtin_resources();
/// let cm = all.iter().find(|r| r.plural == "configmaps").unwrap();
/// assert_eq!((cm.kind.as_str(), cm.short_names[0].as_str()), ("ConfigMap", "cm"));
/// ```
pub fn builtin_resources() -> Vec<ResourceInfo> {
    BUILTINS
        .iter()
        .map(|b| ResourceInfo {
            group: b.group.into(),
            version: "v1".into(),
            plural: b.plural.into(),
            singular: b.kind.to_ascii_lowercase(),
            kind: b.kind.into(),
            list_kind: format!("{}List", b.kind),
            namespaced: b.namespaced,
            short_names: b.short_names.iter().map(|s| s.to_string()).collect(),
            categories: b.categories.iter().map(|s| s.to_string()).collect(),
            status_subresource: b.flags & F_STATUS != 0,
            scale: (b.flags & F_SCALE != 0).then(ScaleInfo::builtin),
            generation: b.flags & F_GENERATION != 0,
            custom: false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_names_and_subresources() {
        let all = builtin_resources();
        let find = |g: &str, p: &str| all.iter().find(|r| r.group == g && r.plural == p).unwrap();
        assert_eq!(find("", "namespaces").short_names, vec!["ns"]);
        assert!(!find("", "namespaces").namespaced);
        assert_eq!(
            find("apiextensions.k8s.io", "customresourcedefinitions").short_names,
            vec!["crd", "crds"]
        );
        assert_eq!(find("apps", "deployments").api_version(), "apps/v1");
        assert_eq!(find("", "pods").api_version(), "v1");
        assert_eq!(
            find("apps", "deployments").group_resource(),
            "deployments.apps"
        );
        assert!(find("apps", "statefulsets").scale.is_some());
        assert!(find("apps", "daemonsets").scale.is_none());
        assert!(find("batch", "jobs").generation);
        assert!(!find("", "configmaps").generation);
        assert_eq!(find("", "pods").categories, vec!["all"]);
        assert_eq!(find("", "pods").singular, "pod");
        assert_eq!(find("", "pods").list_kind, "PodList");
    }
}
