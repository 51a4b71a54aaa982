//! ControllerRevisions.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

/// The ControllerRevision strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: controller_revision_columns,
    ..DEFAULT
};

fn controller_revision_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Controller", controller_of),
        ("Revision", |o| json!(int(o, "/revision"))),
    ]
}
