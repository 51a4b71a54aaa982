//! The core group (`pkg/apis/core/validation/validation.go` and `events.go`): ConfigMap,
//! Secret, Service, Namespace, Event, PersistentVolumeClaim (pods and their templates have
//! their own file). ServiceAccounts have no rules beyond metadata upstream.

use std::net::IpAddr;

use serde_json::Value;

use super::field::{
    NameFormat, config_key_problems, go_strings, is_dns1123_label, qualified_name_problems,
    validate_name,
};
use super::objectmeta::validate_labels;
use super::{FieldError, array_at, at, immutable, str_at};

/// `ValidateConfigMap` / `ValidateConfigMapUpdate`: keys, no key in both `data` and
/// `binaryData`, 1 MiB in all; on update, the data of an `immutable` ConfigMap.
pub(crate) fn config_map(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if let Some(old) = old {
        immutable_data(obj, old, &["data", "binaryData"], errs);
    }
    let data = map_at(obj, "data");
    let binary = map_at(obj, "binaryData");
    let mut total = 0;
    for (key, value) in data.into_iter().flatten() {
        for msg in config_key_problems(key) {
            errs.push(FieldError::invalid(
                keyed("data", key),
                &Value::from(key.as_str()),
                msg,
            ));
        }
        if binary.is_some_and(|b| b.contains_key(key)) {
            errs.push(FieldError::invalid(
                keyed("data", key),
                &Value::from(key.as_str()),
                "duplicate of key present in binaryData",
            ));
        }
        total += value.as_str().map_or(0, str::len);
    }
    for (key, value) in binary.into_iter().flatten() {
        for msg in config_key_problems(key) {
            errs.push(FieldError::invalid(
                keyed("binaryData", key),
                &Value::from(key.as_str()),
                msg,
            ));
        }
        total += value.as_str().map_or(0, decoded_len);
    }
    if total > MAX_SECRET_SIZE {
        // Upstream names the whole object, `field.NewPath("")`, which prints as `[]`.
        errs.push(FieldError::too_long("[]", MAX_SECRET_SIZE));
    }
}

/// The annotation a service-account token Secret names its ServiceAccount with.
const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";

/// `core.MaxSecretSize`: the most bytes of data a ConfigMap or Secret holds.
const MAX_SECRET_SIZE: usize = 1024 * 1024;

/// The object at `obj[field]`, if it is one.
fn map_at<'a>(obj: &'a Value, field: &str) -> Option<&'a serde_json::Map<String, Value>> {
    obj.get(field).and_then(Value::as_object)
}

/// `field[key]`.
fn keyed(field: &str, key: &str) -> String {
    format!("{field}[{key}]")
}

/// The length of the bytes a base64 string decodes to (storage checked it is base64).
fn decoded_len(b64: &str) -> usize {
    let pad = b64.bytes().rev().take_while(|&c| c == b'=').count();
    (b64.len() / 4 * 3).saturating_sub(pad)
}

/// `ValidateSecret` / `ValidateSecretUpdate`: keys, 1 MiB, the keys each type requires; on
/// update an unchanged type and the data of an `immutable` Secret. `stringData` was merged
/// into `data` before (as upstream converts it).
pub(crate) fn secret(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if let Some(old) = old {
        immutable(obj, old, &["type"], errs);
        immutable_data(obj, old, &["data"], errs);
    }
    let data = map_at(obj, "data");
    let mut total = 0;
    for (key, value) in data.into_iter().flatten() {
        for msg in config_key_problems(key) {
            errs.push(FieldError::invalid(
                keyed("data", key),
                &Value::from(key.as_str()),
                msg,
            ));
        }
        total += value.as_str().map_or(0, decoded_len);
    }
    if total > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long("data", MAX_SECRET_SIZE));
    }
    let has_key = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let required = |k: &str| FieldError::required(keyed("data", k), "");
    match str_at(obj, &["type"]) {
        "kubernetes.io/service-account-token"
            if str_at(obj, &["metadata", "annotations", SA_NAME_ANNOTATION]).is_empty() =>
        {
            errs.push(FieldError::required(
                "metadata.annotations[kubernetes.io/service-account.name]",
                "",
            ));
        }
        t @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if t == "kubernetes.io/dockercfg" {
                ".dockercfg"
            } else {
                ".dockerconfigjson"
            };
            match data.and_then(|d| d.get(key)) {
                None => errs.push(required(key)),
                Some(v) => {
                    if let Some(why) = v.as_str().and_then(json_object_problem) {
                        errs.push(FieldError::invalid(
                            keyed("data", key),
                            &Value::from("<secret contents redacted>"),
                            &why,
                        ));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has_key("username") && !has_key("password") => {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        "kubernetes.io/ssh-auth" => {
            let empty = data
                .and_then(|d| d.get("ssh-privatekey"))
                .and_then(Value::as_str)
                .is_none_or(|v| decoded_len(v) == 0);
            if empty {
                errs.push(required("ssh-privatekey"));
            }
        }
        "kubernetes.io/tls" => {
            for k in ["tls.crt", "tls.key"] {
                if !has_key(k) {
                    errs.push(required(k));
                }
            }
        }
        _ => {}
    }
}

/// Why base64 `b64` is not a JSON object, worded as Go's `json.Unmarshal` into a map: exact
/// for empty input, a non-object value and a first character no JSON value starts with;
/// other syntax errors get the first-character wording (Go's names the offending byte
/// further in).
fn json_object_problem(b64: &str) -> Option<String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap_or_default();
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(_)) => None,
        Ok(other) => Some(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => "null",
            }
        )),
        Err(_) => Some(match bytes.iter().find(|c| !c.is_ascii_whitespace()) {
            None => "unexpected end of JSON input".to_string(),
            Some(c) => format!(
                "invalid character '{}' looking for beginning of value",
                char::from(*c)
            ),
        }),
    }
}

/// The data of an object marked `immutable: true` cannot change, nor the mark.
fn immutable_data(obj: &Value, old: &Value, fields: &[&str], errs: &mut Vec<FieldError>) {
    if at(old, &["immutable"]) != Some(&Value::Bool(true)) {
        return;
    }
    let msg = "field is immutable when `immutable` is set";
    if at(obj, &["immutable"]) != Some(&Value::Bool(true)) {
        errs.push(FieldError::forbidden("immutable", msg));
    }
    for f in fields {
        if at(obj, &[f]) != at(old, &[f]) {
            errs.push(FieldError::forbidden(*f, msg));
        }
    }
}

/// `ValidateNamespace`: `spec.finalizers` are qualified names, standard or domain-qualified.
pub(crate) fn namespace(obj: &Value, _old: Option<&Value>, errs: &mut Vec<FieldError>) {
    for f in array_at(obj, &["spec", "finalizers"]) {
        let Some(name) = f.as_str() else { continue };
        for msg in qualified_name_problems(name) {
            errs.push(FieldError::invalid("spec.finalizers", f, &msg));
        }
        if !name.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&name) {
            errs.push(FieldError::invalid(
                "spec.finalizers",
                f,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
}

/// `legacyValidateEvent` of `core/v1` Events (the only rules upstream applies to them, for
/// compatibility): the namespaces agree; an Event with `eventTime` (a new-style Event)
/// names its reporter, action and reason, within length limits.
pub(crate) fn event(obj: &Value, _old: Option<&Value>, errs: &mut Vec<FieldError>) {
    legacy_event(obj, errs);
}

/// `legacyValidateEvent`, on the stored (core) shape both Event APIs are converted to before
/// validation: `involvedObject`, `message`, `reportingComponent` (upstream's internal
/// `ReportingController`, whose name the error paths keep).
pub(crate) fn legacy_event(obj: &Value, errs: &mut Vec<FieldError>) {
    let ns = str_at(obj, &["metadata", "namespace"]);
    let involved_ns = str_at(obj, &["involvedObject", "namespace"]);
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            &Value::from(involved_ns),
            "does not match event.namespace",
        )
    };
    if str_at(obj, &["eventTime"]).is_empty() {
        if involved_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                errs.push(mismatch());
            }
        } else if ns != involved_ns {
            errs.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            errs.push(mismatch());
        }
        let controller = str_at(obj, &["reportingComponent"]);
        if controller.is_empty() {
            errs.push(FieldError::required("reportingController", ""));
        }
        for msg in qualified_name_problems(controller) {
            errs.push(FieldError::invalid(
                "reportingController",
                &Value::from(controller),
                &msg,
            ));
        }
        let limited =
            |errs: &mut Vec<FieldError>, path: &str, field: &str, max: usize, required: bool| {
                let v = str_at(obj, &[field]);
                if required && v.is_empty() {
                    errs.push(FieldError::required(path, ""));
                }
                if v.len() > max {
                    errs.push(FieldError::invalid(
                        path,
                        &Value::from(""),
                        &format!("can have at most {max} characters"),
                    ));
                }
            };
        limited(errs, "reportingInstance", "reportingInstance", 128, true);
        limited(errs, "action", "action", 128, true);
        limited(errs, "reason", "reason", 128, true);
        limited(errs, "message", "message", 1024, false);
    }
}

/// `ValidateService` / `ValidateServiceUpdate` (after defaulting: `type`, `sessionAffinity`,
/// `clusterIP(s)`, each port's `protocol` and `targetPort` are set as upstream sets them).
pub(crate) fn service(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let s = |f: &str| spec.get(f).and_then(Value::as_str).unwrap_or("");
    let list = |f: &str| {
        spec.get(f)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    };
    // Upstream decodes every write with defaults applied, an update too; the storage defaults
    // creates only, so an absent defaulted field is read as its default here.
    let ty = or(s("type"), "ClusterIP");
    let ports = list("ports");
    let cluster_ips = list("clusterIPs");
    let headless = cluster_ips.len() == 1 && cluster_ips[0] == "None";
    if let Some(old) = old {
        upgrade_downgrade_cluster_ips(old, obj, errs);
    }
    if ports.is_empty() && !headless && ty != "ExternalName" {
        errs.push(FieldError::required("spec.ports", ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless => errs.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            &cluster_ips[0],
            &format!("may not be set to 'None' for {ty} services"),
        )),
        "ExternalName" => {
            let not_here = "may not be set for ExternalName services";
            if !cluster_ips.is_empty() {
                errs.push(FieldError::forbidden("spec.clusterIPs", not_here));
            }
            if !list("ipFamilies").is_empty() {
                errs.push(FieldError::forbidden("spec.ipFamilies", not_here));
            }
            if spec.get("ipFamilyPolicy").is_some_and(|v| !v.is_null()) {
                errs.push(FieldError::forbidden("spec.ipFamilyPolicy", not_here));
            }
            let cname = s("externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(FieldError::required("spec.externalName", ""));
            } else {
                errs.extend(validate_name(
                    NameFormat::Subdomain,
                    cname,
                    "spec.externalName",
                ));
            }
        }
        _ => {}
    }
    for (i, p) in ports.iter().enumerate() {
        service_port(p, i, ports, errs);
    }
    if let Some(selector) = spec.get("selector").and_then(Value::as_object) {
        validate_labels(selector, "spec.selector", errs);
    }
    match or(s("sessionAffinity"), "None") {
        "ClientIP" => {}
        "None" => {
            if spec
                .get("sessionAffinityConfig")
                .is_some_and(|v| !v.is_null())
            {
                errs.push(FieldError::forbidden(
                    "spec.sessionAffinityConfig",
                    "must not be set when session affinity is None",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            "spec.sessionAffinity",
            &Value::from(other),
            &["ClientIP", "None"],
        )),
    }
    if ty != "ExternalName" {
        cluster_ips_related(spec, errs);
    }
    for (i, ip) in list("externalIPs").iter().enumerate() {
        if let Some(ip) = ip.as_str()
            && ip.parse::<IpAddr>().is_err()
        {
            errs.push(FieldError::invalid(
                format!("spec.externalIPs[{i}]"),
                &Value::from(ip),
                INVALID_IP,
            ));
        }
    }
    match ty {
        "ClusterIP" | "ExternalName" | "LoadBalancer" | "NodePort" => {}
        other => errs.push(FieldError::not_supported(
            "spec.type",
            &Value::from(other),
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        )),
    }
    let node_port = |p: &Value| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
    fn protocol(p: &Value) -> &str {
        or(
            p.get("protocol").and_then(Value::as_str).unwrap_or(""),
            "TCP",
        )
    }
    let port = |p: &Value| p.get("port").and_then(Value::as_i64).unwrap_or(0);
    if ty == "ClusterIP" {
        for (i, p) in ports.iter().enumerate() {
            if node_port(p) != 0 {
                errs.push(FieldError::forbidden(
                    format!("spec.ports[{i}].nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    for (i, p) in ports.iter().enumerate() {
        let n = node_port(p);
        if n != 0
            && ports[..i]
                .iter()
                .any(|q| node_port(q) == n && protocol(q) == protocol(p))
        {
            errs.push(FieldError::duplicate(
                format!("spec.ports[{i}].nodePort"),
                &Value::from(n),
            ));
        }
    }
    for (i, p) in ports.iter().enumerate() {
        if ports[..i]
            .iter()
            .any(|q| port(q) == port(p) && protocol(q) == protocol(p))
        {
            errs.push(FieldError::duplicate_go(
                format!("spec.ports[{i}]"),
                &format!(
                    "core.ServicePort{{Name:\"\", Protocol:{:?}, AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    protocol(p),
                    port(p)
                ),
            ));
        }
    }
    let only_lb = "may only be used when `type` is 'LoadBalancer'";
    if !list("loadBalancerSourceRanges").is_empty() && ty != "LoadBalancer" {
        // Upstream's path is capitalised so.
        errs.push(FieldError::forbidden(
            "spec.LoadBalancerSourceRanges",
            only_lb,
        ));
    }
    if spec
        .get("allocateLoadBalancerNodePorts")
        .is_some_and(|v| !v.is_null())
        && ty != "LoadBalancer"
    {
        errs.push(FieldError::forbidden(
            "spec.allocateLoadBalancerNodePorts",
            only_lb,
        ));
    }
    let external = matches!(ty, "LoadBalancer" | "NodePort")
        || (ty == "ClusterIP" && !list("externalIPs").is_empty());
    match s("externalTrafficPolicy") {
        "" => {}
        etp if !external => errs.push(FieldError::invalid(
            "spec.externalTrafficPolicy",
            &Value::from(etp),
            "may only be set for externally-accessible services",
        )),
        "Cluster" | "Local" => {}
        other => errs.push(FieldError::not_supported(
            "spec.externalTrafficPolicy",
            &Value::from(other),
            &["Cluster", "Local"],
        )),
    }
    match s("internalTrafficPolicy") {
        "" | "Cluster" | "Local" => {}
        other => errs.push(FieldError::not_supported(
            "spec.internalTrafficPolicy",
            &Value::from(other),
            &["Cluster", "Local"],
        )),
    }
    match spec.get("trafficDistribution").and_then(Value::as_str) {
        None | Some("PreferClose") => {}
        Some(other) => errs.push(FieldError::not_supported(
            "spec.trafficDistribution",
            &Value::from(other),
            &["PreferClose"],
        )),
    }
}

/// `value`, or the default upstream gives an empty one.
fn or<'a>(value: &'a str, default: &'a str) -> &'a str {
    if value.is_empty() { default } else { value }
}

const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";

/// `validateServicePort`: the `i`th of `ports`.
fn service_port(p: &Value, i: usize, ports: &[Value], errs: &mut Vec<FieldError>) {
    let path = |f: &str| format!("spec.ports[{i}].{f}");
    let name = p.get("name").and_then(Value::as_str).unwrap_or("");
    if ports.len() > 1 && name.is_empty() {
        errs.push(FieldError::required(path("name"), ""));
    } else if !name.is_empty() {
        if !is_dns1123_label(name) {
            errs.extend(validate_name(NameFormat::Label, name, &path("name")));
        }
        if ports[..i]
            .iter()
            .any(|q| q.get("name").and_then(Value::as_str) == Some(name))
        {
            errs.push(FieldError::duplicate(path("name"), &Value::from(name)));
        }
    }
    let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            path("port"),
            &Value::from(port),
            PORT_RANGE,
        ));
    }
    match or(
        p.get("protocol").and_then(Value::as_str).unwrap_or(""),
        "TCP",
    ) {
        "SCTP" | "TCP" | "UDP" => {}
        other => errs.push(FieldError::not_supported(
            path("protocol"),
            &Value::from(other),
            &["SCTP", "TCP", "UDP"],
        )),
    }
    // Upstream defaults a zero or empty targetPort to the port before validating.
    match p.get("targetPort") {
        Some(Value::String(t)) if !t.is_empty() => {
            for msg in port_name_problems(t) {
                errs.push(FieldError::invalid(
                    path("targetPort"),
                    &Value::from(t.as_str()),
                    msg,
                ));
            }
        }
        Some(Value::Number(n)) if n.as_i64() != Some(0) => {
            let n = n.as_i64().unwrap_or(-1);
            if !(1..=65535).contains(&n) {
                errs.push(FieldError::invalid(
                    path("targetPort"),
                    &Value::from(n),
                    PORT_RANGE,
                ));
            }
        }
        _ => {
            if !(1..=65535).contains(&port) {
                errs.push(FieldError::invalid(
                    path("targetPort"),
                    &Value::from(port),
                    PORT_RANGE,
                ));
            }
        }
    }
    if let Some(app) = p.get("appProtocol").and_then(Value::as_str) {
        for msg in qualified_name_problems(app) {
            errs.push(FieldError::invalid(
                path("appProtocol"),
                &Value::from(app),
                &msg,
            ));
        }
    }
}

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// `IsValidPortName`: what is wrong with a named port.
pub(crate) fn port_name_problems(port: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if port.len() > 15 {
        out.push("must be no more than 15 characters");
    }
    if port.is_empty()
        || !port
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    {
        out.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !port.bytes().any(|c| c.is_ascii_lowercase()) {
        out.push("must contain at least one letter (a-z)");
    }
    if port.contains("--") {
        out.push("must not contain consecutive hyphens");
    }
    if port.starts_with('-') || port.ends_with('-') {
        out.push("must not begin or end with a hyphen");
    }
    out
}

/// `ValidateServiceClusterIPsRelatedFields` (the single-stack part).
fn cluster_ips_related(spec: &Value, errs: &mut Vec<FieldError>) {
    let ip = spec.get("clusterIP").and_then(Value::as_str).unwrap_or("");
    let ips = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let shown = || go_strings(ips.iter().filter_map(Value::as_str));
    if !ip.is_empty() {
        if ips.is_empty() {
            errs.push(FieldError::required("spec.clusterIPs", ""));
        } else if ips[0] != ip {
            errs.push(FieldError::invalid_go(
                "spec.clusterIPs",
                &shown(),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(FieldError::invalid_go(
            "spec.clusterIPs",
            &shown(),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    for (i, fam) in array_at(spec, &["ipFamilies"]).iter().enumerate() {
        let fam = fam.as_str().unwrap_or("");
        if fam != "IPv4" && fam != "IPv6" {
            errs.push(FieldError::not_supported(
                format!("spec.ipFamilies[{i}]"),
                &Value::from(fam),
                &["IPv4", "IPv6"],
            ));
        }
    }
    if let Some(policy) = spec.get("ipFamilyPolicy").and_then(Value::as_str)
        && !["PreferDualStack", "RequireDualStack", "SingleStack"].contains(&policy)
    {
        errs.push(FieldError::not_supported(
            "spec.ipFamilyPolicy",
            &Value::from(policy),
            &["PreferDualStack", "RequireDualStack", "SingleStack"],
        ));
    }
    for (i, v) in ips.iter().enumerate() {
        let v = v.as_str().unwrap_or("");
        if i == 0 && v == "None" {
            if ips.len() > 1 {
                errs.push(FieldError::invalid_go(
                    "spec.clusterIPs",
                    &shown(),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if v.parse::<IpAddr>().is_err() {
            errs.push(FieldError::invalid(
                format!("spec.clusterIPs[{i}]"),
                &Value::from(v),
                INVALID_IP,
            ));
        }
    }
    if ips.len() > 2 {
        errs.push(FieldError::invalid_go(
            "spec.clusterIPs",
            &shown(),
            "may only hold up to 2 values",
        ));
    }
}

/// `validateUpgradeDowngradeClusterIPs`: allocated cluster IPs stay (a secondary one may be
/// added or released).
fn upgrade_downgrade_cluster_ips(old: &Value, new: &Value, errs: &mut Vec<FieldError>) {
    let ty = |o: &Value| str_at(o, &["spec", "type"]) == "ExternalName";
    if ty(old) || ty(new) {
        return;
    }
    let (before, after) = (
        array_at(old, &["spec", "clusterIPs"]),
        array_at(new, &["spec", "clusterIPs"]),
    );
    let headless = |ips: &[Value]| ips.len() == 1 && ips[0] == "None";
    if headless(before) && headless(after) {
        return;
    }
    let shown = || {
        if after.is_empty() {
            "[]string(nil)".to_string()
        } else {
            go_strings(after.iter().filter_map(Value::as_str))
        }
    };
    let changed = "may not change once set";
    if before.len() == after.len() {
        for (i, ip) in before.iter().enumerate() {
            if *ip != after[i] {
                errs.push(FieldError::invalid_go(
                    format!("spec.clusterIPs[{i}]"),
                    &shown(),
                    changed,
                ));
            }
        }
    } else if before.len() > after.len() {
        if after.is_empty() {
            errs.push(FieldError::invalid_go(
                "spec.clusterIPs[0]",
                &shown(),
                "primary clusterIP can not be unset",
            ));
        } else if after[0] != before[0] {
            errs.push(FieldError::invalid_go(
                "spec.clusterIPs[0]",
                &shown(),
                changed,
            ));
        }
    } else if !before.is_empty() && after[0] != before[0] {
        errs.push(FieldError::invalid_go(
            "spec.clusterIPs[0]",
            &shown(),
            changed,
        ));
    }
}

/// `ValidatePersistentVolumeClaim` / `ValidatePersistentVolumeClaimUpdate`.
pub(crate) fn persistent_volume_claim(
    obj: &Value,
    old: Option<&Value>,
    errs: &mut Vec<FieldError>,
) {
    if let Some(old) = old {
        // A claim without a class may get one once (the retroactive default StorageClass).
        let class_set_from_nil = at(old, &["spec", "storageClassName"]).is_none()
            && at(
                old,
                &[
                    "metadata",
                    "annotations",
                    "volume.beta.kubernetes.io/storage-class",
                ],
            )
            .is_none()
            && at(obj, &["spec", "storageClassName"])
                .and_then(Value::as_str)
                .is_some_and(|c| !c.is_empty());
        let changed = ["storageClassName", "accessModes", "volumeMode"]
            .iter()
            .filter(|f| !(**f == "storageClassName" && class_set_from_nil))
            .any(|f| at(obj, &["spec", f]) != at(old, &["spec", f]));
        if changed {
            errs.push(FieldError::forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn sizes_count_decoded_bytes() {
        assert_eq!(decoded_len(""), 0);
        assert_eq!(decoded_len("eA=="), 1);
        assert_eq!(decoded_len("eHk="), 2);
        assert_eq!(decoded_len("eHl6"), 3);
    }

    #[test]
    fn port_names_follow_is_valid_port_name() {
        assert!(port_name_problems("http").is_empty());
        assert!(port_name_problems("web-8080").is_empty());
        assert_eq!(
            port_name_problems("8080"),
            vec!["must contain at least one letter (a-z)"]
        );
        assert_eq!(
            port_name_problems("-a--b"),
            vec![
                "must not contain consecutive hyphens",
                "must not begin or end with a hyphen"
            ]
        );
        assert_eq!(port_name_problems("a-very-long-port-name").len(), 1);
    }

    #[test]
    fn an_update_leaving_out_defaulted_service_fields_is_valid() {
        let old = json!({"spec": {"type": "ClusterIP", "sessionAffinity": "None",
            "clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
            "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}]}});
        let new = json!({"spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
            "ports": [{"port": 80}]}});
        let mut errs = Vec::new();
        service(&new, Some(&old), &mut errs);
        assert_eq!(errs, vec![]);
    }

    #[test]
    fn a_changed_cluster_ip_is_refused() {
        let old = json!({"spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"],
            "ports": [{"port": 80}]}});
        // The storage carries the old clusterIPs over when an update leaves them out.
        let new = json!({"spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.1"],
            "ports": [{"port": 80}]}});
        let mut errs = Vec::new();
        service(&new, Some(&old), &mut errs);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.clusterIPs");
        assert_eq!(
            errs[0].message,
            "Invalid value: []string{\"10.96.0.1\"}: first value must match `clusterIP`"
        );
    }

    #[test]
    fn an_immutable_config_map_keeps_its_data() {
        let old = json!({"immutable": true, "data": {"a": "1"}});
        let new = json!({"immutable": true, "data": {"a": "2"}});
        let mut errs = Vec::new();
        config_map(&new, Some(&old), &mut errs);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "data");
        assert_eq!(
            errs[0].message,
            "Forbidden: field is immutable when `immutable` is set"
        );
    }

    #[test]
    fn a_claim_without_a_class_may_get_one_once() {
        let claim = |class: Option<&str>| {
            let mut c = json!({"spec": {"accessModes": ["ReadWriteOnce"]}});
            if let Some(class) = class {
                c["spec"]["storageClassName"] = json!(class);
            }
            c
        };
        let check = |new: &Value, old: &Value| {
            let mut errs = Vec::new();
            persistent_volume_claim(new, Some(old), &mut errs);
            errs.len()
        };
        assert_eq!(check(&claim(Some("standard")), &claim(None)), 0);
        assert_eq!(check(&claim(Some("")), &claim(None)), 1);
        assert_eq!(check(&claim(Some("fast")), &claim(Some("standard"))), 1);
        assert_eq!(check(&claim(None), &claim(Some("standard"))), 1);
        let mut annotated = claim(None);
        annotated["metadata"] =
            json!({"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}});
        assert_eq!(check(&claim(Some("standard")), &annotated), 1);
    }
}
