//! The walk between a message's wire bytes and its JSON, driven by the message's descriptor.
//!
//! A field's JSON name is its `.proto` name, but for the few types whose JSON form upstream
//! writes by hand:
//!
//! - `meta.v1.Time` (`seconds`, `nanos`): an RFC 3339 string to the second; `MicroTime`: to
//!   the microsecond; the zero time is absent.
//! - `meta.v1.Duration` (nanoseconds): Go's duration string (`1h30m0s`).
//! - `resource.Quantity` (`string`): the quantity's string.
//! - `intstr.IntOrString` (`type`, `intVal`, `strVal`): a number or a string.
//! - `runtime.RawExtension`, `meta.v1.FieldsV1` and apiextensions' `JSON` (bytes holding
//!   JSON): that JSON.
//! - apiextensions' `JSONSchemaPropsOrArray`, `...OrBool` and `...OrStringArray`: a schema, or
//!   an array, or a bool; `JSONSchemaProps`' `ref` and `schema` are `$ref` and `$schema`, and
//!   its `xKubernetes...` fields are `x-kubernetes-...`.
//! - Go structs embedded with `json:",inline"` ([`INLINE`]): their fields are the parent's.
//! - admissionregistration's `Webhooks`, `Expression` and `Name` are lower case in JSON.
//!
//! `bytes` are base64 in JSON, `int64` numbers, maps objects. Go writes every field of a
//! non-pointer type, set or not; decoding leaves out empty strings (the JSON form's
//! `omitempty`), zero times, and the zeros and `false`s of the non-pointer fields whose zero
//! means unset ([`ZERO_UNSET`]); other zeros and `false`s are kept, since a pointer field's
//! zero (`replicas: 0`, `gracePeriodSeconds: 0`) is a value.

use base64::Engine;
use chrono::{DateTime, SecondsFormat};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::{Map, Value, json};

use super::descriptors::message_for;
use super::duration;
use crate::error::ApiError;

/// The 415 for a body of a kind with no protobuf form.
fn unsupported(why: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!("protobuf request body not supported: {why}; send application/json"),
    )
}

/// The 400 for a protobuf body that does not decode.
pub(super) fn bad_body(why: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("unable to decode the protobuf body: {why}"))
}

/// The prefix of every protobuf-encoded object.
pub(super) const MAGIC: &[u8] = b"k8s\0";

/// The `runtime.Unknown` envelope of an encoded object (without the magic).
struct Envelope<'a> {
    api_version: String,
    kind: String,
    raw: &'a [u8],
}

fn read_envelope(body: &[u8]) -> Result<Envelope<'_>, ApiError> {
    let data = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| bad_body("the body does not start with the k8s protobuf prefix"))?;
    let mut env = Envelope {
        api_version: String::new(),
        kind: String::new(),
        raw: &[],
    };
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let (number, wire) = r.key()?;
        match (number, wire) {
            (1, 2) => {
                let mut tm = Reader::new(r.bytes()?);
                while !tm.is_empty() {
                    match tm.key()? {
                        (1, 2) => env.api_version = tm.string()?,
                        (2, 2) => env.kind = tm.string()?,
                        (_, wire) => tm.skip(wire)?,
                    }
                }
            }
            (2, 2) => env.raw = r.bytes()?,
            (_, wire) => r.skip(wire)?,
        }
    }
    Ok(env)
}

/// Decodes an encoded object `depth` messages deep (see [`super::decode`]).
pub(super) fn decode_at(body: &[u8], depth: usize) -> Result<Value, ApiError> {
    let env = read_envelope(body)?;
    let desc = message_for(&env.api_version, &env.kind).ok_or_else(|| {
        unsupported(format!("kind {}/{}", env.api_version, env.kind).trim_start_matches('/'))
    })?;
    let mut obj = to_json_at(env.raw, &desc, depth)?;
    let map = obj.as_object_mut().expect("a message decodes to an object");
    map.insert("apiVersion".into(), json!(env.api_version));
    map.insert("kind".into(), json!(env.kind));
    Ok(obj)
}

/// An embedded object (a `RawExtension`'s bytes, `depth` messages deep): protobuf with the
/// prefix, or JSON.
pub(crate) fn decode_embedded(raw: &[u8], depth: usize) -> Result<Value, ApiError> {
    if raw.starts_with(MAGIC) {
        decode_at(raw, depth)
    } else if raw.is_empty() {
        Ok(Value::Null)
    } else {
        serde_json::from_slice(raw).map_err(|e| bad_body(format!("embedded JSON: {e}")))
    }
}

const META: &str = "apimachinery.pkg.apis.meta.v1.";
const APIEXT_V1: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1.";
const APIEXT_V1BETA1: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.";

/// Embedded Go structs (`json:",inline"`): (message, field) whose message's fields are the
/// parent's in JSON; `*` is any message.
const INLINE: &[(&str, &str)] = &[
    ("*", "localObjectReference"),
    ("NamedRuleWithOperations", "ruleWithOperations"),
    ("RuleWithOperations", "rule"),
    ("Volume", "volumeSource"),
    ("PersistentVolumeSpec", "persistentVolumeSource"),
    ("Probe", "handler"),
    ("EphemeralContainer", "ephemeralContainerCommon"),
    ("IngressRule", "ingressRuleValue"),
    ("DeviceClaimConfiguration", "deviceConfiguration"),
    ("DeviceClassConfiguration", "deviceConfiguration"),
    ("DeviceAllocationConfiguration", "deviceConfiguration"),
];

/// Non-pointer fields (message, field; `*` is any message) whose zero or `false` Go writes
/// for "unset" and whose JSON form leaves out (`omitempty`), so that the server's defaults
/// and allocations fill them in as for JSON.
const ZERO_UNSET: &[(&str, &str)] = &[
    ("Probe", "timeoutSeconds"),
    ("Probe", "periodSeconds"),
    ("Probe", "successThreshold"),
    ("Probe", "failureThreshold"),
    ("ServicePort", "nodePort"),
    ("ServicePort", "targetPort"),
    ("ServiceSpec", "healthCheckNodePort"),
    ("ServiceSpec", "publishNotReadyAddresses"),
    ("ServiceBackendPort", "number"),
    ("ContainerPort", "hostPort"),
    ("ObjectMeta", "generation"),
    ("*", "minReadySeconds"),
    ("*", "stdin"),
    ("*", "stdinOnce"),
    ("*", "tty"),
    ("PodSpec", "hostNetwork"),
    ("PodSpec", "hostPID"),
    ("PodSpec", "hostIPC"),
    ("DeploymentSpec", "paused"),
];

fn listed(table: &[(&str, &str)], field: &FieldDescriptor) -> bool {
    let parent = field.parent_message().name();
    table
        .iter()
        .any(|(m, f)| (*m == parent || *m == "*") && *f == field.name())
}

fn is_inline(field: &FieldDescriptor) -> bool {
    listed(INLINE, field)
}

fn schema_props(desc: &MessageDescriptor) -> bool {
    desc.name() == "JSONSchemaProps"
        && (desc.full_name().starts_with(APIEXT_V1) || desc.full_name().starts_with(APIEXT_V1BETA1))
}

/// A field's JSON name.
fn json_name(field: &FieldDescriptor) -> String {
    let name = field.name();
    // admissionregistration's few capitalized `.proto` names (`DaemonEndpoint.Port` and
    // v1beta1 apiextensions' `JSONPath` are capitalized in JSON too).
    if let "Webhooks" | "Expression" | "Name" = name {
        return name.to_ascii_lowercase();
    }
    if schema_props(field.parent_message()) {
        match name {
            "ref" => return "$ref".into(),
            "schema" => return "$schema".into(),
            n if n.starts_with("xKubernetes") => {
                let mut out = String::from("x");
                for c in n[1..].chars() {
                    if c.is_ascii_uppercase() {
                        out.push('-');
                        out.push(c.to_ascii_lowercase());
                    } else {
                        out.push(c);
                    }
                }
                return out;
            }
            _ => {}
        }
    }
    name.to_string()
}

/// The JSON forms written by hand upstream (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Special {
    Time,
    MicroTime,
    Duration,
    Quantity,
    IntOrString,
    RawJson,
    SchemaOrArray,
    SchemaOrBool,
    SchemaOrStringArray,
}

fn special(desc: &MessageDescriptor) -> Option<Special> {
    let full = desc.full_name();
    Some(match full {
        "apimachinery.pkg.api.resource.Quantity" => Special::Quantity,
        "apimachinery.pkg.util.intstr.IntOrString" => Special::IntOrString,
        "apimachinery.pkg.runtime.RawExtension" => Special::RawJson,
        _ => {
            if let Some(name) = full.strip_prefix(META) {
                match name {
                    "Time" => Special::Time,
                    "MicroTime" => Special::MicroTime,
                    "Duration" => Special::Duration,
                    "FieldsV1" => Special::RawJson,
                    _ => return None,
                }
            } else if let Some(name) = full
                .strip_prefix(APIEXT_V1)
                .or_else(|| full.strip_prefix(APIEXT_V1BETA1))
            {
                match name {
                    "JSON" => Special::RawJson,
                    "JSONSchemaPropsOrArray" => Special::SchemaOrArray,
                    "JSONSchemaPropsOrBool" => Special::SchemaOrBool,
                    "JSONSchemaPropsOrStringArray" => Special::SchemaOrStringArray,
                    _ => return None,
                }
            } else {
                return None;
            }
        }
    })
}

// ---------------------------------------------------------------------------------------
// Wire reading.

/// A cursor over a message's bytes.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, ApiError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or_else(|| bad_body("truncated varint"))?;
            self.buf = rest;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(bad_body("varint too long"))
    }

    /// A field's number and wire type.
    pub(crate) fn key(&mut self) -> Result<(u32, u8), ApiError> {
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| bad_body("field number too large"))?;
        if number == 0 {
            return Err(bad_body("field number 0"));
        }
        Ok((number, (key & 7) as u8))
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], ApiError> {
        if len > self.buf.len() {
            return Err(bad_body("truncated field"));
        }
        let (head, rest) = self.buf.split_at(len);
        self.buf = rest;
        Ok(head)
    }

    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], ApiError> {
        let len = usize::try_from(self.varint()?).map_err(|_| bad_body("length too large"))?;
        self.take(len)
    }

    pub(crate) fn string(&mut self) -> Result<String, ApiError> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| bad_body("a string is not UTF-8"))
    }

    fn fixed64(&mut self) -> Result<u64, ApiError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn fixed32(&mut self) -> Result<u32, ApiError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }

    /// Skips a value of wire type `wire` (an unknown field, as Go's decoder skips them).
    pub(crate) fn skip(&mut self, wire: u8) -> Result<(), ApiError> {
        match wire {
            0 => self.varint().map(drop),
            1 => self.take(8).map(drop),
            2 => self.bytes().map(drop),
            5 => self.take(4).map(drop),
            w => Err(bad_body(format!("unsupported wire type {w}"))),
        }
    }
}

/// One raw value off the wire.
enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

fn read_raw<'a>(r: &mut Reader<'a>, wire: u8) -> Result<Raw<'a>, ApiError> {
    Ok(match wire {
        0 => Raw::Varint(r.varint()?),
        1 => Raw::Fixed64(r.fixed64()?),
        2 => Raw::Bytes(r.bytes()?),
        5 => Raw::Fixed32(r.fixed32()?),
        w => return Err(bad_body(format!("unsupported wire type {w}"))),
    })
}

fn is_numeric(kind: &Kind) -> bool {
    !matches!(kind, Kind::String | Kind::Bytes | Kind::Message(_))
}

/// A scalar from its raw value; `None` for a wire type the field cannot have.
fn scalar(kind: &Kind, raw: &Raw<'_>) -> Result<Option<Value>, ApiError> {
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(Some(match (kind, raw) {
        (Kind::String, Raw::Bytes(b)) => {
            Value::from(std::str::from_utf8(b).map_err(|_| bad_body("a string is not UTF-8"))?)
        }
        (Kind::Bytes, Raw::Bytes(b)) => Value::from(b64.encode(b)),
        (Kind::Bool, Raw::Varint(v)) => Value::from(*v != 0),
        (Kind::Int32 | Kind::Enum(_), Raw::Varint(v)) => Value::from(*v as i32),
        (Kind::Int64, Raw::Varint(v)) => Value::from(*v as i64),
        (Kind::Uint32, Raw::Varint(v)) => Value::from(*v as u32),
        (Kind::Uint64, Raw::Varint(v)) => Value::from(*v),
        (Kind::Sint32, Raw::Varint(v)) => {
            Value::from(((*v >> 1) as i64 ^ -((*v & 1) as i64)) as i32)
        }
        (Kind::Sint64, Raw::Varint(v)) => Value::from((*v >> 1) as i64 ^ -((*v & 1) as i64)),
        (Kind::Double, Raw::Fixed64(v)) => float(f64::from_bits(*v)),
        (Kind::Fixed64, Raw::Fixed64(v)) => Value::from(*v),
        (Kind::Sfixed64, Raw::Fixed64(v)) => Value::from(*v as i64),
        (Kind::Float, Raw::Fixed32(v)) => float(f64::from(f32::from_bits(*v))),
        (Kind::Fixed32, Raw::Fixed32(v)) => Value::from(*v),
        (Kind::Sfixed32, Raw::Fixed32(v)) => Value::from(*v as i32),
        _ => return Ok(None),
    }))
}

/// A float as Go's JSON encoder writes it: whole numbers without a fraction.
fn float(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        return Value::from(f as i64);
    }
    serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// How deeply messages may nest in a body (as serde_json limits JSON's nesting): deeper is a
/// 400, never a stack overflow.
const MAX_DEPTH: usize = 100;

/// Decodes a message's bytes into its JSON object.
pub fn to_json(buf: &[u8], desc: &MessageDescriptor) -> Result<Value, ApiError> {
    to_json_at(buf, desc, 0)
}

/// [`to_json`] of a message nested `depth` deep.
pub(crate) fn to_json_at(
    buf: &[u8],
    desc: &MessageDescriptor,
    depth: usize,
) -> Result<Value, ApiError> {
    let mut out = Map::new();
    decode_into(buf, desc, &mut out, depth)?;
    Ok(Value::Object(out))
}

fn decode_into(
    buf: &[u8],
    desc: &MessageDescriptor,
    out: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), ApiError> {
    if depth > MAX_DEPTH {
        return Err(bad_body("messages nested too deeply"));
    }
    let mut r = Reader::new(buf);
    while !r.is_empty() {
        let (number, wire) = r.key()?;
        let Some(field) = desc.get_field(number) else {
            r.skip(wire)?;
            continue;
        };
        let raw = read_raw(&mut r, wire)?;
        let kind = field.kind();
        if field.is_map() {
            let Raw::Bytes(entry) = raw else {
                return Err(wire_error(&field));
            };
            let Kind::Message(entry_desc) = &kind else {
                return Err(wire_error(&field));
            };
            let (k, v) = map_entry(entry, entry_desc, depth)?;
            let map = out
                .entry(json_name(&field))
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = map {
                map.insert(k, v);
            }
            continue;
        }
        if field.is_list() {
            let list = out
                .entry(json_name(&field))
                .or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(list) = list else { continue };
            match (&raw, is_numeric(&kind)) {
                // Packed scalars.
                (Raw::Bytes(b), true) => {
                    let mut packed = Reader::new(b);
                    let wire = match kind {
                        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => 1,
                        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => 5,
                        _ => 0,
                    };
                    while !packed.is_empty() {
                        let item = read_raw(&mut packed, wire)?;
                        list.push(scalar(&kind, &item)?.ok_or_else(|| wire_error(&field))?);
                    }
                }
                _ => list.push(value(&field, &kind, &raw, depth)?.unwrap_or(Value::Null)),
            }
            continue;
        }
        if is_inline(&field) {
            let (Raw::Bytes(b), Kind::Message(inner)) = (&raw, &kind) else {
                return Err(wire_error(&field));
            };
            decode_into(b, inner, out, depth + 1)?;
            continue;
        }
        let name = json_name(&field);
        match value(&field, &kind, &raw, depth)? {
            Some(Value::String(s)) if s.is_empty() => {
                out.remove(&name);
            }
            Some(Value::Number(n)) if n.as_i64() == Some(0) && listed(ZERO_UNSET, &field) => {
                out.remove(&name);
            }
            Some(Value::Bool(false)) if listed(ZERO_UNSET, &field) => {
                out.remove(&name);
            }
            Some(v) => {
                out.insert(name, v);
            }
            None => {
                out.remove(&name);
            }
        }
    }
    Ok(())
}

fn wire_error(field: &FieldDescriptor) -> ApiError {
    bad_body(format!("wrong wire type for field {}", field.full_name()))
}

fn map_entry(
    buf: &[u8],
    entry: &MessageDescriptor,
    depth: usize,
) -> Result<(String, Value), ApiError> {
    let key_field = entry.map_entry_key_field();
    let value_field = entry.map_entry_value_field();
    let (mut key, mut val) = (String::new(), None);
    let mut r = Reader::new(buf);
    while !r.is_empty() {
        let (number, wire) = r.key()?;
        let raw = read_raw(&mut r, wire)?;
        if number == key_field.number() {
            key = match scalar(&key_field.kind(), &raw)? {
                Some(Value::String(s)) => s,
                Some(v) => v.to_string(),
                None => return Err(wire_error(&key_field)),
            };
        } else if number == value_field.number() {
            val = value(&value_field, &value_field.kind(), &raw, depth)?;
        }
    }
    let val = val.unwrap_or_else(|| match value_field.kind() {
        Kind::String | Kind::Bytes => Value::from(""),
        Kind::Message(m) => match special(&m) {
            Some(Special::Quantity) => Value::from(""),
            _ => Value::Object(Map::new()),
        },
        Kind::Bool => Value::from(false),
        _ => Value::from(0),
    });
    Ok((key, val))
}

/// A field's value; `None` for an unset special value (a zero time, an empty raw extension).
fn value(
    field: &FieldDescriptor,
    kind: &Kind,
    raw: &Raw<'_>,
    depth: usize,
) -> Result<Option<Value>, ApiError> {
    let Kind::Message(desc) = kind else {
        return scalar(kind, raw)?
            .map(Some)
            .ok_or_else(|| wire_error(field));
    };
    let Raw::Bytes(b) = raw else {
        return Err(wire_error(field));
    };
    match special(desc) {
        None => to_json_at(b, desc, depth + 1).map(Some),
        Some(s) => special_to_json(s, b, desc, field, depth + 1),
    }
}

fn fields(buf: &[u8]) -> Result<Vec<(u32, Raw<'_>)>, ApiError> {
    let mut r = Reader::new(buf);
    let mut out = Vec::new();
    while !r.is_empty() {
        let (number, wire) = r.key()?;
        out.push((number, read_raw(&mut r, wire)?));
    }
    Ok(out)
}

fn special_to_json(
    s: Special,
    buf: &[u8],
    desc: &MessageDescriptor,
    field: &FieldDescriptor,
    depth: usize,
) -> Result<Option<Value>, ApiError> {
    if depth > MAX_DEPTH {
        return Err(bad_body("messages nested too deeply"));
    }
    let parts = fields(buf)?;
    let int = |n: u32| {
        parts.iter().rev().find_map(|(num, raw)| match raw {
            Raw::Varint(v) if *num == n => Some(*v),
            _ => None,
        })
    };
    let bytes = |n: u32| {
        parts.iter().rev().find_map(|(num, raw)| match raw {
            Raw::Bytes(b) if *num == n => Some(*b),
            _ => None,
        })
    };
    let text = |n: u32| -> Result<Option<String>, ApiError> {
        bytes(n)
            .map(|b| String::from_utf8(b.to_vec()).map_err(|_| bad_body("a string is not UTF-8")))
            .transpose()
    };
    Ok(match s {
        Special::Time | Special::MicroTime => {
            let secs = int(1).unwrap_or(0) as i64;
            let nanos = int(2).unwrap_or(0) as i64 as i32;
            if secs == 0 && nanos == 0 {
                return Ok(None);
            }
            let t = DateTime::from_timestamp(secs, nanos.max(0) as u32)
                .ok_or_else(|| bad_body("timestamp out of range"))?;
            Some(Value::from(if s == Special::Time {
                t.to_rfc3339_opts(SecondsFormat::Secs, true)
            } else {
                t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
            }))
        }
        Special::Duration => Some(Value::from(duration::format(int(1).unwrap_or(0) as i64))),
        Special::Quantity => Some(Value::from(text(1)?.unwrap_or_default())),
        Special::IntOrString => {
            let v = match int(1).unwrap_or(0) {
                0 => Value::from(int(2).unwrap_or(0) as i32),
                1 => Value::from(text(3)?.unwrap_or_default()),
                t => return Err(bad_body(format!("IntOrString of type {t}"))),
            };
            if v == 0 && listed(ZERO_UNSET, field) {
                return Ok(None);
            }
            Some(v)
        }
        Special::RawJson => match bytes(1) {
            None => None,
            Some(raw) => Some(decode_embedded(raw, depth)?),
        },
        Special::SchemaOrArray | Special::SchemaOrStringArray => {
            let schema_field = desc.get_field(1).expect("schema");
            let list_field = desc.get_field(2).expect("list");
            if let Some(b) = bytes(1) {
                let Kind::Message(m) = schema_field.kind() else {
                    return Err(wire_error(&schema_field));
                };
                Some(to_json_at(b, &m, depth)?)
            } else {
                let mut items = Vec::new();
                for (num, raw) in &parts {
                    if *num == 2 {
                        items.push(
                            value(&list_field, &list_field.kind(), raw, depth)?
                                .unwrap_or(Value::Null),
                        );
                    }
                }
                Some(Value::Array(items))
            }
        }
        Special::SchemaOrBool => {
            let schema_field = desc.get_field(2).expect("schema");
            match bytes(2) {
                Some(b) => {
                    let Kind::Message(m) = schema_field.kind() else {
                        return Err(wire_error(&schema_field));
                    };
                    Some(to_json_at(b, &m, depth)?)
                }
                None => Some(Value::from(int(1).unwrap_or(0) != 0)),
            }
        }
    })
}

// ---------------------------------------------------------------------------------------
// Wire writing.

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, number: u32, wire: u8) {
    put_varint(out, u64::from(number) << 3 | u64::from(wire));
}

fn put_len(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_key(out, number, 2);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The JSON of a message's object as its wire bytes. Keys with no field are left out, and
/// listed in `unmapped` (as JSON paths under `at`) when one is given.
pub fn from_json(
    obj: &Value,
    desc: &MessageDescriptor,
    unmapped: Option<&mut Vec<String>>,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut sink = Vec::new();
    let unmapped = unmapped.unwrap_or(&mut sink);
    if let Value::Object(map) = obj {
        encode_message(map, desc, "", unmapped, &mut out, true);
    }
    out
}

/// The JSON keys a message's fields (its inline ones' included) take.
fn consumed_keys(desc: &MessageDescriptor, keys: &mut Vec<String>) {
    for field in desc.fields() {
        if is_inline(&field) {
            if let Kind::Message(inner) = field.kind() {
                consumed_keys(&inner, keys);
            }
        } else {
            keys.push(json_name(&field));
        }
    }
}

fn encode_message(
    map: &Map<String, Value>,
    desc: &MessageDescriptor,
    at: &str,
    unmapped: &mut Vec<String>,
    out: &mut Vec<u8>,
    top: bool,
) {
    let mut fields: Vec<FieldDescriptor> = desc.fields().collect();
    fields.sort_by_key(FieldDescriptor::number);
    for field in &fields {
        let kind = field.kind();
        if is_inline(field) {
            if let Kind::Message(inner) = &kind {
                let mut sub = Vec::new();
                encode_message(map, inner, at, &mut Vec::new(), &mut sub, false);
                put_len(out, field.number(), &sub);
            }
            continue;
        }
        let name = json_name(field);
        let Some(v) = map.get(&name) else { continue };
        if v.is_null() {
            continue;
        }
        let path = format!("{at}.{name}");
        if field.is_map() {
            let (Value::Object(entries), Kind::Message(entry)) = (v, &kind) else {
                unmapped.push(path);
                continue;
            };
            let key_field = entry.map_entry_key_field();
            let value_field = entry.map_entry_value_field();
            for (k, item) in entries {
                let mut e = Vec::new();
                encode_value(
                    &Value::from(k.as_str()),
                    &key_field,
                    &key_field.kind(),
                    &path,
                    unmapped,
                    &mut e,
                );
                encode_value(
                    item,
                    &value_field,
                    &value_field.kind(),
                    &format!("{path}.{k}"),
                    unmapped,
                    &mut e,
                );
                put_len(out, field.number(), &e);
            }
        } else if field.is_list() {
            let Value::Array(items) = v else {
                unmapped.push(path);
                continue;
            };
            for (i, item) in items.iter().enumerate() {
                encode_value(item, field, &kind, &format!("{path}[{i}]"), unmapped, out);
            }
        } else {
            encode_value(v, field, &kind, &path, unmapped, out);
        }
    }
    // Keys no field takes (the top level's type meta aside).
    if !top || !map.is_empty() {
        let mut keys = Vec::new();
        consumed_keys(desc, &mut keys);
        for k in map.keys() {
            if top && (k == "apiVersion" || k == "kind") {
                continue;
            }
            if !keys.iter().any(|c| c == k) {
                unmapped.push(format!("{at}.{k}"));
            }
        }
    }
}

/// One value of `field` (an element, for a list).
fn encode_value(
    v: &Value,
    field: &FieldDescriptor,
    kind: &Kind,
    at: &str,
    unmapped: &mut Vec<String>,
    out: &mut Vec<u8>,
) {
    let number = field.number();
    let int = || {
        v.as_i64()
            .or_else(|| v.as_u64().map(|u| u as i64))
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
    };
    match kind {
        Kind::String => match v {
            Value::String(s) => put_len(out, number, s.as_bytes()),
            Value::Null => {}
            other => put_len(out, number, other.to_string().as_bytes()),
        },
        Kind::Bytes => {
            let b64 = base64::engine::general_purpose::STANDARD;
            match v.as_str().map(|s| b64.decode(s)) {
                Some(Ok(b)) => put_len(out, number, &b),
                _ => unmapped.push(at.to_string()),
            }
        }
        Kind::Bool => match v.as_bool() {
            Some(b) => {
                put_key(out, number, 0);
                put_varint(out, u64::from(b));
            }
            None => unmapped.push(at.to_string()),
        },
        Kind::Int32 | Kind::Int64 | Kind::Uint32 | Kind::Uint64 | Kind::Enum(_) => match int() {
            Some(i) => {
                put_key(out, number, 0);
                let i = if matches!(kind, Kind::Int32 | Kind::Enum(_)) {
                    i64::from(i as i32)
                } else {
                    i
                };
                put_varint(out, i as u64);
            }
            None => unmapped.push(at.to_string()),
        },
        Kind::Sint32 | Kind::Sint64 => match int() {
            Some(i) => {
                put_key(out, number, 0);
                put_varint(out, ((i << 1) ^ (i >> 63)) as u64);
            }
            None => unmapped.push(at.to_string()),
        },
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => {
            put_key(out, number, 1);
            let bits = match kind {
                Kind::Double => v.as_f64().unwrap_or(0.0).to_bits(),
                _ => int().unwrap_or(0) as u64,
            };
            out.extend_from_slice(&bits.to_le_bytes());
        }
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => {
            put_key(out, number, 5);
            let bits = match kind {
                Kind::Float => (v.as_f64().unwrap_or(0.0) as f32).to_bits(),
                _ => int().unwrap_or(0) as u32,
            };
            out.extend_from_slice(&bits.to_le_bytes());
        }
        Kind::Message(desc) => {
            let mut sub = Vec::new();
            let ok = match special(desc) {
                None => match v {
                    Value::Object(map) => {
                        encode_message(map, desc, at, unmapped, &mut sub, false);
                        true
                    }
                    _ => false,
                },
                Some(s) => special_from_json(s, v, desc, at, unmapped, &mut sub),
            };
            if ok {
                put_len(out, number, &sub);
            } else {
                unmapped.push(at.to_string());
            }
        }
    }
}

fn special_from_json(
    s: Special,
    v: &Value,
    desc: &MessageDescriptor,
    at: &str,
    unmapped: &mut Vec<String>,
    out: &mut Vec<u8>,
) -> bool {
    let put_int = |out: &mut Vec<u8>, n: u32, i: i64| {
        put_key(out, n, 0);
        put_varint(out, i as u64);
    };
    match s {
        Special::Time | Special::MicroTime => {
            let Some(t) = v
                .as_str()
                .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            else {
                return false;
            };
            put_int(out, 1, t.timestamp());
            put_int(out, 2, i64::from(t.timestamp_subsec_nanos()));
            true
        }
        Special::Duration => match v.as_str().and_then(duration::parse) {
            Some(ns) => {
                put_int(out, 1, ns);
                true
            }
            None => false,
        },
        Special::Quantity => match v {
            Value::String(s) => {
                put_len(out, 1, s.as_bytes());
                true
            }
            Value::Number(n) => {
                put_len(out, 1, n.to_string().as_bytes());
                true
            }
            _ => false,
        },
        Special::IntOrString => match v {
            Value::String(s) => {
                put_int(out, 1, 1);
                put_int(out, 2, 0);
                put_len(out, 3, s.as_bytes());
                true
            }
            Value::Number(n) => match n.as_i64() {
                Some(i) => {
                    put_int(out, 1, 0);
                    put_int(out, 2, i64::from(i as i32));
                    put_len(out, 3, b"");
                    true
                }
                None => false,
            },
            _ => false,
        },
        Special::RawJson => {
            put_len(out, 1, &serde_json::to_vec(v).unwrap_or_default());
            true
        }
        Special::SchemaOrArray | Special::SchemaOrStringArray => {
            let schema_field = desc.get_field(1).expect("schema");
            let list_field = desc.get_field(2).expect("list");
            match v {
                Value::Object(_) => {
                    encode_value(v, &schema_field, &schema_field.kind(), at, unmapped, out);
                    true
                }
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        encode_value(
                            item,
                            &list_field,
                            &list_field.kind(),
                            &format!("{at}[{i}]"),
                            unmapped,
                            out,
                        );
                    }
                    true
                }
                _ => false,
            }
        }
        Special::SchemaOrBool => {
            let schema_field = desc.get_field(2).expect("schema");
            match v {
                Value::Bool(b) => {
                    put_int(out, 1, i64::from(*b));
                    true
                }
                Value::Object(_) => {
                    put_int(out, 1, 1);
                    encode_value(v, &schema_field, &schema_field.kind(), at, unmapped, out);
                    true
                }
                _ => false,
            }
        }
    }
}
