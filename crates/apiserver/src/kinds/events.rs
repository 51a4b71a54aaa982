//! `events.k8s.io/v1`: events, stored with the core ones (see `storage::convert`).

use super::{Row, Strategy, row, strategy::DEFAULT};
use crate::validation;

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("events.k8s.io", "v1", "events", "Event", true).short(&["ev"]).strategy(&EVENTS),
];

// ---- events

/// Events of `events.k8s.io` (stored as core Events, so selected by the same labels).
pub(super) const EVENTS: Strategy = Strategy {
    validate: Some(validation::events::event),
    field_labels: super::core::EVENT_LABELS,
    ..DEFAULT
};
