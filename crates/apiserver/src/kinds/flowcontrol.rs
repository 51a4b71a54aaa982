//! `flowcontrol.apiserver.k8s.io/v1`: API priority and fairness, as clients see it (requests
//! are classified, not queued or limited).
//!
//! - [`bootstrap`]: the configuration created at server start.
//! - [`classify`]: the classification every response reports in its headers, and the
//!   FlowSchemas' `Dangling` condition.

pub(crate) mod bootstrap;
pub(crate) mod classify;
mod flowschema;
mod prioritylevelconfiguration;

pub use classify::{Classification, PriorityAndFairness};

use super::{GENERATION, Row, STATUS, row};

const G: &str = "flowcontrol.apiserver.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "flowschemas", "FlowSchema", false).flags(STATUS | GENERATION).strategy(&flowschema::STRATEGY),
    row(G, "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", false).flags(STATUS | GENERATION).strategy(&prioritylevelconfiguration::STRATEGY),
];
