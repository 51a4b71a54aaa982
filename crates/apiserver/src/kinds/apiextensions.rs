//! `apiextensions.k8s.io/v1`: CustomResourceDefinitions (their rules live in `storage::crd`).

mod customresourcedefinition;

use super::{CAT_API_EXTENSIONS, GENERATION, Row, STATUS, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false)
        .short(&["crd", "crds"]).categories(CAT_API_EXTENSIONS).flags(STATUS | GENERATION).strategy(&customresourcedefinition::STRATEGY),
];
