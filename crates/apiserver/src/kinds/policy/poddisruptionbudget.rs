//! PodDisruptionBudgets.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

/// The PodDisruptionBudget strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: pdb_columns,
    ..DEFAULT
};

fn pdb_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Min Available", |o| {
            int_or_string_or_na(o, "/spec/minAvailable")
        }),
        ("Max Unavailable", |o| {
            int_or_string_or_na(o, "/spec/maxUnavailable")
        }),
        ("Allowed Disruptions", |o| {
            json!(int(o, "/status/disruptionsAllowed"))
        }),
    ]
}
