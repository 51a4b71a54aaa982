//! `storage.k8s.io/v1`: storage classes, CSI objects and volume attachments.

use super::{Row, STATUS, row};

const G: &str = "storage.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "csidrivers", "CSIDriver", false),
    row(G, "v1", "csinodes", "CSINode", false),
    row(G, "v1", "csistoragecapacities", "CSIStorageCapacity", true),
    row(G, "v1", "storageclasses", "StorageClass", false).short(&["sc"]),
    row(G, "v1", "volumeattachments", "VolumeAttachment", false).flags(STATUS),
];
