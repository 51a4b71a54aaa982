//! Quota evaluation: how much of a ResourceQuota's resources an object uses, measured as
//! upstream's quota evaluators measure it (`pkg/quota/v1/evaluator/core` and the generic
//! object counts of `k8s.io/apiserver/pkg/quota/v1/generic`). The ResourceQuota admission
//! plugin (`admission/quota.rs`) charges a write's usage to the quotas of its namespace with
//! it; a quota controller recomputes a quota's `status.used` from a namespace's objects with
//! [`calculate_used`].
//!
//! Evaluators:
//! - **Pods**: `count/pods`, `pods`, `cpu`/`requests.cpu`, `memory`/`requests.memory`,
//!   `ephemeral-storage`/`requests.ephemeral-storage`, `limits.*`, huge pages and extended
//!   resources (`requests.<name>`), summed over the containers, the largest init container
//!   when larger, plus the pod's overhead. A pod that Succeeded or Failed uses only its
//!   `count/pods`. Quotas' scopes (`Terminating`, `NotTerminating`, `BestEffort`,
//!   `NotBestEffort`, `PriorityClass`, `CrossNamespacePodAffinity`) select pods. A quota
//!   limiting `cpu`/`memory` (requests or limits) requires every container to name them.
//! - **Services**: `count/services`, `services`, `services.loadbalancers`,
//!   `services.nodeports` (the ports of a NodePort or LoadBalancer Service).
//! - **PersistentVolumeClaims**: `count/persistentvolumeclaims`, `persistentvolumeclaims`,
//!   `requests.storage` (rounded up to a whole byte), and both per storage class
//!   (`<class>.storageclass.storage.k8s.io/requests.storage`).
//! - **Any other resource**: its object count, `count/<resource>.<group>` (`count/<resource>`
//!   in the core group), and the legacy names `configmaps`, `secrets`, `resourcequotas`,
//!   `replicationcontrollers` for those. Events, bindings and the review resources are not
//!   counted.
//!
//! Quantities keep apimachinery's arithmetic and print in its canonical form, so messages and
//! `status.used` read as upstream's.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::validation::Quantity;

/// Resource names and their quantities (upstream's `ResourceList`), sorted by name.
pub(crate) type ResourceList = BTreeMap<String, Quantity>;

/// The suffix of per-storage-class PVC resources.
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// The names whose presence a pod's containers must state when a quota limits them.
const VALIDATION_SET: [&str; 6] = [
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

/// The pod resources quota tracks by exact name.
const POD_RESOURCES: [&str; 11] = [
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// How a resource's usage is measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Evaluator {
    /// Pods.
    Pods,
    /// Services.
    Services,
    /// PersistentVolumeClaims.
    Claims,
    /// An object count under these names.
    Count(Vec<String>),
}

/// `count/<resource>.<group>` (`count/<resource>` in the core group).
pub(crate) fn count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// The evaluator of a resource; `None` for those quota ignores.
pub(crate) fn evaluator(group: &str, resource: &str) -> Option<Evaluator> {
    let ignored = match group {
        "" => matches!(resource, "bindings" | "componentstatuses" | "events"),
        "events.k8s.io" => resource == "events",
        "authentication.k8s.io" => matches!(resource, "tokenreviews" | "selfsubjectreviews"),
        "authorization.k8s.io" => matches!(
            resource,
            "subjectaccessreviews"
                | "selfsubjectaccessreviews"
                | "localsubjectaccessreviews"
                | "selfsubjectrulesreviews"
        ),
        _ => false,
    };
    if ignored {
        return None;
    }
    Some(match (group, resource) {
        ("", "pods") => Evaluator::Pods,
        ("", "services") => Evaluator::Services,
        ("", "persistentvolumeclaims") => Evaluator::Claims,
        _ => {
            let mut names = vec![count_name(group, resource)];
            if group.is_empty()
                && matches!(
                    resource,
                    "configmaps" | "resourcequotas" | "replicationcontrollers" | "secrets"
                )
            {
                names.push(resource.to_string());
            }
            Evaluator::Count(names)
        }
    })
}

/// Whether `name` is a native resource name (no domain, or a `kubernetes.io/` one).
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

impl Evaluator {
    /// Whether the evaluator measures writes of `operation` (`CREATE`, `UPDATE`): object
    /// counts and pods on create, Services and claims on create and update.
    pub(crate) fn handles_update(&self) -> bool {
        matches!(self, Evaluator::Services | Evaluator::Claims)
    }

    /// Those of `names` the evaluator measures (`MatchingResources`).
    pub(crate) fn matching_resources<'a>(
        &self,
        names: impl Iterator<Item = &'a str>,
    ) -> Vec<String> {
        names
            .filter(|n| match self {
                Evaluator::Pods => {
                    POD_RESOURCES.contains(n)
                        || n.starts_with("hugepages-")
                        || n.starts_with("requests.hugepages-")
                        || (!is_native(n) && n.starts_with("requests."))
                }
                Evaluator::Services => matches!(
                    *n,
                    "count/services" | "services" | "services.nodeports" | "services.loadbalancers"
                ),
                Evaluator::Claims => {
                    matches!(
                        *n,
                        "count/persistentvolumeclaims"
                            | "persistentvolumeclaims"
                            | "requests.storage"
                    ) || n.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims")
                        || n.ends_with(".storageclass.storage.k8s.io/requests.storage")
                }
                Evaluator::Count(own) => own.iter().any(|o| o == n),
            })
            .map(String::from)
            .collect()
    }

    /// Whether the object is selected by a quota scope requirement (`scopeName`, `operator`,
    /// `values`); only pods have scopes, other objects never match a scoped quota.
    fn matches_scope(&self, req: &Value, obj: &Value) -> bool {
        if *self != Evaluator::Pods {
            return false;
        }
        let scope = req.get("scopeName").and_then(Value::as_str).unwrap_or("");
        match scope {
            "Terminating" => is_terminating(obj),
            "NotTerminating" => !is_terminating(obj),
            "BestEffort" => is_best_effort(obj),
            "NotBestEffort" => !is_best_effort(obj),
            "PriorityClass" => {
                let class = obj
                    .pointer("/spec/priorityClassName")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty());
                let values: Vec<&str> = req
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match req.get("operator").and_then(Value::as_str).unwrap_or("") {
                    "Exists" => class.is_some(),
                    "DoesNotExist" => class.is_none(),
                    "In" => class.is_some_and(|c| values.contains(&c)),
                    "NotIn" => class.is_none_or(|c| !values.contains(&c)),
                    _ => false,
                }
            }
            "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(obj),
            _ => false,
        }
    }

    /// Whether `quota` (by its `status.hard` and scopes) applies to the object (`Matches`).
    pub(crate) fn matches(&self, quota: &Value, obj: &Value) -> bool {
        let hard = hard_names(quota, "status");
        !self
            .matching_resources(hard.iter().map(String::as_str))
            .is_empty()
            && scope_selectors(quota)
                .iter()
                .all(|s| self.matches_scope(s, obj))
    }

    /// The object's usage (`Usage`).
    pub(crate) fn usage(&self, obj: &Value) -> ResourceList {
        let one = || Quantity::from_int(1);
        let mut out = ResourceList::new();
        match self {
            Evaluator::Count(names) => {
                for n in names {
                    out.insert(n.clone(), one());
                }
            }
            Evaluator::Services => {
                out.insert("count/services".into(), one());
                out.insert("services".into(), one());
                let ports = obj
                    .pointer("/spec/ports")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice)
                    .unwrap_or_default();
                let (mut lbs, mut node_ports) = (0, 0);
                match obj.pointer("/spec/type").and_then(Value::as_str) {
                    Some("NodePort") => node_ports = ports.len() as i64,
                    Some("LoadBalancer") => {
                        lbs = 1;
                        let allocate = obj
                            .pointer("/spec/allocateLoadBalancerNodePorts")
                            .and_then(Value::as_bool);
                        node_ports = if allocate == Some(false) {
                            ports
                                .iter()
                                .filter(|p| {
                                    p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0
                                })
                                .count() as i64
                        } else {
                            ports.len() as i64
                        };
                    }
                    _ => {}
                }
                out.insert("services.loadbalancers".into(), Quantity::from_int(lbs));
                out.insert("services.nodeports".into(), Quantity::from_int(node_ports));
            }
            Evaluator::Claims => {
                out.insert("persistentvolumeclaims".into(), one());
                out.insert("count/persistentvolumeclaims".into(), one());
                let class = obj
                    .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
                    .or_else(|| obj.pointer("/spec/storageClassName"))
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !class.is_empty() {
                    out.insert(
                        format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                        one(),
                    );
                }
                let storage = obj
                    .pointer("/spec/resources/requests/storage")
                    .and_then(Value::as_str)
                    .and_then(Quantity::parse)
                    .map(|q| q.round_up());
                if let Some(storage) = storage {
                    out.insert("requests.storage".into(), storage);
                    if !class.is_empty() {
                        out.insert(
                            format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                            storage,
                        );
                    }
                }
            }
            Evaluator::Pods => {
                out.insert("count/pods".into(), one());
                let phase = obj.pointer("/status/phase").and_then(Value::as_str);
                if matches!(phase, Some("Succeeded" | "Failed")) {
                    return out;
                }
                let (requests, limits) = pod_requests_and_limits(obj);
                for (k, v) in compute_usage(&requests, &limits) {
                    out.insert(k, v);
                }
            }
        }
        out
    }

    /// The requirements `required` (the quota's matching resources) put on the object, as
    /// the message after `failed quota: NAME: ` (`Constraints`): a pod's containers must
    /// name each of cpu and memory, requests or limits, the quota limits.
    pub(crate) fn constraints(&self, required: &[String], obj: &Value) -> Result<(), String> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: BTreeSet<&str> = required
            .iter()
            .map(String::as_str)
            .filter(|r| VALIDATION_SET.contains(r))
            .collect();
        if required.is_empty() {
            return Ok(());
        }
        let mut missing: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for list in ["/spec/containers", "/spec/initContainers"] {
            for c in obj
                .pointer(list)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let requests = quantities(c.pointer("/resources/requests"));
                let limits = quantities(c.pointer("/resources/limits"));
                let usage = compute_usage(&requests, &limits);
                for r in &required {
                    if !usage.contains_key(*r) {
                        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
                        missing.entry(r).or_default().insert(name);
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let parts: Vec<String> = missing
            .iter()
            .map(|(r, names)| {
                format!(
                    "{r} for: {}",
                    names.iter().copied().collect::<Vec<_>>().join(",")
                )
            })
            .collect();
        Err(format!("must specify {}", parts.join("; ")))
    }
}

/// A quota's scope requirements: each of `spec.scopes` as `Exists`, then
/// `spec.scopeSelector.matchExpressions`.
fn scope_selectors(quota: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| serde_json::json!({"scopeName": s, "operator": "Exists"}))
        .collect();
    out.extend(
        quota
            .pointer("/spec/scopeSelector/matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .cloned(),
    );
    out
}

/// The resource names of a quota's `<section>.hard` (`spec` or `status`).
pub(crate) fn hard_names(quota: &Value, section: &str) -> Vec<String> {
    quota
        .pointer(&format!("/{section}/hard"))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// The quantities of a JSON resource list (entries that do not parse are left out).
pub(crate) fn quantities(list: Option<&Value>) -> ResourceList {
    list.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?)?)))
        .collect()
}

/// A resource list as JSON, quantities in canonical form.
pub(crate) fn to_json(list: &ResourceList) -> Map<String, Value> {
    list.iter()
        .map(|(k, v)| (k.clone(), Value::from(v.canonical())))
        .collect()
}

/// `a + b` for each name (`quota.Add`).
pub(crate) fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, v) in b {
        out.entry(k.clone())
            .and_modify(|q| *q = q.add(v))
            .or_insert(*v);
    }
    out
}

/// `a - b` for each name, never below zero (`quota.SubtractWithNonNegativeResult`).
pub(crate) fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let zero = Quantity::from_int(0);
    let mut out = ResourceList::new();
    for (k, v) in a {
        let d = b.get(k).map_or(*v, |o| v.sub(o));
        out.insert(k.clone(), if d.nanos() > 0 { d } else { zero });
    }
    for k in b.keys() {
        out.entry(k.clone()).or_insert(zero);
    }
    out
}

/// The entries of `list` named in `names` (`quota.Mask`).
pub(crate) fn mask<S: AsRef<str>>(list: &ResourceList, names: &[S]) -> ResourceList {
    list.iter()
        .filter(|(k, _)| names.iter().any(|n| n.as_ref() == k.as_str()))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// Whether two lists have the same names and values (`quota.Equals`).
pub(crate) fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, v)| b.get(k).is_some_and(|o| o.cmp_value(v).is_eq()))
}

/// `name=value,...` in name order (the admission messages' `prettyPrint`).
pub(crate) fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={}", v.canonical()))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether a pod runs with a deadline (`activeDeadlineSeconds` >= 0).
fn is_terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|d| d >= 0)
}

/// Whether a pod's QoS class is BestEffort: no container asks for or limits cpu or memory.
fn is_best_effort(pod: &Value) -> bool {
    let mut containers = ["/spec/containers", "/spec/initContainers"]
        .into_iter()
        .flat_map(|p| {
            pod.pointer(p)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        });
    !containers.any(|c| {
        ["/resources/requests", "/resources/limits"]
            .iter()
            .any(|p| {
                let list = quantities(c.pointer(p));
                ["cpu", "memory"]
                    .iter()
                    .any(|r| list.get(*r).is_some_and(|q| q.nanos() > 0))
            })
    })
}

/// Whether a pod's affinity or anti-affinity names other namespaces.
fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let Some(a) = pod.pointer(&format!("/spec/affinity/{kind}")) else {
            return false;
        };
        let cross = |t: &Value| {
            t.get("namespaces")
                .and_then(Value::as_array)
                .is_some_and(|n| !n.is_empty())
                || t.get("namespaceSelector").is_some_and(|s| !s.is_null())
        };
        let required = a
            .get("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(cross);
        let preferred = a
            .get("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|w| w.get("podAffinityTerm").is_some_and(cross));
        required || preferred
    })
}

/// Adds `b` into `a` (`addResourceList`).
fn add_into(a: &mut ResourceList, b: &ResourceList) {
    for (k, v) in b {
        a.entry(k.clone())
            .and_modify(|q| *q = q.add(v))
            .or_insert(*v);
    }
}

/// Raises `a` to `b` where `b` is larger (`maxResourceList`).
fn max_into(a: &mut ResourceList, b: &ResourceList) {
    for (k, v) in b {
        match a.get(k) {
            Some(q) if v.cmp_value(q).is_le() => {}
            _ => {
                a.insert(k.clone(), *v);
            }
        }
    }
}

/// A pod's effective requests and limits (`PodRequests`, `PodLimits`): the containers' sum,
/// raised to the largest init container (sidecars, init containers that restart `Always`,
/// add to both), plus the overhead (to limits only where a limit is set).
fn pod_requests_and_limits(pod: &Value) -> (ResourceList, ResourceList) {
    let list = |p: &str| {
        pod.pointer(p)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let compute = |field: &str| {
        let mut total = ResourceList::new();
        for c in list("/spec/containers") {
            add_into(
                &mut total,
                &quantities(c.pointer(&format!("/resources/{field}"))),
            );
        }
        let mut sidecars = ResourceList::new();
        let mut init = ResourceList::new();
        for c in list("/spec/initContainers") {
            let own = quantities(c.pointer(&format!("/resources/{field}")));
            let this = if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
                add_into(&mut total, &own);
                add_into(&mut sidecars, &own);
                sidecars.clone()
            } else {
                let mut tmp = own;
                add_into(&mut tmp, &sidecars);
                tmp
            };
            max_into(&mut init, &this);
        }
        max_into(&mut total, &init);
        total
    };
    let mut requests = compute("requests");
    let mut limits = compute("limits");
    let overhead = quantities(pod.pointer("/spec/overhead"));
    add_into(&mut requests, &overhead);
    for (k, v) in &overhead {
        if let Some(q) = limits.get_mut(k) {
            *q = q.add(v);
        }
    }
    (requests, limits)
}

/// The quota names of requests and limits (`podComputeUsageHelper`).
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), Quantity::from_int(1));
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(r) {
            out.insert(r.into(), *q);
            out.insert(format!("requests.{r}"), *q);
        }
        if let Some(q) = limits.get(r) {
            out.insert(format!("limits.{r}"), *q);
        }
    }
    for (name, q) in requests {
        if name.starts_with("hugepages-") {
            out.insert(name.clone(), *q);
            out.insert(format!("requests.{name}"), *q);
        }
        if !is_native(name) && !name.starts_with("requests.") {
            out.insert(format!("requests.{name}"), *q);
        }
    }
    out
}

/// The `status.used` a quota controller computes for `quota` (upstream's `CalculateUsage`,
/// masked to the quota's `spec.hard`): for each evaluator measuring one of its resources,
/// the usage of the namespace's objects its scopes select, summed, with every measured name
/// present (zero when nothing uses it). `list(group, resource)` answers the objects of a
/// resource in the quota's namespace, `None` when the resource is not served (its names are
/// then left out, and the previous `status.used` values kept for them).
pub fn calculate_used(
    quota: &Value,
    list: &mut dyn FnMut(&str, &str) -> Option<Vec<Value>>,
) -> Map<String, Value> {
    let hard = hard_names(quota, "spec");
    let mut used = quantities(quota.pointer("/status/used"));
    // Which evaluators measure which names: the special ones, then one object count per
    // `count/<resource>.<group>` name.
    let mut evaluators: Vec<(String, String, Evaluator)> = vec![
        ("".into(), "pods".into(), Evaluator::Pods),
        ("".into(), "services".into(), Evaluator::Services),
        (
            "".into(),
            "persistentvolumeclaims".into(),
            Evaluator::Claims,
        ),
    ];
    for r in [
        "configmaps",
        "resourcequotas",
        "replicationcontrollers",
        "secrets",
    ] {
        if let Some(e) = evaluator("", r) {
            evaluators.push(("".into(), r.into(), e));
        }
    }
    for name in &hard {
        let Some(gr) = name.strip_prefix("count/") else {
            continue;
        };
        let (resource, group) = gr.split_once('.').unwrap_or((gr, ""));
        if evaluators
            .iter()
            .any(|(g, r, _)| g == group && r == resource)
        {
            continue;
        }
        if let Some(e) = evaluator(group, resource) {
            evaluators.push((group.into(), resource.into(), e));
        }
    }
    let selectors = scope_selectors(quota);
    for (group, resource, e) in &evaluators {
        let names = e.matching_resources(hard.iter().map(String::as_str));
        if names.is_empty() {
            continue;
        }
        let Some(objects) = list(group, resource) else {
            continue;
        };
        let mut sum: ResourceList = names
            .iter()
            .map(|n| (n.clone(), Quantity::from_int(0)))
            .collect();
        for obj in &objects {
            if selectors.iter().all(|s| e.matches_scope(s, obj)) {
                add_into(&mut sum, &e.usage(obj));
            }
        }
        for (k, v) in mask(&sum, &names) {
            used.insert(k, v);
        }
    }
    to_json(&mask(&used, &hard))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn used(quota: &Value, objects: &[(&str, Value)]) -> Value {
        let mut list = |_: &str, r: &str| {
            Some(
                objects
                    .iter()
                    .filter(|(res, _)| *res == r)
                    .map(|(_, o)| o.clone())
                    .collect(),
            )
        };
        Value::Object(calculate_used(quota, &mut list))
    }

    fn pod(cpu: &str, mem: &str) -> Value {
        json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": cpu, "memory": mem},
                                        "limits": {"cpu": cpu, "memory": mem}}},
            {"name": "b", "resources": {"requests": {"cpu": cpu, "memory": mem}}},
        ]}})
    }

    #[test]
    fn a_pod_uses_the_sum_of_its_containers_and_its_largest_init_container() {
        let mut p = pod("250m", "64Mi");
        let u = Evaluator::Pods.usage(&p);
        assert_eq!(
            pretty(&u),
            "count/pods=1,cpu=500m,limits.cpu=250m,limits.memory=64Mi,memory=128Mi,pods=1,requests.cpu=500m,requests.memory=128Mi"
        );
        p["spec"]["initContainers"] =
            json!([{"name": "i", "resources": {"requests": {"cpu": "2"}}}]);
        p["spec"]["overhead"] = json!({"cpu": "100m"});
        let u = Evaluator::Pods.usage(&p);
        assert_eq!(u["requests.cpu"].canonical(), "2100m");
        assert_eq!(u["limits.cpu"].canonical(), "350m");
        p["status"] = json!({"phase": "Succeeded"});
        assert_eq!(pretty(&Evaluator::Pods.usage(&p)), "count/pods=1");
    }

    #[test]
    fn constraints_name_the_containers_missing_a_limited_resource() {
        let p = json!({"spec": {"containers": [
            {"name": "b", "resources": {}}, {"name": "a", "resources": {"requests": {"cpu": "1"}}},
        ]}});
        let required = ["cpu".to_string(), "memory".to_string(), "pods".to_string()];
        assert_eq!(
            Evaluator::Pods.constraints(&required, &p),
            Err("must specify cpu for: b; memory for: a,b".into())
        );
        assert_eq!(Evaluator::Services.constraints(&required, &p), Ok(()));
    }

    #[test]
    fn services_and_claims_count_as_upstream_counts_them() {
        let lb = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 1}, {"port": 2}]}});
        assert_eq!(
            pretty(&Evaluator::Services.usage(&lb)),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"
        );
        let pvc = json!({"spec": {"storageClassName": "gold",
            "resources": {"requests": {"storage": "1500m"}}}});
        assert_eq!(
            pretty(&Evaluator::Claims.usage(&pvc)),
            "count/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/persistentvolumeclaims=1,gold.storageclass.storage.k8s.io/requests.storage=2,persistentvolumeclaims=1,requests.storage=2"
        );
        assert_eq!(evaluator("", "events"), None);
        assert_eq!(
            evaluator("apps", "deployments"),
            Some(Evaluator::Count(vec!["count/deployments.apps".into()]))
        );
    }

    #[test]
    fn a_controller_sums_the_selected_objects_with_zeros_for_unused_names() {
        let quota = json!({"spec": {"hard": {
            "pods": "10", "requests.cpu": "4", "services": "5", "services.nodeports": "3",
            "secrets": "9", "count/deployments.apps": "2", "configmaps": "3",
        }}});
        let objects = [
            ("pods", pod("1", "1Gi")),
            ("pods", pod("500m", "1Gi")),
            ("pods", json!({"spec": {}, "status": {"phase": "Failed"}})),
            ("pods", json!({"spec": {"containers": [{"name": "x"}]}})),
            ("services", json!({"spec": {"type": "ClusterIP"}})),
            ("secrets", json!({})),
            ("deployments", json!({})),
        ];
        assert_eq!(
            used(&quota, &objects),
            json!({"configmaps": "0", "count/deployments.apps": "1", "pods": "3",
                   "requests.cpu": "3", "secrets": "1", "services": "1",
                   "services.nodeports": "0"})
        );
        // Scopes select pods; a scoped quota counts no other objects.
        let scoped = json!({"spec": {"hard": {"pods": "5", "services": "5"},
            "scopes": ["BestEffort"]}});
        assert_eq!(
            used(&scoped, &objects),
            json!({"pods": "1", "services": "0"})
        );
        let by_class = json!({"spec": {"hard": {"pods": "5"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}});
        let high = ("pods", json!({"spec": {"priorityClassName": "high"}}));
        assert_eq!(
            used(&by_class, &[high, objects[0].clone()]),
            json!({"pods": "1"})
        );
    }
}
