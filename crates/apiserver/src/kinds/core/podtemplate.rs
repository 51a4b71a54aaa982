//! PodTemplates.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::validation;

/// The PodTemplate strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    validate: Some(validation::pod::pod_template),
    merge_root: MergeRoot::PodTemplateKind,
    ..DEFAULT
};
