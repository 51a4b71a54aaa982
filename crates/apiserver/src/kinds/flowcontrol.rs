//! `flowcontrol.apiserver.k8s.io/v1`: API priority and fairness (stored, not enforced).

mod flowschema;
mod prioritylevelconfiguration;

use super::{GENERATION, Row, STATUS, row};

const G: &str = "flowcontrol.apiserver.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "flowschemas", "FlowSchema", false).flags(STATUS | GENERATION).strategy(&flowschema::STRATEGY),
    row(G, "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", false).flags(STATUS | GENERATION).strategy(&prioritylevelconfiguration::STRATEGY),
];
