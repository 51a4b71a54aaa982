//! Request bodies in the Kubernetes protobuf encoding, for the kinds kubectl's typed clients
//! send that way (`kubectl create namespace|configmap|secret|serviceaccount|deployment`: kubectl
//! 1.32+ encodes built-in kinds as protobuf). The tables cover the fields those commands send,
//! numbered as in the kinds' upstream `generated.proto`.
//!
//! The envelope is the magic `k8s\0` followed by a `runtime.Unknown` message (`typeMeta`,
//! `raw`); `raw` is the kind's generated message, decoded here into the JSON the rest of the
//! server works with using per-kind field tables. A kind or field not in the tables is a 415,
//! never silently dropped data; responses are always JSON, which every client accepts.

use base64::Engine;
use chrono::{DateTime, SecondsFormat};
use serde_json::{Map, Value, json};

use crate::error::ApiError;

#[derive(Clone, Copy)]
enum Kind {
    Str,
    Bytes,
    Int,
    /// An `omitempty` integer: absent when zero.
    Int0,
    Bool,
    /// An `omitempty` bool: absent when false.
    Flag,
    Time,
    MapStr,
    MapBytes,
    Msg(&'static [Field]),
    /// Read and dropped (a status the server resets anyway).
    Skip,
}

#[derive(Clone, Copy)]
struct Field(u32, &'static str, Kind, bool);

const OWNER_REFERENCE: &[Field] = &[
    Field(1, "kind", Kind::Str, false),
    Field(3, "name", Kind::Str, false),
    Field(4, "uid", Kind::Str, false),
    Field(5, "apiVersion", Kind::Str, false),
    Field(6, "controller", Kind::Bool, false),
    Field(7, "blockOwnerDeletion", Kind::Bool, false),
];

const OBJECT_META: &[Field] = &[
    Field(1, "name", Kind::Str, false),
    Field(2, "generateName", Kind::Str, false),
    Field(3, "namespace", Kind::Str, false),
    Field(4, "selfLink", Kind::Str, false),
    Field(5, "uid", Kind::Str, false),
    Field(6, "resourceVersion", Kind::Str, false),
    Field(7, "generation", Kind::Int0, false),
    Field(8, "creationTimestamp", Kind::Time, false),
    Field(9, "deletionTimestamp", Kind::Time, false),
    Field(10, "deletionGracePeriodSeconds", Kind::Int, false),
    Field(11, "labels", Kind::MapStr, false),
    Field(12, "annotations", Kind::MapStr, false),
    Field(13, "ownerReferences", Kind::Msg(OWNER_REFERENCE), true),
    Field(15, "finalizers", Kind::Str, true),
];

const OBJECT_REFERENCE: &[Field] = &[
    Field(1, "kind", Kind::Str, false),
    Field(2, "namespace", Kind::Str, false),
    Field(3, "name", Kind::Str, false),
    Field(4, "uid", Kind::Str, false),
    Field(5, "apiVersion", Kind::Str, false),
    Field(6, "resourceVersion", Kind::Str, false),
    Field(7, "fieldPath", Kind::Str, false),
];

const NAMESPACE: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[Field(1, "finalizers", Kind::Str, true)]),
        false,
    ),
    Field(
        3,
        "status",
        Kind::Msg(&[Field(1, "phase", Kind::Str, false)]),
        false,
    ),
];

const CONFIG_MAP: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "data", Kind::MapStr, false),
    Field(3, "binaryData", Kind::MapBytes, false),
    Field(4, "immutable", Kind::Bool, false),
];

const SECRET: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "data", Kind::MapBytes, false),
    Field(3, "type", Kind::Str, false),
    Field(4, "stringData", Kind::MapStr, false),
    Field(5, "immutable", Kind::Bool, false),
];

const SERVICE_ACCOUNT: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "secrets", Kind::Msg(OBJECT_REFERENCE), true),
    Field(
        3,
        "imagePullSecrets",
        Kind::Msg(&[Field(1, "name", Kind::Str, false)]),
        true,
    ),
    Field(4, "automountServiceAccountToken", Kind::Bool, false),
];

const LABEL_SELECTOR: &[Field] = &[
    Field(1, "matchLabels", Kind::MapStr, false),
    Field(
        2,
        "matchExpressions",
        Kind::Msg(&[
            Field(1, "key", Kind::Str, false),
            Field(2, "operator", Kind::Str, false),
            Field(3, "values", Kind::Str, true),
        ]),
        true,
    ),
];

const CONTAINER: &[Field] = &[
    Field(1, "name", Kind::Str, false),
    Field(2, "image", Kind::Str, false),
    Field(3, "command", Kind::Str, true),
    Field(4, "args", Kind::Str, true),
    Field(5, "workingDir", Kind::Str, false),
    Field(
        6,
        "ports",
        Kind::Msg(&[
            Field(1, "name", Kind::Str, false),
            Field(2, "hostPort", Kind::Int0, false),
            Field(3, "containerPort", Kind::Int, false),
            Field(4, "protocol", Kind::Str, false),
            Field(5, "hostIP", Kind::Str, false),
        ]),
        true,
    ),
    Field(
        7,
        "env",
        Kind::Msg(&[
            Field(1, "name", Kind::Str, false),
            Field(2, "value", Kind::Str, false),
        ]),
        true,
    ),
    Field(8, "resources", Kind::Msg(&[]), false),
    Field(13, "terminationMessagePath", Kind::Str, false),
    Field(14, "imagePullPolicy", Kind::Str, false),
    Field(16, "stdin", Kind::Flag, false),
    Field(17, "stdinOnce", Kind::Flag, false),
    Field(18, "tty", Kind::Flag, false),
    Field(20, "terminationMessagePolicy", Kind::Str, false),
];

const POD_SPEC: &[Field] = &[
    Field(2, "containers", Kind::Msg(CONTAINER), true),
    Field(3, "restartPolicy", Kind::Str, false),
    Field(4, "terminationGracePeriodSeconds", Kind::Int, false),
    Field(6, "dnsPolicy", Kind::Str, false),
    Field(7, "nodeSelector", Kind::MapStr, false),
    Field(8, "serviceAccountName", Kind::Str, false),
    Field(9, "serviceAccount", Kind::Str, false),
    Field(10, "nodeName", Kind::Str, false),
    Field(11, "hostNetwork", Kind::Flag, false),
    Field(12, "hostPID", Kind::Flag, false),
    Field(13, "hostIPC", Kind::Flag, false),
    Field(16, "hostname", Kind::Str, false),
    Field(17, "subdomain", Kind::Str, false),
    Field(19, "schedulerName", Kind::Str, false),
    Field(20, "initContainers", Kind::Msg(CONTAINER), true),
    Field(24, "priorityClassName", Kind::Str, false),
];

const DEPLOYMENT_SPEC: &[Field] = &[
    Field(1, "replicas", Kind::Int, false),
    Field(2, "selector", Kind::Msg(LABEL_SELECTOR), false),
    Field(
        3,
        "template",
        Kind::Msg(&[
            Field(1, "metadata", Kind::Msg(OBJECT_META), false),
            Field(2, "spec", Kind::Msg(POD_SPEC), false),
        ]),
        false,
    ),
    Field(
        4,
        "strategy",
        Kind::Msg(&[Field(1, "type", Kind::Str, false)]),
        false,
    ),
    Field(5, "minReadySeconds", Kind::Int0, false),
    Field(6, "revisionHistoryLimit", Kind::Int, false),
    Field(7, "paused", Kind::Flag, false),
    Field(9, "progressDeadlineSeconds", Kind::Int, false),
];

/// A Deployment as `kubectl create deployment` sends it; its status is ignored on create.
const DEPLOYMENT: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "spec", Kind::Msg(DEPLOYMENT_SPEC), false),
    Field(3, "status", Kind::Skip, false),
];

const UNKNOWN: &[Field] = &[
    Field(
        1,
        "typeMeta",
        Kind::Msg(&[
            Field(1, "apiVersion", Kind::Str, false),
            Field(2, "kind", Kind::Str, false),
        ]),
        false,
    ),
    Field(2, "raw", Kind::Bytes, false),
    Field(3, "contentEncoding", Kind::Str, false),
    Field(4, "contentType", Kind::Str, false),
];

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
    let schema = match (api_version.as_str(), kind.as_str()) {
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Secret") => SECRET,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("apps/v1", "Deployment") => DEPLOYMENT,
        _ => return Err(unsupported(format!("kind {api_version}/{kind}"))),
    };
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

fn map_entry(bytes: &[u8], value_bytes: bool) -> Result<(String, Value), ApiError> {
    let entry = message(
        bytes,
        &[
            Field(1, "k", Kind::Str, false),
            Field(
                2,
                "v",
                if value_bytes { Kind::Bytes } else { Kind::Str },
                false,
            ),
        ],
    )?;
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
            (Kind::Skip, 2) => {
                r.bytes()?;
                continue;
            }
            (Kind::MapStr | Kind::MapBytes, 2) => {
                let (k, v) = map_entry(r.bytes()?, matches!(kind, Kind::MapBytes))?;
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

    #[test]
    fn unknown_kinds_and_fields_are_415() {
        assert_eq!(
            decode(&envelope("batch/v1", "Job", b"")).unwrap_err().code,
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
