//! Resource descriptions: what the server serves (built-in kinds and CRD-defined ones), their
//! scope, names, subresources and per-kind rules.

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
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// `plural.group` (or `plural` for the core group), as error messages name a resource.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() { self.plural.clone() } else { format!("{}.{}", self.plural, self.group) }
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
