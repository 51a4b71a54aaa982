//! `batch/v1`: jobs and cron jobs.

use super::{
    CAT_ALL, GENERATION, Row, STATUS, Strategy, defaults::*, label, row, strategy::DEFAULT,
};
use crate::patch::MergeRoot;
use crate::table::columns::*;
use crate::validation;
use serde_json::{Value, json};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("batch", "v1", "cronjobs", "CronJob", true).short(&["cj"]).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&CRON_JOBS),
    row("batch", "v1", "jobs", "Job", true).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&JOBS),
];

// ---- cronjobs

/// CronJobs.
pub(super) const CRON_JOBS: Strategy = Strategy {
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

// ---- jobs

/// Jobs.
pub(super) const JOBS: Strategy = Strategy {
    defaults: Some(job_defaults),
    validate: Some(validation::batch::job),
    field_labels: &[label("status.successful").absent("0")],
    merge_root: MergeRoot::Workload,
    columns: job_columns,
    columns_wide: super::apps::workload_wide,
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
