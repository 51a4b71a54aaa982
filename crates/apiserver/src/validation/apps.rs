//! `apps/v1` (`pkg/apis/apps/validation/validation.go`, and the selector immutability the
//! registry strategies add for `apps/v1`): Deployments, ReplicaSets, StatefulSets and
//! DaemonSets.
//!
//! Upstream validates the defaulted object; where the embedded server's defaulting stops short
//! (a strategy given only its `type`, a `rollingUpdate` without `maxSurge`), the validators
//! read upstream's defaults for the missing values.

use serde_json::{Map, Value};

use super::FieldError;
use super::at::At;
use super::pod::{
    go_int_or_string, go_label_selector, invalid_go, label_selector, nonnegative, not_supported_go,
    restart_always, s, selector_is_empty, selector_parses, selector_selects_template,
    template_spec,
};

const PERCENT_MSG: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// The spec of a workload, `null` when absent.
fn spec_of(obj: &Value) -> &Value {
    static NULL: Value = Value::Null;
    obj.get("spec").unwrap_or(&NULL)
}

/// The selector, if set.
fn selector(spec: &Value) -> Option<&Value> {
    spec.get("selector").filter(|v| !v.is_null())
}

/// The template, `null` when absent.
fn template(spec: &Value) -> &Value {
    static NULL: Value = Value::Null;
    spec.get("template").unwrap_or(&NULL)
}

/// Whether `v` is a valid percent string (`IsValidPercent`).
fn is_percent(v: &str) -> bool {
    v.strip_suffix('%')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()))
}

/// `getIntOrPercentValue`.
fn int_or_percent_value(v: &Value) -> i64 {
    match v {
        Value::String(st) if is_percent(st) => st[..st.len() - 1].parse().unwrap_or(0),
        Value::String(st) => st.parse().unwrap_or(0),
        other => other.as_i64().unwrap_or(0),
    }
}

/// `ValidatePositiveIntOrPercent`.
fn positive_int_or_percent(v: &Value, at: &At, errs: &mut Vec<FieldError>) {
    match v {
        Value::String(st) if !is_percent(st) => {
            errs.push(invalid_go(at.path(), &go_int_or_string(v), PERCENT_MSG));
        }
        Value::Number(n) if n.as_i64().is_some_and(|n| n < 0) => errs.push(FieldError::invalid(
            at.path(),
            v,
            "must be greater than or equal to 0",
        )),
        _ => {}
    }
}

/// `IsNotMoreThan100Percent`.
fn not_more_than_100_percent(v: &Value, at: &At, errs: &mut Vec<FieldError>) {
    if let Value::String(st) = v
        && is_percent(st)
        && int_or_percent_value(v) > 100
    {
        errs.push(invalid_go(
            at.path(),
            &go_int_or_string(v),
            "must not be greater than 100%",
        ));
    }
}

/// A `rollingUpdate` field, or upstream's default for it.
fn field_or<'a>(ru: Option<&'a Value>, key: &str, default: &'a Value) -> &'a Value {
    ru.and_then(|r| r.get(key))
        .filter(|v| !v.is_null())
        .unwrap_or(default)
}

/// The selector and template rules Deployments and ReplicaSets share
/// (`ValidatePodTemplateSpecForReplicaSet` and the selector checks before it).
fn selector_and_template(spec: &Value, at: &At, errs: &mut Vec<FieldError>) {
    let sel_at = at.child("selector");
    let sel = selector(spec);
    match sel {
        None => errs.push(FieldError::required(sel_at.path(), "")),
        Some(sel) => {
            label_selector(sel, &sel_at, errs);
            if selector_is_empty(sel) {
                errs.push(invalid_go(
                    sel_at.path(),
                    &go_label_selector(sel),
                    "empty selector is invalid for deployment",
                ));
            }
        }
    }
    if let Some(sel) = sel.filter(|s| !selector_parses(s)) {
        errs.push(invalid_go(
            sel_at.path(),
            &go_label_selector(sel),
            "invalid label selector",
        ));
        return;
    }
    let tpl = template(spec);
    let tpl_at = at.child("template");
    if !sel.is_some_and(selector_is_empty) {
        selector_selects_template(sel, tpl, &tpl_at, errs);
    }
    template_spec(tpl, &tpl_at, errs);
    restart_always(tpl, &tpl_at, "ReplicaSet", errs);
}

/// Whether two selectors are semantically equal (nil and empty maps and lists alike).
fn same_selector(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let labels = |v: &Value| {
                v.get("matchLabels")
                    .and_then(Value::as_object)
                    .filter(|m| !m.is_empty())
                    .cloned()
            };
            let exprs = |v: &Value| {
                v.get("matchExpressions")
                    .and_then(Value::as_array)
                    .filter(|l| !l.is_empty())
                    .cloned()
            };
            labels(a) == labels(b) && exprs(a) == exprs(b)
        }
        _ => false,
    }
}

/// `spec.selector: Invalid value: v1.LabelSelector{...}: field is immutable` (the apps/v1
/// strategies' `ValidateImmutableField` of the selector).
fn immutable_selector(spec: &Value, old: &Value, errs: &mut Vec<FieldError>) {
    let (new, was) = (selector(spec), selector(spec_of(old)));
    if !same_selector(new, was) {
        let rendered = new.map_or_else(|| "null".to_string(), go_label_selector);
        errs.push(invalid_go("spec.selector", &rendered, "field is immutable"));
    }
}

/// `ValidateDeployment` / `ValidateDeploymentUpdate`.
pub(crate) fn deployment(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let at = At::root("spec");
    let spec = spec_of(obj);
    nonnegative(spec, "replicas", &at, errs);
    selector_and_template(spec, &at, errs);
    // ValidateDeploymentStrategy
    let strategy = spec.get("strategy").filter(|v| !v.is_null());
    let st_at = at.child("strategy");
    let ru = strategy
        .and_then(|st| st.get("rollingUpdate"))
        .filter(|v| !v.is_null());
    match strategy.map_or("", |st| s(st, "type")) {
        "Recreate" => {
            if ru.is_some() {
                errs.push(FieldError::forbidden(
                    st_at.child("rollingUpdate").path(),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "" | "RollingUpdate" => {
            let quarter = Value::from("25%");
            let ru_at = st_at.child("rollingUpdate");
            let mu = field_or(ru, "maxUnavailable", &quarter);
            let ms = field_or(ru, "maxSurge", &quarter);
            let mu_at = ru_at.child("maxUnavailable");
            positive_int_or_percent(mu, &mu_at, errs);
            positive_int_or_percent(ms, &ru_at.child("maxSurge"), errs);
            if int_or_percent_value(mu) == 0 && int_or_percent_value(ms) == 0 {
                errs.push(invalid_go(
                    mu_at.path(),
                    &go_int_or_string(mu),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
            not_more_than_100_percent(mu, &mu_at, errs);
        }
        other => {
            let ru_shown = if ru.is_some() {
                "(*apps.RollingUpdateDeployment)(0xc000000000)"
            } else {
                "(*apps.RollingUpdateDeployment)(nil)"
            };
            errs.push(not_supported_go(
                st_at.path(),
                &format!("apps.DeploymentStrategy{{Type:{other:?}, RollingUpdate:{ru_shown}}}"),
                &["Recreate", "RollingUpdate"],
            ));
        }
    }
    nonnegative(spec, "minReadySeconds", &at, errs);
    nonnegative(spec, "revisionHistoryLimit", &at, errs);
    if let Some(pds) = spec.get("progressDeadlineSeconds").and_then(Value::as_i64) {
        nonnegative(spec, "progressDeadlineSeconds", &at, errs);
        let min_ready = spec
            .get("minReadySeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if pds <= min_ready {
            errs.push(FieldError::invalid(
                at.child("progressDeadlineSeconds").path(),
                &Value::from(pds),
                "must be greater than minReadySeconds",
            ));
        }
    }
    if let Some(old) = old {
        immutable_selector(spec, old, errs);
    }
}

/// `ValidateReplicaSet` / `ValidateReplicaSetUpdate`.
pub(crate) fn replica_set(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let at = At::root("spec");
    let spec = spec_of(obj);
    nonnegative(spec, "replicas", &at, errs);
    nonnegative(spec, "minReadySeconds", &at, errs);
    selector_and_template(spec, &at, errs);
    if let Some(old) = old {
        immutable_selector(spec, old, errs);
    }
}

/// `ValidateDaemonSet` / `ValidateDaemonSetUpdate`.
pub(crate) fn daemon_set(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let at = At::root("spec");
    let spec = spec_of(obj);
    let sel = selector(spec);
    let sel_at = at.child("selector");
    if let Some(sel) = sel {
        label_selector(sel, &sel_at, errs);
    }
    let tpl = template(spec);
    let tpl_at = at.child("template");
    if sel.is_none_or(selector_parses) {
        selector_selects_template(sel, tpl, &tpl_at, errs);
    }
    if let Some(sel) = sel.filter(|s| selector_is_empty(s)) {
        errs.push(invalid_go(
            sel_at.path(),
            &go_label_selector(sel),
            "empty selector is invalid for daemonset",
        ));
    }
    template_spec(tpl, &tpl_at, errs);
    restart_always(tpl, &tpl_at, "DaemonSet", errs);
    nonnegative(spec, "minReadySeconds", &at, errs);
    // ValidateDaemonSetUpdateStrategy
    let us_at = at.child("updateStrategy");
    let strategy = spec.get("updateStrategy").filter(|v| !v.is_null());
    let ru = strategy
        .and_then(|st| st.get("rollingUpdate"))
        .filter(|v| !v.is_null());
    match strategy.map_or("", |st| s(st, "type")) {
        "OnDelete" => {}
        "" | "RollingUpdate" => {
            let (one, zero) = (Value::from(1), Value::from(0));
            let ru_at = us_at.child("rollingUpdate");
            let mu = field_or(ru, "maxUnavailable", &one);
            let ms = field_or(ru, "maxSurge", &zero);
            let (mu_at, ms_at) = (ru_at.child("maxUnavailable"), ru_at.child("maxSurge"));
            positive_int_or_percent(mu, &mu_at, errs);
            positive_int_or_percent(ms, &ms_at, errs);
            not_more_than_100_percent(mu, &mu_at, errs);
            not_more_than_100_percent(ms, &ms_at, errs);
            match (int_or_percent_value(mu) != 0, int_or_percent_value(ms) != 0) {
                (true, true) => errs.push(invalid_go(
                    ms_at.path(),
                    &go_int_or_string(ms),
                    "may not be set when maxUnavailable is non-zero",
                )),
                (false, false) => errs.push(FieldError::required(
                    mu_at.path(),
                    "cannot be 0 when maxSurge is 0",
                )),
                _ => {}
            }
        }
        other => {
            let ru_shown = if ru.is_some() {
                "(*apps.RollingUpdateDaemonSet)(0xc000000000)"
            } else {
                "(*apps.RollingUpdateDaemonSet)(nil)"
            };
            errs.push(not_supported_go(
                us_at.path(),
                &format!(
                    "apps.DaemonSetUpdateStrategy{{Type:{other:?}, RollingUpdate:{ru_shown}}}"
                ),
                &["RollingUpdate", "OnDelete"],
            ));
        }
    }
    nonnegative(spec, "revisionHistoryLimit", &at, errs);
    if let Some(old) = old {
        immutable_selector(spec, old, errs);
    }
}

/// The StatefulSet spec fields an update may change.
const STATEFUL_SET_MUTABLE: [&str; 6] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

/// The StatefulSet spec fields the server defaults on create.
const STATEFUL_SET_DEFAULTED: [&str; 2] = ["podManagementPolicy", "revisionHistoryLimit"];

/// Whether a value is "unset" the way Go's semantic equality sees it.
fn unset(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        _ => false,
    }
}

/// `ValidateStatefulSet` / `ValidateStatefulSetUpdate`.
pub(crate) fn stateful_set(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let at = At::root("spec");
    let spec = spec_of(obj);
    let pmp = s(spec, "podManagementPolicy");
    if !matches!(pmp, "" | "OrderedReady" | "Parallel") {
        errs.push(FieldError::invalid(
            at.child("podManagementPolicy").path(),
            &Value::from(pmp),
            "must be 'OrderedReady' or 'Parallel'",
        ));
    }
    let us_at = at.child("updateStrategy");
    let strategy = spec.get("updateStrategy").filter(|v| !v.is_null());
    let ru = strategy
        .and_then(|st| st.get("rollingUpdate"))
        .filter(|v| !v.is_null());
    let ru_at = us_at.child("rollingUpdate");
    match strategy.map_or("", |st| s(st, "type")) {
        "OnDelete" => {
            if let Some(ru) = ru {
                let mu = if ru.get("maxUnavailable").is_some_and(|v| !v.is_null()) {
                    "(*intstr.IntOrString)(0xc000000000)"
                } else {
                    "(*intstr.IntOrString)(nil)"
                };
                errs.push(invalid_go(
                    ru_at.path(),
                    &format!(
                        "apps.RollingUpdateStatefulSetStrategy{{Partition:{}, MaxUnavailable:{mu}}}",
                        ru.get("partition").and_then(Value::as_i64).unwrap_or(0)
                    ),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "" | "RollingUpdate" => {
            if let Some(ru) = ru {
                nonnegative(ru, "partition", &ru_at, errs);
                if let Some(mu) = ru.get("maxUnavailable").filter(|v| !v.is_null()) {
                    let mu_at = ru_at.child("maxUnavailable");
                    positive_int_or_percent(mu, &mu_at, errs);
                    if int_or_percent_value(mu) == 0 {
                        errs.push(invalid_go(
                            mu_at.path(),
                            &go_int_or_string(mu),
                            "cannot be 0",
                        ));
                    }
                    not_more_than_100_percent(mu, &mu_at, errs);
                }
            }
        }
        other => {
            let ru_shown = if ru.is_some() {
                "(*apps.RollingUpdateStatefulSetStrategy)(0xc000000000)"
            } else {
                "(*apps.RollingUpdateStatefulSetStrategy)(nil)"
            };
            errs.push(invalid_go(
                us_at.path(),
                &format!(
                    "apps.StatefulSetUpdateStrategy{{Type:{other:?}, RollingUpdate:{ru_shown}}}"
                ),
                "must be 'RollingUpdate' or 'OnDelete'",
            ));
        }
    }
    if let Some(policy) = spec
        .get("persistentVolumeClaimRetentionPolicy")
        .filter(|v| !v.is_null())
    {
        let p_at = at.child("persistentVolumeClaimRetentionPolicy");
        for key in ["whenDeleted", "whenScaled"] {
            let v = s(policy, key);
            if !matches!(v, "" | "Retain" | "Delete") {
                errs.push(FieldError::not_supported(
                    p_at.child(key).path(),
                    &Value::from(v),
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    nonnegative(spec, "replicas", &at, errs);
    nonnegative(spec, "minReadySeconds", &at, errs);
    if let Some(ordinals) = spec.get("ordinals").filter(|v| !v.is_null()) {
        nonnegative(ordinals, "start", &at.child("ordinals"), errs);
    }
    let sel_at = at.child("selector");
    let sel = selector(spec);
    match sel {
        None => errs.push(FieldError::required(sel_at.path(), "")),
        Some(sel) => {
            label_selector(sel, &sel_at, errs);
            if selector_is_empty(sel) {
                errs.push(invalid_go(
                    sel_at.path(),
                    &go_label_selector(sel),
                    "empty selector is invalid for statefulset",
                ));
            }
        }
    }
    let tpl = template(spec);
    let tpl_at = at.child("template");
    match sel {
        Some(sel) if !selector_parses(sel) => {
            errs.push(invalid_go(sel_at.path(), &go_label_selector(sel), ""));
        }
        _ => {
            // ValidatePodTemplateSpecForStatefulSet: the selector and the template's labels;
            // upstream leaves the pod spec of a StatefulSet's template unvalidated.
            if !sel.is_some_and(selector_is_empty) {
                selector_selects_template(sel, tpl, &tpl_at, errs);
            }
            let labels = tpl.get("metadata").and_then(|m| m.get("labels"));
            super::pod::labels(labels, &tpl_at.child("labels"), errs);
        }
    }
    restart_always(tpl, &tpl_at, "StatefulSet", errs);
    if let Some(old) = old {
        let old_spec = spec_of(old);
        let empty = Map::new();
        let (a, b) = (
            spec.as_object().unwrap_or(&empty),
            old_spec.as_object().unwrap_or(&empty),
        );
        let changed = a
            .keys()
            .chain(b.keys())
            .filter(|k| !STATEFUL_SET_MUTABLE.contains(&k.as_str()))
            .any(|k| {
                let (x, y) = (a.get(k), b.get(k));
                // Left out, a defaulted field keeps its stored value.
                let defaulted = STATEFUL_SET_DEFAULTED.contains(&k.as_str()) && unset(x);
                x != y && !(unset(x) && unset(y)) && !defaulted
            });
        if changed {
            errs.push(FieldError::forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn valid_template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "nginx"}]}})
    }

    #[test]
    fn valid_workloads_pass() {
        let spec = json!({"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": valid_template()});
        for v in [deployment, replica_set, daemon_set, stateful_set] {
            let mut errs = Vec::new();
            v(&json!({ "spec": spec }), None, &mut errs);
            assert!(errs.is_empty(), "{errs:?}");
            v(
                &json!({ "spec": spec }),
                Some(&json!({ "spec": spec })),
                &mut errs,
            );
            assert!(errs.is_empty(), "{errs:?}");
        }
    }

    #[test]
    fn a_deployment_without_selector_gets_both_upstream_errors() {
        let mut errs = Vec::new();
        deployment(
            &json!({"spec": {"template": valid_template()}}),
            None,
            &mut errs,
        );
        let got: Vec<String> = errs
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect();
        assert_eq!(
            got,
            vec![
                "spec.selector: Required value".to_string(),
                "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`".to_string(),
            ]
        );
    }
}
