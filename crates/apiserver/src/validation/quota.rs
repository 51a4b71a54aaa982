//! ResourceQuota, as upstream's `ValidateResourceQuota` and `ValidateResourceQuotaUpdate`
//! check it: the resource names of `spec.hard` and `status.hard`/`status.used` (qualified,
//! and standard quota resources when unprefixed), their quantities (not negative), the
//! scopes (known, applicable to each standard resource limited, not conflicting), the scope
//! selector (known scopes, operators and values), and scopes that never change.
//!
//! Errors of one map are reported in its keys' order (upstream's follow Go's map order,
//! which varies).

use serde_json::Value;

use super::FieldError;
use super::Quantity;
use super::field::qualified_name_problems;

/// The resources a quota tracks by name (`IsStandardQuotaResourceName`, huge pages aside).
const STANDARD: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// The scopes a quota may name.
const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// The quota resources of pods' compute (`podComputeQuotaResources`).
const POD_COMPUTE: [&str; 6] = [
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];

fn is_standard(name: &str) -> bool {
    STANDARD.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// `IsResourceQuotaScopeValidForResource`.
fn scope_fits(scope: &str, resource: &str) -> bool {
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => resource == "pods" || POD_COMPUTE.contains(&resource),
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

/// A Go `%#v` string literal.
fn go_str(s: &str) -> String {
    format!("{s:?}")
}

/// `[]string{"a", "b"}` (`[]string(nil)` when absent).
fn go_strings(values: Option<&Vec<Value>>) -> String {
    match values {
        None => "[]string(nil)".into(),
        Some(v) => format!(
            "[]string{{{}}}",
            v.iter()
                .map(|s| go_str(s.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The quota's `spec.scopes` as `%#v` prints them.
fn go_scopes(quota: &Value) -> String {
    match quota.pointer("/spec/scopes").and_then(Value::as_array) {
        None => "[]core.ResourceQuotaScope(nil)".into(),
        Some(v) => format!(
            "[]core.ResourceQuotaScope{{{}}}",
            v.iter()
                .map(|s| go_str(s.as_str().unwrap_or("")))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The quota's `spec.scopeSelector` as `%#v` prints it.
fn go_selector(quota: &Value) -> String {
    let exprs: Vec<String> = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let s = |k: &str| go_str(e.get(k).and_then(Value::as_str).unwrap_or(""));
            format!(
                "core.ScopedResourceSelectorRequirement{{ScopeName:{}, Operator:{}, Values:{}}}",
                s("scopeName"),
                s("operator"),
                go_strings(e.get("values").and_then(Value::as_array))
            )
        })
        .collect();
    let list = if quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .is_some_and(Value::is_array)
    {
        format!(
            "[]core.ScopedResourceSelectorRequirement{{{}}}",
            exprs.join(", ")
        )
    } else {
        "[]core.ScopedResourceSelectorRequirement(nil)".into()
    };
    format!("core.ScopeSelector{{MatchExpressions:{list}}}")
}

/// The names and quantities of a resource list (`ValidateResourceQuotaResourceName`,
/// `ValidateResourceQuantityValue`'s sign check).
fn resource_list(list: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
    let Some(map) = list.and_then(Value::as_object) else {
        return;
    };
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    for k in keys {
        let at = format!("{path}[{k}]");
        let problems = qualified_name_problems(k);
        let name = Value::from(k.as_str());
        errs.extend(problems.iter().map(|p| FieldError::invalid(&at, &name, p)));
        if !k.contains('/') {
            if problems.is_empty() && !is_standard(k) && k != "storage" {
                errs.push(FieldError::invalid(
                    &at,
                    &name,
                    "must be a standard resource type or fully qualified",
                ));
            }
            if !is_standard(k) {
                errs.push(FieldError::invalid(
                    &at,
                    &name,
                    "must be a standard resource for quota",
                ));
            }
        }
        if let Some(q) = map[k].as_str().and_then(Quantity::parse)
            && q.is_negative()
        {
            errs.push(FieldError::invalid(
                &at,
                &Value::from(q.canonical()),
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// A ResourceQuota on create (spec and status) and update (spec, scopes unchanged).
pub(crate) fn resource_quota(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    resource_list(obj.pointer("/spec/hard"), "spec.hard", errs);
    let mut hard: Vec<&str> = obj
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    hard.sort();
    let scopes: Vec<&str> = obj
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .map(|s| s.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let conflicting = |set: &[&str]| {
        (set.contains(&"BestEffort") && set.contains(&"NotBestEffort"))
            || (set.contains(&"Terminating") && set.contains(&"NotTerminating"))
    };
    for scope in &scopes {
        if !SCOPES.contains(scope) {
            errs.push(FieldError::invalid_go(
                "spec.scopes",
                &go_scopes(obj),
                "unsupported scope",
            ));
        }
        for k in &hard {
            if is_standard(k) && !scope_fits(scope, k) {
                errs.push(FieldError::invalid_go(
                    "spec.scopes",
                    &go_scopes(obj),
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    if conflicting(&scopes) {
        errs.push(FieldError::invalid_go(
            "spec.scopes",
            &go_scopes(obj),
            "conflicting scopes",
        ));
    }
    if let Some(exprs) = obj
        .pointer("/spec/scopeSelector")
        .filter(|s| !s.is_null())
        .map(|s| {
            s.get("matchExpressions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
    {
        let at = "spec.scopeSelector.matchExpressions";
        let mut named = Vec::new();
        for e in &exprs {
            let scope = e.get("scopeName").and_then(Value::as_str).unwrap_or("");
            let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
            let values = e.get("values").and_then(Value::as_array);
            if !SCOPES.contains(&scope) {
                errs.push(FieldError::invalid(
                    format!("{at}.scopeName"),
                    &Value::from(scope),
                    "unsupported scope",
                ));
            }
            for k in &hard {
                if is_standard(k) && !scope_fits(scope, k) {
                    errs.push(FieldError::invalid_go(
                        at,
                        &go_selector(obj),
                        "unsupported scope applied to resource",
                    ));
                }
            }
            if matches!(
                scope,
                "BestEffort"
                    | "NotBestEffort"
                    | "Terminating"
                    | "NotTerminating"
                    | "CrossNamespacePodAffinity"
            ) && op != "Exists"
            {
                errs.push(FieldError::invalid(
                    format!("{at}.operator"),
                    &Value::from(op),
                    "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
                ));
            }
            let count = values.map_or(0, Vec::len);
            match op {
                "In" | "NotIn" if count == 0 => errs.push(FieldError::required(
                    format!("{at}.values"),
                    "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                )),
                "Exists" | "DoesNotExist" if count != 0 => errs.push(FieldError::invalid_go(
                    format!("{at}.values"),
                    &go_strings(values),
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                )),
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                _ => errs.push(FieldError::invalid(
                    format!("{at}.operator"),
                    &Value::from(op),
                    "not a valid selector operator",
                )),
            }
            named.push(scope);
        }
        if conflicting(&named) {
            errs.push(FieldError::invalid_go(
                at,
                &go_scopes(obj),
                "conflicting scopes",
            ));
        }
    }
    match old {
        None => {
            resource_list(obj.pointer("/status/hard"), "status.hard", errs);
            resource_list(obj.pointer("/status/used"), "status.used", errs);
        }
        Some(old) => {
            let set = |o: &Value| {
                let mut s: Vec<String> = o
                    .pointer("/spec/scopes")
                    .and_then(Value::as_array)
                    .map(|s| {
                        s.iter()
                            .filter_map(|v| v.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                s.sort();
                s.dedup();
                s
            };
            if set(obj) != set(old) {
                errs.push(FieldError::invalid_go(
                    "spec.scopes",
                    &go_scopes(obj),
                    "field is immutable",
                ));
            }
            // A status write: its lists are checked as on create.
            if obj.get("status") != old.get("status") {
                resource_list(obj.pointer("/status/hard"), "status.hard", errs);
                resource_list(obj.pointer("/status/used"), "status.used", errs);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::resource_quota;

    fn messages(obj: &Value, old: Option<&Value>) -> Vec<String> {
        let mut errs = Vec::new();
        resource_quota(obj, old, &mut errs);
        errs.into_iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    }

    #[test]
    fn names_quantities_and_scopes_are_checked_as_upstream() {
        let ok = json!({"spec": {"hard": {"pods": "2", "count/deployments.apps": "1",
            "requests.example.com/dongle": "3", "hugepages-2Mi": "1Gi"}}});
        assert_eq!(messages(&ok, None), Vec::<String>::new());
        let bad = json!({"spec": {"hard": {"pods": "-1", "foo": "1", "storage": "1Gi"},
            "scopes": ["BestEffort", "NotBestEffort"]}});
        assert_eq!(
            messages(&bad, None),
            [
                r#"spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified"#,
                r#"spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota"#,
                r#"spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0"#,
                r#"spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota"#,
                r#"spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort", "NotBestEffort"}: conflicting scopes"#,
            ]
        );
        let misapplied = json!({"spec": {"hard": {"services": "1"}, "scopes": ["Terminating"]}});
        assert_eq!(
            messages(&misapplied, None),
            [
                r#"spec.scopes: Invalid value: []core.ResourceQuotaScope{"Terminating"}: unsupported scope applied to resource"#
            ]
        );
        let selector = json!({"spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
            {"scopeName": "BestEffort", "operator": "In", "values": ["x"]},
            {"scopeName": "PriorityClass", "operator": "NotIn"},
            {"scopeName": "Nope", "operator": "Exists"}]}}});
        assert_eq!(
            messages(&selector, None),
            [
                r#"spec.scopeSelector.matchExpressions.operator: Invalid value: "In": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"#,
                "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                r#"spec.scopeSelector.matchExpressions.scopeName: Invalid value: "Nope": unsupported scope"#,
            ]
        );
    }

    #[test]
    fn scopes_never_change() {
        let old = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]}});
        let new = json!({"spec": {"hard": {"pods": "2"}, "scopes": ["NotTerminating"]}});
        assert_eq!(
            messages(&new, Some(&old)),
            [
                r#"spec.scopes: Invalid value: []core.ResourceQuotaScope{"NotTerminating"}: field is immutable"#
            ]
        );
        let status = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"]},
            "status": {"used": {"pods": "-2"}}});
        assert_eq!(
            messages(&status, Some(&old)),
            [r#"status.used[pods]: Invalid value: "-2": must be greater than or equal to 0"#]
        );
    }
}
