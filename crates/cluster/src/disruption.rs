//! The disruption controller, as kube-controller-manager's keeps PodDisruptionBudgets'
//! status: the pods a budget selects in its namespace, how many should be healthy
//! (`desiredHealthy`), how many are (`currentHealthy`: Ready, not being deleted, not just
//! evicted), how many are expected (`expectedPods`) and so how many may be disrupted now
//! (`disruptionsAllowed`), with `observedGeneration`, the evictions not yet carried out
//! (`disruptedPods`, forgotten when the pod goes or after two minutes) and the
//! `DisruptionAllowed` condition (`SufficientPods`, `InsufficientPods`, or `SyncFailed`
//! when the expected count cannot be computed).
//!
//! `minAvailable` as a number wants that many healthy pods of those selected;
//! `maxUnavailable`, or `minAvailable` as a percentage, are scaled (rounded up) from the
//! replicas of the pods' controllers: a Deployment's (for its ReplicaSets' pods), a
//! ReplicaSet's, a ReplicationController's or a StatefulSet's `spec.replicas`, each counted
//! once. Pods without a controller are left out of that count (with upstream's
//! `UnmanagedPods` warning).
//!
//! The eviction subresource of the server takes disruptions from `disruptionsAllowed`; this
//! controller gives them back once the evicted pods are gone.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::{clock, obj};

/// How long an eviction may take before the budget stops waiting for it (upstream's
/// `DeletionTimeout`).
const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

/// Starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let Some(pdbs) = api.storage.resolve("policy", "v1", "poddisruptionbudgets") else {
        return Vec::new();
    };
    // A pod, or a controller whose replicas scale a budget, concerns every budget of its
    // namespace.
    let in_namespace = |res: &crt_apiserver::resource::ResourceInfo| {
        let lookup = api.clone();
        let pdbs = pdbs.clone();
        Watched::mapped(res, move |o| {
            lookup
                .list(&pdbs, Some(obj::namespace(o)), None, None)
                .iter()
                .map(controller::key_of)
                .collect()
        })
    };
    let mut watches = vec![Watched::itself(&pdbs), in_namespace(&api.res.pods)];
    for (group, plural) in [
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("", "replicationcontrollers"),
    ] {
        if let Some(res) = api.storage.resolve(group, "v1", plural) {
            watches.push(in_namespace(&res));
        }
    }
    let controller = Budgets {
        api: api.clone(),
        pdbs,
        who: Actor::controller("disruption-controller"),
    };
    controller::spawn(&api.storage, watches, controller)
}

struct Budgets {
    api: Api,
    pdbs: crt_apiserver::resource::ResourceInfo,
    who: Actor,
}

/// An `intstr` (`3` or `"30%"`) scaled to `total`, percentages rounded up
/// (`GetScaledValueFromIntOrPercent` with `roundUp`); `Err` when it is neither.
fn scaled(v: &Value, total: i64) -> Result<i64, String> {
    if let Some(n) = v.as_i64() {
        return Ok(n);
    }
    let s = v.as_str().unwrap_or_default();
    let percent: i64 = s
        .strip_suffix('%')
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("invalid value for IntOrString: invalid value {s:?}"))?;
    Ok((percent * total + 99).div_euclid(100))
}

impl Budgets {
    /// The replicas of the controller of each pod, summed once per controller
    /// (`getExpectedScale`), and the names of the pods without a controller.
    fn expected_scale(&self, ns: &str, pods: &[Value]) -> Result<(i64, Vec<String>), String> {
        let mut scale: BTreeMap<String, i64> = BTreeMap::new();
        let mut unmanaged = Vec::new();
        for pod in pods {
            let Some((kind, name, uid)) = obj::controller_of(pod) else {
                unmanaged.push(obj::name(pod).to_string());
                continue;
            };
            if scale.contains_key(uid) {
                continue;
            }
            match self.controller_scale(ns, kind, name, uid) {
                Some((uid, replicas)) => {
                    scale.insert(uid, replicas);
                }
                None => return Err(format!("found no controllers for pod {:?}", obj::name(pod))),
            }
        }
        Ok((scale.values().sum(), unmanaged))
    }

    /// The uid and replicas of the controller a pod names (a Deployment's for a ReplicaSet
    /// it owns), if it exists.
    fn controller_scale(
        &self,
        ns: &str,
        kind: &str,
        name: &str,
        uid: &str,
    ) -> Option<(String, i64)> {
        let res = |g: &str, p: &str| self.api.storage.resolve(g, "v1", p);
        let found = match kind {
            "ReplicaSet" => {
                let rs = self.api.get(&res("apps", "replicasets")?, Some(ns), name)?;
                if let Some(("Deployment", d, _)) = obj::controller_of(&rs) {
                    let d = self.api.get(&res("apps", "deployments")?, Some(ns), d)?;
                    return Some((
                        obj::uid(&d).to_string(),
                        obj::i64_at(&d, "/spec/replicas").unwrap_or(1),
                    ));
                }
                rs
            }
            "ReplicationController" => {
                self.api
                    .get(&res("", "replicationcontrollers")?, Some(ns), name)?
            }
            "StatefulSet" => self
                .api
                .get(&res("apps", "statefulsets")?, Some(ns), name)?,
            _ => return None,
        };
        (obj::uid(&found) == uid).then(|| {
            (
                uid.to_string(),
                obj::i64_at(&found, "/spec/replicas").unwrap_or(1),
            )
        })
    }

    /// `(expectedPods, desiredHealthy, unmanaged pods)` (`getExpectedPodCount`).
    fn expected(&self, pdb: &Value, pods: &[Value]) -> Result<(i64, i64, Vec<String>), String> {
        let ns = obj::namespace(pdb);
        if let Some(max) = pdb.pointer("/spec/maxUnavailable") {
            let (expected, unmanaged) = self.expected_scale(ns, pods)?;
            let max = scaled(max, expected)?;
            return Ok((expected, (expected - max).max(0), unmanaged));
        }
        match pdb.pointer("/spec/minAvailable") {
            Some(Value::Number(n)) => Ok((pods.len() as i64, n.as_i64().unwrap_or(0), Vec::new())),
            Some(min) => {
                let (expected, unmanaged) = self.expected_scale(ns, pods)?;
                Ok((expected, scaled(min, expected)?, unmanaged))
            }
            None => Ok((0, 0, Vec::new())),
        }
    }
}

/// The `DisruptionAllowed` condition for `status`, keeping `old`'s transition time when its
/// status does not change.
fn condition(
    old: Option<&Value>,
    status: &str,
    reason: &str,
    message: &str,
    generation: i64,
    now: DateTime<Utc>,
) -> Value {
    let since = old
        .filter(|c| obj::str_at(c, "/status") == status)
        .map(|c| obj::str_at(c, "/lastTransitionTime").to_string())
        .unwrap_or_else(|| clock::time(now));
    json!({"type": "DisruptionAllowed", "status": status, "reason": reason, "message": message,
        "observedGeneration": generation, "lastTransitionTime": since})
}

impl Reconcile for Budgets {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let pdb = self.api.get(&self.pdbs, Some(&key.0), &key.1)?;
        if obj::is_deleting(&pdb) {
            return None;
        }
        // No selector selects nothing; an empty one every pod of the namespace.
        let pods = match obj::selector(&pdb, "/spec/selector") {
            Some(sel) => self.api.list(
                &self.api.res.pods,
                Some(&key.0),
                Some(sel.to_string()).filter(|s| !s.is_empty()),
                None,
            ),
            None => Vec::new(),
        };
        let now = self.api.clock.now();
        let generation = obj::i64_at(&pdb, "/metadata/generation").unwrap_or(0);
        let old_condition = obj::condition(&pdb, "DisruptionAllowed");
        let status = match self.expected(&pdb, &pods) {
            Err(e) => {
                // Fail safe: no disruption allowed.
                let mut status = pdb.get("status").cloned().unwrap_or(json!({}));
                let observed = obj::i64_at(&pdb, "/status/observedGeneration").unwrap_or(0);
                status["disruptionsAllowed"] = json!(0);
                status["conditions"] = json!([condition(
                    old_condition,
                    "False",
                    "SyncFailed",
                    &e,
                    observed,
                    now
                )]);
                if pdb.get("status") != Some(&status) {
                    self.api.event(
                        &pdb,
                        "Warning",
                        "CalculateExpectedPodCountFailed",
                        "Sync",
                        &format!("Failed to calculate the number of expected pods: {e}"),
                        &self.who,
                    );
                }
                status
            }
            Ok((expected, desired, unmanaged)) => {
                let first = pdb.pointer("/status/observedGeneration").is_none();
                if first && pods.is_empty() {
                    self.api.event(
                        &pdb,
                        "Normal",
                        "NoPods",
                        "Sync",
                        "No matching pods found",
                        &self.who,
                    );
                }
                if first && !unmanaged.is_empty() {
                    self.api.event(
                        &pdb,
                        "Warning",
                        "UnmanagedPods",
                        "Sync",
                        &format!(
                            "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
                            obj::selector(&pdb, "/spec/selector").map(|s| s.to_string()).unwrap_or_default()
                        ),
                        &self.who,
                    );
                }
                // Evictions not carried out yet: the pod is still there, not being deleted.
                let mut disrupted = Map::new();
                let mut recheck: Option<DateTime<Utc>> = None;
                let before = pdb
                    .pointer("/status/disruptedPods")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                for pod in &pods {
                    if obj::is_deleting(pod) {
                        continue;
                    }
                    let Some(at) = before.get(obj::name(pod)) else {
                        continue;
                    };
                    let Some(when) = at.as_str().and_then(clock::parse) else {
                        continue;
                    };
                    let due =
                        when + chrono::Duration::from_std(DELETION_TIMEOUT).unwrap_or_default();
                    if due >= now {
                        recheck = Some(recheck.map_or(due, |r| r.min(due)));
                        disrupted.insert(obj::name(pod).to_string(), at.clone());
                    }
                }
                let healthy = pods
                    .iter()
                    .filter(|p| {
                        !obj::is_deleting(p)
                            && !disrupted.contains_key(obj::name(p))
                            && obj::pod_ready(p)
                    })
                    .count() as i64;
                let allowed = if expected <= 0 {
                    0
                } else {
                    (healthy - desired).max(0)
                };
                let (c_status, reason) = if allowed > 0 {
                    ("True", "SufficientPods")
                } else {
                    ("False", "InsufficientPods")
                };
                let mut status = json!({
                    "currentHealthy": healthy,
                    "desiredHealthy": desired,
                    "expectedPods": expected,
                    "disruptionsAllowed": allowed,
                    "observedGeneration": generation,
                    "conditions": [condition(old_condition, c_status, reason, "", generation, now)],
                });
                if !disrupted.is_empty() {
                    status["disruptedPods"] = Value::Object(disrupted);
                }
                let again = recheck
                    .and_then(|r| (r - now).to_std().ok())
                    .map(|d| d + Duration::from_millis(1));
                if pdb.get("status") == Some(&status) {
                    return again;
                }
                let mut body = pdb.clone();
                body["status"] = status;
                return match self.api.update(
                    &self.pdbs,
                    Some(&key.0),
                    Some("status"),
                    body,
                    &self.who,
                ) {
                    Ok(_) => again,
                    Err(e) => {
                        tracing::debug!("updating budget {}/{}: {e}", key.0, key.1);
                        Some(Duration::from_millis(10))
                    }
                };
            }
        };
        if pdb.get("status") == Some(&status) {
            return None;
        }
        let mut body = pdb.clone();
        body["status"] = status;
        if let Err(e) = self
            .api
            .update(&self.pdbs, Some(&key.0), Some("status"), body, &self.who)
        {
            tracing::debug!("updating budget {}/{}: {e}", key.0, key.1);
            return Some(Duration::from_millis(10));
        }
        // Upstream retries a failed sync with back-off; a second is enough here.
        Some(Duration::from_secs(1))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crt_apiserver::storage::{Storage, StorageConfig, WriteOptions};
    use serde_json::{Value, json};

    use super::scaled;
    use crate::{Cluster, ClusterConfig};

    fn opts() -> WriteOptions {
        WriteOptions {
            field_manager: Some("test".into()),
            ..WriteOptions::default()
        }
    }

    /// Waits (10 s of simulated time at most) until budget `name` in `default` has a status
    /// whose fields in `want` are `want`'s; answers the budget.
    async fn status_becomes(store: &Storage, name: &str, want: Value) -> Value {
        let res = store
            .resolve("policy", "v1", "poddisruptionbudgets")
            .unwrap();
        let mut pdb = Value::Null;
        for _ in 0..200 {
            pdb = store.get(&res, Some("default"), name, None).unwrap();
            let status = &pdb["status"];
            if want
                .as_object()
                .unwrap()
                .iter()
                .all(|(k, v)| &status[k] == v)
            {
                return pdb;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("status of {name}: {} is not {want}", pdb["status"]);
    }

    #[tokio::test(start_paused = true)]
    async fn budgets_report_allowed_disruptions_and_evictions_take_them() {
        let store = Storage::new(StorageConfig::default());
        let _cluster = Cluster::start(&store, ClusterConfig::default());
        let res = |g: &str, r: &str| store.resolve(g, "v1", r).unwrap();
        store
            .create(
                &res("apps", "deployments"),
                Some("default"),
                json!({"metadata": {"name": "web"}, "spec": {"replicas": 3,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
                &opts(),
            )
            .unwrap();
        for (name, spec) in [
            ("min", json!({"minAvailable": 2})),
            ("max", json!({"maxUnavailable": "50%"})),
            (
                "none",
                json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "nothing"}}}),
            ),
        ] {
            let mut spec = spec;
            if spec.get("selector").is_none() {
                spec["selector"] = json!({"matchLabels": {"app": "web"}});
            }
            store
                .create(
                    &res("policy", "poddisruptionbudgets"),
                    Some("default"),
                    json!({"metadata": {"name": name}, "spec": spec}),
                    &opts(),
                )
                .unwrap();
        }
        let min = status_becomes(
            &store,
            "min",
            json!({"currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
                "disruptionsAllowed": 1, "observedGeneration": 1}),
        )
        .await;
        let cond = &min["status"]["conditions"][0];
        assert_eq!(
            (&cond["type"], &cond["status"], &cond["reason"]),
            (
                &json!("DisruptionAllowed"),
                &json!("True"),
                &json!("SufficientPods")
            )
        );
        // 50% of the Deployment's 3 replicas, rounded up, may be unavailable.
        status_becomes(
            &store,
            "max",
            json!({"currentHealthy": 3, "desiredHealthy": 1, "expectedPods": 3,
                "disruptionsAllowed": 2}),
        )
        .await;
        let none = status_becomes(
            &store,
            "none",
            json!({"currentHealthy": 0, "desiredHealthy": 1, "expectedPods": 0,
                "disruptionsAllowed": 0}),
        )
        .await;
        assert_eq!(
            none["status"]["conditions"][0]["reason"],
            "InsufficientPods"
        );

        // Each pod is covered by two budgets here: the eviction refuses that as upstream.
        store
            .delete(
                &res("policy", "poddisruptionbudgets"),
                Some("default"),
                "max",
                &Default::default(),
            )
            .unwrap();
        let pods = store
            .list(&res("", "pods"), Some("default"), &Default::default())
            .unwrap();
        let names: Vec<String> = pods["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        let eviction = |pod: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}});
        store
            .evict("default", &names[0], &eviction(&names[0]), &opts())
            .unwrap();
        let refused = store
            .evict("default", &names[1], &eviction(&names[1]), &opts())
            .unwrap_err();
        assert_eq!(
            (refused.code, refused.message.as_str()),
            (
                429,
                "Cannot evict pod as it would violate the pod's disruption budget."
            )
        );
        // The ReplicaSet replaces the evicted pod; once it is Ready, one disruption again.
        status_becomes(
            &store,
            "min",
            json!({"currentHealthy": 3, "disruptionsAllowed": 1}),
        )
        .await;
        store
            .evict("default", &names[1], &eviction(&names[1]), &opts())
            .unwrap();
    }

    #[test]
    fn percentages_scale_rounding_up() {
        assert_eq!(scaled(&json!(2), 10), Ok(2));
        assert_eq!(scaled(&json!("50%"), 3), Ok(2));
        assert_eq!(scaled(&json!("34%"), 3), Ok(2));
        assert_eq!(scaled(&json!("0%"), 3), Ok(0));
        assert!(scaled(&json!("x"), 3).is_err());
    }
}
