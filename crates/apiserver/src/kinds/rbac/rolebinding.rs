//! RoleBindings.

use super::binding_columns;
use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::validation;
use crate::validation::NameFormat;

/// The RoleBinding strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    name_format: NameFormat::PathSegment,
    validate: Some(validation::rbac::role_binding),
    columns: binding_columns,
    ..DEFAULT
};
