//! `autoscaling`: the HorizontalPodAutoscaler, served at `v2` (preferred) and `v1`. Both
//! versions share one stored form; they differ only in `apiVersion` here (the real server
//! converts `v1`'s `targetCPUUtilizationPercentage` to `v2`'s `metrics`).

use super::{CAT_ALL, GENERATION, Row, STATUS, Strategy, row, strategy::DEFAULT};
use crate::table::columns::*;
use serde_json::{Value, json};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true).short(&["hpa"]).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&HORIZONTAL_POD_AUTOSCALERS),
    row("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true).short(&["hpa"]).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&HORIZONTAL_POD_AUTOSCALERS),
];

// ---- horizontalpodautoscalers

/// HorizontalPodAutoscalers (both versions).
pub(super) const HORIZONTAL_POD_AUTOSCALERS: Strategy = Strategy {
    columns: hpa_columns,
    ..DEFAULT
};

fn hpa_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Reference", |o| {
            json!(format!(
                "{}/{}",
                str_at(o, "/spec/scaleTargetRef/kind"),
                str_at(o, "/spec/scaleTargetRef/name")
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
