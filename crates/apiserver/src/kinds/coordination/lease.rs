//! Leases.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;

/// The Lease strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    validate: Some(validation::coordination::lease),
    columns: lease_columns,
    ..DEFAULT
};

fn lease_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Holder", |o| string(o, "/spec/holderIdentity"))]
}
