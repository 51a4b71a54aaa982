//! `flowcontrol.apiserver.k8s.io/v1`: API priority and fairness (stored, not enforced).

use super::{GENERATION, Row, STATUS, StatusStrategy, Strategy, row, strategy::DEFAULT};

const G: &str = "flowcontrol.apiserver.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "flowschemas", "FlowSchema", false).flags(STATUS | GENERATION).strategy(&FLOW_SCHEMAS),
    row(G, "v1", "prioritylevelconfigurations", "PriorityLevelConfiguration", false).flags(STATUS | GENERATION).strategy(&PRIORITY_LEVEL_CONFIGURATIONS),
];

// ---- flowschemas

/// FlowSchemas: a status write keeps all metadata.
pub(super) const FLOW_SCHEMAS: Strategy = Strategy {
    status: StatusStrategy::SpecAndMetadata,
    ..DEFAULT
};

// ---- prioritylevelconfigurations

/// PriorityLevelConfigurations: a status write keeps all metadata.
pub(super) const PRIORITY_LEVEL_CONFIGURATIONS: Strategy = Strategy {
    status: StatusStrategy::SpecAndMetadata,
    ..DEFAULT
};
