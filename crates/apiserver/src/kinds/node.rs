//! `node.k8s.io/v1`: runtime classes.

use super::{Row, Strategy, row, strategy::DEFAULT};
use crate::table::columns::*;

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false).strategy(&RUNTIME_CLASSES),
];

// ---- runtimeclasses

/// RuntimeClasses.
pub(super) const RUNTIME_CLASSES: Strategy = Strategy {
    columns: runtime_class_columns,
    ..DEFAULT
};

fn runtime_class_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Handler", |o| string(o, "/handler"))]
}
