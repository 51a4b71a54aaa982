//! StorageClasses.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::{Value, json};

/// The StorageClass strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
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
