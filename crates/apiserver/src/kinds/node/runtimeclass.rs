//! RuntimeClasses.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;

/// The RuntimeClass strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: runtime_class_columns,
    ..DEFAULT
};

fn runtime_class_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Handler", |o| string(o, "/handler"))]
}
