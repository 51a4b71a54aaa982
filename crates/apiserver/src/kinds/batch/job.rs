//! Jobs.

use crate::kinds::{Strategy, defaults::*, label, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The Job strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(job_defaults),
    validate: Some(validation::batch::job),
    field_labels: &[label("status.successful").absent("0")],
    merge_root: MergeRoot::Workload,
    columns: job_columns,
    columns_wide: crate::kinds::apps::workload_wide,
    ..DEFAULT
};

fn job_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.parallelism", json!(1));
    default_at(obj, ".spec.completions", json!(1));
    default_at(obj, ".spec.backoffLimit", json!(6));
    default_at(obj, ".spec.completionMode", json!("NonIndexed"));
    default_at(obj, ".spec.suspend", json!(false));
    default_template(obj);
}

fn job_columns() -> Vec<(&'static str, CellFn)> {
    vec![("Completions", |o| {
        let want = get(o, "/spec/completions")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        ratio(int(o, "/status/succeeded"), want)
    })]
}
