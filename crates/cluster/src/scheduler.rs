//! The scheduler (`default-scheduler`): binds each pending pod through `pods/NAME/binding` to a
//! node that passes upstream's filters, in upstream's order, each node stopping at its first
//! failing one: `NodeUnschedulable`, `NodeName`, `TaintToleration` (`NoSchedule` and
//! `NoExecute` taints), `NodeAffinity` (`nodeSelector` and required node affinity), and
//! `NodeResourcesFit` (requests of the containers, the largest init container, and the pod
//! overhead, against allocatable minus the requests of the pods already there, and the pod
//! count). Among the nodes that fit it picks the one with the fewest pods, then the least
//! requested CPU share (spreading replicas, as the default scores do).
//!
//! A pod that fits nowhere stays `Pending` with `PodScheduled=False` (reason `Unschedulable`)
//! and a `FailedScheduling` Warning whose note is upstream's ("0/3 nodes are available: 3
//! Insufficient cpu. preemption: ..."), written again only when the message changes. Pending
//! pods are tried again when a node changes or an assigned pod goes away or ends, and every
//! 5 minutes, as upstream flushes its unschedulable queue.
//!
//! Claims (`VolumeBinding`, `persistentVolumeClaim` and `ephemeral` volumes): a pod whose
//! claim is missing or unbound (and not waiting for
//! its first consumer) stays Pending with upstream's message ("pod has unbound immediate
//! PersistentVolumeClaims"); bound volumes' node affinity filters nodes ("node(s) had
//! volume node affinity conflict"); for claims waiting for a consumer the chosen node is
//! written to them (`volume.kubernetes.io/selected-node`) and the pod is bound once they are.
//!
//! Inter-pod affinity and anti-affinity (required terms) come last, as upstream's
//! `InterPodAffinity` filter: see [`crate::interpod`].
//!
//! Left out: preferred inter-pod terms, topology spread constraints, host ports, volume
//! limits, preemption (the message says none helps), priorities.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::obj;
use crate::quantity::milli;

/// The scheduler's name, which pods choose in `spec.schedulerName`.
const SCHEDULER: &str = "default-scheduler";
/// The key that asks to try every pending pod again.
fn everything() -> Key {
    (String::new(), String::new())
}

/// What pods request of a node, in thousandths of each unit.
#[derive(Clone, Debug, Default)]
struct Amounts {
    cpu: i128,
    memory: i128,
    storage: i128,
    pods: i128,
}

/// Starts the scheduler.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let watches = vec![
        Watched::mapped(&api.res.pods, |pod| {
            if obj::str_at(pod, "/spec/nodeName").is_empty() {
                vec![controller::key_of(pod)]
            } else if obj::pod_terminal(pod) || obj::is_deleting(pod) {
                // Its resources are (about to be) free.
                vec![everything()]
            } else {
                Vec::new()
            }
        }),
        Watched::mapped(&api.res.nodes, |_| vec![everything()]),
        // A claim bound (or created) lets the pods using it go on.
        Watched::mapped(&api.res.pvcs, |_| vec![everything()]),
    ];
    let scheduler = Scheduler {
        api: api.clone(),
        who: Actor::new("kube-scheduler", "system:kube-scheduler", &[], SCHEDULER),
        reported: HashMap::new(),
        nodes: Vec::new(),
        used: BTreeMap::new(),
        placed: Default::default(),
    };
    controller::spawn(&api.storage, watches, scheduler)
}

struct Scheduler {
    api: Api,
    who: Actor,
    /// The last FailedScheduling message per pod uid.
    reported: HashMap<String, String>,
    /// The nodes, snapshot at the start of each batch.
    nodes: Vec<Value>,
    /// What the assigned pods request, per node.
    used: BTreeMap<String, Amounts>,
    /// The assigned pods, for inter-pod affinity.
    placed: crate::interpod::Placed,
}

impl Reconcile for Scheduler {
    fn begin(&mut self) {
        self.nodes = self.api.list(&self.api.res.nodes, None, None, None);
        self.used.clear();
        let assigned =
            (self.api).list_shared(&self.api.res.pods, None, None, Some("spec.nodeName!="));
        self.placed = Default::default();
        for pod in assigned.iter().filter(|p| !obj::pod_terminal(p)) {
            let node = obj::str_at(pod, "/spec/nodeName").to_string();
            add(self.used.entry(node.clone()).or_default(), &requests(pod));
            self.placed.add(&node, pod.clone());
        }
    }

    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        if *key == everything() {
            let pending = self.api.list(
                &self.api.res.pods,
                None,
                None,
                Some("spec.nodeName=".into()),
            );
            for pod in pending {
                self.schedule(&pod);
            }
            return Some(Duration::from_secs(300));
        }
        let pod = self.api.get(&self.api.res.pods, Some(&key.0), &key.1)?;
        self.schedule(&pod);
        None
    }
}

impl Scheduler {
    fn schedule(&mut self, pod: &Value) {
        if !obj::str_at(pod, "/spec/nodeName").is_empty()
            || obj::is_deleting(pod)
            || obj::pod_terminal(pod)
            || obj::str_at(pod, "/spec/schedulerName") != SCHEDULER
            || !obj::array(pod, "/spec/schedulingGates").is_empty()
        {
            return;
        }
        let volumes = match self.volumes(pod) {
            Ok(v) => v,
            Err(why) => {
                let n = self.nodes.len();
                let message = if n == 0 {
                    "no nodes available to schedule pods".to_string()
                } else {
                    format!(
                        "0/{n} nodes are available: {why}. preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
                    )
                };
                self.unschedulable(pod, message);
                return;
            }
        };
        let want = requests(pod);
        let mut fits: Vec<(&Value, (i128, i128, &str))> = Vec::new();
        let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut preemption: BTreeMap<&str, usize> = BTreeMap::new();
        let by_name: BTreeMap<&str, &Value> =
            self.nodes.iter().map(|n| (obj::name(n), n)).collect();
        for node in &self.nodes {
            let used = self.used.get(obj::name(node)).cloned().unwrap_or_default();
            let verdict = filter(pod, node, &want, &used)
                .and_then(|()| volumes.filter(node))
                .and_then(|()| self.placed.filter(pod, node, &by_name));
            match verdict {
                Ok(()) => {
                    let cpu = milli(obj::str_at(node, "/status/allocatable/cpu")).unwrap_or(1);
                    let share = (used.cpu + want.cpu) * 1000 / cpu.max(1);
                    fits.push((node, (used.pods, share, obj::name(node))));
                }
                Err((failures, resources)) => {
                    for f in failures {
                        *reasons.entry(f).or_default() += 1;
                    }
                    let why = if resources {
                        "No preemption victims found for incoming pod"
                    } else {
                        "Preemption is not helpful for scheduling"
                    };
                    *preemption.entry(why).or_default() += 1;
                }
            }
        }
        let (ns, name) = (obj::namespace(pod), obj::name(pod));
        if let Some((node, _)) = fits.into_iter().min_by_key(|(_, score)| *score) {
            let node = obj::name(node).to_string();
            if !volumes.waiting.is_empty() {
                // Upstream's PreBind: the claims learn the node and are provisioned there;
                // the pod is bound once they are (a claim's change tries it again).
                self.select_node(&volumes.waiting, &node);
                return;
            }
            match self.api.bind(ns, name, &node, &self.who) {
                Ok(()) => {
                    add(self.used.entry(node.clone()).or_default(), &want);
                    let mut bound = pod.clone();
                    bound["spec"]["nodeName"] = Value::from(node.clone());
                    self.placed.add(&node, std::sync::Arc::new(bound));
                    self.reported.remove(obj::uid(pod));
                    let note = format!("Successfully assigned {ns}/{name} to {node}");
                    self.api
                        .event(pod, "Normal", "Scheduled", "Binding", &note, &self.who);
                }
                Err(e) => tracing::debug!("binding {ns}/{name} to {node}: {e}"),
            }
            return;
        }
        let message = unschedulable_message(self.nodes.len(), &reasons, &preemption);
        self.unschedulable(pod, message);
    }

    /// Marks the pod unschedulable with `message` (and a `FailedScheduling` Event), unless
    /// that was its last message.
    fn unschedulable(&mut self, pod: &Value, message: String) {
        let (ns, name) = (obj::namespace(pod), obj::name(pod));
        if self.reported.get(obj::uid(pod)) == Some(&message) {
            return;
        }
        let mut conditions: Vec<Value> = obj::array(pod, "/status/conditions")
            .iter()
            .filter(|c| obj::str_at(c, "/type") != "PodScheduled")
            .cloned()
            .collect();
        conditions.push(json!({
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message, "lastProbeTime": null,
            "lastTransitionTime": self.api.clock.stamp(),
        }));
        let patch = json!({"status": {"conditions": conditions}});
        if let Err(e) = self.api.merge_patch(
            &self.api.res.pods,
            Some(ns),
            name,
            Some("status"),
            &patch,
            &self.who,
        ) {
            tracing::debug!("marking {ns}/{name} unschedulable: {e}");
            return;
        }
        self.api.event(
            pod,
            "Warning",
            "FailedScheduling",
            "Scheduling",
            &message,
            &self.who,
        );
        self.reported.insert(obj::uid(pod).to_string(), message);
    }
}

/// What the pod's claims ask of a node (upstream's `VolumeBinding` plugin).
struct Volumes {
    /// The node affinity of the volumes bound to its claims.
    affinities: Vec<Value>,
    /// The node the claims waiting for their first consumer were provisioned for, if any.
    selected: Option<String>,
    /// The claims waiting for a node (`WaitForFirstConsumer`, unbound).
    waiting: Vec<Value>,
}

impl Volumes {
    fn filter(&self, node: &Value) -> Result<(), (Vec<String>, bool)> {
        let conflict = self.affinities.iter().any(|a| !terms_match(a, node))
            || self
                .selected
                .as_deref()
                .is_some_and(|s| s != obj::name(node));
        if conflict {
            return Err((
                vec!["node(s) had volume node affinity conflict".into()],
                false,
            ));
        }
        Ok(())
    }
}

impl Scheduler {
    /// The pod's claims: `Err` with upstream's PreFilter message when one is missing, being
    /// deleted, or unbound without waiting for a consumer.
    fn volumes(&self, pod: &Value) -> Result<Volumes, String> {
        let mut v = Volumes {
            affinities: Vec::new(),
            selected: None,
            waiting: Vec::new(),
        };
        let ns = Some(obj::namespace(pod));
        let mut unbound_immediate = false;
        for volume in obj::array(pod, "/spec/volumes") {
            let ephemeral = volume.get("ephemeral").is_some();
            let claim = if ephemeral {
                crate::ephemeral::claim_name(pod, volume)
            } else {
                obj::str_at(volume, "/persistentVolumeClaim/claimName").to_string()
            };
            if claim.is_empty() {
                continue;
            }
            let Some(pvc) = self.api.get(&self.api.res.pvcs, ns, &claim) else {
                return Err(if ephemeral {
                    format!(
                        "waiting for ephemeral volume controller to create the persistentvolumeclaim \"{claim}\""
                    )
                } else {
                    format!("persistentvolumeclaim \"{claim}\" not found")
                });
            };
            if obj::str_at(&pvc, "/status/phase") == "Lost" {
                return Err(format!(
                    "persistentvolumeclaim \"{claim}\" bound to non-existent persistentvolume \"{}\"",
                    obj::str_at(&pvc, "/spec/volumeName")
                ));
            }
            if obj::is_deleting(&pvc) {
                return Err(format!(
                    "persistentvolumeclaim \"{claim}\" is being deleted"
                ));
            }
            if ephemeral && !obj::controlled_by(&pvc, pod) {
                return Err(format!(
                    "PVC {}/{claim} was not created for pod {}/{} (pod is not owner)",
                    obj::namespace(pod),
                    obj::namespace(pod),
                    obj::name(pod)
                ));
            }
            match obj::str_at(&pvc, "/spec/volumeName") {
                "" if crate::volume::waits_for_consumer(&self.api, &pvc) => {
                    if let Some(node) = obj::annotation(&pvc, crate::volume::SELECTED_NODE) {
                        v.selected = Some(node.to_string());
                    }
                    v.waiting.push(pvc);
                }
                "" => unbound_immediate = true,
                pv => {
                    if let Some(a) = self
                        .api
                        .get(&self.api.res.pvs, None, pv)
                        .and_then(|pv| pv.pointer("/spec/nodeAffinity/required").cloned())
                    {
                        v.affinities.push(a);
                    }
                }
            }
        }
        if unbound_immediate {
            return Err("pod has unbound immediate PersistentVolumeClaims".into());
        }
        Ok(v)
    }

    /// Annotates the claims waiting for a consumer with the node chosen.
    fn select_node(&self, claims: &[Value], node: &str) {
        for pvc in claims {
            if obj::annotation(pvc, crate::volume::SELECTED_NODE).is_some() {
                continue;
            }
            let patch = json!({"metadata": {"annotations": {crate::volume::SELECTED_NODE: node}}});
            if let Err(e) = self.api.merge_patch(
                &self.api.res.pvcs,
                Some(obj::namespace(pvc)),
                obj::name(pvc),
                None,
                &patch,
                &self.who,
            ) {
                tracing::debug!("selecting node {node} for claim {}: {e}", obj::name(pvc));
            }
        }
    }
}

/// Upstream's FitError message: the filters' reasons as a sorted histogram, then the
/// preemption's.
fn unschedulable_message(
    nodes: usize,
    reasons: &BTreeMap<String, usize>,
    preemption: &BTreeMap<&str, usize>,
) -> String {
    if nodes == 0 {
        return "no nodes available to schedule pods".into();
    }
    let histogram = |m: Vec<String>| {
        let mut m = m;
        m.sort();
        m.join(", ")
    };
    let filters = histogram(reasons.iter().map(|(r, n)| format!("{n} {r}")).collect());
    let preempt = histogram(preemption.iter().map(|(r, n)| format!("{n} {r}")).collect());
    format!(
        "0/{nodes} nodes are available: {filters}. preemption: 0/{nodes} nodes are available: {preempt}."
    )
}

fn add(to: &mut Amounts, more: &Amounts) {
    to.cpu += more.cpu;
    to.memory += more.memory;
    to.storage += more.storage;
    to.pods += more.pods;
}

/// What a pod requests: the sum of its containers' requests, at least each init container's
/// (sidecars, `restartPolicy: Always`, add up with the containers), plus its overhead.
fn requests(pod: &Value) -> Amounts {
    let read = |c: &Value, r: &str| {
        c.pointer(&format!("/resources/requests/{r}"))
            .and_then(Value::as_str)
            .and_then(milli)
            .unwrap_or(0)
    };
    let mut sum = Amounts::default();
    for c in obj::array(pod, "/spec/containers") {
        sum.cpu += read(c, "cpu");
        sum.memory += read(c, "memory");
        sum.storage += read(c, "ephemeral-storage");
    }
    let mut sidecars = Amounts::default();
    let mut init = Amounts::default();
    for c in obj::array(pod, "/spec/initContainers") {
        if obj::str_at(c, "/restartPolicy") == "Always" {
            sidecars.cpu += read(c, "cpu");
            sidecars.memory += read(c, "memory");
            sidecars.storage += read(c, "ephemeral-storage");
        } else {
            init.cpu = init.cpu.max(sidecars.cpu + read(c, "cpu"));
            init.memory = init.memory.max(sidecars.memory + read(c, "memory"));
            init.storage = init
                .storage
                .max(sidecars.storage + read(c, "ephemeral-storage"));
        }
    }
    let overhead = |r: &str| {
        pod.pointer(&format!("/spec/overhead/{r}"))
            .and_then(Value::as_str)
            .and_then(milli)
            .unwrap_or(0)
    };
    Amounts {
        cpu: (sum.cpu + sidecars.cpu).max(init.cpu) + overhead("cpu"),
        memory: (sum.memory + sidecars.memory).max(init.memory) + overhead("memory"),
        storage: (sum.storage + sidecars.storage).max(init.storage) + overhead("ephemeral-storage"),
        pods: 1,
    }
}

/// Runs the filters on one node: `Err` with the first failing filter's reasons, and whether
/// they are about resources (preemption could help).
fn filter(
    pod: &Value,
    node: &Value,
    want: &Amounts,
    used: &Amounts,
) -> Result<(), (Vec<String>, bool)> {
    let unschedulable = node
        .pointer("/spec/unschedulable")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let tolerations = obj::array(pod, "/spec/tolerations");
    if unschedulable
        && !tolerations.iter().any(|t| {
            tolerates(
                t,
                &json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}),
            )
        })
    {
        return Err((vec!["node(s) were unschedulable".into()], false));
    }
    for taint in obj::array(node, "/spec/taints") {
        let effect = obj::str_at(taint, "/effect");
        if (effect == "NoSchedule" || effect == "NoExecute")
            && !tolerations.iter().any(|t| tolerates(t, taint))
        {
            return Err((
                vec![format!(
                    "node(s) had untolerated taint {{{}: {}}}",
                    obj::str_at(taint, "/key"),
                    obj::str_at(taint, "/value")
                )],
                false,
            ));
        }
    }
    if !node_affinity_matches(pod, node) {
        return Err((
            vec!["node(s) didn't match Pod's node affinity/selector".into()],
            false,
        ));
    }
    let alloc = |r: &str| {
        node.pointer(&format!("/status/allocatable/{r}"))
            .and_then(Value::as_str)
            .and_then(milli)
    };
    let mut insufficient = Vec::new();
    if let Some(pods) = alloc("pods")
        && (used.pods + 1) * 1000 > pods
    {
        insufficient.push("Too many pods".to_string());
    }
    for (r, want, used) in [
        ("cpu", want.cpu, used.cpu),
        ("memory", want.memory, used.memory),
        ("ephemeral-storage", want.storage, used.storage),
    ] {
        if want > 0 && want + used > alloc(r).unwrap_or(0) {
            insufficient.push(format!("Insufficient {r}"));
        }
    }
    if insufficient.is_empty() {
        Ok(())
    } else {
        Err((insufficient, true))
    }
}

/// Whether a toleration tolerates a taint.
pub(crate) fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = obj::str_at(toleration, "/effect");
    if !effect.is_empty() && effect != obj::str_at(taint, "/effect") {
        return false;
    }
    let key = obj::str_at(toleration, "/key");
    let op = match obj::str_at(toleration, "/operator") {
        "" => "Equal",
        op => op,
    };
    if key.is_empty() {
        return op == "Exists";
    }
    key == obj::str_at(taint, "/key")
        && (op == "Exists" || obj::str_at(toleration, "/value") == obj::str_at(taint, "/value"))
}

/// `nodeSelector` and the required node affinity.
pub(crate) fn node_affinity_matches(pod: &Value, node: &Value) -> bool {
    let labels = obj::labels(node);
    let selector = obj::string_map(pod, "/spec/nodeSelector");
    if selector.iter().any(|(k, v)| labels.get(k) != Some(v)) {
        return false;
    }
    let Some(required) =
        pod.pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
    else {
        return true;
    };
    terms_match(required, node)
}

/// Whether a `NodeSelector` (`nodeSelectorTerms`) selects the node.
fn terms_match(required: &Value, node: &Value) -> bool {
    let labels = obj::labels(node);
    // The terms are ORed; a term's requirements ANDed; an empty term matches nothing.
    obj::array(required, "/nodeSelectorTerms")
        .iter()
        .any(|term| {
            let exprs = obj::array(term, "/matchExpressions");
            let fields = obj::array(term, "/matchFields");
            if exprs.is_empty() && fields.is_empty() {
                return false;
            }
            exprs.iter().all(|e| {
                requirement_matches(e, labels.get(obj::str_at(e, "/key")).map(String::as_str))
            }) && fields.iter().all(|e| {
                obj::str_at(e, "/key") == "metadata.name"
                    && requirement_matches(e, Some(obj::name(node)))
            })
        })
}

/// One node selector requirement against a label's value.
fn requirement_matches(e: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = obj::array(e, "/values")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let number = |s: &str| s.parse::<i64>().ok();
    match obj::str_at(e, "/operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => !value.is_some_and(|v| values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|v| number(v))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "3"}}})
    }

    #[test]
    fn filters_report_upstream_reasons() {
        let pod = json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "500m"}}}],
            "nodeSelector": {"disk": "ssd"}}});
        let want = requests(&pod);
        assert_eq!(want.cpu, 500);
        let plain = node("a", json!({"disk": "ssd"}), json!([]));
        assert!(filter(&pod, &plain, &want, &Amounts::default()).is_ok());
        let full = Amounts {
            cpu: 1800,
            pods: 3,
            ..Amounts::default()
        };
        assert_eq!(
            filter(&pod, &plain, &want, &full),
            Err((
                vec!["Too many pods".into(), "Insufficient cpu".into()],
                true
            ))
        );
        let hdd = node("b", json!({"disk": "hdd"}), json!([]));
        assert_eq!(
            filter(&pod, &hdd, &want, &Amounts::default())
                .unwrap_err()
                .0,
            vec!["node(s) didn't match Pod's node affinity/selector".to_string()]
        );
        let tainted = node(
            "c",
            json!({"disk": "ssd"}),
            json!([{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]),
        );
        assert_eq!(
            filter(&pod, &tainted, &want, &Amounts::default())
                .unwrap_err()
                .0,
            vec!["node(s) had untolerated taint {gpu: yes}".to_string()]
        );
        let mut tolerant = pod.clone();
        tolerant["spec"]["tolerations"] = json!([{"key": "gpu", "operator": "Exists"}]);
        assert!(filter(&tolerant, &tainted, &want, &Amounts::default()).is_ok());
    }

    #[test]
    fn required_node_affinity_terms_are_ored() {
        let pod = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
        ]}}}}});
        assert!(node_affinity_matches(
            &pod,
            &node("n1", json!({"zone": "a"}), json!([]))
        ));
        assert!(node_affinity_matches(
            &pod,
            &node("n2", json!({}), json!([]))
        ));
        assert!(!node_affinity_matches(
            &pod,
            &node("n3", json!({"zone": "b"}), json!([]))
        ));
    }

    #[test]
    fn the_message_is_upstreams() {
        let reasons = BTreeMap::from([
            ("Insufficient cpu".to_string(), 2),
            (
                "node(s) didn't match Pod's node affinity/selector".to_string(),
                1,
            ),
        ]);
        let preemption = BTreeMap::from([
            ("No preemption victims found for incoming pod", 2),
            ("Preemption is not helpful for scheduling", 1),
        ]);
        assert_eq!(
            unschedulable_message(3, &reasons, &preemption),
            "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, \
             2 Insufficient cpu. preemption: 0/3 nodes are available: 1 Preemption is not \
             helpful for scheduling, 2 No preemption victims found for incoming pod."
        );
    }
}
