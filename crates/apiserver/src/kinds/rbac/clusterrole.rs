//! ClusterRoles.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::validation;
use crate::validation::NameFormat;

/// The ClusterRole strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    name_format: NameFormat::PathSegment,
    validate: Some(validation::rbac::cluster_role),
    ..DEFAULT
};
