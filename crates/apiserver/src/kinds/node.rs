//! `node.k8s.io/v1`: runtime classes.

mod runtimeclass;

use super::{Row, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false).strategy(&runtimeclass::STRATEGY),
];
