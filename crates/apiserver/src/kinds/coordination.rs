//! `coordination.k8s.io/v1`: leases (leader election).

use super::{Row, Strategy, row, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("coordination.k8s.io", "v1", "leases", "Lease", true).strategy(&LEASES),
];

// ---- leases

/// Leases.
pub(super) const LEASES: Strategy = Strategy {
    validate: Some(validation::coordination::lease),
    columns: lease_columns,
    ..DEFAULT
};

fn lease_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Holder", |o| string(o, "/spec/holderIdentity"))]
}
