//! The Job controller: runs a Job's pods until enough succeed or too many fail, as upstream's
//! (non-indexed completion mode).
//!
//! - Pods (`<job>-<random>`, controlled by the Job, labelled `batch.kubernetes.io/job-name`,
//!   `batch.kubernetes.io/controller-uid`, `job-name` and `controller-uid`) run at most
//!   `parallelism` at a time, and no more than the completions still missing (with
//!   `completions` unset, until one succeeds).
//! - `succeeded` pods reaching `completions`: the conditions `SuccessCriteriaMet` and
//!   `Complete` (`CompletionsReached`, "Reached expected number of succeeded pods") and
//!   `completionTime`.
//! - More `failed` pods than `backoffLimit`: the active pods are deleted, and the conditions
//!   `FailureTarget` and `Failed` (`BackoffLimitExceeded`, "Job has reached the specified
//!   backoff limit").
//! - `suspend: true` deletes the active pods and sets `Suspended` (`JobSuspended`).
//! - `ttlSecondsAfterFinished`: the finished Job is deleted (with its pods) that long after.
//!
//! Left out: indexed completions, pod failure and success policies, back-off delays between
//! retries, `activeDeadlineSeconds`, the `job-tracking` finalizer.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::obj;

const UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const NAME_LABEL: &str = "batch.kubernetes.io/job-name";

/// Starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let watches = vec![
        Watched::itself(&api.res.jobs),
        Watched::owned(&api.res.pods, "Job"),
    ];
    let controller = Jobs {
        api: api.clone(),
        who: Actor::controller("job-controller"),
    };
    controller::spawn(&api.storage, watches, controller)
}

struct Jobs {
    api: Api,
    who: Actor,
}

fn finished(job: &Value) -> Option<&Value> {
    ["Complete", "Failed"]
        .into_iter()
        .filter_map(|t| obj::condition(job, t))
        .find(|c| obj::str_at(c, "/status") == "True")
}

impl Reconcile for Jobs {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let job = self.api.get(&self.api.res.jobs, Some(&key.0), &key.1)?;
        if obj::is_deleting(&job) {
            return None;
        }
        if let Some(done) = finished(&job) {
            return self.expire(&job, done);
        }
        let ns = Some(key.0.as_str());
        let pods: Vec<Value> = self
            .api
            .list(
                &self.api.res.pods,
                ns,
                Some(format!("{UID_LABEL}={}", obj::uid(&job))),
                None,
            )
            .into_iter()
            .filter(|p| obj::controlled_by(p, &job))
            .collect();
        let count = |phase: &str| {
            pods.iter()
                .filter(|p| obj::str_at(p, "/status/phase") == phase)
                .count() as i64
        };
        let (succeeded, failed) = (count("Succeeded"), count("Failed"));
        let active: Vec<&Value> = pods.iter().filter(|p| obj::pod_active(p)).collect();
        let parallelism = obj::i64_at(&job, "/spec/parallelism").unwrap_or(1);
        let completions = obj::i64_at(&job, "/spec/completions");
        let backoff_limit = obj::i64_at(&job, "/spec/backoffLimit").unwrap_or(6);
        let suspended = job
            .pointer("/spec/suspend")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let now = self.api.clock.stamp();
        let mut conditions: Vec<Value> = obj::array(&job, "/status/conditions").to_vec();
        let set = |conditions: &mut Vec<Value>,
                   type_: &str,
                   status: &str,
                   reason: &str,
                   message: &str| {
            if let Some(c) = conditions
                .iter_mut()
                .find(|c| obj::str_at(c, "/type") == type_)
            {
                if obj::str_at(c, "/status") != status {
                    *c = json!({"type": type_, "status": status, "reason": reason,
                        "message": message, "lastProbeTime": now, "lastTransitionTime": now});
                }
                return;
            }
            conditions.push(json!({"type": type_, "status": status, "reason": reason,
                "message": message, "lastProbeTime": now, "lastTransitionTime": now}));
        };
        let complete = match completions {
            Some(c) => succeeded >= c,
            None => succeeded > 0 && active.is_empty(),
        };
        let failing = failed > backoff_limit;
        let mut completion_time = None;
        let mut want = 0;
        if failing {
            let message = "Job has reached the specified backoff limit";
            set(
                &mut conditions,
                "FailureTarget",
                "True",
                "BackoffLimitExceeded",
                message,
            );
            set(
                &mut conditions,
                "Failed",
                "True",
                "BackoffLimitExceeded",
                message,
            );
        } else if complete {
            let message = "Reached expected number of succeeded pods";
            set(
                &mut conditions,
                "SuccessCriteriaMet",
                "True",
                "CompletionsReached",
                message,
            );
            set(
                &mut conditions,
                "Complete",
                "True",
                "CompletionsReached",
                message,
            );
            completion_time = Some(now.clone());
        } else if suspended {
            set(
                &mut conditions,
                "Suspended",
                "True",
                "JobSuspended",
                "Job suspended",
            );
        } else {
            if conditions.iter().any(|c| {
                obj::str_at(c, "/type") == "Suspended" && obj::str_at(c, "/status") == "True"
            }) {
                set(
                    &mut conditions,
                    "Suspended",
                    "False",
                    "JobResumed",
                    "Job resumed",
                );
            }
            want = match completions {
                Some(c) => parallelism.min(c - succeeded).max(0),
                // One succeeded: no new pods, the running ones finish.
                None if succeeded > 0 => active.len() as i64,
                None => parallelism,
            };
        }
        let running = active.len() as i64;
        let mut retry = None;
        if want > running {
            for _ in running..want {
                if let Err(e) = self.create_pod(&job) {
                    tracing::debug!("creating a pod of job {}: {e}", obj::name(&job));
                    retry = Some(Duration::from_secs(1));
                    break;
                }
            }
        } else if want < running {
            for pod in active.iter().skip(want as usize) {
                let _ = self.api.delete(
                    &self.api.res.pods,
                    ns,
                    obj::name(pod),
                    None,
                    Some(obj::uid(pod)),
                    &self.who,
                );
            }
        }
        let ready = active.iter().filter(|p| obj::pod_ready(p)).count() as i64;
        let start_time = match obj::str_at(&job, "/status/startTime") {
            "" if !suspended => json!(now),
            "" => Value::Null,
            t => json!(t),
        };
        let mut status = json!({
            "active": obj::omit_zero(want),
            "ready": ready,
            "succeeded": obj::omit_zero(succeeded),
            "failed": obj::omit_zero(failed),
            "terminating": 0,
            "uncountedTerminatedPods": {},
            "startTime": start_time,
            "conditions": if conditions.is_empty() { Value::Null } else { json!(conditions) },
        });
        if let Some(t) = completion_time {
            status["completionTime"] = json!(t);
        }
        let patch = json!({"status": status});
        if obj::changes(&job, &patch) {
            match self.api.merge_patch(
                &self.api.res.jobs,
                ns,
                obj::name(&job),
                Some("status"),
                &patch,
                &self.who,
            ) {
                Ok(updated) => {
                    if finished(&updated).is_some() && finished(&job).is_none() {
                        let (reason, note) = if failing {
                            (
                                "BackoffLimitExceeded",
                                "Job has reached the specified backoff limit",
                            )
                        } else {
                            ("Completed", "Job completed")
                        };
                        let type_ = if failing { "Warning" } else { "Normal" };
                        self.api
                            .event(&updated, type_, reason, "Complete", note, &self.who);
                    }
                }
                Err(e) => {
                    tracing::debug!("updating job {} status: {e}", obj::name(&job));
                    return Some(Duration::from_millis(100));
                }
            }
        }
        retry
    }
}

impl Jobs {
    fn create_pod(&self, job: &Value) -> Result<(), crt_apiserver::ApiError> {
        let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let mut metadata = template
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let (name, uid) = (obj::name(job), obj::uid(job));
        if let Some(m) = metadata.as_object_mut() {
            m.remove("name");
            m.insert("generateName".into(), json!(format!("{name}-")));
            m.insert("ownerReferences".into(), json!([obj::controller_ref(job)]));
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            for (k, v) in [
                (UID_LABEL, uid),
                (NAME_LABEL, name),
                ("controller-uid", uid),
                ("job-name", name),
            ] {
                labels[k] = json!(v);
            }
        }
        let body = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": metadata,
            "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
        });
        let pod = self.api.create(
            &self.api.res.pods,
            Some(obj::namespace(job)),
            body,
            &self.who,
        )?;
        self.api.event(
            job,
            "Normal",
            "SuccessfulCreate",
            "Create",
            &format!("Created pod: {}", obj::name(&pod)),
            &self.who,
        );
        Ok(())
    }

    /// Deletes a finished Job once its `ttlSecondsAfterFinished` passed.
    fn expire(&self, job: &Value, done: &Value) -> Option<Duration> {
        let ttl = obj::i64_at(job, "/spec/ttlSecondsAfterFinished")?;
        let since = crate::clock::parse(obj::str_at(done, "/lastTransitionTime"))?;
        let at = since + chrono::Duration::seconds(ttl);
        let now = self.api.clock.now();
        if at > now {
            return (at - now).to_std().ok();
        }
        let opts = crt_apiserver::storage::DeleteOptions {
            propagation_policy: Some("Background".into()),
            precondition_uid: Some(obj::uid(job).to_string()),
            ..Default::default()
        };
        if let Err(e) = self.api.storage.delete(
            &self.api.res.jobs,
            Some(obj::namespace(job)),
            obj::name(job),
            &opts,
        ) {
            tracing::debug!("deleting finished job {}: {e}", obj::name(job));
        }
        None
    }
}
