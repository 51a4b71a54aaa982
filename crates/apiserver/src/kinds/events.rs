//! `events.k8s.io/v1`: events, stored with the core ones (see `storage::convert`).

mod event;

use super::{Row, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("events.k8s.io", "v1", "events", "Event", true).short(&["ev"]).strategy(&event::STRATEGY),
];
