//! `coordination.k8s.io/v1`: leases (leader election).

mod lease;

use super::{Row, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("coordination.k8s.io", "v1", "leases", "Lease", true).strategy(&lease::STRATEGY),
];
