//! PersistentVolumes.

use super::volume_wide;
use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::json;

/// The PersistentVolume strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: persistent_volume_columns,
    columns_wide: volume_wide,
    ..DEFAULT
};

fn persistent_volume_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Capacity", |o| string(o, "/spec/capacity/storage")),
        ("Access Modes", |o| access_modes(o, "/spec/accessModes")),
        ("Reclaim Policy", |o| {
            string(o, "/spec/persistentVolumeReclaimPolicy")
        }),
        ("Status", phase_or_terminating),
        ("Claim", |o| match get(o, "/spec/claimRef") {
            Some(r) if r.is_object() => json!(format!(
                "{}/{}",
                r["namespace"].as_str().unwrap_or(""),
                r["name"].as_str().unwrap_or("")
            )),
            _ => json!(""),
        }),
        ("StorageClass", storage_class),
        ("VolumeAttributesClass", |o| {
            or_unset(o, "/spec/volumeAttributesClassName")
        }),
        ("Reason", |o| string(o, "/status/reason")),
    ]
}
