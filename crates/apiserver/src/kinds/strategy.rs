//! [`Strategy`]: what the server does with the objects of one built-in kind, upstream's
//! `pkg/registry/<group>/<resource>/strategy.go` as data. Each kind's section of its group's
//! file defines one (only the fields that differ from [`DEFAULT`]); the storage, the HTTP
//! handlers, the field selectors and the field manager ask it instead of naming kinds, and hand
//! what it says to the libraries (validation, table printer, patcher).

use serde_json::{Value, json};

use crate::error::ApiError;
use crate::patch::MergeRoot;
use crate::table::columns::{CellFn, Columns, Table};
use crate::table::{Printer, RowOrder};
use crate::validation::{FieldError, NameFormat, Validator};

/// Rewrites an object as its kind stores it; a 400 when it cannot.
pub(crate) type Normalize = fn(&mut Value) -> Result<(), ApiError>;

/// The validation of an update through a subresource that validates only what it writes.
pub(crate) type SubresourceValidator = fn(obj: &Value, old: &Value, errs: &mut Vec<FieldError>);

/// The metadata fields `ResetObjectMetaForStatus` resets (besides the deletion timestamp and
/// generation every update keeps).
pub(crate) const STATUS_META: &[&str] = &["labels", "annotations", "finalizers", "ownerReferences"];

/// What a write to the `status` subresource keeps from the stored object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StatusStrategy {
    /// Everything but `spec` may change.
    Spec,
    /// `spec` and these metadata fields are kept.
    SpecAnd(&'static [&'static str]),
    /// `spec` and all metadata are kept.
    SpecAndMetadata,
    /// Only `status` may change (custom resources).
    StatusOnly,
}

/// A field label a kind supports in field selectors, beyond `metadata.name` and
/// `metadata.namespace` (upstream's `GetAttrs` and field label conversion).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FieldLabel {
    /// The label, e.g. `spec.nodeName`.
    pub(crate) name: &'static str,
    /// The dotted path of its value in the stored object (usually the label itself).
    pub(crate) path: &'static str,
    /// The value selected when the field is absent (`false`, `0` for booleans and counters
    /// that default to it; empty otherwise).
    pub(crate) absent: &'static str,
}

/// A field label whose value is at the path it names, empty when absent.
pub(crate) const fn label(name: &'static str) -> FieldLabel {
    FieldLabel {
        name,
        path: name,
        absent: "",
    }
}

impl FieldLabel {
    /// The value is read at `path` instead.
    pub(crate) const fn at(self, path: &'static str) -> FieldLabel {
        FieldLabel { path, ..self }
    }
    /// An absent value selects as `value`.
    pub(crate) const fn absent(self, absent: &'static str) -> FieldLabel {
        FieldLabel { absent, ..self }
    }
}

/// Everything about a built-in kind beyond its discovery row.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strategy {
    /// The format `metadata.name` must have.
    pub(crate) name_format: NameFormat,
    /// Rewrites the object as it is stored, before defaulting (a Secret's `stringData`).
    pub(crate) normalize: Option<Normalize>,
    /// Fills in upstream's defaults on create and update; the counter allocates cluster IPs.
    pub(crate) defaults: Option<fn(obj: &mut Value, next_cluster_ip: &mut u32)>,
    /// The kind's validation beyond metadata.
    pub(crate) validate: Option<Validator>,
    /// Subresources whose updates validate only what they write, with their validation.
    pub(crate) subresource_validators: &'static [(&'static str, SubresourceValidator)],
    /// Subresources besides `status` and `scale` whose updates write only their own part of
    /// the object.
    pub(crate) own_subresources: &'static [&'static str],
    /// Subresources answered by a handler of their own rather than as a write of the object
    /// (a pod's `binding` and `eviction`, a service account's `token`).
    pub(crate) action_subresources: &'static [&'static str],
    /// A deletion answers with the deleted object rather than a `Status`
    /// (`ReturnDeletedObject` of the kind's registry).
    pub(crate) delete_returns_object: bool,
    /// A deletion that names no propagation policy orphans the dependents (upstream's
    /// `DefaultGarbageCollectionPolicy` answering `OrphanDependents`: core/v1
    /// ReplicationControllers, kept for compatibility) instead of collecting them in the
    /// background.
    pub(crate) orphan_by_default: bool,
    /// What a status write keeps.
    pub(crate) status: StatusStrategy,
    /// The status a create starts with when the kind has a status subresource (`None`: none).
    pub(crate) initial_status: Option<fn() -> Value>,
    /// The field labels of field selectors.
    pub(crate) field_labels: &'static [FieldLabel],
    /// The strategic-merge-patch type of its objects.
    pub(crate) merge_root: MergeRoot,
    /// A table of its own replacing NAME, the columns and AGE: these columns, then NAME at
    /// priority 1 and no AGE (Events, led by LAST SEEN).
    pub(crate) table: Option<Table>,
    /// Table columns between NAME and AGE.
    pub(crate) columns: Columns,
    /// Priority-0 columns after AGE.
    pub(crate) columns_after_age: Columns,
    /// `-o wide` columns (priority 1), after AGE.
    pub(crate) columns_wide: Columns,
    /// The order of a table's rows when upstream's printer sorts a list (`None`: as listed).
    pub(crate) row_order: Option<RowOrder>,
}

impl Strategy {
    /// Whether the kind serves `subresource`, besides `status` and `scale` (which its row
    /// declares).
    pub(crate) fn serves(&self, subresource: &str) -> bool {
        self.own_subresources.contains(&subresource)
            || self.action_subresources.contains(&subresource)
    }

    /// Its table columns, as the table printer takes them.
    pub(crate) fn printer(&self) -> Printer {
        Printer {
            table: self.table,
            columns: self.columns,
            columns_after_age: self.columns_after_age,
            columns_wide: self.columns_wide,
            row_order: self.row_order,
        }
    }
}

fn no_columns() -> Vec<(&'static str, CellFn)> {
    Vec::new()
}

fn empty_status() -> Value {
    json!({})
}

/// A kind with no rules beyond the generic ones.
pub(crate) const DEFAULT: Strategy = Strategy {
    name_format: NameFormat::Subdomain,
    normalize: None,
    defaults: None,
    validate: None,
    subresource_validators: &[],
    own_subresources: &[],
    action_subresources: &[],
    delete_returns_object: false,
    orphan_by_default: false,
    status: StatusStrategy::Spec,
    initial_status: Some(empty_status),
    field_labels: &[],
    merge_root: MergeRoot::Object,
    table: None,
    columns: no_columns,
    columns_after_age: no_columns,
    columns_wide: no_columns,
    row_order: None,
};
