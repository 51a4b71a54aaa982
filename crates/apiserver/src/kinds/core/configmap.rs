//! ConfigMaps.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;
use serde_json::json;

/// The ConfigMap strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    validate: Some(validation::core::config_map),
    columns: config_map_columns,
    ..DEFAULT
};

fn config_map_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Data", |o| {
        json!(count(o, "/data") + count(o, "/binaryData"))
    })]
}
