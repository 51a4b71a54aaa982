//! The built-in kinds: what a kube-apiserver 1.33 serves by default (`kubectl api-resources
//! -o wide` on a fresh cluster) and everything the server does with each kind's objects.
//!
//! Each API group has a file (`core.rs`, `apps.rs`, ...) listing its kinds as [`Row`]s, in
//! discovery order: how discovery describes the kind (short names, categories, verbs,
//! subresources, whether `metadata.generation` is kept) and the kind's [`Strategy`]. A kind
//! with behaviour of its own has a module under its group (`core/pod.rs`,
//! `networking/servicecidr.rs`, as upstream's `pkg/registry/<group>/<kind>/strategy.go`)
//! defining its `STRATEGY`: name format, normalization, defaults, validation (create, update
//! and the subresources that validate only what they write), what a status write keeps, the
//! initial status, field-selector labels, strategic-merge type and table columns. Kinds
//! without one get [`strategy::DEFAULT`].
//!
//! # Layering
//! The libraries the strategies name (`resource`, `validation`, `table`, `patch`) never name
//! this module. The modules above it (the storage, the HTTP handlers, field selectors, the
//! field manager) look a kind's strategy up with [`strategy_of`] / [`strategy_of_kind`]
//! rather than matching kind names, or call the functions here that do ([`validate`],
//! [`validate_subresource`], [`name_format`], [`printer`]), and hand what it says to the
//! libraries. What the public API offers about the built-in kinds is defined here as
//! inherent items of the libraries' types: `ResourceInfo::builtins` (the rows as the
//! server's resources), `ResourceInfo::verbs`, `MergeKeys::builtin`.
//!
//! # Adding a built-in kind
//! Write its module, `<group>/<kind>.rs`: a `pub(crate) const STRATEGY: Strategy` with the
//! fields that differ from [`strategy::DEFAULT`] and the functions it names (defaults,
//! validation, columns). Declare it with `mod <kind>;` in the group's file and add its row,
//! ending in `.strategy(&<kind>::STRATEGY)`, to the group's `ROWS` (a new group's `ROWS` goes
//! to [`GROUPS`]); the golden discovery table in `tests.rs` lists the row too. Helpers the
//! kinds share: [`defaults`] (values put where absent, pod spec defaults),
//! `crate::table::columns` (cell readers and shared printers), `crate::validation` (metadata,
//! names, quantities, pod specs). `networking/servicecidr.rs` is a complete example, tests
//! included.

mod admissionregistration;
mod apiextensions;
mod apiregistration;
mod apps;
mod authentication;
mod authorization;
mod autoscaling;
mod batch;
mod certificates;
mod coordination;
mod core;
mod discovery;
mod events;
pub(crate) mod flowcontrol;
mod networking;
mod node;
mod policy;
mod rbac;
mod scheduling;
mod storage;

pub(crate) mod defaults;
mod strategy;

pub(crate) use strategy::{FieldLabel, StatusStrategy, Strategy, label};

use serde_json::Value;

use crate::patch::MergeKeys;
use crate::resource::{GroupResource, ResourceInfo, ScaleInfo, names, storage_version_hash};
use crate::table::Printer;
use crate::validation::{FieldError, NameFormat};

/// A `status` subresource is served (and status is isolated from the main resource).
pub(crate) const STATUS: u8 = 1;
/// A `scale` subresource is served (`.spec.replicas`, `.status.replicas`).
pub(crate) const SCALE: u8 = 2;
/// `metadata.generation` is kept: 1 on create, bumped on every change of `spec`.
pub(crate) const GENERATION: u8 = 4;

/// Every verb of a stored resource.
pub(crate) const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// The verbs of the review kinds and `bindings`.
pub(crate) const CREATE: &[&str] = &["create"];
/// The verbs of the `status` and `scale` subresources.
pub(crate) const GET_PATCH_UPDATE: &[&str] = &["get", "patch", "update"];

/// The `all` category (`kubectl get all`).
pub(crate) const CAT_ALL: &[&str] = &["all"];
/// The `api-extensions` category.
pub(crate) const CAT_API_EXTENSIONS: &[&str] = &["api-extensions"];

/// A subresource discovery publishes besides `status` and `scale` (`pods/log`,
/// `serviceaccounts/token`, ...). Those are listed as upstream lists them; the server serves
/// `pods/binding`, `pods/eviction`, `namespaces/finalize` and `serviceaccounts/token`, and
/// answers the others 404.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sub {
    /// e.g. `log`.
    pub(crate) name: &'static str,
    /// The response kind's group, version and kind.
    pub(crate) group: &'static str,
    /// The response kind's version.
    pub(crate) version: &'static str,
    /// The response kind.
    pub(crate) kind: &'static str,
    /// The verbs.
    pub(crate) verbs: &'static [&'static str],
}

/// A published subresource answered with a kind of the core group.
pub(crate) const fn sub(
    name: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
) -> Sub {
    Sub {
        name,
        group: "",
        version: "v1",
        kind,
        verbs,
    }
}

/// One built-in kind at one version: its discovery row and, through [`Strategy`], everything
/// the server does with its objects.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    pub(crate) group: &'static str,
    pub(crate) version: &'static str,
    pub(crate) plural: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) namespaced: bool,
    pub(crate) short_names: &'static [&'static str],
    pub(crate) categories: &'static [&'static str],
    pub(crate) verbs: &'static [&'static str],
    /// A set of [`STATUS`], [`SCALE`], [`GENERATION`].
    pub(crate) flags: u8,
    /// Published subresources besides `status` and `scale`, in upstream's order.
    pub(crate) extra: &'static [Sub],
    /// The warning every request to this resource answers with, when upstream has deprecated
    /// it (kubectl prints it as `Warning: ...`).
    pub(crate) deprecation: Option<&'static str>,
    /// How objects of the kind are defaulted, validated, selected, printed and patched.
    pub(crate) strategy: &'static Strategy,
}

/// A row with every verb, no short name, category, subresource nor generation.
pub(crate) const fn row(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Row {
    Row {
        group,
        version,
        plural,
        kind,
        namespaced,
        short_names: &[],
        categories: &[],
        verbs: ALL_VERBS,
        flags: 0,
        extra: &[],
        deprecation: None,
        strategy: &strategy::DEFAULT,
    }
}

impl Row {
    pub(crate) const fn short(self, short_names: &'static [&'static str]) -> Row {
        Row {
            short_names,
            ..self
        }
    }
    pub(crate) const fn categories(self, categories: &'static [&'static str]) -> Row {
        Row { categories, ..self }
    }
    pub(crate) const fn verbs(self, verbs: &'static [&'static str]) -> Row {
        Row { verbs, ..self }
    }
    pub(crate) const fn flags(self, flags: u8) -> Row {
        Row { flags, ..self }
    }
    pub(crate) const fn extra(self, extra: &'static [Sub]) -> Row {
        Row { extra, ..self }
    }
    /// The kind's behaviour beyond discovery.
    pub(crate) const fn strategy(self, strategy: &'static Strategy) -> Row {
        Row { strategy, ..self }
    }
    /// Upstream deprecated the resource: every request is answered with this warning.
    pub(crate) const fn deprecated(self, warning: &'static str) -> Row {
        Row {
            deprecation: Some(warning),
            ..self
        }
    }
    /// The group, version and kind its objects are stored as (what `storageVersionHash`
    /// hashes), or `None` when the resource stores nothing: the reviews, `bindings` and
    /// `componentstatuses`. Events of `events.k8s.io` are stored as core `v1` Events, and
    /// HorizontalPodAutoscalers at `autoscaling/v2`, as kube-apiserver 1.33 stores them.
    pub(crate) fn storage_gvk(&self) -> Option<(&'static str, &'static str, &'static str)> {
        match GroupResource::of(self.group, self.plural) {
            _ if self.verbs == CREATE || self.is_review() => None,
            names::COMPONENT_STATUSES => None,
            names::EVENTS_V1 => Some(("", "v1", "Event")),
            names::HORIZONTAL_POD_AUTOSCALERS => Some(("autoscaling", "v2", self.kind)),
            _ => Some((self.group, self.version, self.kind)),
        }
    }
    /// Whether the kind is a review (answered on create, never stored).
    pub(crate) fn is_review(&self) -> bool {
        matches!(self.group, "authentication.k8s.io" | "authorization.k8s.io")
    }
}

/// Every group's rows, in the order a kube-apiserver 1.33 lists its groups (core first).
pub(crate) const GROUPS: &[&[Row]] = &[
    core::ROWS,
    apiregistration::ROWS,
    apps::ROWS,
    events::ROWS,
    authentication::ROWS,
    authorization::ROWS,
    autoscaling::ROWS,
    batch::ROWS,
    certificates::ROWS,
    networking::ROWS,
    policy::ROWS,
    rbac::ROWS,
    storage::ROWS,
    admissionregistration::ROWS,
    apiextensions::ROWS,
    scheduling::ROWS,
    coordination::ROWS,
    node::ROWS,
    discovery::ROWS,
    flowcontrol::ROWS,
];

/// The deprecation warning of a built-in `group/version/plural`, if upstream deprecated it.
pub(crate) fn deprecation(group: &str, version: &str, plural: &str) -> Option<&'static str> {
    find(group, version, plural).and_then(|r| r.deprecation)
}

/// Every row, in discovery order.
pub(crate) fn rows() -> impl Iterator<Item = &'static Row> {
    GROUPS.iter().flat_map(|g| g.iter())
}

/// The row of `group/version/plural`, if built in.
pub(crate) fn find(group: &str, version: &str, plural: &str) -> Option<&'static Row> {
    rows().find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// The strategy of the built-in resource `group/plural` (any version), or the default one
/// (no rules beyond the generic ones) when `group/plural` is not built in.
pub(crate) fn strategy_of(group: &str, plural: &str) -> &'static Strategy {
    rows()
        .find(|r| r.group == group && r.plural == plural)
        .map_or(&strategy::DEFAULT, |r| r.strategy)
}

/// The strategy of the built-in kind `group`/`kind`, or the default one.
pub(crate) fn strategy_of_kind(group: &str, kind: &str) -> &'static Strategy {
    rows()
        .find(|r| r.group == group && r.kind == kind)
        .map_or(&strategy::DEFAULT, |r| r.strategy)
}

impl ResourceInfo {
    /// The built-in resources the storage holds, in discovery order (core group first): every
    /// built-in kind except the reviews, which are answered on create and never stored (see
    /// `http::reviews`).
    ///
    /// ```
    /// let all = crt_apiserver::resource::ResourceInfo::builtins();
    /// let cm = all.iter().find(|r| r.plural == "configmaps").unwrap();
    /// assert_eq!((cm.kind.as_str(), cm.short_names[0].as_str()), ("ConfigMap", "cm"));
    /// ```
    pub fn builtins() -> Vec<ResourceInfo> {
        rows().filter(|r| !r.is_review()).map(from_row).collect()
    }

    /// The review resources (`TokenReview`, `SubjectAccessReview`, ...): create only.
    pub(crate) fn reviews() -> Vec<ResourceInfo> {
        rows().filter(|r| r.is_review()).map(from_row).collect()
    }

    /// The verbs served on the resource, as discovery lists them: every verb for custom
    /// resources, the built-in kind's own (e.g. `create` for reviews, no `deletecollection`
    /// for namespaces) otherwise.
    ///
    /// ```
    /// let all = crt_apiserver::resource::ResourceInfo::builtins();
    /// let cs = all.iter().find(|r| r.plural == "componentstatuses").unwrap();
    /// assert_eq!(cs.verbs(), vec!["get", "list"]);
    /// ```
    pub fn verbs(&self) -> Vec<&'static str> {
        let row = (!self.custom)
            .then(|| find(&self.group, &self.version, &self.plural))
            .flatten();
        row.map_or(ALL_VERBS, |r| r.verbs).to_vec()
    }
}

fn from_row(b: &Row) -> ResourceInfo {
    ResourceInfo {
        group: b.group.into(),
        version: b.version.into(),
        plural: b.plural.into(),
        singular: b.kind.to_ascii_lowercase(),
        kind: b.kind.into(),
        list_kind: format!("{}List", b.kind),
        namespaced: b.namespaced,
        short_names: b.short_names.iter().map(|s| s.to_string()).collect(),
        categories: b.categories.iter().map(|s| s.to_string()).collect(),
        status_subresource: b.flags & STATUS != 0,
        scale: (b.flags & SCALE != 0).then(ScaleInfo::builtin),
        generation: b.flags & GENERATION != 0,
        custom: false,
        deprecation_warning: None,
        selectable_fields: Vec::new(),
        storage_version_hash: b
            .storage_gvk()
            .map(|(g, v, k)| storage_version_hash(g, v, k)),
    }
}

impl MergeKeys {
    /// The table for a built-in kind, by API group (`""` for core) and kind. Kinds without
    /// tagged lists of their own still get the rules every object shares
    /// (`metadata.ownerReferences` by `uid`, `metadata.finalizers` as a set,
    /// `status.conditions` by `type`).
    pub fn builtin(group: &str, kind: &str) -> MergeKeys {
        MergeKeys::of_root(strategy_of_kind(group, kind).merge_root)
    }
}

/// The name format `metadata.name` must have in objects of `res` (upstream's
/// `ValidateNameFunc` of the kind).
pub(crate) fn name_format(res: &ResourceInfo) -> NameFormat {
    strategy_of(&res.group, &res.plural).name_format
}

/// The kind-specific errors of a built-in object (`old` on update), by the validator its
/// strategy names. Metadata is checked separately by `validation::validate_object_meta`.
pub(crate) fn validate(res: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(v) = strategy_of(&res.group, &res.plural).validate {
        v(obj, old, &mut errs);
    }
    errs
}

/// The errors of an update through a subresource whose strategy validates only what it
/// writes, `None` for every other subresource (validated as the object is): a
/// CertificateSigningRequest's `approval`, a pod's `ephemeralcontainers` and `resize`.
pub(crate) fn validate_subresource(
    res: &ResourceInfo,
    subresource: Option<&str>,
    obj: &Value,
    old: &Value,
) -> Option<Vec<FieldError>> {
    let subresource = subresource?;
    let (_, validate) = strategy_of(&res.group, &res.plural)
        .subresource_validators
        .iter()
        .find(|(name, _)| *name == subresource)?;
    let mut errs = Vec::new();
    validate(obj, old, &mut errs);
    Some(errs)
}

/// The built-in columns of `res`'s kind, for `table::columns_for`.
pub(crate) fn printer(res: &ResourceInfo) -> Printer {
    strategy_of(&res.group, &res.plural).printer()
}

#[cfg(test)]
mod tests;
