//! HorizontalPodAutoscalers (both versions).

use crate::json;
use crate::kinds::{Strategy, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::{Value, json};

/// The HorizontalPodAutoscaler strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    columns: hpa_columns,
    ..DEFAULT
};

fn hpa_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Reference", |o| {
            json!(format!(
                "{}/{}",
                json::str_at(o, &["spec", "scaleTargetRef", "kind"]),
                json::str_at(o, &["spec", "scaleTargetRef", "name"])
            ))
        }),
        ("Targets", hpa_targets),
        ("MinPods", |o| {
            match get(o, "/spec/minReplicas").and_then(Value::as_i64) {
                Some(n) => json!(n.to_string()),
                None => json!("<unset>"),
            }
        }),
        ("MaxPods", |o| json!(int(o, "/spec/maxReplicas"))),
        ("Replicas", |o| json!(int(o, "/status/currentReplicas"))),
    ]
}
