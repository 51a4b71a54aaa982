//! CronJobs.

use crate::kinds::{Strategy, defaults::*, strategy::DEFAULT};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

/// The CronJob strategy.
pub(crate) const STRATEGY: Strategy = Strategy {
    defaults: Some(cron_job_defaults),
    validate: Some(validation::batch::cron_job),
    merge_root: MergeRoot::CronJob,
    columns: cron_job_columns,
    ..DEFAULT
};

fn cron_job_defaults(obj: &mut Value, _next_cluster_ip: &mut u32) {
    default_at(obj, ".spec.concurrencyPolicy", json!("Allow"));
    default_at(obj, ".spec.suspend", json!(false));
    default_at(obj, ".spec.successfulJobsHistoryLimit", json!(3));
    default_at(obj, ".spec.failedJobsHistoryLimit", json!(1));
    // The pod template inside the job template is defaulted like any pod template
    // (the job-level fields are not: the real server has no defaulter for a
    // JobTemplateSpec).
    if let Some(spec) = obj.pointer_mut("/spec/jobTemplate/spec/template/spec") {
        default_pod_spec(spec);
    }
}

fn cron_job_columns() -> Vec<(&'static str, CellFn)> {
    vec![
        ("Schedule", |o| string(o, "/spec/schedule")),
        ("Suspend", |o| {
            json!(
                get(o, "/spec/suspend")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
                    .to_string()
                    .replace("false", "False")
                    .replace("true", "True")
            )
        }),
        ("Active", |o| json!(count(o, "/status/active"))),
    ]
}
