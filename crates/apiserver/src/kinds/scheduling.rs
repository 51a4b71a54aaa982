//! `scheduling.k8s.io/v1`: priority classes.

use super::{Row, Strategy, row, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::{Value, json};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false).short(&["pc"]).strategy(&PRIORITY_CLASSES),
];

// ---- priorityclasses

/// PriorityClasses.
pub(super) const PRIORITY_CLASSES: Strategy = Strategy {
    columns: priority_class_columns,
    ..DEFAULT
};

fn priority_class_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Value", |o| json!(int(o, "/value"))),
        ("Global-Default", |o| {
            json!(
                get(o, "/globalDefault")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            )
        }),
    ]
}
