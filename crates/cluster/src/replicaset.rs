//! The ReplicaSet controller: keeps `spec.replicas` active pods (not ended, not being deleted)
//! controlled by each ReplicaSet, creating them from its template (named
//! `<replicaset>-<random>`, with a controller owner reference) and deleting the extra ones in
//! upstream's order (unassigned, then pending, not ready, ready for less time, restarted more,
//! newer, first). It adopts orphan pods its selector matches. Its status counts `replicas`,
//! `fullyLabeledReplicas` (pods with every template label), `readyReplicas`,
//! `availableReplicas` (ready for `minReadySeconds`) and `observedGeneration`; it records
//! `SuccessfulCreate` and `SuccessfulDelete` Events.
//!
//! ReplicationControllers, the ReplicaSet's predecessor, run the same controller (upstream's
//! replication manager wraps the ReplicaSet controller too), under the
//! `replication-controller` account: their selector is a plain label map.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crt_apiserver::resource::ResourceInfo;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::obj;

/// How many pods one sync creates at most (upstream's `burstReplicas`).
const BURST: i64 = 500;

/// Starts the controller, for ReplicaSets and for ReplicationControllers.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let mut tasks = Vec::new();
    for (res, kind, account) in [
        (&api.res.replicasets, "ReplicaSet", "replicaset-controller"),
        (
            &api.res.replicationcontrollers,
            "ReplicationController",
            "replication-controller",
        ),
    ] {
        let watches = vec![Watched::itself(res), Watched::owned(&api.res.pods, kind)];
        let controller = ReplicaSets {
            api: api.clone(),
            res: res.clone(),
            map_selector: kind == "ReplicationController",
            who: Actor::controller(account),
            orphans: Vec::new(),
        };
        tasks.extend(controller::spawn(&api.storage, watches, controller));
    }
    tasks
}

struct ReplicaSets {
    api: Api,
    /// `replicasets` or `replicationcontrollers`.
    res: ResourceInfo,
    /// The selector is a label map (a ReplicationController's), not a `LabelSelector`.
    map_selector: bool,
    who: Actor,
    /// The active pods without a controller, snapshot at the start of each batch: what the
    /// ReplicaSets may adopt.
    orphans: Vec<Arc<Value>>,
}

impl Reconcile for ReplicaSets {
    fn begin(&mut self) {
        self.orphans = (self.api)
            .list_shared(&self.api.res.pods, None, None, None)
            .into_iter()
            .filter(|p| obj::controller_of(p).is_none() && obj::pod_active(p))
            .collect();
    }

    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let rs = self.api.get(&self.res, Some(&key.0), &key.1)?;
        if obj::is_deleting(&rs) {
            return None;
        }
        let selector = if self.map_selector {
            let labels = obj::string_map(&rs, "/spec/selector");
            if labels.is_empty() {
                return None;
            }
            crt_labels::LabelSelector::from_parts(labels, Vec::<crt_labels::MatchExpression>::new())
                .ok()?
        } else {
            obj::selector(&rs, "/spec/selector")?
        };
        let ns = Some(key.0.as_str());
        let want = obj::i64_at(&rs, "/spec/replicas").unwrap_or(1);
        let pods = self.pods(&rs, &selector);
        let active: Vec<&Value> = pods.iter().filter(|p| obj::pod_active(p)).collect();
        let diff = want - active.len() as i64;
        let mut retry = None;
        if diff > 0 {
            for _ in 0..diff.min(BURST) {
                if let Err(e) = self.create_pod(&rs) {
                    tracing::debug!("creating a pod of {}/{}: {e}", key.0, key.1);
                    retry = Some(Duration::from_secs(1));
                    break;
                }
            }
        } else if diff < 0 {
            let mut doomed = active.clone();
            doomed.sort_by_key(|p| deletion_rank(p));
            for pod in doomed.into_iter().take((-diff) as usize) {
                match self.api.delete(
                    &self.api.res.pods,
                    ns,
                    obj::name(pod),
                    None,
                    Some(obj::uid(pod)),
                    &self.who,
                ) {
                    Ok(_) => self.api.event(
                        &rs,
                        "Normal",
                        "SuccessfulDelete",
                        "Delete",
                        &format!("Deleted pod: {}", obj::name(pod)),
                        &self.who,
                    ),
                    Err(e) => tracing::debug!("deleting pod {}: {e}", obj::name(pod)),
                }
            }
        }
        let pods = if diff != 0 {
            self.pods(&rs, &selector)
        } else {
            pods
        };
        self.status(&rs, &pods).or(retry)
    }
}

impl ReplicaSets {
    /// The pods the ReplicaSet controls and its selector matches, after adopting the orphans
    /// its selector matches. Its own pods come from the store's owner index, the orphans from
    /// the batch's snapshot: no reconcile scans every pod of the namespace.
    fn pods(&self, rs: &Value, selector: &crt_labels::LabelSelector) -> Vec<Value> {
        let ns = obj::namespace(rs);
        let selected = |pod: &Value| {
            let labels = pod.pointer("/metadata/labels");
            selector.matches_fn(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
        };
        let mut pods: Vec<Value> = (self.api)
            .owned_shared(&self.api.res.pods, obj::uid(rs))
            .into_iter()
            .filter(|pod| obj::controlled_by(pod, rs) && selected(pod))
            .map(|pod| (*pod).clone())
            .collect();
        for pod in self
            .orphans
            .iter()
            .filter(|p| obj::namespace(p) == ns && selected(p))
        {
            let mut refs = obj::array(pod, "/metadata/ownerReferences").to_vec();
            refs.push(obj::controller_ref(rs));
            // Conditional on the version seen: a pod another controller adopted meanwhile (in
            // this batch, or since its snapshot) is left alone.
            let patch = json!({"metadata": {"ownerReferences": refs,
                "resourceVersion": obj::str_at(pod, "/metadata/resourceVersion")}});
            if let Ok(adopted) = self.api.merge_patch(
                &self.api.res.pods,
                Some(ns),
                obj::name(pod),
                None,
                &patch,
                &self.who,
            ) {
                pods.push(adopted);
            }
        }
        pods
    }

    fn create_pod(&self, rs: &Value) -> Result<(), crt_apiserver::ApiError> {
        let template = rs.pointer("/spec/template").cloned().unwrap_or(json!({}));
        let mut metadata = template
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if let Some(m) = metadata.as_object_mut() {
            m.remove("name");
            m.remove("namespace");
            m.insert("generateName".into(), json!(format!("{}-", obj::name(rs))));
            m.insert("ownerReferences".into(), json!([obj::controller_ref(rs)]));
        }
        let body = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": metadata,
            "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
        });
        let pod = self.api.create(
            &self.api.res.pods,
            Some(obj::namespace(rs)),
            body,
            &self.who,
        )?;
        self.api.event(
            rs,
            "Normal",
            "SuccessfulCreate",
            "Create",
            &format!("Created pod: {}", obj::name(&pod)),
            &self.who,
        );
        Ok(())
    }

    /// Writes the status the pods give; asks to be called again when a ready pod turns
    /// available.
    fn status(&self, rs: &Value, pods: &[Value]) -> Option<Duration> {
        let now = self.api.clock.now();
        let min_ready = obj::i64_at(rs, "/spec/minReadySeconds").unwrap_or(0);
        let template_labels = obj::string_map(rs, "/spec/template/metadata/labels");
        let active: Vec<&Value> = pods.iter().filter(|p| obj::pod_active(p)).collect();
        let fully_labeled = active
            .iter()
            .filter(|p| {
                let labels = obj::labels(p);
                template_labels
                    .iter()
                    .all(|(k, v)| labels.get(k) == Some(v))
            })
            .count();
        let ready = active.iter().filter(|p| obj::pod_ready(p)).count();
        let available = active
            .iter()
            .filter(|p| obj::pod_available(p, min_ready, now))
            .count();
        let patch = json!({"status": {
            "replicas": active.len(),
            "fullyLabeledReplicas": obj::omit_zero(fully_labeled as i64),
            "readyReplicas": obj::omit_zero(ready as i64),
            "availableReplicas": obj::omit_zero(available as i64),
            "observedGeneration": obj::i64_at(rs, "/metadata/generation"),
        }});
        if obj::changes(rs, &patch)
            && let Err(e) = self.api.merge_patch(
                &self.res,
                Some(obj::namespace(rs)),
                obj::name(rs),
                Some("status"),
                &patch,
                &self.who,
            )
        {
            tracing::debug!("updating {} {} status: {e}", self.res.plural, obj::name(rs));
            return Some(Duration::from_millis(100));
        }
        (ready > available).then_some(Duration::from_secs(1))
    }
}

/// Upstream's order of deletion (`ActivePodsWithRanks`), smallest first.
fn deletion_rank(
    pod: &Value,
) -> (
    bool,
    u8,
    bool,
    std::cmp::Reverse<String>,
    std::cmp::Reverse<i64>,
    std::cmp::Reverse<String>,
) {
    let phase = match obj::str_at(pod, "/status/phase") {
        "Pending" => 0,
        "Unknown" => 1,
        "Running" => 2,
        _ => 3,
    };
    let ready_since = obj::condition(pod, "Ready")
        .filter(|c| obj::str_at(c, "/status") == "True")
        .map(|c| obj::str_at(c, "/lastTransitionTime").to_string())
        .unwrap_or_default();
    let restarts = obj::array(pod, "/status/containerStatuses")
        .iter()
        .filter_map(|c| obj::i64_at(c, "/restartCount"))
        .max()
        .unwrap_or(0);
    (
        !obj::str_at(pod, "/spec/nodeName").is_empty(),
        phase,
        obj::pod_ready(pod),
        std::cmp::Reverse(ready_since),
        std::cmp::Reverse(restarts),
        std::cmp::Reverse(obj::str_at(pod, "/metadata/creationTimestamp").to_string()),
    )
}
