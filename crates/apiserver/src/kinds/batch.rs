//! `batch/v1`: jobs and cron jobs.

mod cronjob;
mod job;

use super::{CAT_ALL, GENERATION, Row, STATUS, row};

#[rustfmt::skip]
pub(crate) const ROWS: &[Row] = &[
    row("batch", "v1", "cronjobs", "CronJob", true).short(&["cj"]).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&cronjob::STRATEGY),
    row("batch", "v1", "jobs", "Job", true).categories(CAT_ALL).flags(STATUS | GENERATION).strategy(&job::STRATEGY),
];
