//! `storage.k8s.io/v1`: storage classes, CSI objects and volume attachments.

use super::{Row, STATUS, StatusStrategy, Strategy, row, strategy::DEFAULT, strategy::STATUS_META};
use crate::table::columns::*;
use serde_json::{Value, json};

const G: &str = "storage.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "csidrivers", "CSIDriver", false),
    row(G, "v1", "csinodes", "CSINode", false).strategy(&CSI_NODES),
    row(G, "v1", "csistoragecapacities", "CSIStorageCapacity", true),
    row(G, "v1", "storageclasses", "StorageClass", false).short(&["sc"]).strategy(&STORAGE_CLASSES),
    row(G, "v1", "volumeattachments", "VolumeAttachment", false).flags(STATUS).strategy(&VOLUME_ATTACHMENTS),
];

// ---- csinodes

/// CSINodes.
pub(super) const CSI_NODES: Strategy = Strategy {
    columns: csi_node_columns,
    ..DEFAULT
};

fn csi_node_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Drivers", |o| json!(count(o, "/spec/drivers")))]
}

// ---- storageclasses

/// StorageClasses.
pub(super) const STORAGE_CLASSES: Strategy = Strategy {
    columns: storage_class_columns,
    ..DEFAULT
};

fn storage_class_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Provisioner", |o| string(o, "/provisioner")),
        ("ReclaimPolicy", |o| {
            json!(
                get(o, "/reclaimPolicy")
                    .and_then(Value::as_str)
                    .unwrap_or("Delete")
            )
        }),
        ("VolumeBindingMode", |o| {
            json!(
                get(o, "/volumeBindingMode")
                    .and_then(Value::as_str)
                    .unwrap_or("Immediate")
            )
        }),
        ("AllowVolumeExpansion", |o| {
            json!(
                get(o, "/allowVolumeExpansion")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            )
        }),
    ]
}

// ---- volumeattachments

/// VolumeAttachments.
pub(super) const VOLUME_ATTACHMENTS: Strategy = Strategy {
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
