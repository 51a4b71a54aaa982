//! `scheduling.k8s.io/v1`: priority classes.

mod priorityclass;

use super::{Row, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", false).short(&["pc"]).strategy(&priorityclass::STRATEGY),
];
