//! Request bodies in the Kubernetes protobuf encoding, for the kinds kubectl's typed clients
//! send that way (`kubectl create namespace|configmap|secret|serviceaccount|service|deployment|
//! job|cronjob|role|clusterrole|rolebinding|clusterrolebinding|poddisruptionbudget|priorityclass|
//! quota|ingress`,
//! the access and rules reviews of `kubectl auth can-i`, and the TokenRequest of `kubectl
//! create token`: kubectl 1.32+ encodes built-in kinds as protobuf). The tables (`tables.rs`)
//! cover the fields those commands send, numbered as in the kinds' upstream `generated.proto`.
//!
//! The envelope is the magic `k8s\0` followed by a `runtime.Unknown` message (`typeMeta`,
//! `raw`); `raw` is the kind's generated message, decoded here into the JSON the rest of the
//! server works with using per-kind field tables. A kind or field not in the tables is a 415,
//! never silently dropped data; responses are always JSON, which every client accepts.

use base64::Engine;
use chrono::{DateTime, SecondsFormat};
use serde_json::{Map, Value, json};

use crate::error::ApiError;

mod tables;

use tables::{Field, Kind, UNKNOWN};

fn unsupported(why: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!("protobuf request body not supported: {why}; send application/json"),
    )
}

/// Decodes a protobuf request body into the object's JSON.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let envelope = body
        .strip_prefix(b"k8s\0")
        .ok_or_else(|| unsupported("missing the k8s envelope"))?;
    let unknown = message(envelope, UNKNOWN)?;
    let api_version = unknown
        .pointer("/typeMeta/apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind = unknown
        .pointer("/typeMeta/kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let schema = tables::schema(&api_version, &kind)
        .ok_or_else(|| unsupported(format!("kind {api_version}/{kind}")))?;
    let raw = unknown.get("raw").and_then(Value::as_str).unwrap_or("");
    let raw = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .map_err(unsupported)?;
    let mut obj = message(&raw, schema)?;
    obj.as_object_mut()
        .expect("message is an object")
        .insert("apiVersion".into(), json!(api_version));
    obj["kind"] = json!(kind);
    Ok(obj)
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ApiError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or_else(|| unsupported("truncated varint"))?;
            self.buf = rest;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(unsupported("varint too long"))
    }

    fn bytes(&mut self) -> Result<&'a [u8], ApiError> {
        let len = usize::try_from(self.varint()?).map_err(unsupported)?;
        if len > self.buf.len() {
            return Err(unsupported("truncated field"));
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }
}

fn text(bytes: &[u8]) -> Result<Value, ApiError> {
    Ok(json!(std::str::from_utf8(bytes).map_err(unsupported)?))
}

/// One entry of a map field of `kind` (`MapStr`, `MapBytes` or `MapQuantity`).
fn map_entry(bytes: &[u8], kind: Kind) -> Result<(String, Value), ApiError> {
    const QUANTITY: &[Field] = &[Field(1, "string", Kind::Str, false)];
    let value = match kind {
        Kind::MapBytes => Kind::Bytes,
        Kind::MapQuantity => Kind::Msg(QUANTITY),
        _ => Kind::Str,
    };
    let mut entry = message(
        bytes,
        &[Field(1, "k", Kind::Str, false), Field(2, "v", value, false)],
    )?;
    if matches!(kind, Kind::MapQuantity) {
        let quantity = entry.pointer("/v/string").cloned().unwrap_or(json!(""));
        entry["v"] = quantity;
    }
    let key = entry
        .get("k")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Ok((key, entry.get("v").cloned().unwrap_or(json!(""))))
}

fn time(bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let t = message(
        bytes,
        &[
            Field(1, "s", Kind::Int, false),
            Field(2, "n", Kind::Int, false),
        ],
    )?;
    let secs = t.get("s").and_then(Value::as_i64).unwrap_or(0);
    let dt =
        DateTime::from_timestamp(secs, 0).ok_or_else(|| unsupported("timestamp out of range"))?;
    Ok(json!(dt.to_rfc3339_opts(SecondsFormat::Secs, true)))
}

/// An `intstr.IntOrString` (`type` 0 is `intVal`, 1 is `strVal`); Null for the zero value,
/// which means unset (the server's defaults fill it in, as for a Service's `targetPort`).
fn int_or_string(bytes: &[u8]) -> Result<Value, ApiError> {
    let v = message(
        bytes,
        &[
            Field(1, "type", Kind::Int, false),
            Field(2, "intVal", Kind::Int, false),
            Field(3, "strVal", Kind::Str, false),
        ],
    )?;
    Ok(match v.get("type").and_then(Value::as_i64).unwrap_or(0) {
        0 => match v.get("intVal").and_then(Value::as_i64).unwrap_or(0) {
            0 => Value::Null,
            n => json!(n),
        },
        1 => v.get("strVal").cloned().unwrap_or(Value::Null),
        t => return Err(unsupported(format!("IntOrString type {t}"))),
    })
}

fn message(buf: &[u8], schema: &[Field]) -> Result<Value, ApiError> {
    let mut out = Map::new();
    let mut r = Reader { buf };
    while !r.buf.is_empty() {
        let key = r.varint()?;
        let (num, wire) = ((key >> 3) as u32, key & 7);
        let field = schema
            .iter()
            .find(|f| f.0 == num)
            .ok_or_else(|| unsupported(format!("unknown field {num}")))?;
        let Field(_, name, kind, repeated) = *field;
        let value = match (kind, wire) {
            (Kind::Int, 0) => json!(r.varint()? as i64),
            (Kind::Bool, 0) => json!(r.varint()? != 0),
            (Kind::Int0, 0) => match r.varint()? {
                0 => continue,
                v => json!(v as i64),
            },
            (Kind::Flag, 0) => match r.varint()? {
                0 => continue,
                _ => json!(true),
            },
            (Kind::Str, 2) => text(r.bytes()?)?,
            (Kind::Bytes, 2) => json!(base64::engine::general_purpose::STANDARD.encode(r.bytes()?)),
            (Kind::Time, 2) => time(r.bytes()?)?,
            (Kind::Msg(inner), 2) => message(r.bytes()?, inner)?,
            (Kind::IntOrStr, 2) => int_or_string(r.bytes()?)?,
            (Kind::Skip, 2) => {
                r.bytes()?;
                continue;
            }
            (Kind::Inline(inner), 2) => {
                if let Value::Object(fields) = message(r.bytes()?, inner)? {
                    out.extend(fields);
                }
                continue;
            }
            (Kind::MapStr | Kind::MapBytes | Kind::MapQuantity, 2) => {
                let (k, v) = map_entry(r.bytes()?, kind)?;
                let map = out.entry(name).or_insert_with(|| json!({}));
                map[k] = v;
                continue;
            }
            _ => return Err(unsupported(format!("wire type {wire} for field {name}"))),
        };
        // Go encodes every non-pointer string and time, set or not; unset ones are absent
        // from the JSON form (`omitempty`, null times).
        if !repeated && (value == json!("") || value.is_null()) {
            continue;
        }
        if repeated {
            out.entry(name)
                .or_insert_with(|| json!([]))
                .as_array_mut()
                .expect("array")
                .push(value);
        } else {
            out.insert(name.to_string(), value);
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn field(num: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(num) << 3 | 2, &mut out);
        varint(bytes.len() as u64, &mut out);
        out.extend_from_slice(bytes);
        out
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [field(1, api_version.as_bytes()), field(2, kind.as_bytes())].concat();
        let unknown = [
            field(1, &type_meta),
            field(2, raw),
            field(3, b""),
            field(4, b""),
        ]
        .concat();
        [b"k8s\0".to_vec(), unknown].concat()
    }

    #[test]
    fn decodes_quantity_maps_and_inlined_structs() {
        // ResourceQuota: spec.hard is a map<string, Quantity>; status (empty) is dropped.
        let entry = |k: &str, v: &str| {
            field(
                1,
                &[field(1, k.as_bytes()), field(2, &field(1, v.as_bytes()))].concat(),
            )
        };
        let spec = [
            entry("cpu", "1"),
            entry("memory", "1Gi"),
            field(2, b"BestEffort"),
        ]
        .concat();
        let quota = [field(1, &field(1, b"q")), field(2, &spec), field(3, b"")].concat();
        let obj = decode(&envelope("v1", "ResourceQuota", &quota)).unwrap();
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                   "spec": {"hard": {"cpu": "1", "memory": "1Gi"}, "scopes": ["BestEffort"]}})
        );

        // Ingress: a rule's IngressRuleValue (field 2) is inlined, its `http` the rule's.
        let port = field(2, &[16, 80]);
        let backend = field(4, &[field(1, b"svc"), port].concat());
        let path = [field(1, b"/"), field(2, &backend), field(3, b"Prefix")].concat();
        let http = field(1, &field(1, &path));
        let rule = [field(1, b"a.io"), field(2, &http)].concat();
        let spec = [field(3, &rule), field(4, b"nginx")].concat();
        let ingress = [field(1, &field(1, b"web")), field(2, &spec)].concat();
        let obj = decode(&envelope("networking.k8s.io/v1", "Ingress", &ingress)).unwrap();
        assert_eq!(
            obj["spec"],
            json!({"ingressClassName": "nginx", "rules": [{"host": "a.io", "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "svc", "port": {"number": 80}}}}]}}]})
        );
    }

    #[test]
    fn decodes_the_access_reviews_kubectl_auth_can_i_sends() {
        let attrs = [
            field(1, b"default"),
            field(2, b"get"),
            field(3, b""),
            field(5, b"pods"),
            field(6, b"log"),
        ]
        .concat();
        let raw = [field(1, b""), field(2, &field(1, &attrs)), field(3, b"")].concat();
        let obj = decode(&envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            &raw,
        ))
        .unwrap();
        assert_eq!(
            obj["spec"],
            json!({"resourceAttributes": {"namespace": "default", "verb": "get",
                "resource": "pods", "subresource": "log"}}),
            "the core group's empty string is left out, as every empty string"
        );
        let raw = [field(2, &field(1, b"team"))].concat();
        let obj = decode(&envelope(
            "authorization.k8s.io/v1",
            "SelfSubjectRulesReview",
            &raw,
        ))
        .unwrap();
        assert_eq!(obj["spec"], json!({"namespace": "team"}));
        let spec = [field(3, b"bob"), field(4, b"devs"), field(4, b"ops")].concat();
        let raw = [field(2, &spec)].concat();
        let obj = decode(&envelope(
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            &raw,
        ))
        .unwrap();
        assert_eq!(
            obj["spec"],
            json!({"user": "bob", "groups": ["devs", "ops"]})
        );
        // `extra` is not in the tables: a 415, never a review answered without it.
        let raw = [field(2, &field(5, b""))].concat();
        let err = decode(&envelope(
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            &raw,
        ))
        .unwrap_err();
        assert_eq!(err.code, 415);
    }

    #[test]
    fn decodes_a_configmap() {
        let labels = [field(1, b"app"), field(2, b"web")].concat();
        let meta = [field(1, b"c1"), field(3, b"default"), field(11, &labels)].concat();
        let data = [field(1, b"k"), field(2, b"v")].concat();
        let raw = [field(1, &meta), field(2, &data)].concat();
        let obj = decode(&envelope("v1", "ConfigMap", &raw)).unwrap();
        assert_eq!(
            obj,
            json!({"metadata": {"name": "c1", "namespace": "default", "labels": {"app": "web"}}, "data": {"k": "v"}, "apiVersion": "v1", "kind": "ConfigMap"})
        );
    }

    fn int(num: u32, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(num) << 3, &mut out);
        varint(v, &mut out);
        out
    }

    #[test]
    fn decodes_a_service_with_int_and_named_target_ports() {
        // As Go encodes them: every non-pointer field present, zero or not.
        let numbered = [
            field(1, b"80-8080"),
            field(2, b"TCP"),
            int(3, 80),
            field(4, &[int(1, 0), int(2, 8080), field(3, b"")].concat()),
            int(5, 0),
        ]
        .concat();
        let named = [
            field(1, b"web"),
            int(3, 443),
            field(4, &[int(1, 1), int(2, 0), field(3, b"https")].concat()),
        ]
        .concat();
        let unset = [int(3, 9000), field(4, &[int(1, 0), int(2, 0)].concat())].concat();
        let selector = [field(1, b"app"), field(2, b"web")].concat();
        let spec = [
            field(1, &numbered),
            field(1, &named),
            field(1, &unset),
            field(2, &selector),
            field(3, b""),
            field(4, b"NodePort"),
            int(12, 0),
            int(13, 0),
        ]
        .concat();
        let raw = [field(1, &field(1, b"web")), field(2, &spec), field(3, b"")].concat();
        let obj = decode(&envelope("v1", "Service", &raw)).unwrap();
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {
                "ports": [
                    {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080},
                    {"name": "web", "port": 443, "targetPort": "https"},
                    {"port": 9000},
                ],
                "selector": {"app": "web"},
                "type": "NodePort",
            }})
        );
    }

    #[test]
    fn decodes_a_cronjob_and_its_job_template() {
        let container = [field(1, b"tick"), field(2, b"busybox")].concat();
        let pod = [field(2, &container), field(3, b"OnFailure")].concat();
        let template = [field(1, b""), field(2, &pod)].concat();
        let job_spec = [field(6, &template), int(7, 2), int(10, 0)].concat();
        let job_template = [field(1, &field(1, b"tick")), field(2, &job_spec)].concat();
        let spec = [field(1, b"*/1 * * * *"), field(5, &job_template)].concat();
        let raw = [field(1, &field(1, b"tick")), field(2, &spec)].concat();
        let obj = decode(&envelope("batch/v1", "CronJob", &raw)).unwrap();
        assert_eq!(obj["spec"]["schedule"], "*/1 * * * *");
        assert_eq!(
            obj["spec"]["jobTemplate"],
            json!({"metadata": {"name": "tick"}, "spec": {
                "template": {"metadata": {}, "spec": {
                    "containers": [{"name": "tick", "image": "busybox"}],
                    "restartPolicy": "OnFailure",
                }},
                "backoffLimit": 2,
                "suspend": false,
            }})
        );
        // The same JobSpec table decodes a Job.
        let raw = [
            field(1, &field(1, b"once")),
            field(2, &job_spec),
            field(3, b""),
        ]
        .concat();
        let job = decode(&envelope("batch/v1", "Job", &raw)).unwrap();
        assert_eq!(job["spec"], obj["spec"]["jobTemplate"]["spec"]);
        assert_eq!(job["kind"], "Job");
    }

    #[test]
    fn fields_missing_from_the_new_tables_are_415() {
        // ServicePort has no field 7; a JobSpec has no field 17; a set securityContext.
        let port = [int(3, 80), field(7, b"x")].concat();
        let raw = field(2, &field(1, &port));
        let err = decode(&envelope("v1", "Service", &raw)).unwrap_err();
        assert_eq!(err.code, 415);
        assert!(err.message.contains("unknown field 7"), "{}", err.message);
        let raw = field(2, &int(17, 1));
        assert_eq!(
            decode(&envelope("batch/v1", "Job", &raw)).unwrap_err().code,
            415
        );
        let pod = field(14, &int(1, 1000));
        let raw = field(2, &field(6, &field(2, &pod)));
        assert_eq!(
            decode(&envelope("batch/v1", "Job", &raw)).unwrap_err().code,
            415
        );
        // An IntOrString of an unknown type is not guessed at.
        let raw = field(2, &field(1, &field(4, &int(1, 2))));
        assert_eq!(
            decode(&envelope("v1", "Service", &raw)).unwrap_err().code,
            415
        );
    }

    #[test]
    fn unknown_kinds_and_fields_are_415() {
        assert_eq!(
            decode(&envelope("apps/v1", "StatefulSet", b""))
                .unwrap_err()
                .code,
            415
        );
        let raw = field(9, b"x");
        assert_eq!(
            decode(&envelope("v1", "ConfigMap", &raw)).unwrap_err().code,
            415
        );
        assert_eq!(decode(b"not protobuf").unwrap_err().code, 415);
        assert_eq!(decode(b"k8s\0\x0a\xff").unwrap_err().code, 415);
    }
}
