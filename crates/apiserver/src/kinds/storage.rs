//! `storage.k8s.io/v1`: storage classes, CSI objects and volume attachments.

mod csinode;
mod storageclass;
mod volumeattachment;

use super::{Row, STATUS, row};

const G: &str = "storage.k8s.io";

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row(G, "v1", "csidrivers", "CSIDriver", false),
    row(G, "v1", "csinodes", "CSINode", false).strategy(&csinode::STRATEGY),
    row(G, "v1", "csistoragecapacities", "CSIStorageCapacity", true),
    row(G, "v1", "storageclasses", "StorageClass", false).short(&["sc"]).strategy(&storageclass::STRATEGY),
    row(G, "v1", "volumeattachments", "VolumeAttachment", false).flags(STATUS).strategy(&volumeattachment::STRATEGY),
];
