//! CSINodes.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

/// The CSINode strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: csi_node_columns,
    ..DEFAULT
};

fn csi_node_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Drivers", |o| json!(count(o, "/spec/drivers")))]
}
