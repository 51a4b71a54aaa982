//! Per-kind write rules of the built-in resources: defaults the real server fills in on create,
//! status handling, immutable fields, and the few required fields that controllers trip over.

// Per-kind rules read best as one match arm per kind with its checks inside.
#![allow(clippy::collapsible_match)]

use serde_json::{Value, json};

use base64::Engine;

use super::meta;
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::validation::FieldError;

/// The namespaces every cluster starts with.
pub(crate) const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// `(group, plural)` of a resource, for matching.
fn gp(res: &ResourceInfo) -> (&str, &str) {
    (res.group.as_str(), res.plural.as_str())
}

/// Inserts `value` at `path` when absent.
fn default_at(obj: &mut Value, path: &str, value: Value) {
    if meta::get_path(obj, path).is_none_or(Value::is_null) {
        meta::set_path(obj, path, value);
    }
}

/// Defaults of a pod template's (or pod's) spec.
fn default_pod_spec(spec: &mut Value) {
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

/// Fills in the defaults the real server applies on create (a representative subset: what
/// controllers and `kubectl` read back).
pub(crate) fn apply_defaults(res: &ResourceInfo, obj: &mut Value, next_cluster_ip: &mut u32) {
    match gp(res) {
        ("", "pods") => {
            if let Some(spec) = obj.get_mut("spec") {
                default_pod_spec(spec);
            }
            default_at(obj, ".spec.enableServiceLinks", json!(true));
        }
        ("", "secrets") => default_at(obj, ".type", json!("Opaque")),
        ("", "services") => {
            default_at(obj, ".spec.type", json!("ClusterIP"));
            default_at(obj, ".spec.sessionAffinity", json!("None"));
            let kind = meta::get_path(obj, ".spec.type")
                .and_then(Value::as_str)
                .unwrap_or("");
            if kind != "ExternalName"
                && meta::get_path(obj, ".spec.clusterIP")
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
            {
                let n = *next_cluster_ip;
                *next_cluster_ip += 1;
                let ip = format!("10.96.{}.{}", (n >> 8) & 0xff, n & 0xff);
                meta::set_path(obj, ".spec.clusterIP", json!(ip));
            }
            if let Some(ip) = meta::get_path(obj, ".spec.clusterIP").cloned() {
                default_at(obj, ".spec.clusterIPs", json!([ip]));
            }
            if let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) {
                for p in ports.iter_mut().filter(|p| p.is_object()) {
                    default_at(p, "protocol", json!("TCP"));
                    if let Some(port) = p.get("port").cloned() {
                        default_at(p, "targetPort", port);
                    }
                }
            }
        }
        ("", "persistentvolumeclaims") => default_at(obj, ".spec.volumeMode", json!("Filesystem")),
        ("apps", "deployments") => {
            default_at(obj, ".spec.replicas", json!(1));
            default_at(obj, ".spec.revisionHistoryLimit", json!(10));
            default_at(obj, ".spec.progressDeadlineSeconds", json!(600));
            default_at(
                obj,
                ".spec.strategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}),
            );
            default_template(obj);
        }
        ("apps", "replicasets") => {
            default_at(obj, ".spec.replicas", json!(1));
            default_template(obj);
        }
        ("apps", "statefulsets") => {
            default_at(obj, ".spec.replicas", json!(1));
            default_at(obj, ".spec.podManagementPolicy", json!("OrderedReady"));
            default_at(obj, ".spec.revisionHistoryLimit", json!(10));
            default_at(
                obj,
                ".spec.updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            );
            default_template(obj);
        }
        ("apps", "daemonsets") => {
            default_at(obj, ".spec.revisionHistoryLimit", json!(10));
            default_at(
                obj,
                ".spec.updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            default_template(obj);
        }
        ("batch", "jobs") => {
            default_at(obj, ".spec.parallelism", json!(1));
            default_at(obj, ".spec.completions", json!(1));
            default_at(obj, ".spec.backoffLimit", json!(6));
            default_at(obj, ".spec.completionMode", json!("NonIndexed"));
            default_at(obj, ".spec.suspend", json!(false));
            default_template(obj);
        }
        ("batch", "cronjobs") => {
            default_at(obj, ".spec.concurrencyPolicy", json!("Allow"));
            default_at(obj, ".spec.suspend", json!(false));
            default_at(obj, ".spec.successfulJobsHistoryLimit", json!(3));
            default_at(obj, ".spec.failedJobsHistoryLimit", json!(1));
            // The pod template inside the job template is defaulted like any pod template
            // (the job-level fields are not: the real server has no defaulter for a
            // JobTemplateSpec).
            if let Some(spec) = obj.pointer_mut("/spec/jobTemplate/spec/template/spec") {
                default_pod_spec(spec);
            }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            default_at(obj, ".spec.failurePolicy", json!("Fail"));
            if let Some(m) = obj.pointer_mut("/spec/matchConstraints") {
                default_match_resources(m);
            }
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            if let Some(m) = obj.pointer_mut("/spec/matchResources") {
                default_match_resources(m);
            }
        }
        _ => {}
    }
}

/// Defaults of an admission policy's `MatchResources` (upstream's `SetDefaults_MatchResources`
/// and `SetDefaults_Rule`): `Equivalent`, empty selectors, rules of every scope.
fn default_match_resources(m: &mut Value) {
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

fn default_template(obj: &mut Value) {
    if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
        default_pod_spec(spec);
    }
}

/// Normalizes a Secret as the real server stores it: `stringData` (write-only) is merged into
/// `data`, base64-encoded; `data` values must be base64 (400 otherwise, as the decoder answers).
pub(crate) fn normalize(res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    if gp(res) != ("", "secrets") {
        return Ok(());
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    if let Some(data) = obj.get("data").and_then(Value::as_object) {
        for v in data.values() {
            let ok = v.as_str().is_some_and(|s| b64.decode(s).is_ok()) || v.is_null();
            if !ok {
                return Err(ApiError::bad_request(
                    "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data in field data",
                ));
            }
        }
    }
    let Some(map) = obj.as_object_mut() else {
        return Ok(());
    };
    if let Some(string_data) = map.remove("stringData") {
        let Value::Object(entries) = string_data else {
            return Err(ApiError::bad_request(
                "Secret in version \"v1\" cannot be handled as a Secret: stringData must be a map of strings",
            ));
        };
        let data = map.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        let data = data.as_object_mut().expect("made an object above");
        for (k, v) in entries {
            let text = v.as_str().unwrap_or_default().to_string();
            data.insert(k, Value::from(b64.encode(text)));
        }
    }
    Ok(())
}

/// Whether `sub` is a subresource of `res` whose updates write only their own part of the
/// object, beside `status` and `scale`: a CertificateSigningRequest's `approval` (its
/// conditions), a pod's `ephemeralcontainers` and `resize`, a namespace's `finalize`.
pub(crate) fn own_update_subresource(res: &ResourceInfo, sub: &str) -> bool {
    match (res.group.as_str(), res.plural.as_str()) {
        ("", "pods") => matches!(sub, "ephemeralcontainers" | "resize"),
        ("certificates.k8s.io", "certificatesigningrequests") => sub == "approval",
        ("", "namespaces") => sub == "finalize",
        _ => false,
    }
}

/// The status an object gets on create when the client's status is dropped (resources with a
/// status subresource ignore the status of a create).
pub(crate) fn initial_status(res: &ResourceInfo) -> Option<Value> {
    match gp(res) {
        ("", "pods") => Some(json!({"phase": "Pending", "qosClass": "BestEffort"})),
        ("", "namespaces") => Some(json!({"phase": "Active"})),
        ("", "persistentvolumeclaims") => Some(json!({"phase": "Pending"})),
        ("", "services") => Some(json!({"loadBalancer": {}})),
        ("apiextensions.k8s.io", _) => None,
        _ if res.custom => None,
        _ if res.status_subresource => Some(json!({})),
        _ => None,
    }
}

/// Create-time rules of namespaces: the `kubernetes` finalizer, the name label, phase Active.
pub(crate) fn namespace_on_create(obj: &mut Value) {
    let name = meta::name(obj).to_string();
    default_at(obj, ".spec.finalizers", json!(["kubernetes"]));
    let m = meta::meta_mut(obj);
    let labels = m.entry("labels").or_insert_with(|| json!({}));
    if let Some(l) = labels.as_object_mut() {
        l.insert("kubernetes.io/metadata.name".into(), Value::from(name));
    }
}

/// The node port range of a default kube-apiserver (`--service-node-port-range`).
const NODE_PORTS: std::ops::RangeInclusive<i64> = 30000..=32767;

/// Allocates the node ports of a NodePort or LoadBalancer Service, as upstream's service
/// registry does: a port without one gets a free port of the range (keeping the one the stored
/// object `old` has for the same port and protocol), and a requested one must be in the range
/// and free. `used` lists the node ports of every other Service. Answers the field errors.
pub(crate) fn allocate_node_ports(
    obj: &mut Value,
    old: Option<&Value>,
    used: &std::collections::BTreeSet<i64>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = meta::get_path(obj, ".spec.type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    let allocate = ty == "NodePort"
        || (ty == "LoadBalancer"
            && meta::get_path(obj, ".spec.allocateLoadBalancerNodePorts") != Some(&json!(false)));
    if !allocate {
        return errs;
    }
    let old_ports: Vec<Value> = old
        .and_then(|o| o.pointer("/spec/ports"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(ports) = obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut) else {
        return errs;
    };
    let mut taken = used.clone();
    let key = |p: &Value| (p.get("port").cloned(), p.get("protocol").cloned());
    // Requested ports first, so that an allocation never takes one a later port asks for.
    for (i, p) in ports.iter().enumerate() {
        let Some(n) = p
            .get("nodePort")
            .and_then(Value::as_i64)
            .filter(|n| *n != 0)
        else {
            continue;
        };
        let field = format!("spec.ports[{i}].nodePort");
        let kept = old_ports
            .iter()
            .any(|o| o.get("nodePort").and_then(Value::as_i64) == Some(n));
        if !NODE_PORTS.contains(&n) {
            errs.push(FieldError::invalid(
                field,
                &json!(n),
                "provided port is not in the valid range. The range of valid ports is 30000-32767",
            ));
        } else if !kept && !taken.insert(n) {
            errs.push(FieldError::invalid(
                field,
                &json!(n),
                "provided port is already allocated",
            ));
        }
    }
    let mut next = *NODE_PORTS.start();
    for p in ports.iter_mut().filter(|p| p.is_object()) {
        if p.get("nodePort")
            .and_then(Value::as_i64)
            .is_some_and(|n| n != 0)
        {
            continue;
        }
        let previous = old_ports
            .iter()
            .find(|o| key(o) == key(p))
            .and_then(|o| o.get("nodePort").and_then(Value::as_i64));
        let n = match previous {
            Some(n) => n,
            None => {
                while taken.contains(&next) && next <= *NODE_PORTS.end() {
                    next += 1;
                }
                if next > *NODE_PORTS.end() {
                    errs.push(FieldError {
                        reason: "InternalError",
                        field: "spec.ports".into(),
                        message: "Internal error: range is full".into(),
                    });
                    return errs;
                }
                taken.insert(next);
                next
            }
        };
        p["nodePort"] = json!(n);
    }
    errs
}

/// Services keep their clusterIP when an update leaves it out (the real server copies it).
pub(crate) fn carry_over(res: &ResourceInfo, old: &Value, new: &mut Value) {
    if gp(res) == ("", "services") {
        for path in [".spec.clusterIP", ".spec.clusterIPs"] {
            if meta::get_path(new, path).is_none_or(|v| v.is_null() || v == "")
                && let Some(v) = meta::get_path(old, path).cloned()
            {
                meta::set_path(new, path, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::builtin_resources;

    fn res(plural: &str) -> ResourceInfo {
        builtin_resources()
            .into_iter()
            .find(|r| r.plural == plural)
            .unwrap()
    }

    #[test]
    fn deployment_defaults() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
        apply_defaults(&res("deployments"), &mut d, &mut 1);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
    }

    #[test]
    fn a_cronjob_job_template_pod_spec_is_defaulted() {
        let mut c = json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
        apply_defaults(&res("cronjobs"), &mut c, &mut 1);
        let pod = &c["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        assert_eq!(pod["dnsPolicy"], "ClusterFirst");
        assert_eq!(pod["restartPolicy"], "OnFailure", "a set field is kept");
        assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always");
        // No job-level defaults inside the template, as the real server.
        assert!(
            c["spec"]["jobTemplate"]["spec"]
                .get("backoffLimit")
                .is_none()
        );
        assert_eq!(c["spec"]["concurrencyPolicy"], "Allow");
    }

    #[test]
    fn services_get_cluster_ips() {
        let mut next = 1;
        let mut a = json!({"spec": {"ports": [{"port": 80}]}});
        let mut b = json!({"spec": {}});
        apply_defaults(&res("services"), &mut a, &mut next);
        apply_defaults(&res("services"), &mut b, &mut next);
        assert_eq!(a["spec"]["clusterIP"], "10.96.0.1");
        assert_eq!(b["spec"]["clusterIP"], "10.96.0.2");
        assert_eq!(a["spec"]["ports"][0]["targetPort"], 80);
    }
}
