//! The Deployment controller, after upstream's: each Deployment owns ReplicaSets named
//! `<deployment>-<pod-template-hash>`, one per distinct pod template (the hash label is added
//! to the template and the selector). The ReplicaSet whose template is the Deployment's is the
//! new one; it gets the next revision (`deployment.kubernetes.io/revision`, the old number
//! kept in `revision-history`), which the Deployment carries too, with the Deployment's
//! annotations (`kubernetes.io/change-cause`, ...) copied, so `kubectl rollout history` and
//! `rollout undo` (which puts an old ReplicaSet's template back) work.
//!
//! - **RollingUpdate**: the new ReplicaSet grows while the total stays within `replicas +
//!   maxSurge`; old ones shrink (unhealthy pods first) while the available pods stay at
//!   least `replicas - maxUnavailable` (percentages of `replicas`, surge rounded up,
//!   unavailability down; both zero means one unavailable).
//! - **Recreate**: old ReplicaSets go to zero, and once their pods are gone the new one grows.
//! - A change of `replicas` alone (a scaling event: an active ReplicaSet's
//!   `desired-replicas` differs) scales the only active ReplicaSet, or spreads the change
//!   over the active ones in proportion to their sizes.
//! - **Paused**: only scaling; no new ReplicaSet, `Progressing` is `Unknown`
//!   (`DeploymentPaused`), and `DeploymentResumed` when resumed.
//! - Once a rollout completes, ReplicaSets scaled to zero beyond `revisionHistoryLimit` are
//!   deleted, oldest revision first.
//! - Status: `replicas`, `updatedReplicas`, `readyReplicas`, `availableReplicas`,
//!   `unavailableReplicas`, `observedGeneration`, `collisionCount`, and the conditions
//!   `Available` (`MinimumReplicasAvailable`) and `Progressing` (`NewReplicaSetCreated`,
//!   `ReplicaSetUpdated`, `NewReplicaSetAvailable`, `ProgressDeadlineExceeded` once
//!   `progressDeadlineSeconds` pass without progress), with upstream's messages.
//!
//! The template hash is FNV-32a of the template's JSON (and the collision count), written
//! with upstream's safe alphabet: the same shape as upstream's, not the same value.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::obj;

const REVISION: &str = "deployment.kubernetes.io/revision";
const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX: &str = "deployment.kubernetes.io/max-replicas";
const HASH: &str = "pod-template-hash";
/// Annotations of a Deployment never copied to its ReplicaSets.
const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED,
    MAX,
    "deprecated.deployment.rollback.to",
];

/// Starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let watches = vec![
        Watched::itself(&api.res.deployments),
        Watched::owned(&api.res.replicasets, "Deployment"),
    ];
    let controller = Deployments {
        api: api.clone(),
        who: Actor::controller("deployment-controller"),
    };
    controller::spawn(&api.storage, watches, controller)
}

struct Deployments {
    api: Api,
    who: Actor,
}

/// One sync of one Deployment: what it read and what it did.
struct Sync<'a> {
    api: &'a Api,
    who: &'a Actor,
    d: Value,
    /// The Deployment's ReplicaSets, kept current as this sync writes them.
    rss: Vec<Value>,
    /// The Progressing condition a step set (`NewReplicaSetCreated`).
    progressing: Option<(&'static str, String)>,
    retry: Option<Duration>,
}

impl Reconcile for Deployments {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let d = self
            .api
            .get(&self.api.res.deployments, Some(&key.0), &key.1)?;
        if obj::is_deleting(&d) {
            return None;
        }
        obj::selector(&d, "/spec/selector")?;
        // Its ReplicaSets, from the store's owner index.
        let rss = self
            .api
            .owned_shared(&self.api.res.replicasets, obj::uid(&d))
            .into_iter()
            .filter(|rs| obj::controlled_by(rs, &d))
            .map(|rs| (*rs).clone())
            .collect();
        let mut sync = Sync {
            api: &self.api,
            who: &self.who,
            d,
            rss,
            progressing: None,
            retry: None,
        };
        sync.run()
    }
}

fn replicas(obj: &Value) -> i64 {
    obj::i64_at(obj, "/spec/replicas").unwrap_or(1)
}

fn status_of(obj: &Value, field: &str) -> i64 {
    obj::i64_at(obj, &format!("/status/{field}")).unwrap_or(0)
}

fn revision(rs: &Value) -> i64 {
    obj::annotation(rs, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// A pod template without the hash label, to compare templates.
fn without_hash(template: Option<&Value>) -> Value {
    let mut t = template.cloned().unwrap_or(Value::Null);
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(HASH);
    }
    t
}

/// An int-or-percent of `total` (rounded up or down).
fn scaled(v: Option<&Value>, total: i64, up: bool, default: &str) -> i64 {
    let v = v.cloned().unwrap_or_else(|| json!(default));
    if let Some(n) = v.as_i64() {
        return n;
    }
    let pct: f64 = v
        .as_str()
        .and_then(|s| s.strip_suffix('%'))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0.0);
    let x = pct * total as f64 / 100.0;
    (if up { x.ceil() } else { x.floor() }) as i64
}

/// The template hash: FNV-32a of the template and the collision count, in upstream's alphabet.
fn template_hash(template: &Value, collisions: Option<i64>) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            h ^= u32::from(*b);
            h = h.wrapping_mul(0x0100_0193);
        }
    };
    feed(template.to_string().as_bytes());
    if let Some(c) = collisions {
        feed(&(c as u32).to_le_bytes());
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    h.to_string()
        .bytes()
        .map(|b| ALPHABET[b as usize % ALPHABET.len()] as char)
        .collect()
}

impl Sync<'_> {
    fn ns(&self) -> String {
        obj::namespace(&self.d).to_string()
    }

    fn strategy(&self) -> &str {
        match obj::str_at(&self.d, "/spec/strategy/type") {
            "" => "RollingUpdate",
            s => s,
        }
    }

    /// `(maxSurge, maxUnavailable)`, resolved against `replicas`.
    fn fenceposts(&self) -> (i64, i64) {
        if self.strategy() != "RollingUpdate" {
            return (0, 0);
        }
        let total = replicas(&self.d);
        let ru = self.d.pointer("/spec/strategy/rollingUpdate");
        let surge = scaled(ru.and_then(|r| r.get("maxSurge")), total, true, "25%");
        let unavailable = scaled(
            ru.and_then(|r| r.get("maxUnavailable")),
            total,
            false,
            "25%",
        );
        if surge == 0 && unavailable == 0 {
            (0, 1)
        } else {
            (surge, unavailable)
        }
    }

    fn run(&mut self) -> Option<Duration> {
        let paused = self
            .d
            .pointer("/spec/paused")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if paused || self.scaling_event() {
            self.new_and_old(false);
            self.scale();
        } else if self.strategy() == "Recreate" {
            self.recreate();
        } else {
            self.rolling();
        }
        let next = self.status(paused);
        self.retry.or(next)
    }

    /// Whether an active ReplicaSet was sized for another `replicas`.
    fn scaling_event(&self) -> bool {
        let want = replicas(&self.d).to_string();
        self.rss
            .iter()
            .any(|rs| replicas(rs) > 0 && obj::annotation(rs, DESIRED).is_some_and(|d| d != want))
    }

    /// The index of the new ReplicaSet, creating it when asked; syncs its revision.
    fn new_and_old(&mut self, create: bool) -> Option<usize> {
        let template = without_hash(self.d.pointer("/spec/template"));
        self.rss.sort_by(|a, b| {
            obj::str_at(a, "/metadata/creationTimestamp")
                .cmp(obj::str_at(b, "/metadata/creationTimestamp"))
                .then_with(|| obj::name(a).cmp(obj::name(b)))
        });
        let found = self
            .rss
            .iter()
            .position(|rs| without_hash(rs.pointer("/spec/template")) == template);
        let max_old = self
            .rss
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != found)
            .map(|(_, rs)| revision(rs))
            .max()
            .unwrap_or(0);
        let next = max_old + 1;
        let index = match found {
            Some(i) => {
                let rs = &self.rss[i];
                let mut annotations = rs
                    .pointer("/metadata/annotations")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                self.copy_annotations(&mut annotations);
                let old = revision(rs);
                if old < next {
                    annotations[REVISION] = json!(next.to_string());
                    if old > 0 {
                        let history = match obj::annotation(rs, REVISION_HISTORY) {
                            Some(h) if !h.is_empty() => format!("{h},{old}"),
                            _ => old.to_string(),
                        };
                        annotations[REVISION_HISTORY] = json!(history);
                    }
                }
                if rs.pointer("/metadata/annotations") != Some(&annotations) {
                    let mut new = rs.clone();
                    new["metadata"]["annotations"] = annotations;
                    self.put(i, new);
                }
                if self.progressing_condition().is_none() {
                    self.progressing = Some((
                        "FoundNewReplicaSet",
                        format!("Found new replica set \"{}\"", obj::name(&self.rss[i])),
                    ));
                }
                Some(i)
            }
            None if create => self.create_new(next),
            None => None,
        };
        if let Some(i) = index {
            let rev = obj::annotation(&self.rss[i], REVISION)
                .unwrap_or("")
                .to_string();
            if obj::annotation(&self.d, REVISION) != Some(rev.as_str()) {
                let patch = json!({"metadata": {"annotations": {REVISION: rev}}});
                match self.api.merge_patch(
                    &self.api.res.deployments,
                    Some(&self.ns()),
                    obj::name(&self.d),
                    None,
                    &patch,
                    self.who,
                ) {
                    Ok(d) => self.d = d,
                    Err(e) => {
                        tracing::debug!("annotating deployment {}: {e}", obj::name(&self.d));
                        self.retry = Some(Duration::from_millis(100));
                    }
                }
            }
        }
        index
    }

    fn copy_annotations(&self, to: &mut Value) {
        let from = obj::string_map(&self.d, "/metadata/annotations");
        if let Some(to) = to.as_object_mut() {
            for (k, v) in from {
                if !NOT_COPIED.contains(&k.as_str()) {
                    to.insert(k, json!(v));
                }
            }
        }
    }

    /// Creates the new ReplicaSet at revision `revision`.
    fn create_new(&mut self, revision: i64) -> Option<usize> {
        let collisions = obj::i64_at(&self.d, "/status/collisionCount");
        let mut template = self.d.pointer("/spec/template").cloned()?;
        let hash = template_hash(&template, collisions);
        template["metadata"]["labels"][HASH] = json!(hash);
        let mut selector = self.d.pointer("/spec/selector").cloned()?;
        selector["matchLabels"][HASH] = json!(hash);
        let (surge, _) = self.fenceposts();
        let want = replicas(&self.d);
        let size = self.new_replicas(0);
        let mut annotations = json!({
            REVISION: revision.to_string(),
            DESIRED: want.to_string(),
            MAX: (want + surge).to_string(),
        });
        self.copy_annotations(&mut annotations);
        let name = format!("{}-{hash}", obj::name(&self.d));
        let mut labels = template["metadata"]["labels"].clone();
        labels[HASH] = json!(hash);
        let mut spec = json!({"replicas": size, "selector": selector, "template": template});
        if let Some(m) = self.d.pointer("/spec/minReadySeconds") {
            spec["minReadySeconds"] = m.clone();
        }
        let body = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {
                "name": name, "namespace": self.ns(), "labels": labels,
                "annotations": annotations,
                "ownerReferences": [obj::controller_ref(&self.d)],
            },
            "spec": spec,
        });
        match self
            .api
            .create(&self.api.res.replicasets, Some(&self.ns()), body, self.who)
        {
            Ok(rs) => {
                self.event(&format!("Scaled up replica set {name} from 0 to {size}"));
                self.progressing = Some((
                    "NewReplicaSetCreated",
                    format!("Created new replica set \"{name}\""),
                ));
                self.rss.push(rs);
                Some(self.rss.len() - 1)
            }
            Err(e) if e.code == 409 => {
                // A ReplicaSet of that name with another template: count the collision,
                // which changes the hash.
                let patch = json!({"status": {"collisionCount": collisions.unwrap_or(0) + 1}});
                if let Ok(d) = self.api.merge_patch(
                    &self.api.res.deployments,
                    Some(&self.ns()),
                    obj::name(&self.d),
                    Some("status"),
                    &patch,
                    self.who,
                ) {
                    self.d = d;
                }
                self.retry = Some(Duration::ZERO);
                None
            }
            Err(e) => {
                tracing::debug!("creating replicaset {name}: {e}");
                self.retry = Some(Duration::from_secs(1));
                None
            }
        }
    }

    /// How big the new ReplicaSet (now `current`) may grow (`NewRSNewReplicas`).
    fn new_replicas(&self, current: i64) -> i64 {
        let want = replicas(&self.d);
        if self.strategy() != "RollingUpdate" {
            return want;
        }
        let (surge, _) = self.fenceposts();
        let total: i64 = self.rss.iter().map(replicas).sum();
        let max_total = want + surge;
        if total >= max_total {
            return current;
        }
        current + (max_total - total).min(want - current).max(0)
    }

    /// Replaces ReplicaSet `i` (an update naming the version read).
    fn put(&mut self, i: usize, new: Value) -> bool {
        match self.api.update(
            &self.api.res.replicasets,
            Some(&self.ns()),
            None,
            new,
            self.who,
        ) {
            Ok(rs) => {
                self.rss[i] = rs;
                true
            }
            Err(e) => {
                tracing::debug!("updating replicaset {}: {e}", obj::name(&self.rss[i]));
                self.retry = Some(Duration::from_millis(100));
                false
            }
        }
    }

    /// Scales ReplicaSet `i` to `size`, noting the Deployment's size on it.
    fn scale_rs(&mut self, i: usize, size: i64) -> bool {
        let rs = &self.rss[i];
        let from = replicas(rs);
        let (surge, _) = self.fenceposts();
        let want = replicas(&self.d);
        let mut new = rs.clone();
        new["spec"]["replicas"] = json!(size);
        new["metadata"]["annotations"][DESIRED] = json!(want.to_string());
        new["metadata"]["annotations"][MAX] = json!((want + surge).to_string());
        if new == *rs {
            return false;
        }
        let name = obj::name(rs).to_string();
        if !self.put(i, new) {
            return false;
        }
        if from != size {
            let dir = if size > from { "up" } else { "down" };
            self.event(&format!(
                "Scaled {dir} replica set {name} from {from} to {size}"
            ));
        }
        from != size
    }

    fn event(&self, note: &str) {
        self.api.event(
            &self.d,
            "Normal",
            "ScalingReplicaSet",
            "Scaling",
            note,
            self.who,
        );
    }

    fn rolling(&mut self) {
        let Some(new) = self.new_and_old(true) else {
            return;
        };
        let want = replicas(&self.d);
        // The new ReplicaSet first.
        let current = replicas(&self.rss[new]);
        let target = if current > want {
            want
        } else {
            self.new_replicas(current)
        };
        if target != current && self.scale_rs(new, target) {
            return;
        }
        // Then the old ones.
        let old_total: i64 = self
            .rss
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != new)
            .map(|(_, rs)| replicas(rs))
            .sum();
        if old_total == 0 {
            return;
        }
        let (_, max_unavailable) = self.fenceposts();
        let min_available = want - max_unavailable;
        let all: i64 = self.rss.iter().map(replicas).sum();
        let new_unavailable =
            replicas(&self.rss[new]) - status_of(&self.rss[new], "availableReplicas");
        let mut budget = all - min_available - new_unavailable;
        if budget <= 0 {
            return;
        }
        // Unhealthy old pods first, oldest ReplicaSet first.
        let olds: Vec<usize> = (0..self.rss.len()).filter(|i| *i != new).collect();
        for &i in &olds {
            if budget <= 0 {
                break;
            }
            let size = replicas(&self.rss[i]);
            let unhealthy = size - status_of(&self.rss[i], "availableReplicas");
            let cut = unhealthy.min(budget).min(size);
            if cut > 0 {
                self.scale_rs(i, size - cut);
                budget -= cut;
            }
        }
        // Then healthy ones, while enough stay available.
        let available: i64 = self
            .rss
            .iter()
            .map(|rs| status_of(rs, "availableReplicas").min(replicas(rs)))
            .sum();
        let mut cut_total = (available - min_available).min(budget);
        for &i in &olds {
            if cut_total <= 0 {
                break;
            }
            let size = replicas(&self.rss[i]);
            let cut = size.min(cut_total);
            if cut > 0 {
                self.scale_rs(i, size - cut);
                cut_total -= cut;
            }
        }
    }

    fn recreate(&mut self) {
        let new = self.new_and_old(false);
        let mut scaled_down = false;
        for i in 0..self.rss.len() {
            if Some(i) != new && replicas(&self.rss[i]) > 0 {
                scaled_down |= self.scale_rs(i, 0);
            }
        }
        if scaled_down {
            return;
        }
        let old_running = self
            .rss
            .iter()
            .enumerate()
            .any(|(i, rs)| Some(i) != new && status_of(rs, "replicas") > 0);
        if old_running {
            return;
        }
        let new = match new {
            Some(i) => Some(i),
            None => self.new_and_old(true),
        };
        if let Some(i) = new {
            let want = replicas(&self.d);
            if replicas(&self.rss[i]) != want {
                self.scale_rs(i, want);
            }
        }
    }

    /// Scaling: the only active ReplicaSet takes the new size; several share it.
    fn scale(&mut self) {
        let want = replicas(&self.d);
        let new = self.find_new();
        let active: Vec<usize> = (0..self.rss.len())
            .filter(|i| replicas(&self.rss[*i]) > 0)
            .collect();
        let single = match active.len() {
            0 => new.or(self.rss.len().checked_sub(1)),
            1 => Some(active[0]),
            _ => None,
        };
        if let Some(i) = single {
            self.scale_rs(i, want);
            return;
        }
        if let Some(n) = new
            && replicas(&self.rss[n]) == want
            && status_of(&self.rss[n], "availableReplicas") == want
        {
            for i in active.into_iter().filter(|i| *i != n) {
                self.scale_rs(i, 0);
            }
            return;
        }
        if self.strategy() != "RollingUpdate" {
            return;
        }
        let (surge, _) = self.fenceposts();
        let allowed = want + surge;
        let total: i64 = self.rss.iter().map(replicas).sum();
        let to_add = allowed - total;
        if to_add == 0 {
            return;
        }
        // Proportional to each one's share of the size it was made for.
        let mut order = active.clone();
        order.sort_by_key(|i| {
            let created = obj::str_at(&self.rss[*i], "/metadata/creationTimestamp").to_string();
            let size = replicas(&self.rss[*i]);
            if to_add > 0 {
                (std::cmp::Reverse(size), std::cmp::Reverse(created))
            } else {
                (std::cmp::Reverse(size), std::cmp::Reverse(String::new()))
            }
        });
        let mut sizes: Vec<(usize, i64)> = Vec::new();
        let mut added = 0;
        for &i in &order {
            let rs = &self.rss[i];
            let size = replicas(rs);
            let annotated = obj::annotation(rs, MAX)
                .and_then(|m| m.parse::<i64>().ok())
                .filter(|m| *m > 0)
                .unwrap_or(total.max(1));
            let fraction = ((size * allowed) as f64 / annotated as f64).round() as i64 - size;
            let part = if to_add > 0 {
                fraction.min(to_add - added).max(0)
            } else {
                fraction.max(to_add - added).min(0)
            };
            added += part;
            sizes.push((i, size + part));
        }
        if let Some(first) = sizes.first_mut() {
            first.1 = (first.1 + to_add - added).max(0);
        }
        for (i, size) in sizes {
            self.scale_rs(i, size);
        }
    }

    /// The new ReplicaSet, without creating it.
    fn find_new(&self) -> Option<usize> {
        let template = without_hash(self.d.pointer("/spec/template"));
        self.rss
            .iter()
            .position(|rs| without_hash(rs.pointer("/spec/template")) == template)
    }

    fn progressing_condition(&self) -> Option<&Value> {
        obj::condition(&self.d, "Progressing")
    }

    /// Writes the status; deletes old ReplicaSets beyond the history limit once complete.
    /// Asks to be called again at the progress deadline.
    fn status(&mut self, paused: bool) -> Option<Duration> {
        let want = replicas(&self.d);
        let new = self.find_new();
        let sum = |f: &str| self.rss.iter().map(|rs| status_of(rs, f)).sum::<i64>();
        let total_spec: i64 = self.rss.iter().map(replicas).sum();
        let updated = new
            .map(|i| status_of(&self.rss[i], "replicas"))
            .unwrap_or(0);
        let (actual, ready, available) = (
            sum("replicas"),
            sum("readyReplicas"),
            sum("availableReplicas"),
        );
        let generation = obj::i64_at(&self.d, "/metadata/generation").unwrap_or(0);
        let (_, max_unavailable) = self.fenceposts();
        let now = self.api.clock.now();
        let stamp = crate::clock::time(now);
        let mut conditions: Vec<Value> = obj::array(&self.d, "/status/conditions").to_vec();
        let set = |conditions: &mut Vec<Value>,
                   type_: &str,
                   status: &str,
                   reason: &str,
                   message: String,
                   keep: bool| {
            let current = conditions.iter().find(|c| obj::str_at(c, "/type") == type_);
            if keep
                && let Some(c) = current
                && obj::str_at(c, "/status") == status
                && obj::str_at(c, "/reason") == reason
            {
                return;
            }
            let since = current
                .filter(|c| obj::str_at(c, "/status") == status)
                .map(|c| obj::str_at(c, "/lastTransitionTime").to_string())
                .unwrap_or_else(|| stamp.clone());
            conditions.retain(|c| obj::str_at(c, "/type") != type_);
            conditions.push(json!({
                "type": type_, "status": status, "lastUpdateTime": stamp,
                "lastTransitionTime": since, "reason": reason, "message": message,
            }));
        };
        if available >= want - max_unavailable {
            set(
                &mut conditions,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.".into(),
                true,
            );
        } else {
            set(
                &mut conditions,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.".into(),
                true,
            );
        }
        let old_status = self.d.get("status").cloned().unwrap_or(Value::Null);
        let new_name = new.map(|i| obj::name(&self.rss[i]).to_string());
        let deadline = obj::i64_at(&self.d, "/spec/progressDeadlineSeconds");
        let complete = updated == want && actual == want && available == want;
        let mut next = None;
        if paused {
            set(
                &mut conditions,
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused".into(),
                true,
            );
        } else if self
            .progressing_condition()
            .is_some_and(|c| obj::str_at(c, "/reason") == "DeploymentPaused")
        {
            set(
                &mut conditions,
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed".into(),
                true,
            );
        } else if let Some((reason, message)) = self.progressing.take() {
            set(
                &mut conditions,
                "Progressing",
                "True",
                reason,
                message,
                true,
            );
        } else if deadline.is_some() {
            let old = |f: &str| status_of(&self.d, f);
            let progressed = updated > old("updatedReplicas")
                || actual - updated < old("replicas") - old("updatedReplicas")
                || ready > old("readyReplicas")
                || available > old("availableReplicas");
            let what = match &new_name {
                Some(n) => format!("ReplicaSet \"{n}\""),
                None => format!("Deployment \"{}\"", obj::name(&self.d)),
            };
            if complete && new_name.is_some() {
                set(
                    &mut conditions,
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    format!("{what} has successfully progressed."),
                    true,
                );
            } else if progressed {
                set(
                    &mut conditions,
                    "Progressing",
                    "True",
                    "ReplicaSetUpdated",
                    format!("{what} is progressing."),
                    false,
                );
            } else if let Some(c) = self.progressing_condition().cloned()
                && obj::str_at(&c, "/reason") != "NewReplicaSetAvailable"
                && obj::str_at(&c, "/reason") != "ProgressDeadlineExceeded"
                && let Some(since) = crate::clock::parse(obj::str_at(&c, "/lastUpdateTime"))
            {
                let until = since + chrono::Duration::seconds(deadline.unwrap_or(0));
                if until <= now {
                    set(
                        &mut conditions,
                        "Progressing",
                        "False",
                        "ProgressDeadlineExceeded",
                        format!("{what} has timed out progressing."),
                        true,
                    );
                } else {
                    next = (until - now)
                        .to_std()
                        .ok()
                        .map(|d| d + Duration::from_millis(1));
                }
            }
        }
        let mut patch = json!({"status": {
            "observedGeneration": generation,
            "replicas": obj::omit_zero(actual),
            "updatedReplicas": obj::omit_zero(updated),
            "readyReplicas": obj::omit_zero(ready),
            "availableReplicas": obj::omit_zero(available),
            "unavailableReplicas": obj::omit_zero((total_spec - available).max(0)),
            "conditions": conditions,
        }});
        if old_status.get("collisionCount").is_some() {
            patch["status"]["collisionCount"] = old_status["collisionCount"].clone();
        }
        if obj::changes(&self.d, &patch) {
            match self.api.merge_patch(
                &self.api.res.deployments,
                Some(&self.ns()),
                obj::name(&self.d),
                Some("status"),
                &patch,
                self.who,
            ) {
                Ok(d) => self.d = d,
                Err(e) => {
                    tracing::debug!("updating deployment {} status: {e}", obj::name(&self.d));
                    return Some(Duration::from_millis(100));
                }
            }
        }
        if complete && !paused {
            self.clean_up(new);
        }
        next
    }

    /// Deletes the old ReplicaSets beyond `revisionHistoryLimit` (scaled to zero, no pods).
    fn clean_up(&mut self, new: Option<usize>) {
        let limit = obj::i64_at(&self.d, "/spec/revisionHistoryLimit").unwrap_or(10);
        let mut old: Vec<&Value> = self
            .rss
            .iter()
            .enumerate()
            .filter(|(i, rs)| {
                Some(*i) != new
                    && replicas(rs) == 0
                    && status_of(rs, "replicas") == 0
                    && !obj::is_deleting(rs)
            })
            .map(|(_, rs)| rs)
            .collect();
        let excess = old.len() as i64 - limit;
        if excess <= 0 {
            return;
        }
        old.sort_by_key(|rs| revision(rs));
        for rs in old.into_iter().take(excess as usize) {
            if let Err(e) = self.api.delete(
                &self.api.res.replicasets,
                Some(obj::namespace(rs)),
                obj::name(rs),
                None,
                Some(obj::uid(rs)),
                self.who,
            ) {
                tracing::debug!("deleting old replicaset {}: {e}", obj::name(rs));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenceposts_round_as_upstream() {
        assert_eq!(scaled(None, 10, true, "25%"), 3);
        assert_eq!(scaled(None, 10, false, "25%"), 2);
        assert_eq!(scaled(Some(&json!(2)), 10, true, "25%"), 2);
        assert_eq!(scaled(Some(&json!("50%")), 3, true, "25%"), 2);
        assert_eq!(scaled(Some(&json!("50%")), 3, false, "25%"), 1);
    }

    #[test]
    fn the_hash_uses_the_safe_alphabet_and_the_collision_count() {
        let t = json!({"spec": {"containers": [{"image": "nginx"}]}});
        let h = template_hash(&t, None);
        assert!(!h.is_empty() && h.len() <= 10, "{h}");
        assert!(
            h.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)),
            "{h}"
        );
        assert_eq!(h, template_hash(&t, None));
        assert_ne!(h, template_hash(&t, Some(1)));
    }
}
