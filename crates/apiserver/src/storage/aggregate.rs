//! ClusterRole aggregation, the synchronous twin of kube-controller-manager's
//! `clusterrole-aggregation` controller: a ClusterRole with `aggregationRule.clusterRoleSelectors`
//! gets as `rules` the union of the rules of every other ClusterRole matching any selector.
//!
//! It runs inside the write that changed a ClusterRole (`Storage::with` calls [`run`] when the
//! ClusterRoles' last change moved), so that `view`, `edit`, `admin` and operators' aggregated
//! roles are current when the write answers. As upstream: selectors in order, the matching roles
//! in name order, each rule once (rules equal when their lists are, an empty list being an
//! absent one), the role itself skipped; the rules are written by server-side apply with the
//! field manager `clusterrole-aggregation-controller`, forced, and only when they differ.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::options::WriteOptions;
use super::store::State;
use super::{apply, select};

/// The storage key of ClusterRoles.
pub(crate) const CLUSTER_ROLES: &str = "clusterroles.rbac.authorization.k8s.io";

/// The field manager of the rules the aggregation writes (upstream's).
const MANAGER: &str = "clusterrole-aggregation-controller";

/// Passes over the aggregating roles at most (a role aggregating another aggregated role
/// settles in a second pass; a selector cycle cannot grow past the set of all rules).
const MAX_PASSES: usize = 8;

/// Brings every aggregating ClusterRole up to date.
pub(crate) fn run(st: &mut State) {
    for _ in 0..MAX_PASSES {
        let Some(roles) = st.data.get(CLUSTER_ROLES).cloned() else {
            return;
        };
        let mut changed = false;
        for (key, role) in roles.iter() {
            if role.get("aggregationRule").is_none_or(Value::is_null) {
                continue;
            }
            // The current state: an earlier role of this pass may have changed this one's inputs.
            let Some(current) = st.data.get(CLUSTER_ROLES).cloned() else {
                return;
            };
            let current: Vec<Arc<Value>> = current.values().cloned().collect();
            let Some(rules) = aggregated_rules(&current, role) else {
                continue;
            };
            let have = role
                .get("rules")
                .and_then(Value::as_array)
                .map(|r| r.iter().map(normalized).collect::<Vec<_>>())
                .unwrap_or_default();
            if have == rules {
                continue;
            }
            if write_rules(st, &key.1, rules) {
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// The rules `role` aggregates from `roles`; `None` when a selector is malformed (upstream's
/// controller then leaves the role alone).
fn aggregated_rules(roles: &[Arc<Value>], role: &Value) -> Option<Vec<Value>> {
    let name = role.pointer("/metadata/name").and_then(Value::as_str);
    let selectors = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut rules: Vec<Value> = Vec::new();
    for sel in &selectors {
        let selector = select::label_selector(sel)?;
        for other in roles {
            if other.pointer("/metadata/name").and_then(Value::as_str) == name {
                continue;
            }
            let labels = other
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect::<std::collections::BTreeMap<_, _>>()
                })
                .unwrap_or_default();
            if !selector.matches(&labels) {
                continue;
            }
            for rule in other
                .get("rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let rule = normalized(rule);
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
        }
    }
    Some(rules)
}

/// A rule with its empty lists left out, so that `[]` and an absent list compare equal (as Go's
/// semantic equality has them).
fn normalized(rule: &Value) -> Value {
    let Some(map) = rule.as_object() else {
        return rule.clone();
    };
    let kept: Map<String, Value> = map
        .iter()
        .filter(|(_, v)| !(v.is_null() || v.as_array().is_some_and(Vec::is_empty)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(kept)
}

/// Applies `rules` to the ClusterRole `name`, as the controller's forced apply; whether it
/// was written.
fn write_rules(st: &mut State, name: &str, rules: Vec<Value>) -> bool {
    let Some(res) = st
        .registry
        .resolve_gr(crate::resource::names::CLUSTER_ROLES, "v1")
        .cloned()
    else {
        return false;
    };
    let mut body = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
    });
    // No rules: none applied, so the ones this manager applied before are removed (upstream
    // applies an empty list as none too).
    if !rules.is_empty() {
        body["rules"] = Value::from(rules);
    }
    let opts = WriteOptions {
        field_manager: Some(MANAGER.into()),
        force: true,
        ..Default::default()
    };
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    match apply::apply(st, &res, None, name, None, &bytes, &opts) {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("aggregating the rules of ClusterRole {name}: {e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(name: &str, labels: Value, rules: Value) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": name, "labels": labels}, "rules": rules}))
    }

    #[test]
    fn rules_are_the_union_of_matching_roles_in_name_order_each_once() {
        let get = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
        let list = json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]});
        let roles = [
            role(
                "b",
                json!({"agg": "true"}),
                json!([list.clone(), get.clone()]),
            ),
            role("a", json!({"agg": "true"}), json!([get.clone()])),
            role("c", json!({"other": "x"}), json!([{"verbs": ["*"]}])),
        ];
        let mut sorted = roles.to_vec();
        sorted.sort_by(|x, y| {
            x["metadata"]["name"]
                .as_str()
                .cmp(&y["metadata"]["name"].as_str())
        });
        let agg = json!({"metadata": {"name": "agg", "labels": {"agg": "true"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}});
        let rules = aggregated_rules(&sorted, &agg).unwrap();
        assert_eq!(rules, vec![get.clone(), list.clone()]);
        // Empty lists are absent ones.
        let with_empty = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": []});
        assert_eq!(normalized(&with_empty), get);
        // A malformed selector aggregates nothing and leaves the role alone.
        let bad = json!({"metadata": {"name": "bad"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "k", "operator": "Bogus"}]}]}});
        assert_eq!(aggregated_rules(&sorted, &bad), None);
    }
}
