//! VolumeAttachments.

use crate::kinds::{StatusStrategy, Strategy, strategy::DEFAULT, strategy::STATUS_META};
use crate::table::columns::*;
use serde_json::{Value, json};

/// The VolumeAttachment strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    status: StatusStrategy::SpecAnd(STATUS_META),
    columns: volume_attachment_columns,
    ..DEFAULT
};

fn volume_attachment_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Attacher", |o| string(o, "/spec/attacher")),
        ("PV", |o| string(o, "/spec/source/persistentVolumeName")),
        ("Node", |o| string(o, "/spec/nodeName")),
        ("Attached", |o| {
            json!(
                get(o, "/status/attached")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            )
        }),
    ]
}
