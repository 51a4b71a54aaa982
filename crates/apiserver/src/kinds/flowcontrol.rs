//! `flowcontrol.apiserver.k8s.io/v1`: API priority and fairness, as clients see it (requests
//! are classified, not queued or limited).
//!
//! [`bootstrap`] holds the configuration created at server start; the HTTP layer's
//! `flowcontrol` module creates it and classifies requests by it.

pub(crate) mod bootstrap;
mod flowschema;
mod prioritylevelconfiguration;

use super::{GENERATION, Row, STATUS, row};

const G: &str = "flowcontrol.apiserver.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "flowschemas", "FlowSchema", false).flags(STATUS | GENERATION).strategy(&flowschema::STRATEGY),
    row(G, "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", false).flags(STATUS | GENERATION).strategy(&prioritylevelconfiguration::STRATEGY),
];
