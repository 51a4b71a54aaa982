//! The Kubernetes protobuf encoding (`application/vnd.kubernetes.protobuf`) of every built-in
//! kind, for request bodies, responses, lists, watch events and option bodies
//! (`DeleteOptions`).
//!
//! An encoded object is the magic `k8s\0` followed by a `runtime.Unknown` message: `typeMeta`
//! (`apiVersion`, `kind`), `raw` (the kind's message), `contentEncoding` and `contentType`
//! (both empty). The kinds' messages are described by upstream's `generated.proto` files,
//! compiled at build time into a descriptor set (`build.rs`); one walk over those descriptors
//! converts the JSON the rest of the server works with to and from the wire format
//! ([`to_json`], [`from_json`]), as upstream's field names are the JSON field names.
//!
//! A watch in protobuf is a stream of frames, each a 4-byte big-endian length and a
//! `meta.v1.WatchEvent` (`type`, and `object`: a `RawExtension` whose bytes are the event's
//! object encoded as above).
//!
//! The kind of a body is found by its `apiVersion` and `kind`: group `apps` version `v1` is
//! the package `api.apps.v1`, the core group `api.core.v1`; the meta kinds every group version
//! carries (`DeleteOptions`, `Status`, `WatchEvent`...) are apimachinery's `meta.v1`. Custom
//! resources have no protobuf form, as upstream: their bodies are refused with a 415 and their
//! answers are JSON.

use std::sync::OnceLock;

use prost_reflect::{DescriptorPool, MessageDescriptor};
use serde_json::{Value, json};

use crate::error::ApiError;

mod convert;
pub mod duration;

pub use convert::{from_json, to_json};

/// The media type of the encoding.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The `Content-Type` of a watch stream in protobuf.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

const MAGIC: &[u8] = b"k8s\0";

/// The descriptor set `build.rs` compiled from the kinds' `.proto` files.
const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kinds.pb"));

fn pool() -> &'static DescriptorPool {
    static POOL: OnceLock<DescriptorPool> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(DESCRIPTORS).expect("build.rs writes a valid descriptor set")
    })
}

/// The package of a built-in API group's messages, as the `.proto` files name it; `None` for
/// any other group (custom resources, whose kinds may share a built-in kind's name).
fn package(group: &str) -> Option<&'static str> {
    Some(match group {
        "" => "api.core",
        "meta.k8s.io" => "apimachinery.pkg.apis.meta",
        "apiextensions.k8s.io" => "apiextensions_apiserver.pkg.apis.apiextensions",
        "apiregistration.k8s.io" => "kube_aggregator.pkg.apis.apiregistration",
        "metrics.k8s.io" => "metrics.pkg.apis.metrics",
        "internal.apiserver.k8s.io" => "api.apiserverinternal",
        "admission.k8s.io" => "api.admission",
        "admissionregistration.k8s.io" => "api.admissionregistration",
        "apps" => "api.apps",
        "authentication.k8s.io" => "api.authentication",
        "authorization.k8s.io" => "api.authorization",
        "autoscaling" => "api.autoscaling",
        "batch" => "api.batch",
        "certificates.k8s.io" => "api.certificates",
        "coordination.k8s.io" => "api.coordination",
        "discovery.k8s.io" => "api.discovery",
        "events.k8s.io" => "api.events",
        "extensions" => "api.extensions",
        "flowcontrol.apiserver.k8s.io" => "api.flowcontrol",
        "networking.k8s.io" => "api.networking",
        "node.k8s.io" => "api.node",
        "policy" => "api.policy",
        "rbac.authorization.k8s.io" => "api.rbac",
        "resource.k8s.io" => "api.resource",
        "scheduling.k8s.io" => "api.scheduling",
        "storage.k8s.io" => "api.storage",
        "storagemigration.k8s.io" => "api.storagemigration",
        _ => return None,
    })
}

/// The meta kinds every group version carries (`metav1.AddToGroupVersion`), found in
/// apimachinery's `meta.v1` whatever the `apiVersion` says.
const META_KINDS: &[&str] = &[
    "Status",
    "WatchEvent",
    "DeleteOptions",
    "CreateOptions",
    "UpdateOptions",
    "PatchOptions",
    "GetOptions",
    "ListOptions",
];

/// The message of `kind` in `api_version` (`apps/v1`, `v1`), if it is a built-in kind or one
/// of the meta kinds.
pub fn message_for(api_version: &str, kind: &str) -> Option<MessageDescriptor> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if kind.is_empty() || version.is_empty() {
        return None;
    }
    let pool = pool();
    if META_KINDS.contains(&kind) {
        return pool.get_message_by_name(&format!("apimachinery.pkg.apis.meta.v1.{kind}"));
    }
    pool.get_message_by_name(&format!("{}.{version}.{kind}", package(group)?))
}

/// Whether objects of `kind` in `api_version` have a protobuf form.
pub fn has_kind(api_version: &str, kind: &str) -> bool {
    message_for(api_version, kind).is_some()
}

pub(crate) fn unsupported(why: impl std::fmt::Display) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!("protobuf request body not supported: {why}; send application/json"),
    )
}

fn bad_body(why: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("unable to decode the protobuf body: {why}"))
}

/// Whether a `Content-Type` is the protobuf encoding.
pub fn is_protobuf(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.split(';')
            .next()
            .is_some_and(|m| m.trim().eq_ignore_ascii_case(MEDIA_TYPE))
    })
}

/// Whether an `Accept` header asks for protobuf objects first: its first media type is the
/// protobuf encoding, with no `as=` (Tables and metadata are answered in JSON, the next type
/// every such client lists).
pub fn wants(accept: Option<&str>) -> bool {
    let Some(first) = accept.and_then(|a| a.split(',').next()) else {
        return false;
    };
    let mut params = first.split(';').map(str::trim);
    params
        .next()
        .is_some_and(|m| m.eq_ignore_ascii_case(MEDIA_TYPE))
        && !params.any(|p| p.starts_with("as="))
}

/// A length-delimited field of a message.
fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    convert::put_varint(out, u64::from(number) << 3 | 2);
    convert::put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

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
    let mut r = convert::Reader::new(data);
    while !r.is_empty() {
        let (number, wire) = r.key()?;
        match (number, wire) {
            (1, 2) => {
                let mut tm = convert::Reader::new(r.bytes()?);
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

/// Decodes a protobuf body (`k8s\0` + `runtime.Unknown`) into the object's JSON, with its
/// `apiVersion` and `kind`.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    decode_at(body, 0)
}

fn decode_at(body: &[u8], depth: usize) -> Result<Value, ApiError> {
    let env = read_envelope(body)?;
    let desc = message_for(&env.api_version, &env.kind).ok_or_else(|| {
        unsupported(format!("kind {}/{}", env.api_version, env.kind).trim_start_matches('/'))
    })?;
    let mut obj = convert::to_json_at(env.raw, &desc, depth)?;
    let map = obj.as_object_mut().expect("a message decodes to an object");
    map.insert("apiVersion".into(), json!(env.api_version));
    map.insert("kind".into(), json!(env.kind));
    Ok(obj)
}

/// Encodes an object (with its `apiVersion` and `kind`) in protobuf; `None` when its kind has
/// no protobuf form (a custom resource).
pub fn encode(obj: &Value) -> Option<Vec<u8>> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let desc = message_for(api_version, kind)?;
    let raw = from_json(obj, &desc, None);
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, &raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    Some(out)
}

/// One watch event as a frame of a protobuf watch stream: the length, then the
/// `meta.v1.WatchEvent`. An object with no protobuf form is carried as its JSON, as upstream
/// carries a `RawExtension` of JSON.
pub fn watch_frame(event_type: &str, object: &Value) -> Vec<u8> {
    let embedded = encode(object).unwrap_or_else(|| serde_json::to_vec(object).unwrap_or_default());
    let mut raw_ext = Vec::with_capacity(embedded.len() + 8);
    put_bytes(&mut raw_ext, 1, &embedded);
    let mut event = Vec::with_capacity(raw_ext.len() + 24);
    put_bytes(&mut event, 1, event_type.as_bytes());
    put_bytes(&mut event, 2, &raw_ext);
    let mut frame = Vec::with_capacity(event.len() + 4);
    frame.extend_from_slice(&(event.len() as u32).to_be_bytes());
    frame.extend_from_slice(&event);
    frame
}

/// Reads the frames of a protobuf watch stream back into `(type, object)` pairs (the client
/// side of [`watch_frame`]).
pub fn read_watch_frames(mut stream: &[u8]) -> Result<Vec<(String, Value)>, ApiError> {
    let mut events = Vec::new();
    while !stream.is_empty() {
        let (len, rest) = stream
            .split_first_chunk::<4>()
            .ok_or_else(|| bad_body("truncated frame length"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() < len {
            return Err(bad_body("truncated frame"));
        }
        let (frame, rest) = rest.split_at(len);
        stream = rest;
        let mut r = convert::Reader::new(frame);
        let (mut kind, mut object) = (String::new(), Value::Null);
        while !r.is_empty() {
            match r.key()? {
                (1, 2) => kind = r.string()?,
                (2, 2) => {
                    let mut ext = convert::Reader::new(r.bytes()?);
                    while !ext.is_empty() {
                        match ext.key()? {
                            (1, 2) => object = decode_embedded(ext.bytes()?, 0)?,
                            (_, wire) => ext.skip(wire)?,
                        }
                    }
                }
                (_, wire) => r.skip(wire)?,
            }
        }
        events.push((kind, object));
    }
    Ok(events)
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

#[cfg(test)]
mod tests;
