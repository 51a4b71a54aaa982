//! Namespaces: DNS-label names, the `finalize` subresource, phase Active.

use crate::kinds::{Strategy, label, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;
use crate::validation::NameFormat;
use serde_json::json;

/// The Namespace strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    name_format: NameFormat::Label,
    validate: Some(validation::core::namespace),
    own_subresources: &["finalize"],
    initial_status: Some(|| json!({"phase": "Active"})),
    field_labels: &[label("status.phase")],
    columns: namespace_columns,
    delete_returns_object: true,
    ..DEFAULT
};

fn namespace_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Status", |o| string(o, "/status/phase"))]
}
