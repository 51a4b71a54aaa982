//! The scheduler's `InterPodAffinity` filter, for required terms
//! (`requiredDuringSchedulingIgnoredDuringExecution`): a pod goes only where
//! - for every `podAffinity` term, a pod that every term selects runs in the node's topology
//!   domain (the nodes with the same value of the term's `topologyKey` label), unless no such
//!   pod runs anywhere and the pod matches its terms itself (the first pod of a group);
//! - no `podAntiAffinity` term of it finds a selected pod in that domain;
//! - no pod already placed has a `podAntiAffinity` term that selects it within the domain.
//!
//! A term selects the pods of its `namespaces` (the pod's own when it names none and has no
//! `namespaceSelector`; every namespace with an empty `namespaceSelector`) whose labels its
//! `labelSelector` matches. Left out: non-empty `namespaceSelector`s, `matchLabelKeys` and
//! `mismatchLabelKeys`, and the preferred (scoring) terms.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::obj;

/// Upstream's reasons (`interpodaffinity` plugin).
pub(crate) const AFFINITY_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
pub(crate) const ANTI_AFFINITY_NOT_MATCH: &str = "node(s) didn't match pod anti-affinity rules";
pub(crate) const EXISTING_ANTI_AFFINITY_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// The pods placed on nodes, as the filter sees them: by node name, and those with required
/// anti-affinity terms apart.
#[derive(Default)]
pub(crate) struct Placed {
    pods: Vec<(String, Arc<Value>)>,
    with_anti_affinity: Vec<(String, Arc<Value>)>,
}

fn required<'a>(pod: &'a Value, kind: &str) -> &'a [Value] {
    obj::array(
        pod,
        &format!("/spec/affinity/{kind}/requiredDuringSchedulingIgnoredDuringExecution"),
    )
}

/// Whether `term` (of a pod in namespace `owner_ns`) selects `pod`.
fn selects(term: &Value, owner_ns: &str, pod: &Value) -> bool {
    let ns = obj::namespace(pod);
    let names = obj::array(term, "/namespaces");
    let all = term
        .get("namespaceSelector")
        .and_then(Value::as_object)
        .is_some_and(|s| s.is_empty());
    let in_namespace = all
        || names.iter().any(|n| n.as_str() == Some(ns))
        || (names.is_empty()
            && term.get("namespaceSelector").is_none_or(Value::is_null)
            && ns == owner_ns);
    if !in_namespace {
        return false;
    }
    let Some(selector) = obj::selector(term, "/labelSelector") else {
        return false;
    };
    let labels = pod.pointer("/metadata/labels");
    selector.matches_fn(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
}

impl Placed {
    /// Records `pod`, placed on `node`.
    pub(crate) fn add(&mut self, node: &str, pod: Arc<Value>) {
        if !required(&pod, "podAntiAffinity").is_empty() {
            self.with_anti_affinity
                .push((node.to_string(), pod.clone()));
        }
        self.pods.push((node.to_string(), pod));
    }

    /// Whether `node` passes the filter for `pod`; the failure's reason and whether
    /// preemption could help (it could not for affinity), as `filter` answers.
    pub(crate) fn filter(
        &self,
        pod: &Value,
        node: &Value,
        nodes: &BTreeMap<&str, &Value>,
    ) -> Result<(), (Vec<String>, bool)> {
        let same_domain = |key: &str, other: &str| {
            let here = obj::labels(node).get(key).cloned();
            let there = nodes
                .get(other)
                .and_then(|n| obj::labels(n).get(key).cloned());
            here.is_some() && here == there
        };
        let ns = obj::namespace(pod);
        // In upstream's order: the pod's affinity, its anti-affinity, then the existing pods'
        // anti-affinity.
        let affinity = required(pod, "podAffinity");
        if !affinity.is_empty() {
            // The pods that match every term count for each term's domain.
            let matching: Vec<&(String, Arc<Value>)> = (self.pods.iter())
                .filter(|(_, other)| affinity.iter().all(|t| selects(t, ns, other)))
                .collect();
            let key = |t: &Value| obj::str_at(t, "/topologyKey").to_string();
            let node_has_keys = affinity
                .iter()
                .all(|t| obj::labels(node).contains_key(&key(t)));
            let found = node_has_keys
                && affinity
                    .iter()
                    .all(|t| matching.iter().any(|(n, _)| same_domain(&key(t), n)));
            // The first pod of a group that has affinity to itself may go anywhere.
            let counted = matching.iter().any(|(n, _)| {
                affinity.iter().any(|t| {
                    nodes
                        .get(n.as_str())
                        .is_some_and(|n| obj::labels(n).contains_key(&key(t)))
                })
            });
            let first = node_has_keys && !counted && affinity.iter().all(|t| selects(t, ns, pod));
            if !found && !first {
                return Err((vec![AFFINITY_NOT_MATCH.into()], false));
            }
        }
        for term in required(pod, "podAntiAffinity") {
            let key = obj::str_at(term, "/topologyKey");
            let conflict = (self.pods.iter())
                .any(|(n, other)| selects(term, ns, other) && same_domain(key, n));
            if conflict {
                return Err((vec![ANTI_AFFINITY_NOT_MATCH.into()], true));
            }
        }
        for (other_node, other) in &self.with_anti_affinity {
            let other_ns = obj::namespace(other);
            let blocks = required(other, "podAntiAffinity").iter().any(|term| {
                selects(term, other_ns, pod)
                    && same_domain(obj::str_at(term, "/topologyKey"), other_node)
            });
            if blocks {
                return Err((vec![EXISTING_ANTI_AFFINITY_NOT_MATCH.into()], true));
            }
        }
        Ok(())
    }
}
