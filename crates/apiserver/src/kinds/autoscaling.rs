//! `autoscaling`: the HorizontalPodAutoscaler, served at `v2` (preferred) and `v1`. Both
//! versions share one stored form; they differ only in `apiVersion` here (the real server
//! converts `v1`'s `targetCPUUtilizationPercentage` to `v2`'s `metrics`).

mod horizontalpodautoscaler;

use super::{CAT_ALL, GENERATION, Row, STATUS, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true).short(&["hpa"]).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&horizontalpodautoscaler::STRATEGY),
    row("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true).short(&["hpa"]).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&horizontalpodautoscaler::STRATEGY),
];
