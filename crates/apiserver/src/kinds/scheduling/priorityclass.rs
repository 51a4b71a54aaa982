//! PriorityClasses.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::{Value, json};

/// The PriorityClass strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
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
