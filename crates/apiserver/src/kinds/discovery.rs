//! `discovery.k8s.io/v1`: endpoint slices.

mod endpointslice;

use super::{Row, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true).strategy(&endpointslice::STRATEGY),
];
