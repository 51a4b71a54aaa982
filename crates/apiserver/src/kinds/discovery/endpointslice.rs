//! EndpointSlices.

use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::Value;

/// The EndpointSlice strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: endpoint_slice_columns,
    ..DEFAULT
};

fn endpoint_slice_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("AddressType", |o| string(o, "/addressType")),
        ("Ports", |o| {
            let ports: Vec<String> = get(o, "/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| match (&p["port"], p["name"].as_str()) {
                    (Value::Number(n), _) => n.to_string(),
                    (_, Some(name)) => name.to_string(),
                    _ => "*".to_string(),
                })
                .collect();
            list_with_more(&ports)
        }),
        ("Endpoints", |o| {
            let addresses: Vec<String> = get(o, "/endpoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|e| e["addresses"].as_array().cloned().unwrap_or_default())
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect();
            list_with_more(&addresses)
        }),
    ]
}
