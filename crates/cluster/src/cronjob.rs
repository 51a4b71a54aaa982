//! The CronJob controller: Jobs on a schedule ([`crate::schedule`]), on the simulation's clock,
//! as upstream's (its second controller).
//!
//! - At each scheduled time after the last one (or the CronJob's creation), a Job
//!   `<cronjob>-<scheduled time in minutes since the epoch>` is made from `jobTemplate`,
//!   controlled by the CronJob and annotated `batch.kubernetes.io/cronjob-scheduled-timestamp`;
//!   only the most recent missed time runs (more than 100 missed: `TooManyMissedTimes`).
//! - `startingDeadlineSeconds`: a time missed by more is skipped (`MissSchedule`), and no
//!   earlier time than that deadline counts as missed.
//! - `concurrencyPolicy`: `Allow`; `Forbid` skips a time while a Job is active
//!   (`JobAlreadyActive`); `Replace` deletes the active Jobs first.
//! - `suspend: true` starts nothing (the active Jobs run on).
//! - Status: `active` (references to the unfinished Jobs it started), `lastScheduleTime`,
//!   `lastSuccessfulTime` (the latest completion of its Jobs); finished Jobs beyond
//!   `successfulJobsHistoryLimit` / `failedJobsHistoryLimit` are deleted, oldest first.
//! - Events: `SuccessfulCreate`, `SawCompletedJob`, `SuccessfulDelete`, `MissingJob`,
//!   `UnexpectedJob` (an unfinished Job it controls but did not start, such as
//!   `kubectl create job --from=cronjob/...`), `UnparseableSchedule`.
//!
//! Left out: `timeZone` other than UTC (schedules are read in UTC), `TZ=` in schedules.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::schedule::{self, Schedule};
use crate::{clock, obj};

const SCHEDULED_AT: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// Starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let watches = vec![
        Watched::itself(&api.res.cronjobs),
        Watched::owned(&api.res.jobs, "CronJob"),
    ];
    let controller = CronJobs {
        api: api.clone(),
        who: Actor::controller("cronjob-controller"),
    };
    controller::spawn(&api.storage, watches, controller)
}

struct CronJobs {
    api: Api,
    who: Actor,
}

/// `Complete` or `Failed` when the Job finished.
fn finished(job: &Value) -> Option<&'static str> {
    ["Complete", "Failed"]
        .into_iter()
        .find(|t| obj::condition(job, t).is_some_and(|c| obj::str_at(c, "/status") == "True"))
}

fn job_ref(job: &Value) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "namespace": obj::namespace(job), "name": obj::name(job), "uid": obj::uid(job),
        "resourceVersion": obj::str_at(job, "/metadata/resourceVersion"),
    })
}

impl Reconcile for CronJobs {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let cj = self.api.get(&self.api.res.cronjobs, Some(&key.0), &key.1)?;
        let jobs: Vec<Value> = self
            .api
            .owned_shared(&self.api.res.jobs, obj::uid(&cj))
            .into_iter()
            .filter(|j| obj::controlled_by(j, &cj))
            .map(|j| (*j).clone())
            .collect();
        let mut active: Vec<Value> = obj::array(&cj, "/status/active").to_vec();
        let mut last_success = clock::parse(obj::str_at(&cj, "/status/lastSuccessfulTime"));
        for job in &jobs {
            let listed = active
                .iter()
                .any(|r| obj::str_at(r, "/uid") == obj::uid(job));
            match finished(job) {
                None if !listed && !obj::is_deleting(job) => self.event(
                    &cj,
                    "Warning",
                    "UnexpectedJob",
                    &format!(
                        "Saw a job that the controller did not create or forgot: {}",
                        obj::name(job)
                    ),
                ),
                None => {}
                Some(condition) => {
                    if listed {
                        active.retain(|r| obj::str_at(r, "/uid") != obj::uid(job));
                        self.event(
                            &cj,
                            "Normal",
                            "SawCompletedJob",
                            &format!(
                                "Saw completed job: {}, condition: {condition}",
                                obj::name(job)
                            ),
                        );
                    }
                    if condition == "Complete"
                        && let Some(done) = clock::parse(obj::str_at(job, "/status/completionTime"))
                        && last_success.is_none_or(|t| done > t)
                    {
                        last_success = Some(done);
                    }
                }
            }
        }
        active.retain(|r| {
            let found = jobs.iter().any(|j| obj::uid(j) == obj::str_at(r, "/uid"));
            if !found {
                self.event(
                    &cj,
                    "Normal",
                    "MissingJob",
                    &format!("Active job went missing: {}", obj::str_at(r, "/name")),
                );
            }
            found
        });
        let mut last_schedule = obj::str_at(&cj, "/status/lastScheduleTime").to_string();
        let retry = if obj::is_deleting(&cj) {
            None
        } else {
            self.run(&cj, &mut active, &mut last_schedule)
        };
        self.clean_up(&cj, &jobs);
        let patch = json!({"status": {
            "active": if active.is_empty() { Value::Null } else { json!(active) },
            "lastScheduleTime": if last_schedule.is_empty() { Value::Null } else { json!(last_schedule) },
            "lastSuccessfulTime": last_success.map(clock::time),
        }});
        if obj::changes(&cj, &patch)
            && let Err(e) = self.api.merge_patch(
                &self.api.res.cronjobs,
                Some(&key.0),
                &key.1,
                Some("status"),
                &patch,
                &self.who,
            )
        {
            tracing::debug!("updating cronjob {} status: {e}", key.1);
            return Some(Duration::from_millis(100));
        }
        retry
    }
}

impl CronJobs {
    fn event(&self, cj: &Value, type_: &str, reason: &str, note: &str) {
        self.api.event(cj, type_, reason, reason, note, &self.who);
    }

    /// Starts the Job of the most recent unmet scheduled time; answers the wait until the
    /// next one.
    fn run(
        &self,
        cj: &Value,
        active: &mut Vec<Value>,
        last_schedule: &mut String,
    ) -> Option<Duration> {
        if cj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
            return None;
        }
        let spec = obj::str_at(cj, "/spec/schedule");
        let Some(sched) = schedule::parse(spec) else {
            self.event(
                cj,
                "Warning",
                "UnparseableSchedule",
                &format!("unparseable schedule: {spec:?}"),
            );
            return None;
        };
        let now = self.api.clock.now();
        let wait = |from: DateTime<Utc>| next_wait(&sched, from, now);
        let created = clock::parse(obj::str_at(cj, "/metadata/creationTimestamp"))?;
        let mut earliest = clock::parse(last_schedule).unwrap_or(created);
        let deadline = obj::i64_at(cj, "/spec/startingDeadlineSeconds");
        if let Some(d) = deadline {
            earliest = earliest.max(now - chrono::Duration::seconds(d));
        }
        let (most_recent, missed) = sched.most_recent(earliest, now);
        let Some(scheduled) = most_recent else {
            return wait(now);
        };
        if missed > 100 {
            self.event(
                cj,
                "Warning",
                "TooManyMissedTimes",
                &format!(
                    "too many missed start times: {missed}. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
                ),
            );
        }
        if let Some(d) = deadline
            && scheduled + chrono::Duration::seconds(d) < now
        {
            self.event(
                cj,
                "Warning",
                "MissSchedule",
                &format!(
                    "Missed scheduled time to start a job: {}",
                    scheduled.format("%a, %d %b %Y %H:%M:%S %z")
                ),
            );
            return wait(now);
        }
        let name = format!("{}-{}", obj::name(cj), scheduled.timestamp().div_euclid(60));
        if active.iter().any(|r| obj::str_at(r, "/name") == name)
            || clock::parse(last_schedule) == Some(scheduled)
        {
            return wait(now);
        }
        let ns = Some(obj::namespace(cj));
        match obj::str_at(cj, "/spec/concurrencyPolicy") {
            "Forbid" if !active.is_empty() => {
                self.event(
                    cj,
                    "Normal",
                    "JobAlreadyActive",
                    "Not starting job because prior execution is running and concurrency policy is Forbid",
                );
                return wait(now);
            }
            "Replace" => {
                for r in std::mem::take(active) {
                    let job_name = obj::str_at(&r, "/name");
                    if self.delete_job(cj, job_name, obj::str_at(&r, "/uid")) {
                        continue;
                    }
                    active.push(r);
                    return Some(Duration::from_secs(1));
                }
            }
            _ => {}
        }
        let template = cj
            .pointer("/spec/jobTemplate")
            .cloned()
            .unwrap_or(json!({}));
        let mut metadata = template
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if let Some(m) = metadata.as_object_mut() {
            m.remove("generateName");
            m.remove("namespace");
            m.insert("name".into(), json!(name));
            m.insert("ownerReferences".into(), json!([obj::controller_ref(cj)]));
            let annotations = m.entry("annotations").or_insert_with(|| json!({}));
            annotations[SCHEDULED_AT] = json!(clock::time(scheduled));
        }
        let body = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": metadata,
            "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
        });
        let job = match self.api.create(&self.api.res.jobs, ns, body, &self.who) {
            Ok(job) => {
                self.event(
                    cj,
                    "Normal",
                    "SuccessfulCreate",
                    &format!("Created job {name}"),
                );
                job
            }
            Err(e) if e.code == 409 => {
                let job = self.api.get(&self.api.res.jobs, ns, &name)?;
                if !obj::controlled_by(&job, cj) {
                    return wait(now);
                }
                job
            }
            Err(e) => {
                self.event(
                    cj,
                    "Warning",
                    "FailedCreate",
                    &format!("Error creating job: {}", e.message),
                );
                return Some(Duration::from_secs(1));
            }
        };
        if !active
            .iter()
            .any(|r| obj::str_at(r, "/uid") == obj::uid(&job))
        {
            active.push(job_ref(&job));
        }
        *last_schedule = clock::time(scheduled);
        wait(now)
    }

    /// Deletes a Job (and, in the background, its pods).
    fn delete_job(&self, cj: &Value, name: &str, uid: &str) -> bool {
        let opts = crt_apiserver::storage::DeleteOptions {
            propagation_policy: Some("Background".into()),
            precondition_uid: (!uid.is_empty()).then(|| uid.to_string()),
            ..Default::default()
        };
        match self
            .api
            .storage
            .delete(&self.api.res.jobs, Some(obj::namespace(cj)), name, &opts)
        {
            Ok(_) => {
                self.event(
                    cj,
                    "Normal",
                    "SuccessfulDelete",
                    &format!("Deleted job {name}"),
                );
                true
            }
            Err(e) if e.code == 404 => true,
            Err(e) => {
                self.event(
                    cj,
                    "Warning",
                    "FailedDelete",
                    &format!("Deleted job: {}", e.message),
                );
                false
            }
        }
    }

    /// Deletes the oldest finished Jobs beyond the history limits.
    fn clean_up(&self, cj: &Value, jobs: &[Value]) {
        for (condition, limit) in [
            ("Complete", "/spec/successfulJobsHistoryLimit"),
            ("Failed", "/spec/failedJobsHistoryLimit"),
        ] {
            let Some(limit) = obj::i64_at(cj, limit) else {
                continue;
            };
            let mut done: Vec<&Value> = jobs
                .iter()
                .filter(|j| finished(j) == Some(condition) && !obj::is_deleting(j))
                .collect();
            let extra = done.len().saturating_sub(limit.max(0) as usize);
            done.sort_by_key(|j| {
                (
                    obj::str_at(j, "/status/startTime").to_string(),
                    obj::name(j).to_string(),
                )
            });
            for job in done.into_iter().take(extra) {
                self.delete_job(cj, obj::name(job), obj::uid(job));
            }
        }
    }
}

/// The wait until the first scheduled time after `from` (and a little more, as upstream's
/// 100 ms).
fn next_wait(sched: &Schedule, from: DateTime<Utc>, now: DateTime<Utc>) -> Option<Duration> {
    let next = sched.next(from)?;
    let wait = (next - now).to_std().unwrap_or_default();
    Some(wait + Duration::from_millis(100))
}
