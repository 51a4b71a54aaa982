//! Events of `events.k8s.io` (stored as core Events, so selected by the same labels).

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::validation;

/// The Event strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    validate: Some(validation::events::event),
    field_labels: crate::kinds::core::EVENT_LABELS,
    table: Some(crate::kinds::core::event_table),
    ..DEFAULT
};
