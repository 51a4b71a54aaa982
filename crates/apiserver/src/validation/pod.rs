//! Pods and pod templates (`ValidatePodSpec`, `ValidatePodTemplateSpec`, `ValidatePodCreate`,
//! `ValidatePodUpdate` of `pkg/apis/core/validation/validation.go`): the rules Pods,
//! PodTemplates, ReplicationControllers and every workload carrying a pod template share.
//!
//! Upstream validates the defaulted object. Where the embedded server leaves a field upstream
//! would default (a pod template's `restartPolicy`, a port's `protocol`, a probe's
//! `successThreshold`...), an absent value is taken as that default rather than reported as
//! missing.
//!
//! Values shown in messages follow `field.Error`: strings quoted, numbers bare, and other Go
//! values as `%#v` prints them (`map[string]string{"app":"web"}`, [`go_label_selector`],
//! [`go_int_or_string`]).

use crt_labels::validation::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
};
use serde_json::{Map, Value};

use super::at::At;
use super::quantity::Quantity;
use super::{FieldError, array_at, has};

// ---- JSON access -------------------------------------------------------------------------

/// The string at `key`, `""` when absent or not a string.
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The array at `key`, empty when absent.
pub(crate) fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    array_at(v, &[key])
}

/// The integer at `key`, if set.
pub(crate) fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// The object at `key`, if set.
pub(crate) fn obj<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

/// Whether `key` holds something other than `null`.
pub(crate) fn set(v: &Value, key: &str) -> bool {
    has(v, &[key])
}

// ---- values printed as upstream prints them ---------------------------------------------

/// `Invalid value: <rendered>: <detail>`, for a value already printed the Go way.
pub(crate) fn invalid_go(field: impl Into<String>, rendered: &str, detail: &str) -> FieldError {
    FieldError {
        reason: "FieldValueInvalid",
        field: field.into(),
        message: format!("Invalid value: {rendered}: {detail}"),
    }
}

/// `Unsupported value: <rendered>: supported values: ...`, for a value already printed the Go
/// way.
pub(crate) fn not_supported_go(
    field: impl Into<String>,
    rendered: &str,
    supported: &[&str],
) -> FieldError {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    FieldError {
        reason: "FieldValueNotSupported",
        field: field.into(),
        message: format!(
            "Unsupported value: {rendered}: supported values: {}",
            list.join(", ")
        ),
    }
}

/// `Invalid value: <n>: must be greater than or equal to 0` when `n` is negative
/// (`ValidateNonnegativeField`).
pub(crate) fn nonnegative(v: &Value, key: &str, at: &At, errs: &mut Vec<FieldError>) {
    if let Some(n) = int(v, key).filter(|n| *n < 0) {
        errs.push(FieldError::invalid(
            at.child(key).path(),
            &Value::from(n),
            "must be greater than or equal to 0",
        ));
    }
}

/// A `map[string]string` as `%#v` prints it: `map[string]string{"a":"1", "b":"2"}`, or
/// `map[string]string(nil)` when absent.
pub(crate) fn go_string_map(v: Option<&Value>) -> String {
    let Some(m) = v.and_then(Value::as_object) else {
        return "map[string]string(nil)".into();
    };
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    let items: Vec<String> = keys
        .iter()
        .map(|k| format!("{:?}:{:?}", k, m[*k].as_str().unwrap_or("")))
        .collect();
    format!("map[string]string{{{}}}", items.join(", "))
}

/// A `[]string` as `%#v` prints it.
fn go_string_slice(v: Option<&Value>) -> String {
    match v.and_then(Value::as_array) {
        None => "[]string(nil)".into(),
        Some(a) => {
            let items: Vec<String> = a
                .iter()
                .map(|x| format!("{:?}", x.as_str().unwrap_or("")))
                .collect();
            format!("[]string{{{}}}", items.join(", "))
        }
    }
}

/// A label selector as `%#v` prints a `metav1.LabelSelector`, as in the well-known
/// `spec.selector: Invalid value: v1.LabelSelector{...}: field is immutable`.
pub(crate) fn go_label_selector(sel: &Value) -> String {
    let exprs = match sel.get("matchExpressions").and_then(Value::as_array) {
        None => "[]v1.LabelSelectorRequirement(nil)".to_string(),
        Some(list) => {
            let items: Vec<String> = list
                .iter()
                .map(|r| {
                    format!(
                        "v1.LabelSelectorRequirement{{Key:{:?}, Operator:{:?}, Values:{}}}",
                        s(r, "key"),
                        s(r, "operator"),
                        go_string_slice(r.get("values"))
                    )
                })
                .collect();
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
        }
    };
    format!(
        "v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{exprs}}}",
        go_string_map(sel.get("matchLabels"))
    )
}

/// An int-or-string as `%#v` prints an `intstr.IntOrString`.
pub(crate) fn go_int_or_string(v: &Value) -> String {
    match v {
        Value::String(st) => format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{st:?}}}"),
        other => format!(
            "intstr.IntOrString{{Type:0, IntVal:{}, StrVal:\"\"}}",
            other.as_i64().unwrap_or(0)
        ),
    }
}

// ---- names, labels and selectors ---------------------------------------------------------

/// `Invalid value` for each DNS-1123 label problem of `name`.
pub(crate) fn dns_label(name: &str, at: &At, errs: &mut Vec<FieldError>) {
    for msg in is_dns1123_label(name) {
        errs.push(FieldError::invalid(at.path(), &Value::from(name), &msg));
    }
}

/// `Invalid value` for each DNS-1123 subdomain problem of `name`.
pub(crate) fn dns_subdomain(name: &str, at: &At, errs: &mut Vec<FieldError>) {
    for msg in is_dns1123_subdomain(name) {
        errs.push(FieldError::invalid(at.path(), &Value::from(name), &msg));
    }
}

/// `ValidateLabels`: every key a qualified name, every value a label value.
pub(crate) fn labels(map: Option<&Value>, at: &At, errs: &mut Vec<FieldError>) {
    let Some(m) = map.and_then(Value::as_object) else {
        return;
    };
    for (k, v) in m {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(
                at.path(),
                &Value::from(k.as_str()),
                &msg,
            ));
        }
        let v = v.as_str().unwrap_or("");
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(at.path(), &Value::from(v), &msg));
        }
    }
}

/// Whether a selector's operators are all known (`LabelSelectorAsSelector` succeeds).
pub(crate) fn selector_parses(sel: &Value) -> bool {
    arr(sel, "matchExpressions")
        .iter()
        .all(|r| matches!(s(r, "operator"), "In" | "NotIn" | "Exists" | "DoesNotExist"))
}

/// Whether a selector selects nothing-or-everything specially: `None` (no selector) selects
/// nothing; `{}` selects everything (`Selector.Empty()`).
pub(crate) fn selector_is_empty(sel: &Value) -> bool {
    obj(sel, "matchLabels").is_none_or(Map::is_empty) && arr(sel, "matchExpressions").is_empty()
}

/// Whether `sel` (a `metav1.LabelSelector`; `None` selects nothing) matches `labels`.
pub(crate) fn selector_matches(sel: Option<&Value>, labels: Option<&Value>) -> bool {
    let Some(sel) = sel.filter(|v| !v.is_null()) else {
        return false;
    };
    let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let ml_ok = obj(sel, "matchLabels").is_none_or(|m| m.iter().all(|(k, v)| get(k) == v.as_str()));
    ml_ok
        && arr(sel, "matchExpressions").iter().all(|r| {
            let value = get(s(r, "key"));
            let in_values = |x: &str| arr(r, "values").iter().any(|v| v.as_str() == Some(x));
            match s(r, "operator") {
                "In" => value.is_some_and(in_values),
                "NotIn" => value.is_none_or(|x| !in_values(x)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

/// `ValidateLabelSelector`: requirement operators and values, keys, `matchLabels`.
pub(crate) fn label_selector(sel: &Value, at: &At, errs: &mut Vec<FieldError>) {
    let exprs_at = at.child("matchExpressions");
    for (i, r) in arr(sel, "matchExpressions").iter().enumerate() {
        let r_at = exprs_at.index(i);
        let values = arr(r, "values");
        match s(r, "operator") {
            "In" | "NotIn" if values.is_empty() => errs.push(FieldError::required(
                r_at.child("values").path(),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.push(FieldError::forbidden(
                r_at.child("values").path(),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            op => errs.push(FieldError::invalid(
                r_at.child("operator").path(),
                &Value::from(op),
                "not a valid selector operator",
            )),
        }
        let key = s(r, "key");
        for msg in is_qualified_name(key) {
            errs.push(FieldError::invalid(
                r_at.child("key").path(),
                &Value::from(key),
                &msg,
            ));
        }
        let values_at = r_at.child("values");
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for msg in is_valid_label_value(v) {
                errs.push(FieldError::invalid(
                    values_at.index(j).path(),
                    &Value::from(v),
                    &msg,
                ));
            }
        }
    }
    labels(sel.get("matchLabels"), &at.child("matchLabels"), errs);
}

/// `spec.template.metadata.labels: Invalid value: map[...]: `selector` does not match template
/// `labels`` when `sel` does not select the template.
pub(crate) fn selector_selects_template(
    sel: Option<&Value>,
    template: &Value,
    template_at: &At,
    errs: &mut Vec<FieldError>,
) {
    let tpl_labels = template.get("metadata").and_then(|m| m.get("labels"));
    if !selector_matches(sel, tpl_labels) {
        let meta = template_at.child("metadata");
        errs.push(invalid_go(
            meta.child("labels").path(),
            &go_string_map(tpl_labels),
            "`selector` does not match template `labels`",
        ));
    }
}

// ---- ports, env, volumes ------------------------------------------------------------------

const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// `IsValidPortName` (an IANA service name): its problems, in upstream's order.
fn port_name_problems(name: &str) -> impl Iterator<Item = &'static str> {
    let b = name.as_bytes();
    [
        (b.len() > 15).then_some("must be no more than 15 characters"),
        (b.is_empty()
            || !b
                .iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-'))
        .then_some("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
        (!b.iter().any(u8::is_ascii_lowercase)).then_some("must contain at least one letter (a-z)"),
        name.contains("--")
            .then_some("must not contain consecutive hyphens"),
        (!b.is_empty() && (b[0] == b'-' || b[b.len() - 1] == b'-'))
            .then_some("must not begin or end with a hyphen"),
    ]
    .into_iter()
    .flatten()
}

/// `ValidatePortNumOrName` of a probe or handler port.
fn port_num_or_name(v: Option<&Value>, at: &At, errs: &mut Vec<FieldError>) {
    match v {
        Some(Value::String(name)) => {
            for msg in port_name_problems(name) {
                errs.push(FieldError::invalid(
                    at.path(),
                    &Value::from(name.as_str()),
                    msg,
                ));
            }
        }
        Some(n) => {
            let n = n.as_i64().unwrap_or(0);
            if !(1..=65535).contains(&n) {
                errs.push(FieldError::invalid(at.path(), &Value::from(n), PORT_RANGE));
            }
        }
        None => errs.push(FieldError::invalid(at.path(), &Value::from(0), PORT_RANGE)),
    }
}

/// `validateContainerPorts`.
fn container_ports(ports: &[Value], at: &At, errs: &mut Vec<FieldError>) {
    for (i, port) in ports.iter().enumerate() {
        let p_at = at.index(i);
        let name = s(port, "name");
        if !name.is_empty() {
            let mut problems = port_name_problems(name).peekable();
            if problems.peek().is_some() {
                for msg in problems {
                    errs.push(FieldError::invalid(
                        p_at.child("name").path(),
                        &Value::from(name),
                        msg,
                    ));
                }
            } else if ports[..i].iter().any(|earlier| {
                s(earlier, "name") == name && port_name_problems(name).next().is_none()
            }) {
                errs.push(FieldError::duplicate(
                    p_at.child("name").path(),
                    &Value::from(name),
                ));
            }
        }
        match int(port, "containerPort").unwrap_or(0) {
            0 => errs.push(FieldError::required(p_at.child("containerPort").path(), "")),
            n if !(1..=65535).contains(&n) => errs.push(FieldError::invalid(
                p_at.child("containerPort").path(),
                &Value::from(n),
                PORT_RANGE,
            )),
            _ => {}
        }
        if let Some(n) = int(port, "hostPort").filter(|n| *n != 0 && !(1..=65535).contains(n)) {
            errs.push(FieldError::invalid(
                p_at.child("hostPort").path(),
                &Value::from(n),
                PORT_RANGE,
            ));
        }
        let proto = s(port, "protocol");
        if !proto.is_empty() && !matches!(proto, "TCP" | "UDP" | "SCTP") {
            errs.push(FieldError::not_supported(
                p_at.child("protocol").path(),
                &Value::from(proto),
                &["SCTP", "TCP", "UDP"],
            ));
        }
    }
}

/// `checkHostPortConflicts`: a `protocol/hostIP/hostPort` used twice across `containers`
/// (`at` is the list's path; upstream reports init containers, checked one at a time, at
/// index 0).
fn host_port_conflicts(containers: &[Value], at: &At, errs: &mut Vec<FieldError>) {
    fn triple(p: &Value) -> (&str, &str, i64) {
        let proto = match s(p, "protocol") {
            "" => "TCP",
            other => other,
        };
        (proto, s(p, "hostIP"), int(p, "hostPort").unwrap_or(0))
    }
    let all = || {
        containers.iter().enumerate().flat_map(|(ci, c)| {
            arr(c, "ports")
                .iter()
                .enumerate()
                .map(move |(pi, p)| (ci, pi, p))
        })
    };
    for (n, (ci, pi, p)) in all().enumerate() {
        let t = triple(p);
        if t.2 == 0 {
            continue;
        }
        if all().take(n).any(|(_, _, q)| triple(q) == t) {
            let c_at = at.index(ci);
            let ports_at = c_at.child("ports");
            let p_at = ports_at.index(pi);
            errs.push(FieldError::duplicate(
                p_at.child("hostPort").path(),
                &Value::from(format!("{}/{}/{}", t.0, t.1, t.2)),
            ));
        }
    }
}

const ENV_NAME_MSG: &str = "a valid environment variable name must consist only of printable ASCII characters other than '='";

/// `IsRelaxedEnvVarName` (RelaxedEnvironmentVariableValidation is on by default in 1.33).
fn env_name_ok(name: &str) -> bool {
    name.bytes().all(|c| (0x20..0x7f).contains(&c) && c != b'=')
}

const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// `validateConfigMapKeySelector` / `validateSecretKeySelector`.
fn key_selector(sel: &Value, at: &At, errs: &mut Vec<FieldError>) {
    dns_subdomain(s(sel, "name"), &at.child("name"), errs);
    let key = s(sel, "key");
    if key.is_empty() {
        errs.push(FieldError::required(at.child("key").path(), ""));
        return;
    }
    if key.len() > 253 {
        errs.push(FieldError::invalid(
            at.child("key").path(),
            &Value::from(key),
            "must be no more than 253 characters",
        ));
    }
    if !key
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'))
    {
        errs.push(FieldError::invalid(
            at.child("key").path(),
            &Value::from(key),
            CONFIG_KEY_MSG,
        ));
    }
}

/// `ValidateEnv` and `validateEnvVarValueFrom`.
fn env(vars: &[Value], at: &At, errs: &mut Vec<FieldError>) {
    for (i, ev) in vars.iter().enumerate() {
        let e_at = at.index(i);
        let name = s(ev, "name");
        if name.is_empty() {
            errs.push(FieldError::required(e_at.child("name").path(), ""));
        } else if !env_name_ok(name) {
            errs.push(FieldError::invalid(
                e_at.child("name").path(),
                &Value::from(name),
                ENV_NAME_MSG,
            ));
        }
        let Some(from) = ev.get("valueFrom").filter(|v| !v.is_null()) else {
            continue;
        };
        let from_at = e_at.child("valueFrom");
        let mut sources = 0;
        if let Some(f) = from.get("fieldRef").filter(|v| !v.is_null()) {
            sources += 1;
            if s(f, "fieldPath").is_empty() {
                let f_at = from_at.child("fieldRef");
                errs.push(FieldError::required(f_at.child("fieldPath").path(), ""));
            }
        }
        if let Some(r) = from.get("resourceFieldRef").filter(|v| !v.is_null()) {
            sources += 1;
            let r_at = from_at.child("resourceFieldRef");
            let resource = s(r, "resource");
            const RESOURCES: [&str; 6] = [
                "limits.cpu",
                "limits.ephemeral-storage",
                "limits.memory",
                "requests.cpu",
                "requests.ephemeral-storage",
                "requests.memory",
            ];
            if resource.is_empty() {
                errs.push(FieldError::required(r_at.child("resource").path(), ""));
            } else if !RESOURCES.contains(&resource)
                && !resource.starts_with("requests.hugepages-")
                && !resource.starts_with("limits.hugepages-")
            {
                errs.push(FieldError::not_supported(
                    r_at.child("resource").path(),
                    &Value::from(resource),
                    &RESOURCES,
                ));
            }
        }
        for key in ["configMapKeyRef", "secretKeyRef"] {
            if let Some(sel) = from.get(key).filter(|v| !v.is_null()) {
                sources += 1;
                key_selector(sel, &from_at.child(key), errs);
            }
        }
        let empty = Value::from("");
        if sources == 0 {
            errs.push(FieldError::invalid(
                from_at.path(),
                &empty,
                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
            ));
        } else if !s(ev, "value").is_empty() {
            errs.push(FieldError::invalid(
                from_at.path(),
                &empty,
                "may not be specified when `value` is not empty",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                from_at.path(),
                &empty,
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// `ValidateEnvFrom`.
fn env_from(list: &[Value], at: &At, errs: &mut Vec<FieldError>) {
    for (i, ev) in list.iter().enumerate() {
        let e_at = at.index(i);
        let prefix = s(ev, "prefix");
        if !prefix.is_empty() && !env_name_ok(prefix) {
            errs.push(FieldError::invalid(
                e_at.child("prefix").path(),
                &Value::from(prefix),
                ENV_NAME_MSG,
            ));
        }
        let mut sources = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(r) = ev.get(key).filter(|v| !v.is_null()) {
                sources += 1;
                let r_at = e_at.child(key);
                let name = s(r, "name");
                if name.is_empty() {
                    errs.push(FieldError::required(r_at.child("name").path(), ""));
                } else {
                    dns_subdomain(name, &r_at.child("name"), errs);
                }
            }
        }
        let empty = Value::from("");
        if sources == 0 {
            errs.push(FieldError::invalid(
                at.path(),
                &empty,
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if sources > 1 {
            errs.push(FieldError::invalid(
                at.path(),
                &empty,
                "may not have more than one field specified at a time",
            ));
        }
    }
}

/// The volume sources in the order `validateVolumeSource` checks them, with the field name
/// its "more than 1 volume type" error uses (upstream spells two of them differently).
const VOLUME_SOURCES: [(&str, &str); 30] = [
    ("emptyDir", "emptyDir"),
    ("hostPath", "hostPath"),
    ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"),
    ("nfs", "nfs"),
    ("iscsi", "iscsi"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("persistentVolumeClaim", "persistentVolumeClaim"),
    ("rbd", "rbd"),
    ("cinder", "cinder"),
    ("cephfs", "cephFS"),
    ("quobyte", "quobyte"),
    ("downwardAPI", "downwarAPI"),
    ("fc", "fc"),
    ("flexVolume", "flexVolume"),
    ("configMap", "configMap"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("storageos", "storageos"),
    ("projected", "projected"),
    ("scaleIO", "scaleIO"),
    ("csi", "csi"),
    ("ephemeral", "ephemeral"),
    ("image", "image"),
];

/// `validateVolumeSource`: one source only, and the required field of the common ones. A
/// volume with no source is valid: upstream defaults it to `emptyDir`.
fn volume_source(vol: &Value, at: &At, errs: &mut Vec<FieldError>) {
    let mut first = true;
    for (key, forbidden_name) in VOLUME_SOURCES {
        let Some(src) = vol.get(key).filter(|v| !v.is_null()) else {
            continue;
        };
        if !first {
            errs.push(FieldError::forbidden(
                at.child(forbidden_name).path(),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        first = false;
        let required = match key {
            "hostPath" => "path",
            "persistentVolumeClaim" => "claimName",
            "secret" => "secretName",
            "configMap" => "name",
            _ => continue,
        };
        if s(src, required).is_empty() {
            let src_at = at.child(key);
            errs.push(FieldError::required(src_at.child(required).path(), ""));
        }
    }
}

/// `ValidateVolumes`: returns, per volume, whether it is valid (only valid volumes can be
/// mounted).
fn volumes(vols: &[Value], at: &At, errs: &mut Vec<FieldError>) -> Vec<bool> {
    let mut ok: Vec<bool> = Vec::with_capacity(vols.len());
    for (i, vol) in vols.iter().enumerate() {
        let v_at = at.index(i);
        let before = errs.len();
        volume_source(vol, &v_at, errs);
        let name = s(vol, "name");
        let name_at = v_at.child("name");
        if name.is_empty() {
            errs.push(FieldError::required(name_at.path(), ""));
        } else {
            dns_label(name, &name_at, errs);
        }
        if vols[..i]
            .iter()
            .zip(&ok)
            .any(|(earlier, valid)| *valid && s(earlier, "name") == name)
        {
            errs.push(FieldError::duplicate(name_at.path(), &Value::from(name)));
        }
        ok.push(errs.len() == before);
    }
    ok
}

/// The volumes mounts can name: the valid ones.
#[derive(Clone, Copy)]
struct Volumes<'a> {
    list: &'a [Value],
    ok: &'a [bool],
}

impl Volumes<'_> {
    fn has(&self, name: &str) -> bool {
        self.list
            .iter()
            .zip(self.ok)
            .any(|(v, ok)| *ok && s(v, "name") == name)
    }
}

/// `validateLocalDescendingPath` (reported, as upstream does, at the list's path).
fn local_descending_path(p: &str, at: &At, errs: &mut Vec<FieldError>) {
    if p.starts_with('/') {
        errs.push(FieldError::invalid(
            at.path(),
            &Value::from(p),
            "must be a relative path",
        ));
    }
    if p.split(['/', '\\']).any(|part| part == "..") {
        errs.push(FieldError::invalid(
            at.path(),
            &Value::from(p),
            "must not contain '..'",
        ));
    }
}

/// `ValidateVolumeMounts`.
fn volume_mounts(mounts: &[Value], vols: Volumes, at: &At, errs: &mut Vec<FieldError>) {
    for (i, m) in mounts.iter().enumerate() {
        let m_at = at.index(i);
        let name = s(m, "name");
        if name.is_empty() {
            errs.push(FieldError::required(m_at.child("name").path(), ""));
        }
        if !vols.has(name) {
            errs.push(FieldError::not_found(
                m_at.child("name").path(),
                &Value::from(name),
            ));
        }
        let mount_path = s(m, "mountPath");
        if mount_path.is_empty() {
            errs.push(FieldError::required(m_at.child("mountPath").path(), ""));
        }
        if mounts[..i].iter().any(|e| s(e, "mountPath") == mount_path) {
            errs.push(FieldError::invalid(
                m_at.child("mountPath").path(),
                &Value::from(mount_path),
                "must be unique",
            ));
        }
        let sub_path = s(m, "subPath");
        if !sub_path.is_empty() {
            local_descending_path(sub_path, &at.child("subPath"), errs);
        }
        let sub_expr = s(m, "subPathExpr");
        if !sub_expr.is_empty() {
            if !sub_path.is_empty() {
                errs.push(FieldError::invalid(
                    m_at.child("subPathExpr").path(),
                    &Value::from(sub_expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            local_descending_path(sub_expr, &at.child("subPathExpr"), errs);
        }
    }
}

// ---- resources ---------------------------------------------------------------------------

/// `IsStandardResourceName` (`helper.standardResources`, and huge pages).
fn is_standard_resource(name: &str) -> bool {
    matches!(
        name,
        "cpu"
            | "memory"
            | "ephemeral-storage"
            | "requests.cpu"
            | "requests.memory"
            | "requests.ephemeral-storage"
            | "limits.cpu"
            | "limits.memory"
            | "limits.ephemeral-storage"
            | "pods"
            | "quotas"
            | "services"
            | "replicationcontrollers"
            | "resourcequotas"
            | "secrets"
            | "configmaps"
            | "persistentvolumeclaims"
            | "storage"
            | "requests.storage"
            | "services.nodeports"
            | "services.loadbalancers"
    ) || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// `IsNativeResource`: unprefixed, or in the `kubernetes.io` domain.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsOvercommitAllowed`: requests may differ from limits.
fn overcommit_allowed(name: &str) -> bool {
    is_native_resource(name) && !name.starts_with("hugepages-")
}

/// `validateContainerResourceName`.
fn container_resource_name(name: &str, at: &At, errs: &mut Vec<FieldError>) {
    let value = Value::from(name);
    let mut qualified = true;
    for msg in is_qualified_name(name) {
        qualified = false;
        errs.push(FieldError::invalid(at.path(), &value, &msg));
    }
    if qualified && !name.contains('/') && !is_standard_resource(name) {
        errs.push(FieldError::invalid(
            at.path(),
            &value,
            "must be a standard resource type or fully qualified",
        ));
    }
    if !name.contains('/') {
        if !matches!(name, "cpu" | "memory" | "ephemeral-storage")
            && !name.starts_with("hugepages-")
        {
            errs.push(FieldError::invalid(
                at.path(),
                &value,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && name.starts_with("requests.") {
        errs.push(FieldError::invalid(
            at.path(),
            &value,
            "doesn't follow extended resource name standard",
        ));
    }
}

/// `ValidateContainerResourceRequirements`: names, non-negative quantities, requests within
/// limits (equal to them for resources that cannot be overcommitted).
fn resources(res: &Value, at: &At, errs: &mut Vec<FieldError>) {
    let lim_at = at.child("limits");
    let req_at = at.child("requests");
    let limits = obj(res, "limits");
    let quantity = |v: &Value| v.as_str().and_then(Quantity::parse);
    if let Some(limits) = limits {
        for (name, q) in limits {
            let q_at = lim_at.key(name);
            container_resource_name(name, &q_at, errs);
            if let Some(q) = quantity(q).filter(Quantity::is_negative) {
                errs.push(FieldError::invalid(
                    q_at.path(),
                    &Value::from(q.canonical()),
                    "must be greater than or equal to 0",
                ));
            }
        }
    }
    let Some(requests) = obj(res, "requests") else {
        return;
    };
    for (name, q) in requests {
        let q_at = req_at.key(name);
        container_resource_name(name, &q_at, errs);
        let q = quantity(q);
        if let Some(q) = q.filter(Quantity::is_negative) {
            errs.push(FieldError::invalid(
                q_at.path(),
                &Value::from(q.canonical()),
                "must be greater than or equal to 0",
            ));
        }
        match limits.and_then(|l| l.get(name)) {
            Some(lim) => {
                let (Some(q), Some(lim)) = (q, quantity(lim)) else {
                    continue;
                };
                let order = q.cmp_value(&lim);
                let detail = if order.is_ne() && !overcommit_allowed(name) {
                    "must be equal to"
                } else if order.is_gt() {
                    "must be less than or equal to"
                } else {
                    continue;
                };
                errs.push(FieldError::invalid(
                    req_at.path(),
                    &Value::from(q.canonical()),
                    &format!("{detail} {name} limit of {}", lim.canonical()),
                ));
            }
            None if !overcommit_allowed(name) => errs.push(FieldError::required(
                lim_at.path(),
                "Limit must be set for non overcommitable resources",
            )),
            None => {}
        }
    }
}

// ---- probes and handlers -----------------------------------------------------------------

/// `validateHandler`: exactly one handler, each checked.
fn handler(h: &Value, kinds: &[&str], at: &At, errs: &mut Vec<FieldError>) {
    let mut count = 0;
    for kind in kinds {
        let Some(x) = h.get(*kind).filter(|v| !v.is_null()) else {
            continue;
        };
        let k_at = at.child(kind);
        if count > 0 {
            errs.push(FieldError::forbidden(
                k_at.path(),
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        count += 1;
        match *kind {
            "exec" if arr(x, "command").is_empty() => {
                errs.push(FieldError::required(k_at.child("command").path(), ""));
            }
            "httpGet" => {
                port_num_or_name(x.get("port"), &k_at.child("port"), errs);
                let scheme = s(x, "scheme");
                if !scheme.is_empty() && !matches!(scheme, "HTTP" | "HTTPS") {
                    errs.push(FieldError::not_supported(
                        k_at.child("scheme").path(),
                        &Value::from(scheme),
                        &["HTTP", "HTTPS"],
                    ));
                }
            }
            "tcpSocket" | "grpc" => port_num_or_name(x.get("port"), &k_at.child("port"), errs),
            _ => {}
        }
    }
    if count == 0 {
        errs.push(FieldError::required(
            at.path(),
            "must specify a handler type",
        ));
    }
}

/// Which probe: liveness and startup probes must have `successThreshold` 1; readiness probes
/// may not set `terminationGracePeriodSeconds`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ProbeKind {
    Liveness,
    Readiness,
    Startup,
}

/// `validateProbe` and the kind-specific rules.
fn probe(p: &Value, kind: ProbeKind, at: &At, errs: &mut Vec<FieldError>) {
    handler(p, &["exec", "httpGet", "tcpSocket", "grpc"], at, errs);
    for f in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        nonnegative(p, f, at, errs);
    }
    let tgps = int(p, "terminationGracePeriodSeconds");
    if let Some(n) = tgps.filter(|n| *n <= 0) {
        errs.push(FieldError::invalid(
            at.child("terminationGracePeriodSeconds").path(),
            &Value::from(n),
            "must be greater than 0",
        ));
    }
    match kind {
        ProbeKind::Liveness | ProbeKind::Startup => {
            if let Some(n) = int(p, "successThreshold").filter(|n| *n != 1) {
                errs.push(FieldError::invalid(
                    at.child("successThreshold").path(),
                    &Value::from(n),
                    "must be 1",
                ));
            }
        }
        ProbeKind::Readiness => {
            if let Some(n) = tgps {
                errs.push(FieldError::invalid(
                    at.child("terminationGracePeriodSeconds").path(),
                    &Value::from(n),
                    "must not be set for readinessProbes",
                ));
            }
        }
    }
}

const PROBES: [(&str, ProbeKind); 3] = [
    ("livenessProbe", ProbeKind::Liveness),
    ("readinessProbe", ProbeKind::Readiness),
    ("startupProbe", ProbeKind::Startup),
];

/// Lifecycle hooks and probes of a container that may have them.
fn lifecycle_and_probes(c: &Value, at: &At, errs: &mut Vec<FieldError>) {
    if let Some(l) = c.get("lifecycle").filter(|v| !v.is_null()) {
        let l_at = at.child("lifecycle");
        for hook in ["postStart", "preStop"] {
            if let Some(h) = l.get(hook).filter(|v| !v.is_null()) {
                handler(
                    h,
                    &["exec", "httpGet", "tcpSocket", "sleep"],
                    &l_at.child(hook),
                    errs,
                );
            }
        }
    }
    for (key, kind) in PROBES {
        if let Some(p) = c.get(key).filter(|v| !v.is_null()) {
            probe(p, kind, &at.child(key), errs);
        }
    }
}

// ---- containers --------------------------------------------------------------------------

/// `validateContainerCommon`.
fn container_common(c: &Value, vols: Volumes, at: &At, errs: &mut Vec<FieldError>) {
    let name = s(c, "name");
    let name_at = at.child("name");
    if name.is_empty() {
        errs.push(FieldError::required(name_at.path(), ""));
    } else {
        dns_label(name, &name_at, errs);
    }
    if s(c, "image").is_empty() {
        errs.push(FieldError::required(at.child("image").path(), ""));
    }
    let tmp = s(c, "terminationMessagePolicy");
    if !tmp.is_empty() && !matches!(tmp, "File" | "FallbackToLogsOnError") {
        errs.push(FieldError::not_supported(
            at.child("terminationMessagePolicy").path(),
            &Value::from(tmp),
            &["File", "FallbackToLogsOnError"],
        ));
    }
    container_ports(arr(c, "ports"), &at.child("ports"), errs);
    env(arr(c, "env"), &at.child("env"), errs);
    env_from(arr(c, "envFrom"), &at.child("envFrom"), errs);
    volume_mounts(
        arr(c, "volumeMounts"),
        vols,
        &at.child("volumeMounts"),
        errs,
    );
    let pull = s(c, "imagePullPolicy");
    if !pull.is_empty() && !matches!(pull, "Always" | "IfNotPresent" | "Never") {
        errs.push(FieldError::not_supported(
            at.child("imagePullPolicy").path(),
            &Value::from(pull),
            &["Always", "IfNotPresent", "Never"],
        ));
    }
    if let Some(r) = c.get("resources") {
        resources(r, &at.child("resources"), errs);
    }
}

/// `validateContainers`.
fn containers(list: &[Value], vols: Volumes, at: &At, errs: &mut Vec<FieldError>) {
    if list.is_empty() {
        errs.push(FieldError::required(at.path(), ""));
        return;
    }
    for (i, c) in list.iter().enumerate() {
        let c_at = at.index(i);
        container_common(c, vols, &c_at, errs);
        let name = s(c, "name");
        if list[..i].iter().any(|e| s(e, "name") == name) {
            errs.push(FieldError::duplicate(
                c_at.child("name").path(),
                &Value::from(name),
            ));
        }
        lifecycle_and_probes(c, &c_at, errs);
        if set(c, "restartPolicy") {
            errs.push(FieldError::forbidden(
                c_at.child("restartPolicy").path(),
                "may not be set for non-init containers",
            ));
        }
    }
    host_port_conflicts(list, at, errs);
}

/// `validateInitContainers`.
fn init_containers(
    list: &[Value],
    regular: &[Value],
    vols: Volumes,
    at: &At,
    errs: &mut Vec<FieldError>,
) {
    for (i, c) in list.iter().enumerate() {
        let c_at = at.index(i);
        container_common(c, vols, &c_at, errs);
        let policy = s(c, "restartPolicy");
        if set(c, "restartPolicy") && policy != "Always" {
            errs.push(FieldError::not_supported(
                c_at.child("restartPolicy").path(),
                &Value::from(policy),
                &["Always"],
            ));
        }
        let name = s(c, "name");
        let taken = regular.iter().any(|e| s(e, "name") == name)
            || list[..i]
                .iter()
                .any(|e| !s(e, "name").is_empty() && s(e, "name") == name);
        if taken {
            errs.push(FieldError::duplicate(
                c_at.child("name").path(),
                &Value::from(name),
            ));
        }
        host_port_conflicts(std::slice::from_ref(c), at, errs);
        if policy == "Always" {
            lifecycle_and_probes(c, &c_at, errs);
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if set(c, key) {
                    errs.push(FieldError::forbidden(
                        c_at.child(key).path(),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
}

// ---- pod specs and templates -------------------------------------------------------------

/// `ValidatePodSpec` of the spec at `at`.
pub(crate) fn pod_spec(spec: &Value, at: &At, errs: &mut Vec<FieldError>) {
    let vol_list = arr(spec, "volumes");
    let ok = volumes(vol_list, &at.child("volumes"), errs);
    let vols = Volumes {
        list: vol_list,
        ok: &ok,
    };
    let regular = arr(spec, "containers");
    containers(regular, vols, &at.child("containers"), errs);
    init_containers(
        arr(spec, "initContainers"),
        regular,
        vols,
        &at.child("initContainers"),
        errs,
    );
    let restart = s(spec, "restartPolicy");
    if !restart.is_empty() && !matches!(restart, "Always" | "OnFailure" | "Never") {
        errs.push(FieldError::not_supported(
            at.child("restartPolicy").path(),
            &Value::from(restart),
            &["Always", "OnFailure", "Never"],
        ));
    }
    let dns = s(spec, "dnsPolicy");
    if !dns.is_empty()
        && !matches!(
            dns,
            "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None"
        )
    {
        errs.push(FieldError::not_supported(
            at.child("dnsPolicy").path(),
            &Value::from(dns),
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        ));
    }
    labels(spec.get("nodeSelector"), &at.child("nodeSelector"), errs);
    if dns == "None" {
        match spec.get("dnsConfig").filter(|v| !v.is_null()) {
            None => errs.push(FieldError::required(
                at.child("dnsConfig").path(),
                "must provide `dnsConfig` when `dnsPolicy` is None",
            )),
            Some(c) if arr(c, "nameservers").is_empty() => {
                let c_at = at.child("dnsConfig");
                errs.push(FieldError::required(
                    c_at.child("nameservers").path(),
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                ));
            }
            Some(_) => {}
        }
    }
    for key in ["serviceAccountName", "nodeName"] {
        let v = s(spec, key);
        if !v.is_empty() {
            dns_subdomain(v, &at.child(key), errs);
        }
    }
    if let Some(n) =
        int(spec, "activeDeadlineSeconds").filter(|n| !(1..=i64::from(i32::MAX)).contains(n))
    {
        errs.push(FieldError::invalid(
            at.child("activeDeadlineSeconds").path(),
            &Value::from(n),
            "must be between 1 and 2147483647, inclusive",
        ));
    }
    for key in ["hostname", "subdomain"] {
        let v = s(spec, key);
        if !v.is_empty() {
            dns_label(v, &at.child(key), errs);
        }
    }
    let priority_class = s(spec, "priorityClassName");
    if !priority_class.is_empty() {
        dns_subdomain(priority_class, &at.child("priorityClassName"), errs);
    }
}

/// `ValidatePodTemplateSpec` of the template at `at` (its labels, then its pod spec).
pub(crate) fn template_spec(template: &Value, at: &At, errs: &mut Vec<FieldError>) {
    let meta = template.get("metadata");
    labels(
        meta.and_then(|m| m.get("labels")),
        &at.child("labels"),
        errs,
    );
    let spec_at = at.child("spec");
    let empty = Value::Null;
    let spec = template.get("spec").unwrap_or(&empty);
    pod_spec(spec, &spec_at, errs);
    if !arr(spec, "ephemeralContainers").is_empty() {
        errs.push(FieldError::forbidden(
            spec_at.child("ephemeralContainers").path(),
            "ephemeral containers not allowed in pod template",
        ));
    }
}

/// The pod-only check of a container list (`validateContainersOnlyForPod`).
fn containers_only_for_pod(list: &[Value], at: &At, errs: &mut Vec<FieldError>) {
    for (i, c) in list.iter().enumerate() {
        let image = s(c, "image");
        if image.len() != image.trim().len() {
            let c_at = at.index(i);
            errs.push(FieldError::invalid(
                c_at.child("image").path(),
                &Value::from(image),
                "must not have leading or trailing whitespace",
            ));
        }
    }
}

/// The spec fields a pod update may change, as upstream lists them.
const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidatePodCreate` / `ValidatePodUpdate`.
pub(crate) fn pod(obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let spec_at = At::root("spec");
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    pod_spec(spec, &spec_at, errs);
    containers_only_for_pod(arr(spec, "containers"), &spec_at.child("containers"), errs);
    containers_only_for_pod(
        arr(spec, "initContainers"),
        &spec_at.child("initContainers"),
        errs,
    );
    match old {
        None => {
            if !arr(spec, "ephemeralContainers").is_empty() {
                errs.push(FieldError::forbidden(
                    spec_at.child("ephemeralContainers").path(),
                    "cannot be set on create",
                ));
            }
            if !s(spec, "nodeName").is_empty() && !arr(spec, "schedulingGates").is_empty() {
                errs.push(FieldError::forbidden(
                    spec_at.child("nodeName").path(),
                    "cannot be set until all schedulingGates have been cleared",
                ));
            }
        }
        Some(old) => pod_update(spec, old.get("spec").unwrap_or(&empty), &spec_at, errs),
    }
}

/// The annotation of a mirror (static) pod.
const MIRROR_POD: &str = "kubernetes.io/config.mirror";

/// Whether `pod` is a static pod's mirror.
fn is_mirror(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_POD))
        .is_some()
}

/// An update through `pods/ephemeralcontainers` (`ValidatePodEphemeralContainersUpdate`): new
/// ephemeral containers are named uniquely among all the pod's containers and have an image;
/// existing ones are neither removed nor changed; static pods have none.
pub(crate) fn ephemeral_containers_update(obj: &Value, old: &Value, errs: &mut Vec<FieldError>) {
    if is_mirror(old) {
        errs.push(FieldError::forbidden(
            "",
            "static pods do not support ephemeral containers",
        ));
        return;
    }
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    let spec_at = At::root("spec");
    let list_at = spec_at.child("ephemeralContainers");
    let mut names: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| arr(spec, k))
        .map(|c| s(c, "name"))
        .collect();
    let new_list = arr(spec, "ephemeralContainers");
    for (i, c) in new_list.iter().enumerate() {
        let c_at = list_at.index(i);
        let name = s(c, "name");
        if name.is_empty() {
            errs.push(FieldError::required(c_at.child("name").path(), ""));
        } else if names.contains(&name) {
            errs.push(FieldError::duplicate(
                c_at.child("name").path(),
                &Value::from(name),
            ));
        }
        names.push(name);
        if s(c, "image").is_empty() {
            errs.push(FieldError::required(c_at.child("image").path(), ""));
        }
    }
    let old_list = arr(old.get("spec").unwrap_or(&empty), "ephemeralContainers");
    for was in old_list {
        let name = s(was, "name");
        match new_list.iter().find(|c| s(c, "name") == name) {
            None => errs.push(FieldError::forbidden(
                list_at.path(),
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(now) if now != was => errs.push(FieldError::forbidden(
                format!("{}[{name}]", list_at.path()),
                &format!("existing ephemeral containers {name:?} may not be changed\n"),
            )),
            Some(_) => {}
        }
    }
}

/// An update through `pods/resize` (`ValidatePodResize`): not for static or Windows pods;
/// containers keep their order; only the `cpu` and `memory` requests and limits (and the
/// resize policies) change, and the pod's QoS class stays the same.
pub(crate) fn resize(obj: &Value, old: &Value, errs: &mut Vec<FieldError>) {
    if is_mirror(old) {
        errs.push(FieldError::forbidden("", "static pods cannot be resized"));
        return;
    }
    if old.pointer("/spec/os/name").and_then(Value::as_str) == Some("windows") {
        errs.push(FieldError::forbidden("", "windows pods cannot be resized"));
        return;
    }
    let empty = Value::Null;
    let (spec, old_spec) = (
        obj.get("spec").unwrap_or(&empty),
        old.get("spec").unwrap_or(&empty),
    );
    let (was, now) = (qos_class(old_spec), qos_class(spec));
    if was != now {
        errs.push(FieldError::invalid(
            "spec",
            &Value::from(now),
            "Pod QOS Class may not change as a result of resizing",
        ));
    }
    // What may not change: everything but the cpu and memory values and the policies.
    let fixed = |spec: &Value| {
        let mut spec = spec.clone();
        for key in ["containers", "initContainers"] {
            for c in spec
                .get_mut(key)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                let Some(c) = c.as_object_mut() else { continue };
                c.remove("resizePolicy");
                for kind in ["requests", "limits"] {
                    if let Some(m) = c
                        .get_mut("resources")
                        .and_then(|r| r.get_mut(kind))
                        .and_then(Value::as_object_mut)
                    {
                        m.remove("cpu");
                        m.remove("memory");
                    }
                }
            }
        }
        spec
    };
    if fixed(spec) != fixed(old_spec) {
        errs.push(FieldError::forbidden(
            "spec",
            "only cpu and memory resources are mutable",
        ));
    }
}

/// A pod's QoS class from its containers' resources (`ComputePodQOS`): `BestEffort` without
/// any cpu or memory request or limit, `Guaranteed` when every container limits both and
/// requests what it limits, else `Burstable`.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .flat_map(|k| arr(spec, k))
        .collect();
    let value = |c: &Value, kind: &str, res: &str| {
        c.pointer(&format!("/resources/{kind}/{res}"))
            .and_then(Value::as_str)
            .and_then(Quantity::parse)
            .filter(|q| q.nanos() != 0)
    };
    let mut any = false;
    let mut guaranteed = true;
    for c in &containers {
        for res in ["cpu", "memory"] {
            let (req, lim) = (value(c, "requests", res), value(c, "limits", res));
            any |= req.is_some() || lim.is_some();
            match (req, lim) {
                (_, None) => guaranteed = false,
                (Some(r), Some(l)) if r.cmp_value(&l) != std::cmp::Ordering::Equal => {
                    guaranteed = false
                }
                _ => {}
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

/// The spec rules of `ValidatePodUpdate`: containers neither added nor removed, the
/// deadline only shortened, tolerations only added, nothing else changed.
fn pod_update(spec: &Value, old: &Value, at: &At, errs: &mut Vec<FieldError>) {
    for key in ["containers", "initContainers"] {
        let (new_list, old_list) = (arr(spec, key), arr(old, key));
        let list_at = at.child(key);
        if new_list.len() != old_list.len() {
            errs.push(FieldError::forbidden(
                list_at.path(),
                "pod updates may not add or remove containers",
            ));
            return;
        }
        for (i, c) in new_list.iter().enumerate() {
            let image = s(c, "image");
            let c_at = list_at.index(i);
            if image.is_empty() {
                errs.push(FieldError::required(c_at.child("image").path(), ""));
            }
            if image.len() != image.trim().len() {
                errs.push(FieldError::invalid(
                    c_at.child("image").path(),
                    &Value::from(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    let deadline_at = at.child("activeDeadlineSeconds");
    match (
        int(spec, "activeDeadlineSeconds"),
        int(old, "activeDeadlineSeconds"),
    ) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => {
            errs.push(FieldError::invalid(
                deadline_at.path(),
                &Value::from(n),
                "must be between 0 and 2147483647, inclusive",
            ));
            return;
        }
        (Some(n), Some(was)) if was < n => {
            errs.push(FieldError::invalid(
                deadline_at.path(),
                &Value::from(n),
                "must be less than or equal to previous value",
            ));
            return;
        }
        (None, Some(_)) => errs.push(invalid_go(
            deadline_at.path(),
            "null",
            "must not update from a positive integer to nil value",
        )),
        _ => {}
    }
    let new_tols = arr(spec, "tolerations");
    let kept = arr(old, "tolerations").iter().all(|t| {
        new_tols.iter().any(|n| {
            let same = |k: &str| t.get(k) == n.get(k);
            ["key", "operator", "value", "effect"]
                .iter()
                .all(|k| same(k))
        })
    });
    if !kept {
        errs.push(FieldError::forbidden(
            at.child("tolerations").path(),
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
    if spec == old {
        return;
    }
    // Compare with the updatable fields taken from the old spec.
    let mut munged = spec.clone();
    carry_pod_spec_defaults(&mut munged, old);
    if let Some(m) = munged.as_object_mut() {
        for key in ["containers", "initContainers"] {
            if let Some(list) = m.get_mut(key).and_then(Value::as_array_mut) {
                for (c, was) in list.iter_mut().zip(arr(old, key)) {
                    if let (Some(c), Some(image)) = (c.as_object_mut(), was.get("image")) {
                        c.insert("image".into(), image.clone());
                    }
                }
            }
        }
        for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
            match old.get(key) {
                Some(v) => m.insert(key.into(), v.clone()),
                None => m.remove(key),
            };
        }
        if int(old, "terminationGracePeriodSeconds").is_some_and(|n| n < 0)
            && int(spec, "terminationGracePeriodSeconds") == Some(1)
            && let Some(v) = old.get("terminationGracePeriodSeconds")
        {
            m.insert("terminationGracePeriodSeconds".into(), v.clone());
        }
    }
    if &munged != old {
        errs.push(FieldError::forbidden(
            at.path(),
            &format!(
                "pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{}",
                spec_diff(old, &munged)
            ),
        ));
    }
}

/// The pod spec fields the server defaults on create.
const POD_SPEC_DEFAULTED: [&str; 6] = [
    "restartPolicy",
    "dnsPolicy",
    "schedulerName",
    "terminationGracePeriodSeconds",
    "securityContext",
    "enableServiceLinks",
];

/// The container fields the server defaults on create.
const CONTAINER_DEFAULTED: [&str; 4] = [
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "resources",
];

/// Copies into `new` (a copy being compared) the defaulted fields it leaves out and `old`
/// has, so that an update omitting a field upstream defaults does not read as a change of it.
/// The storage defaults updates too; this covers the fields its defaults do not.
pub(crate) fn carry_pod_spec_defaults(new: &mut Value, old: &Value) {
    fn carry(new: &mut Value, old: &Value, keys: &[&str]) {
        let Some(m) = new.as_object_mut() else {
            return;
        };
        for key in keys {
            if m.get(*key).is_none_or(Value::is_null)
                && let Some(v) = old.get(*key)
            {
                m.insert((*key).into(), v.clone());
            }
        }
    }
    carry(new, old, &POD_SPEC_DEFAULTED);
    for list in ["containers", "initContainers"] {
        let Some(cs) = new.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for (c, was) in cs.iter_mut().zip(arr(old, list)) {
            carry(c, was, &CONTAINER_DEFAULTED);
            if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
                for (p, was) in ports.iter_mut().zip(arr(was, "ports")) {
                    carry(p, was, &["protocol"]);
                }
            }
        }
    }
}

/// The changed fields of a pod spec, one `-`/`+` pair per top-level field. Upstream appends
/// `cmp.Diff` of its internal Go types here; this is the same information in JSON.
fn spec_diff(old: &Value, new: &Value) -> String {
    let (Some(o), Some(n)) = (old.as_object(), new.as_object()) else {
        return String::new();
    };
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = String::new();
    for k in keys {
        let (a, b) = (o.get(k), n.get(k));
        if a != b {
            if let Some(a) = a {
                out.push_str(&format!("- {k}: {a}\n"));
            }
            if let Some(b) = b {
                out.push_str(&format!("+ {k}: {b}\n"));
            }
        }
    }
    out
}

/// `ValidatePodTemplate` / `ValidatePodTemplateUpdate`.
pub(crate) fn pod_template(obj: &Value, _old: Option<&Value>, errs: &mut Vec<FieldError>) {
    let empty = Value::Null;
    template_spec(
        obj.get("template").unwrap_or(&empty),
        &At::root("template"),
        errs,
    );
}

/// `ValidateReplicationController` / `ValidateReplicationControllerUpdate`. An absent
/// selector is the template's labels, as upstream defaults it.
pub(crate) fn replication_controller(
    obj: &Value,
    _old: Option<&Value>,
    errs: &mut Vec<FieldError>,
) {
    let spec_at = At::root("spec");
    let empty = Value::Null;
    let spec = obj.get("spec").unwrap_or(&empty);
    nonnegative(spec, "minReadySeconds", &spec_at, errs);
    let tpl_labels = spec
        .get("template")
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"));
    if obj_nonempty(spec, "selector").is_none() && tpl_labels.is_none_or(unset_map) {
        errs.push(FieldError::required(spec_at.child("selector").path(), ""));
    }
    nonnegative(spec, "replicas", &spec_at, errs);
    let Some(template) = spec.get("template").filter(|v| !v.is_null()) else {
        errs.push(FieldError::required(spec_at.child("template").path(), ""));
        return;
    };
    let tpl_at = spec_at.child("template");
    if let Some(sel) = obj_nonempty(spec, "selector") {
        let tpl_labels = template.get("metadata").and_then(|m| m.get("labels"));
        let matches = sel
            .iter()
            .all(|(k, v)| tpl_labels.and_then(|l| l.get(k)) == Some(v));
        if !matches {
            let meta = tpl_at.child("metadata");
            errs.push(invalid_go(
                meta.child("labels").path(),
                &go_string_map(tpl_labels),
                "`selector` does not match template `labels`",
            ));
        }
    }
    template_spec(template, &tpl_at, errs);
    restart_always(template, &tpl_at, "ReplicationController", errs);
}

fn unset_map(v: &Value) -> bool {
    v.as_object().is_none_or(Map::is_empty)
}

fn obj_nonempty<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    obj(v, key).filter(|m| !m.is_empty())
}

/// The template of a controller that keeps pods running: `restartPolicy` must be `Always`,
/// and `activeDeadlineSeconds` is not supported.
pub(crate) fn restart_always(template: &Value, at: &At, kind: &str, errs: &mut Vec<FieldError>) {
    let empty = Value::Null;
    let spec = template.get("spec").unwrap_or(&empty);
    let spec_at = at.child("spec");
    let restart = s(spec, "restartPolicy");
    if !restart.is_empty() && restart != "Always" {
        errs.push(FieldError::not_supported(
            spec_at.child("restartPolicy").path(),
            &Value::from(restart),
            &["Always"],
        ));
    }
    if set(spec, "activeDeadlineSeconds") {
        errs.push(FieldError::forbidden(
            spec_at.child("activeDeadlineSeconds").path(),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod_errs(spec: Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        pod(&json!({ "spec": spec }), None, &mut errs);
        errs
    }

    #[test]
    fn a_valid_pod_has_no_errors() {
        let errs = pod_errs(json!({
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}],
            "containers": [{
                "name": "app", "image": "nginx:1.27",
                "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"},
                        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                              "limits": {"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"}},
                "livenessProbe": {"httpGet": {"port": "http", "path": "/"}}
            }]
        }));
        assert!(errs.is_empty(), "{errs:?}");
    }

    #[test]
    fn errors_come_in_upstream_order_with_upstream_paths() {
        let errs = pod_errs(json!({
            "volumes": [{"name": "v", "emptyDir": {}, "configMap": {"name": "c"}}],
            "containers": [{"name": "a", "image": "x",
                "volumeMounts": [{"name": "v", "mountPath": "/v"}],
                "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}]
        }));
        let got: Vec<(&str, &str)> = errs
            .iter()
            .map(|e| (e.field.as_str(), e.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "spec.volumes[0].configMap",
                    "Forbidden: may not specify more than 1 volume type"
                ),
                (
                    "spec.containers[0].volumeMounts[0].name",
                    "Not found: \"v\""
                ),
                (
                    "spec.containers[0].resources.requests",
                    "Invalid value: \"2\": must be less than or equal to cpu limit of 1"
                ),
            ]
        );
    }

    #[test]
    fn a_pod_update_may_change_images_but_not_the_restart_policy() {
        let old = json!({"spec": {"restartPolicy": "Always",
            "containers": [{"name": "a", "image": "nginx:1"}]}});
        let ok = json!({"spec": {"restartPolicy": "Always",
            "containers": [{"name": "a", "image": "nginx:2"}]}});
        let mut errs = Vec::new();
        pod(&ok, Some(&old), &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
        let bad = json!({"spec": {"restartPolicy": "Never",
            "containers": [{"name": "a", "image": "nginx:2"}]}});
        pod(&bad, Some(&old), &mut errs);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec");
        assert!(errs[0].message.starts_with(
            "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        ));
        assert!(
            errs[0]
                .message
                .contains("- restartPolicy: \"Always\"\n+ restartPolicy: \"Never\"")
        );
    }

    #[test]
    fn an_update_leaving_out_defaulted_fields_changes_nothing() {
        let old = json!({"spec": {"restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "containers": [{"name": "a", "image": "nginx:1", "imagePullPolicy": "IfNotPresent",
                "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}});
        let new = json!({"spec": {"containers": [{"name": "a", "image": "nginx:2",
            "ports": [{"containerPort": 80}]}]}});
        let mut errs = Vec::new();
        pod(&new, Some(&old), &mut errs);
        assert!(errs.is_empty(), "{errs:?}");
    }

    #[test]
    fn go_values_print_as_percent_sharp_v() {
        assert_eq!(
            go_label_selector(&json!({"matchLabels": {"b": "2", "a": "1"}})),
            "v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"1\", \"b\":\"2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}"
        );
        assert_eq!(
            go_label_selector(
                &json!({"matchExpressions": [{"key": "k", "operator": "In", "values": ["x"]}]})
            ),
            "v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"k\", Operator:\"In\", Values:[]string{\"x\"}}}}"
        );
        assert_eq!(
            go_int_or_string(&json!(0)),
            "intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}"
        );
        assert_eq!(
            go_int_or_string(&json!("25%")),
            "intstr.IntOrString{Type:1, IntVal:0, StrVal:\"25%\"}"
        );
    }

    #[test]
    fn selectors_match_as_label_selectors() {
        let labels = json!({"app": "web", "tier": "front"});
        let sel = json!({"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]},
                                 {"key": "x", "operator": "DoesNotExist"}]});
        assert!(selector_matches(Some(&sel), Some(&labels)));
        assert!(!selector_matches(None, Some(&labels)));
        assert!(selector_matches(Some(&json!({})), None));
        assert!(!selector_matches(
            Some(&json!({"matchLabels": {"app": "db"}})),
            Some(&labels)
        ));
    }
}
