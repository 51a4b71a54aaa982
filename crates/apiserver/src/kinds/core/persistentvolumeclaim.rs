//! PersistentVolumeClaims.

use super::volume_wide;
use crate::json;
use crate::kinds::{Strategy, defaults::*, strategy::DEFAULT};
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The PersistentVolumeClaim strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(persistent_volume_claim_defaults),
    validate: Some(validation::core::persistent_volume_claim),
    initial_status: Some(|| json!({"phase": "Pending"})),
    columns: persistent_volume_claim_columns,
    columns_wide: volume_wide,
    delete_returns_object: true,
    ..DEFAULT
};

fn persistent_volume_claim_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.volumeMode", json!("Filesystem"))
}

fn persistent_volume_claim_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Status", phase_or_terminating),
        ("Volume", |o| string(o, "/spec/volumeName")),
        ("Capacity", |o| {
            // Only a bound claim shows what it got.
            if json::str_at(o, &["spec", "volumeName"]).is_empty() {
                json!("")
            } else {
                string(o, "/status/capacity/storage")
            }
        }),
        ("Access Modes", |o| {
            if json::str_at(o, &["spec", "volumeName"]).is_empty() {
                json!("")
            } else {
                access_modes(o, "/status/accessModes")
            }
        }),
        ("StorageClass", storage_class),
        ("VolumeAttributesClass", |o| {
            or_unset(o, "/spec/volumeAttributesClassName")
        }),
    ]
}
