//! Defaulting helpers the kinds' strategies share: a value put at a dotted path when absent,
//! and upstream's defaults of pod specs (every workload's template) and admission policies'
//! match resources.

use serde_json::{Value, json};

pub(crate) use crate::json::{get_path, set_path};

/// Inserts `value` at `path` when absent.
pub(crate) fn default_at(obj: &mut Value, path: &str, value: Value) {
    if get_path(obj, path).is_none_or(Value::is_null) {
        set_path(obj, path, value);
    }
}

/// Defaults of a pod template's (or pod's) spec.
pub(crate) fn default_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_at(spec, "restartPolicy", json!("Always"));
    default_at(spec, "dnsPolicy", json!("ClusterFirst"));
    default_at(spec, "schedulerName", json!("default-scheduler"));
    default_at(spec, "terminationGracePeriodSeconds", json!(30));
    default_at(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(cs) = spec.get_mut(list).and_then(Value::as_array_mut) {
            for c in cs.iter_mut().filter(|c| c.is_object()) {
                default_at(c, "terminationMessagePath", json!("/dev/termination-log"));
                default_at(c, "terminationMessagePolicy", json!("File"));
                let latest = c
                    .get("image")
                    .and_then(Value::as_str)
                    .is_some_and(|i| !i.contains(':') || i.ends_with(":latest"));
                default_at(
                    c,
                    "imagePullPolicy",
                    json!(if latest { "Always" } else { "IfNotPresent" }),
                );
                default_at(c, "resources", json!({}));
                if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                    for p in ports.iter_mut().filter(|p| p.is_object()) {
                        default_at(p, "protocol", json!("TCP"));
                    }
                }
            }
        }
    }
}

/// Defaults of an admission policy's `MatchResources` (upstream's `SetDefaults_MatchResources`
/// and `SetDefaults_Rule`): `Equivalent`, empty selectors, rules of every scope.
pub(crate) fn default_match_resources(m: &mut Value) {
    if !m.is_object() {
        return;
    }
    default_at(m, ".matchPolicy", json!("Equivalent"));
    default_at(m, ".namespaceSelector", json!({}));
    default_at(m, ".objectSelector", json!({}));
    for rules in ["resourceRules", "excludeResourceRules"] {
        if let Some(list) = m.get_mut(rules).and_then(Value::as_array_mut) {
            for r in list.iter_mut().filter(|r| r.is_object()) {
                default_at(r, ".scope", json!("*"));
            }
        }
    }
}

/// Defaults of the pod template at `spec.template` (the workloads').
pub(crate) fn default_template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}
