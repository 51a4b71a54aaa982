//! Resource descriptions: what the server serves (built-in kinds and CRD-defined ones), their
//! scope, names, subresources and per-kind rules.
//!
//! [`ResourceInfo::builtins`] is the table of the built-in kinds, with the short names,
//! categories, verbs and subresources the real kube-apiserver publishes; it and
//! [`ResourceInfo::verbs`] are defined by the (private) `kinds` module, which holds the rows
//! they read. CRD-defined resources are built by the storage when a
//! `CustomResourceDefinition` is created (see `storage::crd`).

pub mod names;

pub use names::GroupResource;

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
    /// The warning every request to this version answers with, when its CRD marks it
    /// `deprecated` (the CRD's `deprecationWarning`, else upstream's default text).
    pub deprecation_warning: Option<String>,
    /// The field labels a CRD version declares in `selectableFields` (`spec.color` for
    /// `jsonPath: .spec.color`), selectable beside `metadata.name` and `metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// The `storageVersionHash` discovery publishes ([`storage_version_hash`] of the group,
    /// version and kind the objects are stored as); `None` for what is never stored (reviews,
    /// `bindings`, `componentstatuses`).
    pub storage_version_hash: Option<String>,
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

    /// Its group and plural name, typed: for a `match` against [`names`]' constants.
    pub fn gr(&self) -> GroupResource<'_> {
        GroupResource {
            group: &self.group,
            resource: &self.plural,
        }
    }

    /// Whether it is the resource `gr` names (at any version).
    ///
    /// ```
    /// use crt_apiserver::resource::{ResourceInfo, names};
    /// let pods = ResourceInfo::builtins().into_iter().find(|r| r.plural == "pods").unwrap();
    /// assert!(pods.is(names::PODS) && !pods.is(names::SERVICES));
    /// ```
    pub fn is(&self, gr: GroupResource<'_>) -> bool {
        self.gr() == gr
    }

    /// `plural.group` (or `plural` for the core group), as error messages name a resource.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The subresources served (`status`, `scale`), as discovery lists them.
    ///
    /// ```
    /// let deploy = crt_apiserver::resource::ResourceInfo::builtins()
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

/// The hash kube-apiserver publishes as a resource's `storageVersionHash`: the first 8 bytes
/// of the SHA-256 of `<group>/<version>/<kind>` (the group empty for the core group), in
/// standard base64. It changes exactly when the version objects are stored at changes.
///
/// ```
/// assert_eq!(crt_apiserver::resource::storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
/// ```
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{kind}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_names_and_subresources() {
        let all = ResourceInfo::builtins();
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
