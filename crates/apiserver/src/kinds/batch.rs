//! `batch/v1`: jobs and cron jobs.

use super::{CAT_ALL, GENERATION, Row, STATUS, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("batch", "v1", "cronjobs", "CronJob", true).short(&["cj"]).categories(CAT_ALL).flags(STATUS | GENERATION),
    row("batch", "v1", "jobs", "Job", true).categories(CAT_ALL).flags(STATUS | GENERATION),
];
