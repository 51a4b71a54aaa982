//! The DaemonSet controller: one pod per eligible node, as upstream's.
//!
//! - A node is eligible when the pod template's `nodeSelector` and required node affinity
//!   select it and the pod tolerates its `NoSchedule` and `NoExecute` taints, counting the
//!   tolerations the controller adds to every daemon pod (`node.kubernetes.io/not-ready` and
//!   `unreachable` for `NoExecute`; `disk-pressure`, `memory-pressure`, `pid-pressure`,
//!   `unschedulable` and, with `hostNetwork`, `network-unavailable` for `NoSchedule`). A pod
//!   on a node whose `NoSchedule` taints it does not tolerate keeps running; one whose
//!   `NoExecute` taints it does not tolerate, or on a node it no longer selects, is deleted.
//! - Pods (`<set>-<random>`) carry the labels `controller-revision-hash` (the hash of the
//!   set's ControllerRevision, see [`crate::history`]) and `pod-template-generation`, and a
//!   required node affinity `matchFields` term on `metadata.name` pinning them to their
//!   node; the scheduler binds them. Failed pods are deleted (`FailedDaemonPod`) and made
//!   again, extra pods on a node deleted.
//! - `RollingUpdate` replaces pods of old revisions, at most `maxUnavailable` (default 1;
//!   a percentage of the desired pods, rounded up) unavailable at a time, unavailable old
//!   pods first; with `maxSurge`, a new pod starts beside the old one on at most that many
//!   nodes at a time and the old one goes once the new one is available. `OnDelete` makes
//!   new pods only where the old ones were deleted.
//! - Status: `desiredNumberScheduled`, `currentNumberScheduled`, `numberMisscheduled`,
//!   `numberReady`, `numberAvailable` (ready for `minReadySeconds`), `numberUnavailable`,
//!   `updatedNumberScheduled`, `observedGeneration`; old revisions beyond
//!   `revisionHistoryLimit` are deleted.
//!
//! Left out: adopting orphan pods, deleting pods of nodes that are gone (upstream's
//! pod garbage collector).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::scheduler::{node_affinity_matches, tolerates};
use crate::{history, obj};

const HASH_LABEL: &str = "controller-revision-hash";
const GENERATION_LABEL: &str = "pod-template-generation";

/// The key that asks to sync every DaemonSet (a node changed).
fn everything() -> Key {
    (String::new(), String::new())
}

/// Starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let watches = vec![
        Watched::itself(&api.res.daemonsets),
        Watched::owned(&api.res.pods, "DaemonSet"),
        Watched::mapped(&api.res.nodes, |_| vec![everything()]),
    ];
    let controller = DaemonSets {
        api: api.clone(),
        who: Actor::controller("daemon-set-controller").reporting_as("daemonset-controller"),
        nodes: Vec::new(),
    };
    controller::spawn(&api.storage, watches, controller)
}

struct DaemonSets {
    api: Api,
    who: Actor,
    /// The nodes, read at the start of each batch.
    nodes: Vec<Value>,
}

/// The tolerations every daemon pod gets.
fn daemon_tolerations(pod_spec: &Value) -> Vec<Value> {
    let mut added = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if pod_spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        added.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let mut tolerations = obj::array(pod_spec, "/tolerations").to_vec();
    for (key, effect) in added {
        let t = json!({"key": key, "operator": "Exists", "effect": effect});
        if let Some(same) = tolerations
            .iter_mut()
            .find(|o| obj::str_at(o, "/key") == key && obj::str_at(o, "/effect") == effect)
        {
            *same = t;
        } else {
            tolerations.push(t);
        }
    }
    tolerations
}

/// Whether a daemon pod should run on the node, and whether one there may keep running.
fn should_run(template: &Value, node: &Value) -> (bool, bool) {
    let spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
    let node_name = obj::str_at(&spec, "/nodeName");
    let pod = json!({"spec": spec});
    if (!node_name.is_empty() && node_name != obj::name(node)) || !node_affinity_matches(&pod, node)
    {
        return (false, false);
    }
    let tolerations = daemon_tolerations(&pod["spec"]);
    let untolerated = |effect: &str| {
        obj::array(node, "/spec/taints").iter().any(|taint| {
            obj::str_at(taint, "/effect") == effect
                && !tolerations.iter().any(|t| tolerates(t, taint))
        })
    };
    if untolerated("NoExecute") {
        return (false, false);
    }
    (!untolerated("NoSchedule"), true)
}

/// `maxUnavailable` or `maxSurge` against `total`: an integer, or a percentage rounded up;
/// `default` when unset or unreadable.
fn scaled(v: Option<&Value>, total: i64, default: i64) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(default),
        Some(Value::String(s)) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => (p * total + 99) / 100,
            None => default,
        },
        _ => default,
    }
}

/// Oldest first (creation time, then name).
fn by_age(pods: &mut [&Value]) {
    pods.sort_by_key(|p| {
        (
            obj::str_at(p, "/metadata/creationTimestamp").to_string(),
            obj::name(p).to_string(),
        )
    });
}

fn is_new(pod: &Value, hash: &str) -> bool {
    obj::labels(pod).get(HASH_LABEL).map(String::as_str) == Some(hash)
}

impl Reconcile for DaemonSets {
    fn begin(&mut self) {
        self.nodes = self.api.list(&self.api.res.nodes, None, None, None);
    }

    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        if *key == everything() {
            let mut retry = None;
            for ds in self.api.list(&self.api.res.daemonsets, None, None, None) {
                retry = self.sync(ds).or(retry);
            }
            return retry;
        }
        let ds = self
            .api
            .get(&self.api.res.daemonsets, Some(&key.0), &key.1)?;
        self.sync(ds)
    }
}

impl DaemonSets {
    fn event(&self, ds: &Value, type_: &str, reason: &str, action: &str, note: &str) {
        self.api.event(ds, type_, reason, action, note, &self.who);
    }

    fn delete_pod(&self, ds: &Value, pod: &Value) {
        match self.api.delete(
            &self.api.res.pods,
            Some(obj::namespace(pod)),
            obj::name(pod),
            None,
            Some(obj::uid(pod)),
            &self.who,
        ) {
            Ok(_) => self.event(
                ds,
                "Normal",
                "SuccessfulDelete",
                "Delete",
                &format!("Deleted pod: {}", obj::name(pod)),
            ),
            Err(e) => tracing::debug!("deleting pod {}: {e}", obj::name(pod)),
        }
    }

    fn pods(&self, ds: &Value) -> Vec<Value> {
        let Some(selector) = obj::selector(ds, "/spec/selector") else {
            return Vec::new();
        };
        self.api
            .list(
                &self.api.res.pods,
                Some(obj::namespace(ds)),
                Some(selector.to_string()),
                None,
            )
            .into_iter()
            .filter(|p| obj::controlled_by(p, ds))
            .collect()
    }

    fn sync(&self, ds: Value) -> Option<Duration> {
        if obj::is_deleting(&ds) {
            return None;
        }
        let revisions = history::list(&self.api, &ds);
        let mut collisions = obj::i64_at(&ds, "/status/collisionCount").unwrap_or(0);
        let update = match history::update_revision(
            &self.api,
            &self.who,
            &ds,
            &revisions,
            &mut collisions,
        ) {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!("revision of daemonset {}: {e}", obj::name(&ds));
                return Some(Duration::from_secs(1));
            }
        };
        let hash = obj::labels(&update)
            .remove(history::HASH_LABEL)
            .unwrap_or_default();
        let template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let now = self.api.clock.now();
        let min_ready = obj::i64_at(&ds, "/spec/minReadySeconds").unwrap_or(0);
        let pods = self.pods(&ds);
        let mut by_node: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
        for pod in pods.iter().filter(|p| !obj::is_deleting(p)) {
            by_node.entry(node_of(pod)).or_default().push(pod);
        }
        let rolling = obj::str_at(&ds, "/spec/updateStrategy/type") != "OnDelete";
        let desired = self
            .nodes
            .iter()
            .filter(|n| should_run(&template, n).0)
            .count() as i64;
        let surge = scaled(
            ds.pointer("/spec/updateStrategy/rollingUpdate/maxSurge"),
            desired,
            0,
        ) > 0;
        let mut retry = None;
        let mut eligible: Vec<&str> = Vec::new();
        for node in &self.nodes {
            let name = obj::name(node);
            let (run, keep) = should_run(&template, node);
            let here = by_node.get(name).cloned().unwrap_or_default();
            if run {
                eligible.push(name);
            }
            let mut alive: Vec<&Value> = Vec::new();
            for pod in here {
                if obj::str_at(pod, "/status/phase") == "Failed" {
                    self.event(
                        &ds,
                        "Warning",
                        "FailedDaemonPod",
                        "Sync",
                        &format!(
                            "Found failed daemon pod {}/{} on node {name}, will try to kill it",
                            obj::namespace(pod),
                            obj::name(pod)
                        ),
                    );
                    self.delete_pod(&ds, pod);
                } else {
                    alive.push(pod);
                }
            }
            if !keep {
                for pod in alive {
                    self.delete_pod(&ds, pod);
                }
                continue;
            }
            if run && alive.is_empty() {
                if let Err(e) = self.create_pod(&ds, &template, name, &hash) {
                    tracing::debug!("creating a daemon pod on {name}: {e}");
                    retry = Some(Duration::from_secs(1));
                }
            } else if alive.len() > 1 {
                // One pod a node; while surging, one new and one old.
                by_age(&mut alive);
                let keep: Vec<&Value> = if surge {
                    [
                        alive.iter().find(|p| is_new(p, &hash)),
                        alive.iter().find(|p| !is_new(p, &hash)),
                    ]
                    .into_iter()
                    .flatten()
                    .copied()
                    .collect()
                } else {
                    vec![alive[0]]
                };
                for pod in alive
                    .iter()
                    .filter(|p| !keep.iter().any(|k| obj::uid(k) == obj::uid(p)))
                {
                    self.delete_pod(&ds, pod);
                }
            }
        }
        if rolling && surge {
            retry = self
                .surge(&ds, &template, &eligible, &by_node, &hash, min_ready, now)
                .or(retry);
        } else if rolling {
            self.roll(&ds, &eligible, &by_node, &hash, min_ready, now);
        }
        let pods = self.pods(&ds);
        retry = self
            .status(&ds, &pods, &hash, collisions, min_ready, now)
            .or(retry);
        let live: BTreeSet<String> = pods
            .iter()
            .filter_map(|p| obj::labels(p).remove(HASH_LABEL))
            .map(|h| format!("{}-{h}", obj::name(&ds)))
            .chain([obj::name(&update).to_string()])
            .collect();
        let limit = obj::i64_at(&ds, "/spec/revisionHistoryLimit").unwrap_or(10);
        history::truncate(
            &self.api,
            &self.who,
            &history::list(&self.api, &ds),
            &live,
            limit,
        );
        retry
    }

    /// Deletes old pods within `maxUnavailable`, unavailable ones first.
    fn roll(
        &self,
        ds: &Value,
        eligible: &[&str],
        by_node: &BTreeMap<&str, Vec<&Value>>,
        hash: &str,
        min_ready: i64,
        now: chrono::DateTime<chrono::Utc>,
    ) {
        let max_unavailable = scaled(
            ds.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable"),
            eligible.len() as i64,
            1,
        )
        .max(1);
        let mut unavailable = 0;
        let mut candidates: Vec<&Value> = Vec::new();
        for node in eligible {
            let pods = by_node.get(node).cloned().unwrap_or_default();
            let Some(pod) = pods.first() else {
                unavailable += 1;
                continue;
            };
            let available = obj::pod_available(pod, min_ready, now) && !obj::pod_terminal(pod);
            let old = obj::labels(pod).get(HASH_LABEL).map(String::as_str) != Some(hash);
            if !available {
                unavailable += 1;
                if old {
                    self.delete_pod(ds, pod);
                }
            } else if old {
                candidates.push(pod);
            }
        }
        for pod in candidates {
            if unavailable >= max_unavailable {
                break;
            }
            self.delete_pod(ds, pod);
            unavailable += 1;
        }
    }

    /// With `maxSurge`: a new pod starts beside an old one (at once where the old one is
    /// unavailable, else within the surge), and the old one goes once the new is available.
    #[allow(clippy::too_many_arguments)]
    fn surge(
        &self,
        ds: &Value,
        template: &Value,
        eligible: &[&str],
        by_node: &BTreeMap<&str, Vec<&Value>>,
        hash: &str,
        min_ready: i64,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<Duration> {
        let max_surge = scaled(
            ds.pointer("/spec/updateStrategy/rollingUpdate/maxSurge"),
            eligible.len() as i64,
            0,
        );
        let mut surging = 0;
        let mut allowed: Vec<&str> = Vec::new();
        let mut candidates: Vec<&str> = Vec::new();
        for node in eligible {
            let mut pods = by_node.get(node).cloned().unwrap_or_default();
            by_age(&mut pods);
            let new = pods.iter().find(|p| is_new(p, hash));
            let old = pods.iter().find(|p| !is_new(p, hash));
            match (new, old) {
                (_, None) => {}
                (None, Some(old)) if !obj::pod_available(old, min_ready, now) => allowed.push(node),
                (None, Some(_)) => candidates.push(node),
                (Some(new), Some(_)) if !obj::pod_available(new, min_ready, now) => surging += 1,
                (Some(_), Some(old)) => self.delete_pod(ds, old),
            }
        }
        let room = (max_surge - surging).max(0) as usize;
        let mut retry = None;
        for node in allowed.into_iter().chain(candidates.into_iter().take(room)) {
            if let Err(e) = self.create_pod(ds, template, node, hash) {
                tracing::debug!("creating a surge pod on {node}: {e}");
                retry = Some(Duration::from_secs(1));
            }
        }
        retry
    }

    fn create_pod(
        &self,
        ds: &Value,
        template: &Value,
        node: &str,
        hash: &str,
    ) -> Result<(), crt_apiserver::ApiError> {
        let mut metadata = template
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if let Some(m) = metadata.as_object_mut() {
            m.remove("name");
            m.remove("namespace");
            m.insert("generateName".into(), json!(format!("{}-", obj::name(ds))));
            m.insert("ownerReferences".into(), json!([obj::controller_ref(ds)]));
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            labels[HASH_LABEL] = json!(hash);
            labels[GENERATION_LABEL] = json!(
                obj::i64_at(ds, "/metadata/generation")
                    .unwrap_or(1)
                    .to_string()
            );
        }
        let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
        spec["tolerations"] = json!(daemon_tolerations(&spec));
        pin_to_node(&mut spec, node);
        let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec});
        let pod = self.api.create(
            &self.api.res.pods,
            Some(obj::namespace(ds)),
            body,
            &self.who,
        )?;
        self.event(
            ds,
            "Normal",
            "SuccessfulCreate",
            "Create",
            &format!("Created pod: {}", obj::name(&pod)),
        );
        Ok(())
    }

    fn status(
        &self,
        ds: &Value,
        pods: &[Value],
        hash: &str,
        collisions: i64,
        min_ready: i64,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Option<Duration> {
        let template = ds.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let (mut desired, mut current, mut misscheduled) = (0, 0, 0);
        let (mut ready, mut available, mut updated) = (0, 0, 0);
        for node in &self.nodes {
            let (run, _) = should_run(&template, node);
            let mut here: Vec<&Value> = pods
                .iter()
                .filter(|p| node_of(p) == obj::name(node) && !obj::is_deleting(p))
                .collect();
            by_age(&mut here);
            if !run {
                misscheduled += i64::from(!here.is_empty());
                continue;
            }
            desired += 1;
            let Some(pod) = here.first() else { continue };
            current += 1;
            if obj::pod_ready(pod) {
                ready += 1;
                if obj::pod_available(pod, min_ready, now) {
                    available += 1;
                }
            }
            if obj::labels(pod).get(HASH_LABEL).map(String::as_str) == Some(hash) {
                updated += 1;
            }
        }
        let patch = json!({"status": {
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled,
            "numberReady": ready,
            "numberAvailable": obj::omit_zero(available),
            "numberUnavailable": obj::omit_zero(desired - available),
            "updatedNumberScheduled": obj::omit_zero(updated),
            "observedGeneration": obj::i64_at(ds, "/metadata/generation"),
            "collisionCount": obj::omit_zero(collisions),
        }});
        if obj::changes(ds, &patch)
            && let Err(e) = self.api.merge_patch(
                &self.api.res.daemonsets,
                Some(obj::namespace(ds)),
                obj::name(ds),
                Some("status"),
                &patch,
                &self.who,
            )
        {
            tracing::debug!("updating daemonset {} status: {e}", obj::name(ds));
            return Some(Duration::from_millis(100));
        }
        (ready > available).then_some(Duration::from_secs(1))
    }
}

/// The node a daemon pod runs on, or is pinned to.
fn node_of(pod: &Value) -> &str {
    match obj::str_at(pod, "/spec/nodeName") {
        "" => obj::array(
            pod,
            "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
        )
        .iter()
        .flat_map(|t| obj::array(t, "/matchFields"))
        .find(|f| obj::str_at(f, "/key") == "metadata.name")
        .and_then(|f| f.pointer("/values/0"))
        .and_then(Value::as_str)
        .unwrap_or(""),
        n => n,
    }
}

/// Upstream's `ReplaceDaemonSetPodNodeNameNodeAffinity`: every required term (or a new one)
/// selects the node by `metadata.name`.
fn pin_to_node(spec: &mut Value, node: &str) {
    let field = json!([{"key": "metadata.name", "operator": "In", "values": [node]}]);
    let required = spec
        .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let terms: Vec<Value> = if required.is_empty() {
        vec![json!({"matchFields": field})]
    } else {
        required
            .into_iter()
            .map(|mut t| {
                t["matchFields"] = field.clone();
                t
            })
            .collect()
    };
    if !spec["affinity"].is_object() {
        spec["affinity"] = json!({});
    }
    if !spec["affinity"]["nodeAffinity"].is_object() {
        spec["affinity"]["nodeAffinity"] = json!({});
    }
    spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] =
        json!({"nodeSelectorTerms": terms});
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eligibility_follows_selectors_and_taints() {
        let node = |labels: Value, taints: Value| json!({"metadata": {"name": "n", "labels": labels}, "spec": {"taints": taints}});
        let t = json!({"spec": {"nodeSelector": {"disk": "ssd"}}});
        assert_eq!(
            should_run(&t, &node(json!({"disk": "ssd"}), json!([]))),
            (true, true)
        );
        assert_eq!(should_run(&t, &node(json!({}), json!([]))), (false, false));
        let any = json!({"spec": {}});
        let taint = |effect: &str| json!([{"key": "k", "value": "v", "effect": effect}]);
        assert_eq!(
            should_run(&any, &node(json!({}), taint("NoSchedule"))),
            (false, true)
        );
        assert_eq!(
            should_run(&any, &node(json!({}), taint("NoExecute"))),
            (false, false)
        );
        let unschedulable = json!([{"key": "node.kubernetes.io/unschedulable",
            "effect": "NoSchedule"}]);
        assert_eq!(
            should_run(&any, &node(json!({}), unschedulable)),
            (true, true)
        );
        assert_eq!(scaled(Some(&json!("34%")), 3, 1), 2);
        assert_eq!(scaled(Some(&json!(2)), 3, 1), 2);
        assert_eq!(scaled(None, 3, 0), 0);
    }

    #[test]
    fn pods_are_pinned_to_their_node() {
        let mut spec = json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}}});
        pin_to_node(&mut spec, "node-2");
        let pod = json!({"spec": spec});
        assert_eq!(node_of(&pod), "node-2");
        let term = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0];
        assert_eq!(term["matchExpressions"][0]["key"], "a");
        assert_eq!(daemon_tolerations(&json!({"hostNetwork": true})).len(), 7);
    }
}
