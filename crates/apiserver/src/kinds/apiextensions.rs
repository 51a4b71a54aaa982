//! `apiextensions.k8s.io/v1`: CustomResourceDefinitions (their rules live in `storage::crd`).

use super::{
    CAT_API_EXTENSIONS, GENERATION, Row, STATUS, StatusStrategy, Strategy, row, strategy::DEFAULT,
    strategy::STATUS_META,
};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false)
        .short(&["crd", "crds"]).categories(CAT_API_EXTENSIONS).flags(STATUS | GENERATION).strategy(&CUSTOM_RESOURCE_DEFINITIONS),
];

// ---- customresourcedefinitions

/// CustomResourceDefinitions (their status is the server's own).
pub(super) const CUSTOM_RESOURCE_DEFINITIONS: Strategy = Strategy {
    status: StatusStrategy::SpecAnd(STATUS_META),
    initial_status: None,
    ..DEFAULT
};
