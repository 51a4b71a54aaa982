//! The write rules of the built-in resources as the storage applies them: each kind's
//! normalization, defaults and initial status, taken from its strategy (`kinds::Strategy`),
//! and the rules bound to the store's state: the namespaces every cluster starts with, a new
//! namespace's finalizer and name label, and a Service's node ports and cluster IP carried
//! over on update.

use serde_json::{Value, json};

use super::meta;
use crate::error::ApiError;
use crate::kinds::{self, defaults::default_at};
use crate::resource::{ResourceInfo, names};
use crate::validation::FieldError;

/// The namespaces every cluster starts with.
pub(crate) const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];

/// Fills in the defaults the real server applies on create and update (a representative
/// subset: what controllers and `kubectl` read back), as `res`'s kind defines them.
pub(crate) fn apply_defaults(res: &ResourceInfo, obj: &mut Value, next_cluster_ip: &mut u32) {
    if let Some(defaults) = kinds::strategy_of(&res.group, &res.plural).defaults {
        defaults(obj, next_cluster_ip);
    }
}

/// Rewrites `obj` as `res`'s kind stores it (a Secret's `stringData` merged into `data`);
/// 400 when that fails.
pub(crate) fn normalize(res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    match kinds::strategy_of(&res.group, &res.plural).normalize {
        Some(normalize) => normalize(obj),
        None => Ok(()),
    }
}

/// Whether `sub` is a subresource of `res` whose updates write only their own part of the
/// object, beside `status` and `scale`: a CertificateSigningRequest's `approval` (its
/// conditions), a pod's `ephemeralcontainers` and `resize`, a namespace's `finalize`.
pub(crate) fn own_update_subresource(res: &ResourceInfo, sub: &str) -> bool {
    kinds::strategy_of(&res.group, &res.plural)
        .own_subresources
        .contains(&sub)
}

/// The status an object gets on create when the client's status is dropped (resources with a
/// status subresource ignore the status of a create).
pub(crate) fn initial_status(res: &ResourceInfo) -> Option<Value> {
    if res.custom || !res.status_subresource {
        return None;
    }
    kinds::strategy_of(&res.group, &res.plural)
        .initial_status
        .map(|status| status())
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
    if res.is(names::SERVICES) {
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

    fn res(plural: &str) -> ResourceInfo {
        ResourceInfo::builtins()
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
