//! `policy/v1`: pod disruption budgets.

use super::{GENERATION, Row, STATUS, Strategy, row, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true).short(&["pdb"]).flags(STATUS | GENERATION).strategy(&POD_DISRUPTION_BUDGETS),
];

// ---- poddisruptionbudgets

/// PodDisruptionBudgets.
pub(super) const POD_DISRUPTION_BUDGETS: Strategy = Strategy {
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
