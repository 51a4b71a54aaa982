//! `policy/v1`: pod disruption budgets.

mod poddisruptionbudget;

use super::{GENERATION, Row, STATUS, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true).short(&["pdb"]).flags(STATUS | GENERATION).strategy(&poddisruptionbudget::STRATEGY),
];
