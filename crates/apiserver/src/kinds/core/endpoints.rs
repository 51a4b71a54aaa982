//! Endpoints.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;

/// The Endpoints strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: endpoints_columns,
    ..DEFAULT
};

fn endpoints_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Endpoints", endpoints)]
}
