//! The StatefulSet controller: stable pods `<set>-<ordinal>` (ordinals from
//! `spec.ordinals.start`, default 0), as upstream's.
//!
//! - Each pod has `hostname` its name and `subdomain` the set's `serviceName`, the labels
//!   `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
//!   `controller-revision-hash` (the name of its ControllerRevision, see [`crate::history`]),
//!   and for each of `volumeClaimTemplates` a volume of that name bound to the claim
//!   `<template>-<set>-<ordinal>`, which is created first (labelled with the template's labels
//!   and the selector's `matchLabels`) and kept when the pod goes, unless
//!   `persistentVolumeClaimRetentionPolicy` says `Delete` (`whenDeleted`: the claim is owned
//!   by the set; `whenScaled`: by the pod it served, once scaled away).
//! - `OrderedReady` (the default) creates one pod at a time, the next only when every lower
//!   ordinal is Running and Ready (and available for `minReadySeconds`), and removes pods
//!   one at a time from the highest ordinal (an unhealthy one only when no lower pod is
//!   unhealthy); `Parallel`
//!   creates and deletes without waiting. Failed or succeeded pods are deleted and recreated
//!   (`RecreatingFailedPod`, `RecreatingTerminatedPod`).
//! - `RollingUpdate` replaces pods whose revision is not the update revision from the highest
//!   ordinal down to `partition`, one at a time, each once the previous is healthy again;
//!   pods below the partition are created at the current revision. `OnDelete` creates new
//!   pods at the update revision and leaves the running ones alone.
//! - Status: `replicas`, `readyReplicas`, `availableReplicas`, `currentReplicas`,
//!   `updatedReplicas`, `currentRevision`, `updateRevision` (the current revision becomes the
//!   update revision once a rolling update has every pod updated and ready),
//!   `observedGeneration` and `collisionCount`; old revisions beyond `revisionHistoryLimit`
//!   are deleted.
//! - Events: `SuccessfulCreate` ("create Pod web-0 in StatefulSet web successful", "create
//!   Claim www-web-0 Pod web-0 in StatefulSet web success"), `SuccessfulDelete`.
//!
//! Left out: adopting orphan pods and claims, `maxUnavailable`, updating a running pod's
//! identity or storage, the `StatefulSetAutoDeletePVC` owner-reference repair.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::{history, obj};

/// The pod label naming the pod's revision.
pub(crate) const REVISION_LABEL: &str = "controller-revision-hash";
const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// Starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let watches = vec![
        Watched::itself(&api.res.statefulsets),
        Watched::owned(&api.res.pods, "StatefulSet"),
    ];
    let controller = StatefulSets {
        api: api.clone(),
        who: Actor::controller("statefulset-controller"),
    };
    controller::spawn(&api.storage, watches, controller)
}

struct StatefulSets {
    api: Api,
    who: Actor,
}

/// Whether the pod is Running, Ready, available for `min_ready` seconds and not going away.
fn healthy(pod: &Value, min_ready: i64, now: chrono::DateTime<chrono::Utc>) -> bool {
    obj::str_at(pod, "/status/phase") == "Running"
        && obj::pod_available(pod, min_ready, now)
        && !obj::is_deleting(pod)
}

/// The ordinal in a pod's name, when the pod is one of `set`'s.
fn ordinal(set: &str, pod: &str) -> Option<i64> {
    let rest = pod.strip_prefix(set)?.strip_prefix('-')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// What one sync of a set works with.
struct Sync<'a> {
    c: &'a StatefulSets,
    set: Value,
    current: Value,
    update: Value,
}

impl Reconcile for StatefulSets {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let set = self
            .api
            .get(&self.api.res.statefulsets, Some(&key.0), &key.1)?;
        if obj::is_deleting(&set) {
            return None;
        }
        let selector = obj::selector(&set, "/spec/selector")?;
        let revisions = history::list(&self.api, &set);
        let mut collisions = obj::i64_at(&set, "/status/collisionCount").unwrap_or(0);
        let update =
            match history::update_revision(&self.api, &self.who, &set, &revisions, &mut collisions)
            {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!("revision of statefulset {}: {e}", key.1);
                    return Some(Duration::from_secs(1));
                }
            };
        let current = revisions
            .iter()
            .find(|r| obj::name(r) == obj::str_at(&set, "/status/currentRevision"))
            .cloned()
            .unwrap_or_else(|| update.clone());
        let sync = Sync {
            c: self,
            set,
            current,
            update,
        };
        let pods = sync.pods(&selector);
        let mut retry = sync.run(&pods);
        let pods = sync.pods(&selector);
        retry = sync.status(&pods, collisions).or(retry);
        let live: BTreeSet<String> = pods
            .iter()
            .map(|p| obj::labels(p).remove(REVISION_LABEL).unwrap_or_default())
            .chain([
                obj::name(&sync.current).to_string(),
                obj::name(&sync.update).to_string(),
            ])
            .collect();
        let limit = obj::i64_at(&sync.set, "/spec/revisionHistoryLimit").unwrap_or(10);
        history::truncate(
            &self.api,
            &self.who,
            &history::list(&self.api, &sync.set),
            &live,
            limit,
        );
        retry
    }
}

impl Sync<'_> {
    fn api(&self) -> &Api {
        &self.c.api
    }

    fn name(&self) -> &str {
        obj::name(&self.set)
    }

    fn ns(&self) -> Option<&str> {
        Some(obj::namespace(&self.set))
    }

    fn event(&self, reason: &str, action: &str, note: &str) {
        self.api()
            .event(&self.set, "Normal", reason, action, note, &self.c.who);
    }

    /// The set's pods.
    fn pods(&self, selector: &crt_labels::LabelSelector) -> Vec<Value> {
        self.api()
            .list(
                &self.api().res.pods,
                self.ns(),
                Some(selector.to_string()),
                None,
            )
            .into_iter()
            .filter(|p| obj::controlled_by(p, &self.set))
            .collect()
    }

    /// Creates, deletes and replaces pods; `Some(delay)` to be called again.
    fn run(&self, pods: &[Value]) -> Option<Duration> {
        let set = &self.set;
        let now = self.api().clock.now();
        let replicas = obj::i64_at(set, "/spec/replicas").unwrap_or(1).max(0);
        let start = obj::i64_at(set, "/spec/ordinals/start").unwrap_or(0).max(0);
        let monotonic = obj::str_at(set, "/spec/podManagementPolicy") != "Parallel";
        let min_ready = obj::i64_at(set, "/spec/minReadySeconds").unwrap_or(0);
        let mut slots: Vec<Option<&Value>> = vec![None; replicas as usize];
        let mut condemned: Vec<(i64, &Value)> = Vec::new();
        for pod in pods {
            let Some(ord) = ordinal(self.name(), obj::name(pod)) else {
                continue;
            };
            if (start..start + replicas).contains(&ord) {
                slots[(ord - start) as usize] = Some(pod);
            } else {
                condemned.push((ord, pod));
            }
        }
        condemned.sort_by_key(|(ord, _)| *ord);
        // Upstream's "first unhealthy pod": the replicas in order, then the condemned.
        let first_unhealthy = slots
            .iter()
            .flatten()
            .copied()
            .chain(condemned.iter().map(|(_, p)| *p))
            .find(|p| !healthy(p, min_ready, now))
            .map(obj::uid);
        let mut wait = None;
        // Missing, failed and waiting replicas, lowest ordinal first.
        for (i, slot) in slots.iter().enumerate() {
            let ord = start + i as i64;
            match slot {
                None => {
                    if let Err(e) = self.create_pod(ord) {
                        tracing::debug!("creating pod {}-{ord}: {e}", self.name());
                        return Some(Duration::from_secs(1));
                    }
                    if monotonic {
                        return None;
                    }
                }
                Some(pod) if obj::pod_terminal(pod) && !obj::is_deleting(pod) => {
                    let (reason, what) = match obj::str_at(pod, "/status/phase") {
                        "Failed" => ("RecreatingFailedPod", "failed"),
                        _ => ("RecreatingTerminatedPod", "terminated"),
                    };
                    self.api().event(
                        set,
                        "Warning",
                        reason,
                        "Recreate",
                        &format!(
                            "StatefulSet {}/{} is recreating {what} Pod {}",
                            obj::namespace(set),
                            self.name(),
                            obj::name(pod)
                        ),
                        &self.c.who,
                    );
                    self.delete_pod(pod);
                    if monotonic {
                        return None;
                    }
                }
                Some(pod) if monotonic && !healthy(pod, min_ready, now) => {
                    // Ready but not yet available: look again when it is.
                    if obj::pod_ready(pod) && min_ready > 0 {
                        wait = Some(Duration::from_secs(1));
                    }
                    return wait;
                }
                Some(_) => {}
            }
        }
        // Pods past the replicas, highest ordinal first.
        for (_, pod) in condemned.iter().rev() {
            if obj::is_deleting(pod) {
                if monotonic {
                    return None;
                }
                continue;
            }
            // An unhealthy pod goes only when it is the first unhealthy one.
            if monotonic && !healthy(pod, min_ready, now) && first_unhealthy != Some(obj::uid(pod))
            {
                return None;
            }
            self.retain_on_scale_down(pod);
            self.delete_pod(pod);
            if monotonic {
                return None;
            }
        }
        if obj::str_at(set, "/spec/updateStrategy/type") == "OnDelete" {
            return None;
        }
        let partition = obj::i64_at(set, "/spec/updateStrategy/rollingUpdate/partition")
            .unwrap_or(0)
            .clamp(0, replicas);
        let update = obj::name(&self.update);
        for slot in slots[partition as usize..].iter().rev() {
            let Some(pod) = slot else { return None };
            if obj::labels(pod).get(REVISION_LABEL).map(String::as_str) != Some(update)
                && !obj::is_deleting(pod)
            {
                self.delete_pod(pod);
                return None;
            }
            if !healthy(pod, min_ready, now) {
                return None;
            }
        }
        wait
    }

    /// Creates the pod of ordinal `ord` (and its missing claims), at the current revision when
    /// a rolling update's partition keeps it there, else at the update revision.
    fn create_pod(&self, ord: i64) -> Result<(), crt_apiserver::ApiError> {
        let set = &self.set;
        let rolling = obj::str_at(set, "/spec/updateStrategy/type") != "OnDelete";
        let partition =
            obj::i64_at(set, "/spec/updateStrategy/rollingUpdate/partition").unwrap_or(0);
        let start = obj::i64_at(set, "/spec/ordinals/start").unwrap_or(0).max(0);
        let revision = if rolling && ord - start < partition {
            &self.current
        } else {
            &self.update
        };
        let template = history::template_of(revision);
        let name = format!("{}-{ord}", self.name());
        let claims = self.claims(ord)?;
        let mut metadata = template
            .get("metadata")
            .cloned()
            .unwrap_or_else(|| json!({}));
        if let Some(m) = metadata.as_object_mut() {
            m.remove("generateName");
            m.remove("namespace");
            m.insert("name".into(), json!(name));
            m.insert("ownerReferences".into(), json!([obj::controller_ref(set)]));
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            labels[POD_NAME_LABEL] = json!(name);
            labels[POD_INDEX_LABEL] = json!(ord.to_string());
            labels[REVISION_LABEL] = json!(obj::name(revision));
        }
        let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
        spec["hostname"] = json!(name);
        match obj::str_at(set, "/spec/serviceName") {
            "" => {}
            service => spec["subdomain"] = json!(service),
        }
        if !claims.is_empty() {
            let mut volumes: Vec<Value> = claims
                .iter()
                .map(|(template, claim)| {
                    json!({"name": template, "persistentVolumeClaim": {"claimName": claim}})
                })
                .collect();
            volumes.extend(
                obj::array(&spec, "/volumes")
                    .iter()
                    .filter(|v| !claims.iter().any(|(t, _)| t == obj::str_at(v, "/name")))
                    .cloned(),
            );
            spec["volumes"] = json!(volumes);
        }
        let body = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": metadata,
            "spec": spec,
        });
        match self
            .api()
            .create(&self.api().res.pods, self.ns(), body, &self.c.who)
        {
            Ok(_) => {
                self.event(
                    "SuccessfulCreate",
                    "Create",
                    &format!(
                        "create Pod {name} in StatefulSet {} successful",
                        self.name()
                    ),
                );
                Ok(())
            }
            // Still being deleted: created on a later sync.
            Err(e) if e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Creates the missing claims of ordinal `ord`; answers `(template, claim)` names.
    fn claims(&self, ord: i64) -> Result<Vec<(String, String)>, crt_apiserver::ApiError> {
        let set = &self.set;
        let pod = format!("{}-{ord}", self.name());
        let selector_labels = obj::string_map(set, "/spec/selector/matchLabels");
        let delete_with_set = obj::str_at(
            set,
            "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted",
        ) == "Delete";
        let mut names = Vec::new();
        for template in obj::array(set, "/spec/volumeClaimTemplates") {
            let tname = obj::name(template).to_string();
            let claim = format!("{tname}-{pod}");
            names.push((tname, claim.clone()));
            if self
                .api()
                .get(&self.api().res.pvcs, self.ns(), &claim)
                .is_some()
            {
                continue;
            }
            let mut metadata = template
                .get("metadata")
                .cloned()
                .unwrap_or_else(|| json!({}));
            if let Some(m) = metadata.as_object_mut() {
                m.remove("namespace");
                m.remove("generateName");
                m.insert("name".into(), json!(claim));
                let labels = m.entry("labels").or_insert_with(|| json!({}));
                for (k, v) in &selector_labels {
                    labels[k] = json!(v);
                }
                if delete_with_set {
                    m.insert("ownerReferences".into(), json!([owner_ref(set)]));
                }
            }
            let body = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": metadata,
                "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
            });
            match self
                .api()
                .create(&self.api().res.pvcs, self.ns(), body, &self.c.who)
            {
                Ok(_) | Err(crt_apiserver::ApiError { code: 409, .. }) => self.event(
                    "SuccessfulCreate",
                    "Create",
                    &format!(
                        "create Claim {claim} Pod {pod} in StatefulSet {} success",
                        self.name()
                    ),
                ),
                Err(e) => {
                    self.api().event(
                        &self.set,
                        "Warning",
                        "FailedCreate",
                        "Create",
                        &format!(
                            "create Claim {claim} for Pod {pod} in StatefulSet {} failed error: {}",
                            self.name(),
                            e.message
                        ),
                        &self.c.who,
                    );
                    return Err(e);
                }
            }
        }
        Ok(names)
    }

    /// With `whenScaled: Delete`, hands the claims of a pod scaled away to the pod, so that
    /// they go with it.
    fn retain_on_scale_down(&self, pod: &Value) {
        let set = &self.set;
        if obj::str_at(set, "/spec/persistentVolumeClaimRetentionPolicy/whenScaled") != "Delete" {
            return;
        }
        for template in obj::array(set, "/spec/volumeClaimTemplates") {
            let claim = format!("{}-{}", obj::name(template), obj::name(pod));
            let Some(pvc) = self.api().get(&self.api().res.pvcs, self.ns(), &claim) else {
                continue;
            };
            let mut refs = obj::array(&pvc, "/metadata/ownerReferences").to_vec();
            if refs.iter().any(|r| obj::str_at(r, "/uid") == obj::uid(pod)) {
                continue;
            }
            refs.push(owner_ref(pod));
            let patch = json!({"metadata": {"ownerReferences": refs}});
            if let Err(e) = self.api().merge_patch(
                &self.api().res.pvcs,
                self.ns(),
                &claim,
                None,
                &patch,
                &self.c.who,
            ) {
                tracing::debug!("handing claim {claim} to its pod: {e}");
            }
        }
    }

    fn delete_pod(&self, pod: &Value) {
        match self.api().delete(
            &self.api().res.pods,
            self.ns(),
            obj::name(pod),
            None,
            Some(obj::uid(pod)),
            &self.c.who,
        ) {
            Ok(_) => self.event(
                "SuccessfulDelete",
                "Delete",
                &format!(
                    "delete Pod {} in StatefulSet {} successful",
                    obj::name(pod),
                    self.name()
                ),
            ),
            Err(e) => tracing::debug!("deleting pod {}: {e}", obj::name(pod)),
        }
    }

    /// Writes the status the pods give.
    fn status(&self, pods: &[Value], collisions: i64) -> Option<Duration> {
        let set = &self.set;
        let now = self.api().clock.now();
        let min_ready = obj::i64_at(set, "/spec/minReadySeconds").unwrap_or(0);
        let active: Vec<&Value> = pods.iter().filter(|p| obj::pod_active(p)).collect();
        let running_ready =
            |p: &&&Value| obj::str_at(p, "/status/phase") == "Running" && obj::pod_ready(p);
        let ready = active.iter().filter(running_ready).count() as i64;
        let available = active
            .iter()
            .filter(running_ready)
            .filter(|p| obj::pod_available(p, min_ready, now))
            .count() as i64;
        let at = |revision: &Value| {
            active
                .iter()
                .filter(|p| {
                    obj::labels(p).get(REVISION_LABEL).map(String::as_str)
                        == Some(obj::name(revision))
                })
                .count() as i64
        };
        let replicas = active.len() as i64;
        let updated = at(&self.update);
        let mut current_name = obj::name(&self.current);
        let mut current = at(&self.current);
        if obj::str_at(set, "/spec/updateStrategy/type") != "OnDelete"
            && updated == replicas
            && ready == replicas
        {
            current_name = obj::name(&self.update);
            current = updated;
        }
        let patch = json!({"status": {
            "observedGeneration": obj::i64_at(set, "/metadata/generation"),
            "replicas": replicas,
            "readyReplicas": obj::omit_zero(ready),
            "availableReplicas": available,
            "currentReplicas": obj::omit_zero(current),
            "updatedReplicas": obj::omit_zero(updated),
            "currentRevision": current_name,
            "updateRevision": obj::name(&self.update),
            "collisionCount": collisions,
        }});
        if obj::changes(set, &patch)
            && let Err(e) = self.api().merge_patch(
                &self.api().res.statefulsets,
                self.ns(),
                self.name(),
                Some("status"),
                &patch,
                &self.c.who,
            )
        {
            tracing::debug!("updating statefulset {} status: {e}", self.name());
            return Some(Duration::from_millis(100));
        }
        (ready > available).then_some(Duration::from_secs(1))
    }
}

/// An owner reference (not a controller's) to `owner`, which blocks its foreground deletion.
fn owner_ref(owner: &Value) -> Value {
    let mut r = obj::controller_ref(owner);
    r["controller"] = json!(false);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_come_from_the_name() {
        assert_eq!(ordinal("web", "web-0"), Some(0));
        assert_eq!(ordinal("web", "web-12"), Some(12));
        assert_eq!(ordinal("web", "web-x"), None);
        assert_eq!(ordinal("web", "web-"), None);
        assert_eq!(ordinal("web", "webx-1"), None);
        assert_eq!(ordinal("web", "web-db-1"), None);
    }
}
