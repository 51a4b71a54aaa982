//! Events of the core group.

use super::EVENT_LABELS;
use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::validation;

/// The Event strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    validate: Some(validation::core::event),
    field_labels: EVENT_LABELS,
    table: Some(super::event_table),
    ..DEFAULT
};
