//! APIServices.

use crate::kinds::{StatusStrategy, Strategy, strategy::DEFAULT, strategy::STATUS_META};
use crate::table::columns::*;
use serde_json::{Value, json};

/// The APIService strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    status: StatusStrategy::SpecAnd(STATUS_META),
    columns: api_service_columns,
    ..DEFAULT
};

fn api_service_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Service", |o| match get(o, "/spec/service") {
            Some(s) if s.is_object() => json!(format!(
                "{}/{}",
                s["namespace"].as_str().unwrap_or(""),
                s["name"].as_str().unwrap_or("")
            )),
            _ => json!("Local"),
        }),
        ("Available", |o| {
            let available = get(o, "/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"));
            let Some(c) = available else {
                return json!("Unknown");
            };
            let status = c["status"].as_str().unwrap_or("");
            match c["reason"].as_str().filter(|r| !r.is_empty()) {
                Some(reason) if status != "True" => json!(format!("{status} ({reason})")),
                _ => json!(status),
            }
        }),
    ]
}
